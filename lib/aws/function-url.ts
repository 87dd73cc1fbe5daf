// Calling a Lambda function URL whose auth type is AWS_IAM: a POST signed with SigV4 for the
// service "lambda", with the credentials, region, hash and transport of the SDK's own clients (so
// the local runtime's identities and in-process gateway apply as to every other call). The URL's
// function then knows the caller from the signature (requestContext.authorizer.iam), as SQS's
// SenderId told compute-events who sent a report, without an event source polling a queue.
import { functionUrlSigning } from "./clients.js";

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
  /** one attempt's limit; past it the attempt counts as failed and is retried */
  attemptTimeoutMs?: number;
  signal?: AbortSignal;
}

// An attempt waits at most the function's longest run (Lambda's limit is 900 s; compute-events'
// is 30) and a margin: a connection that hangs is given up and retried, not waited on forever.
const DEFAULTS = { maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 5_000, attemptTimeoutMs: 60_000 } as const;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    // the listener goes with the wait: a registration retried 20 times on one signal kept 20
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
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
  const { maxAttempts, baseDelayMs, maxDelayMs, attemptTimeoutMs } = { ...DEFAULTS, ...options };
  const { signer, requestHandler } = functionUrlSigning();
  const backoff = (attempt: number) =>
    sleep(Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)), options.signal);
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
      const abortSignal = options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(attemptTimeoutMs)])
        : AbortSignal.timeout(attemptTimeoutMs);
      const { response } = await requestHandler.handle(
        signed as Parameters<typeof requestHandler.handle>[0],
        { abortSignal },
      );
      status = response.statusCode;
      answer = await readBody(response.body);
    } catch (e) {
      if (options.signal?.aborted || attempt >= maxAttempts) throw e;
      await backoff(attempt);
      continue;
    }
    if (status >= 200 && status < 300) return answer;
    if (!retryableStatus(status) || attempt >= maxAttempts)
      throw new FunctionUrlError(status, answer, url, attempt);
    await backoff(attempt);
  }
}
