// Calling a Lambda function URL whose auth type is AWS_IAM: a POST signed with SigV4 for the
// service "lambda", with the credentials, region, hash and transport of the SDK's own clients (so
// the local runtime's identities and in-process gateway apply as to every other call). The URL's
// function then knows the caller from the signature (requestContext.authorizer.iam), as SQS's
// SenderId told compute-events who sent a report, without an event source polling a queue.
import { SignatureV4 } from "@smithy/signature-v4";
import { sqsClient } from "./clients.js";

/** A function URL's answer that is not 2xx: its status and what the function or Lambda said. */
export class FunctionUrlError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    readonly url: string,
    readonly attempts: number,
  ) {
    super(`${url} answered ${status} after ${attempts} attempt(s): ${body.slice(0, 500)}`);
    this.name = "FunctionUrlError";
  }
}

/**
 * What a caller retries: Lambda's throttle (429, the function at its reserved concurrency), its
 * 5xx (the function failed or timed out: 502, 504) and the network. Not a 4xx the body or the
 * caller's rights earned (400, 403, 413): the same request would earn it again.
 */
export function retryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

export interface FunctionUrlOptions {
  /** attempts in all, the first included */
  maxAttempts?: number;
  /** the first retry's ceiling; each doubles, to maxDelayMs (full jitter, as the SDK's retries) */
  baseDelayMs?: number;
  maxDelayMs?: number;
  signal?: AbortSignal;
}

const DEFAULTS = { maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 5_000 } as const;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

async function readBody(body: unknown): Promise<string> {
  if (body === undefined || body === null) return "";
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return Buffer.from(body).toString("utf8");
  const chunks: Buffer[] = [];
  for await (const c of body as AsyncIterable<Uint8Array | string>)
    chunks.push(typeof c === "string" ? Buffer.from(c) : Buffer.from(c));
  return Buffer.concat(chunks).toString("utf8");
}

/** POSTs `body` (JSON) to the function URL, signed; retries what is retryable; returns the body answered. */
export async function postToFunctionUrl(
  url: string,
  body: string,
  options: FunctionUrlOptions = {},
): Promise<string> {
  const { maxAttempts, baseDelayMs, maxDelayMs } = { ...DEFAULTS, ...options };
  const client = sqsClient();
  const { credentials, region, sha256, requestHandler } = client.config;
  const signer = new SignatureV4({ credentials, region, service: "lambda", sha256, uriEscapePath: true });
  const u = new URL(url);
  const query: Record<string, string> = {};
  for (const [k, v] of u.searchParams) query[k] = v;
  for (let attempt = 1; ; attempt++) {
    const signed = await signer.sign({
      method: "POST",
      protocol: u.protocol,
      hostname: u.hostname,
      port: u.port ? Number(u.port) : undefined,
      path: u.pathname,
      query,
      headers: {
        host: u.host,
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
      },
      body,
    });
    let status: number;
    let answer: string;
    try {
      const { response } = await requestHandler.handle(
        signed as Parameters<typeof requestHandler.handle>[0],
        {
          abortSignal: options.signal,
        },
      );
      status = response.statusCode;
      answer = await readBody(response.body);
    } catch (e) {
      if (options.signal?.aborted || attempt >= maxAttempts) throw e;
      await sleep(Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)), options.signal);
      continue;
    }
    if (status >= 200 && status < 300) return answer;
    if (!retryableStatus(status) || attempt >= maxAttempts)
      throw new FunctionUrlError(status, answer, url, attempt);
    await sleep(Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)), options.signal);
  }
}
