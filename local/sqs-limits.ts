// SQS's documented limits that fauxqs (and LocalStack) do not model, enforced at the IAM gateway
// for every transport (in process or over sockets) and for an external SQS too
// (NOVALESS_EXTERNAL_AWS=1). Dev only: the local runtime refuses what AWS refuses, so a fleet-scale
// bug fails a test here rather than in a deployed fleet.
//
// - ListQueues. "If you do not set MaxResults, the response includes a maximum of 1,000 results
//   and the NextToken value in the response is null. If you set MaxResults, the response includes
//   a value for NextToken if there are additional results" (SQS Developer Guide, "Amazon SQS list
//   queue pagination"; MaxResults "Value range is 1 to 1000", API_ListQueues). fauxqs answers
//   every queue and ignores NextToken; LocalStack adds a NextToken without MaxResults. Here the
//   upstream's whole list is read (listAll: first without MaxResults, then, on exactly 1,000 and
//   no token, with MaxResults on every page, so an SQS that pages as AWS does is read whole), and
//   paged as SQS pages it (by queue name, the token opaque).
// - CreateQueue of an existing name. "A queue with this name already exists. Amazon SQS returns
//   this error only if the request includes attributes whose values differ from those of the
//   existing queue" (QueueNameExists, API_CreateQueue). Values are compared with what SQS stored,
//   and SQS stores a RedrivePolicy in its own form: compact, deadLetterTargetArn first and
//   maxReceiveCount a number, whatever was sent (AWS CLI's get-queue-attributes example shows
//   `{"deadLetterTargetArn":"arn:…:MyDeadLetterQueue","maxReceiveCount":1000}` for a policy set
//   with `"maxReceiveCount":"1000"`). So sending the same policy in another form is refused
//   (JustSaying#208: `{"maxReceiveCount":"5", "deadLetterTargetArn":…}` re-sent verbatim got
//   QueueAlreadyExists). The JSON protocol's error is `com.amazonaws.sqs#QueueNameExists` with the
//   query-compatible code QueueAlreadyExists in x-amzn-query-error, which the SDK v3 client turns
//   into its QueueNameExists exception.
//
// What SQS stored is known for the queues created through the gateway (SetQueueAttributes and
// DeleteQueue keep it current); a queue it never saw created (an external SQS's older queues) is
// left to the upstream's own judgement.
import { randomUUID } from "node:crypto";
import type { RawRequest, RawResponse, Upstream } from "./iam/gateway.js";

/** SQS's cap on one ListQueues answer, and on MaxResults. */
export const LIST_QUEUES_MAX = 1000;

/**
 * SQS's defaults (API_SetQueueAttributes), for a request that names an attribute the existing
 * queue was created without. Attributes whose default is not listed are compared only once set.
 */
const DEFAULTS: Record<string, string> = {
  DelaySeconds: "0",
  MessageRetentionPeriod: "345600",
  ReceiveMessageWaitTimeSeconds: "0",
  VisibilityTimeout: "30",
};

/** A queue's attribute as SQS stores it: the redrive policy in SQS's own form, the rest as sent. */
export function storedAttribute(name: string, value: string): string {
  if (name !== "RedrivePolicy") return value;
  try {
    const p = JSON.parse(value) as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
    return JSON.stringify({
      deadLetterTargetArn: p.deadLetterTargetArn,
      maxReceiveCount: Number(p.maxReceiveCount),
    });
  } catch {
    return value; // not JSON: SQS refuses it on its own (the upstream answers)
  }
}

export interface SqsLimits {
  /** One SQS request after IAM allowed it: SQS's answer, the upstream's or the limits'. */
  call(op: string, req: RawRequest, upstream: Upstream): Promise<RawResponse>;
}

interface Known {
  url: string;
  /** attribute name → value as SQS stored it */
  attributes: Map<string, string>;
}

function answer(status: number, body: unknown, queryError?: string): RawResponse {
  const bytes = Buffer.from(JSON.stringify(body));
  return {
    status,
    headers: {
      "content-type": "application/x-amz-json-1.0",
      "x-amzn-requestid": randomUUID(),
      "content-length": String(bytes.length),
      ...(queryError ? { "x-amzn-query-error": queryError } : {}),
    },
    body: bytes,
  };
}

const invalidParameter = (message: string) =>
  answer(400, { __type: "com.amazonaws.sqs#InvalidParameterValue", message }, "InvalidParameterValue;Sender");

const nameOfUrl = (url: string) => url.slice(url.lastIndexOf("/") + 1);

function parse(body: Buffer): Record<string, unknown> | undefined {
  try {
    return body.length ? (JSON.parse(body.toString("utf8")) as Record<string, unknown>) : {};
  } catch {
    return undefined;
  }
}

/** The same request with another JSON body (the emulators do not check the signature). */
function withBody(req: RawRequest, body: unknown): RawRequest {
  const bytes = Buffer.from(JSON.stringify(body));
  return { ...req, headers: { ...req.headers, "content-length": String(bytes.length) }, body: bytes };
}

export function sqsLimits(): SqsLimits {
  const known = new Map<string, Known>();

  /**
   * Every queue URL under the prefix, however the upstream pages. Asked first without MaxResults:
   * fauxqs then answers every queue (and truncates at MaxResults without a NextToken, so it must
   * not be given one); LocalStack answers a NextToken, followed. An answer of exactly 1,000 and no
   * token may be SQS's cap (no NextToken without MaxResults): the list is read again with
   * MaxResults on every page, following SQS's tokens.
   */
  async function listAll(
    req: RawRequest,
    prefix: string | undefined,
    upstream: Upstream,
  ): Promise<{ urls: string[] } | { error: RawResponse }> {
    const pages = async (withMax: boolean): Promise<{ urls: string[] } | { error: RawResponse }> => {
      const urls: string[] = [];
      let token: string | undefined;
      do {
        const page = {
          QueueNamePrefix: prefix,
          ...(withMax || token ? { MaxResults: LIST_QUEUES_MAX } : {}),
          ...(token ? { NextToken: token } : {}),
        };
        const res = await upstream(withBody(req, page));
        if (res.status !== 200) return { error: res };
        const out = parse(res.body) as { QueueUrls?: string[]; NextToken?: string } | undefined;
        urls.push(...(out?.QueueUrls ?? []));
        token = out?.NextToken ?? undefined;
      } while (token);
      return { urls };
    };
    let read = await pages(false);
    if ("urls" in read && read.urls.length === LIST_QUEUES_MAX) read = await pages(true);
    if ("error" in read) return read;
    return { urls: [...new Set(read.urls)].sort((a, b) => (nameOfUrl(a) < nameOfUrl(b) ? -1 : 1)) };
  }

  async function listQueues(req: RawRequest, body: Record<string, unknown>, upstream: Upstream) {
    const max = body.MaxResults;
    if (
      max !== undefined &&
      max !== null &&
      !(Number.isInteger(max) && (max as number) >= 1 && (max as number) <= LIST_QUEUES_MAX)
    ) {
      return invalidParameter(
        `Value ${String(max)} for parameter MaxResults is invalid. Reason: MaxResults must be between 1 and ${LIST_QUEUES_MAX}.`,
      );
    }
    const prefix = typeof body.QueueNamePrefix === "string" ? body.QueueNamePrefix : undefined;
    let after: string | undefined;
    if (typeof body.NextToken === "string" && body.NextToken) {
      const t = parseToken(body.NextToken);
      if (!t || t.prefix !== (prefix ?? "")) return invalidParameter("Invalid NextToken value.");
      after = t.after;
    }
    const all = await listAll(req, prefix, upstream);
    if ("error" in all) return all.error;
    const rest = after === undefined ? all.urls : all.urls.filter((u) => nameOfUrl(u) > after!);
    const page = rest.slice(0, typeof max === "number" ? max : LIST_QUEUES_MAX);
    // without MaxResults SQS never answers a NextToken: what is past 1,000 is out of sight
    const more = typeof max === "number" && rest.length > page.length;
    return answer(200, {
      ...(page.length ? { QueueUrls: page } : {}),
      ...(more ? { NextToken: token(prefix ?? "", nameOfUrl(page[page.length - 1]!)) } : {}),
    });
  }

  function createQueue(body: Record<string, unknown>): RawResponse | undefined {
    const existing = known.get(String(body.QueueName ?? ""));
    if (!existing) return undefined;
    for (const [name, value] of Object.entries((body.Attributes ?? {}) as Record<string, string>)) {
      const stored = existing.attributes.get(name) ?? DEFAULTS[name];
      if (stored !== undefined && stored !== value) {
        return answer(
          400,
          {
            __type: "com.amazonaws.sqs#QueueNameExists",
            message: `A queue already exists with the same name and a different value for attribute ${name}`,
          },
          "QueueAlreadyExists;Sender",
        );
      }
    }
    // Answered here: the upstream compares with what it was sent, not with what SQS stored.
    return answer(200, { QueueUrl: existing.url });
  }

  /** After the upstream's 200: what SQS stored. */
  function observe(op: string, body: Record<string, unknown>, res: RawResponse): void {
    const stored = (attrs: unknown) =>
      Object.entries((attrs ?? {}) as Record<string, string>).map(
        ([k, v]) => [k, storedAttribute(k, v)] as [string, string],
      );
    if (op === "CreateQueue") {
      const url = String((parse(res.body) as { QueueUrl?: string } | undefined)?.QueueUrl ?? "");
      if (url) known.set(String(body.QueueName ?? ""), { url, attributes: new Map(stored(body.Attributes)) });
    } else if (op === "SetQueueAttributes") {
      const q = known.get(nameOfUrl(String(body.QueueUrl ?? "")));
      for (const [k, v] of stored(body.Attributes)) q?.attributes.set(k, v);
    } else if (op === "DeleteQueue") {
      known.delete(nameOfUrl(String(body.QueueUrl ?? "")));
    }
  }

  return {
    async call(op, req, upstream) {
      const body = parse(req.body);
      if (!body) return upstream(req);
      if (op === "ListQueues") return listQueues(req, body, upstream);
      if (op === "CreateQueue") {
        const answered = createQueue(body);
        if (answered) return answered;
      }
      const res = await upstream(req);
      if (res.status === 200) observe(op, body, res);
      return res;
    },
  };
}

function token(prefix: string, after: string): string {
  return Buffer.from(JSON.stringify({ prefix, after })).toString("base64url");
}

function parseToken(t: string): { prefix: string; after: string } | undefined {
  try {
    const v = JSON.parse(Buffer.from(t, "base64url").toString("utf8")) as {
      prefix?: unknown;
      after?: unknown;
    };
    return typeof v.prefix === "string" && typeof v.after === "string"
      ? { prefix: v.prefix, after: v.after }
      : undefined;
  } catch {
    return undefined;
  }
}
