// The answers the gateway gives in a service's stead: the AWS JSON protocols' error body, and S3's
// REST error document.
import { randomUUID } from "node:crypto";
import type { RawResponse } from "./gateway.js";

export interface Answer {
  status: number;
  type: string;
  message: string;
  /** SQS's awsQueryCompatible code (x-amzn-query-error) */
  queryError?: string;
}

export function answerOf(a: Answer): RawResponse {
  const body = Buffer.from(JSON.stringify({ __type: a.type, message: a.message }));
  const headers: RawResponse["headers"] = {
    "content-type": "application/x-amz-json-1.0",
    "x-amzn-requestid": randomUUID(),
    "content-length": String(body.length),
  };
  if (a.queryError) headers["x-amzn-query-error"] = a.queryError;
  return { status: a.status, headers, body };
}

/** S3's REST error document. */
export function s3Answer(status: number, code: string, message: string): RawResponse {
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</Message><RequestId>${randomUUID()}</RequestId></Error>`,
  );
  return {
    status,
    headers: { "content-type": "application/xml", "content-length": String(body.length) },
    body,
  };
}
