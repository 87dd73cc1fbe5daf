// Step Functions' AWS JSON 1.0 protocol as the local endpoint speaks it: its errors, its checks of
// fields and names, its request bodies and answers.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

export const REGION = "us-east-1";
export const ACCOUNT = "000000000000";
const MAX_REQUEST_BYTES = 8 * 1_048_576;

export class SfnError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function requireString(value: unknown, field: string): string {
  if (typeof value !== "string") {
    throw new SfnError(
      "ValidationException",
      `1 validation error detected: Value at '${field}' must be a string`,
    );
  }
  return value;
}

const FORBIDDEN_NAME_CHARS = new Set(' <>{}[]?*"#%\\^|~`$&,;:/');

/** Step Functions' rule for state machine and execution names. */
export function checkName(name: string): void {
  const bad =
    name.length < 1 ||
    name.length > 80 ||
    [...name].some((ch) => {
      const c = ch.codePointAt(0)!;
      return FORBIDDEN_NAME_CHARS.has(ch) || /\s/.test(ch) || c <= 0x1f || (c >= 0x7f && c <= 0x9f);
    });
  if (bad) throw new SfnError("InvalidName", `Invalid Name: '${name}'`);
}

export function requestIdOf(input: string): { request_id?: string } {
  try {
    const parsed = JSON.parse(input) as { request_id?: unknown };
    return typeof parsed?.request_id === "string" ? { request_id: parsed.request_id } : {};
  } catch {
    return {};
  }
}

export function epoch(d: Date): number {
  return d.getTime() / 1000;
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new SfnError("ValidationException", "the request is too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export function reply(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
  if (res.headersSent) return;
  const data = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/x-amz-json-1.0",
    "content-length": Buffer.byteLength(data),
    "x-amzn-requestid": randomUUID(),
    ...(errorType ? { "x-amzn-errortype": errorType } : {}),
  });
  res.end(data);
}
