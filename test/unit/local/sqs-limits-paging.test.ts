// local/sqs-limits.ts reads an external SQS's whole list of queues. An upstream that pages as SQS
// does (no NextToken without MaxResults: 1,000 URLs at most) must be read with MaxResults and its
// NextToken followed; otherwise os-dead-letters, at 600 hosts (1,200 queues), saw 505 of them.
// The upstream here is a pure function standing for SQS's documented ListQueues.
import { describe, expect, it } from "vitest";
import type { RawRequest, RawResponse } from "../../../local/iam/gateway.js";
import { sqsLimits } from "../../../local/sqs-limits.js";

const QUEUES = Array.from(
  { length: 1_200 },
  (_, i) => `https://sqs.local/000000000000/q-${String(i).padStart(4, "0")}`,
);

/** ListQueues as API_ListQueues documents it (its token: the index to go on from). */
async function awsLikeUpstream(req: RawRequest): Promise<RawResponse> {
  const body = JSON.parse(req.body.toString("utf8")) as { MaxResults?: number; NextToken?: string };
  const from = body.NextToken ? Number(body.NextToken) : 0;
  const max = body.MaxResults ?? 1_000;
  const page = QUEUES.slice(from, from + max);
  const more = body.MaxResults !== undefined && from + max < QUEUES.length;
  const out = { QueueUrls: page, ...(more ? { NextToken: String(from + max) } : {}) };
  return { status: 200, headers: {}, body: Buffer.from(JSON.stringify(out)) };
}

const request = (body: unknown): RawRequest => ({
  method: "POST",
  path: "/",
  headers: {},
  body: Buffer.from(JSON.stringify(body)),
});

async function listAll(): Promise<string[]> {
  const limits = sqsLimits();
  const urls: string[] = [];
  let token: string | undefined;
  do {
    const res = await limits.call(
      "ListQueues",
      request({ MaxResults: 1_000, ...(token ? { NextToken: token } : {}) }),
      awsLikeUpstream,
    );
    const out = JSON.parse(res.body.toString("utf8")) as { QueueUrls?: string[]; NextToken?: string };
    urls.push(...(out.QueueUrls ?? []));
    token = out.NextToken;
  } while (token);
  return urls;
}

describe("ListQueues against an SQS that pages as AWS does", () => {
  it("lists every one of 1,200 queues through the pages", async () => {
    expect(await listAll()).toEqual(QUEUES);
  });

  it("without MaxResults answers 1,000 and no NextToken, as SQS does", async () => {
    const res = await sqsLimits().call("ListQueues", request({}), awsLikeUpstream);
    const out = JSON.parse(res.body.toString("utf8")) as { QueueUrls: string[]; NextToken?: string };
    expect([out.QueueUrls.length, out.NextToken]).toEqual([1_000, undefined]);
  });
});
