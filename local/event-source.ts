// The local stand-in for Lambda's SQS event source mapping, run only for the mappings the
// synthesized template declares (stack-policies.ts), refused where AWS refuses them
// (checkMapping), and behaving as Lambda documents (docs.aws.amazon.com/lambda/latest/dg/
// services-sqs-scaling.html, services-sqs-errorhandling.html, services-sqs-parameters.html):
// - the queue is long-polled (WaitTimeSeconds 20), idle or not, with the function's execution
//   role;
// - a batch is what one receive returns (BatchSize, at most 10 a receive), or, with a batching
//   window, what receives gather within it;
// - with ScalingConfig.MaximumConcurrency there are never more invocations in flight than that, and
//   no poller receives while they are all taken (Lambda does not read what it cannot invoke);
// - a throttled invoke (TooManyRequestsException) is retried with a growing backoff while the batch
//   is hidden, then left to its visibility timeout: not lost, not failed;
// - a function error or timeout leaves the whole batch to its visibility timeout; with
//   ReportBatchItemFailures only the reported records stay (a reported id that is not in the batch
//   fails it whole); without it, a response is ignored and the batch deleted;
// - SQS itself moves a message received maxReceiveCount times to the DLQ (its redrive policy).
// Long polling, not the doorbell an earlier version had (the gateway's word that a message was
// sent): a doorbell is not how Lambda finds messages, and a long poll is. One long poll at a time,
// where Lambda runs five pollers: fauxqs wakes every waiting poll for each message, so five would
// cost four empty receives a message on this machine's CPU, and what they would cost on AWS is
// charged by bench:cost from the documented five (test/bench/cost.ts). The batches and the
// invocations in flight are the same either way: a receive hands its batch to an invocation and
// polls again at once while a slot is free.
import { setMaxListeners } from "node:events";
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { sqsClient } from "../lib/aws/clients.js";
import { log } from "../lib/log.js";
import { LambdaServiceError } from "./lambda.js";

/** A throttled batch's retries: from the first wait, doubling up to the last. */
const THROTTLE_BACKOFF_MS = { first: 100, max: 2000 } as const;
/** SQS's longest long poll, the one Lambda's pollers make. */
const WAIT_TIME_SECONDS = 20;
/** Without MaximumConcurrency: invocations at once, as Lambda scales them (to 1,000; here 64). */
const UNBOUNDED_INVOCATIONS = 64;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An AWS::Lambda::EventSourceMapping of the template, as Lambda reads it. */
export interface EventSourceMapping {
  /** the function's name, for messages */
  functionName: string;
  queueArn: string;
  /** default 10 */
  batchSize?: number;
  /** default 0 */
  maximumBatchingWindowSeconds?: number;
  functionResponseTypes?: string[];
  /** ScalingConfig.MaximumConcurrency */
  maximumConcurrency?: number;
  enabled?: boolean;
}

/**
 * Why AWS would refuse the mapping for a function of `functionTimeoutSeconds` on a queue, if it
 * would; and, stricter than AWS, a mapping without ReportBatchItemFailures to a handler that
 * answers batchItemFailures (`answersBatchItemFailures`): Lambda would ignore them and delete
 * every record of the batch, the failed ones lost.
 */
export function mappingRefusal(
  m: EventSourceMapping,
  queue: { visibilityTimeoutSeconds: number; fifo: boolean },
  functionTimeoutSeconds: number,
  answersBatchItemFailures = false,
): string | undefined {
  const batch = m.batchSize ?? 10;
  const window = m.maximumBatchingWindowSeconds ?? 0;
  if (!Number.isInteger(batch) || batch < 1 || batch > (queue.fifo ? 10 : 10_000))
    return `BatchSize must be an integer from 1 to ${queue.fifo ? 10 : 10_000}, got ${batch}`;
  if (!Number.isInteger(window) || window < 0 || window > 300)
    return `MaximumBatchingWindowInSeconds must be an integer from 0 to 300, got ${window}`;
  if (queue.fifo && window > 0) return "MaximumBatchingWindowInSeconds is not supported for FIFO queues";
  if (batch > 10 && window < 1)
    return `BatchSize ${batch} is above 10: MaximumBatchingWindowInSeconds must be at least 1`;
  const max = m.maximumConcurrency;
  if (max !== undefined && !(Number.isInteger(max) && max >= 2 && max <= 1000))
    return `ScalingConfig.MaximumConcurrency must be an integer from 2 to 1000, got ${max}`;
  for (const t of m.functionResponseTypes ?? [])
    if (t !== "ReportBatchItemFailures")
      return `FunctionResponseTypes may only hold ReportBatchItemFailures, got ${t}`;
  if (answersBatchItemFailures && !(m.functionResponseTypes ?? []).includes("ReportBatchItemFailures"))
    return `${m.functionName} answers batchItemFailures but FunctionResponseTypes lacks ReportBatchItemFailures: Lambda would delete the failed records`;
  if (queue.visibilityTimeoutSeconds < functionTimeoutSeconds)
    return `Queue visibility timeout: ${queue.visibilityTimeoutSeconds} seconds is less than Function timeout: ${functionTimeoutSeconds} seconds`;
  return undefined;
}

export interface EventSource {
  stop(): Promise<void>;
}

export interface EventSourceOptions {
  mapping: EventSourceMapping;
  queueUrl: string;
  /** the queue's own visibility timeout (seconds): how long a received batch stays hidden */
  visibilityTimeoutSeconds: number;
  /** the function's invoke (Lambda's synchronous invoke: a throw is a function error or a throttle) */
  handler: (e: SQSEvent) => Promise<SQSBatchResponse | undefined>;
  /** ignore MaximumConcurrency (tests of the starvation it prevents) */
  unbounded?: boolean;
}

/** abort listeners one receive adds at most: the SDK's retry race, the in-process or HTTP transport */
const LISTENERS_PER_RECEIVE = 3;

/**
 * Starts polling for `opts.mapping` (which mappingRefusal must have passed). Call in the
 * function's identity: the pollers receive and delete with its role, as Lambda's do.
 */
export function startEventSource(opts: EventSourceOptions): EventSource {
  const { mapping } = opts;
  if (mapping.enabled === false) return { stop: async () => {} };
  const abort = new AbortController();
  setMaxListeners(LISTENERS_PER_RECEIVE + 1, abort.signal);
  let running = true;
  const limit = opts.unbounded
    ? UNBOUNDED_INVOCATIONS
    : (mapping.maximumConcurrency ?? UNBOUNDED_INVOCATIONS);
  const batchSize = mapping.batchSize ?? 10;
  const windowMs = (mapping.maximumBatchingWindowSeconds ?? 0) * 1000;
  const reportsFailures = (mapping.functionResponseTypes ?? []).includes("ReportBatchItemFailures");
  const visibilityMs = opts.visibilityTimeoutSeconds * 1000;

  // Slots: a receive takes one, and the invocation of what it received keeps it.
  let taken = 0;
  const waiting: (() => void)[] = [];
  const takeSlot = async (): Promise<void> => {
    while (taken >= limit) await new Promise<void>((r) => waiting.push(r));
    taken++;
  };
  const freeSlot = () => {
    taken--;
    waiting.shift()?.();
  };
  const invocations = new Set<Promise<void>>();

  const receive = async (max: number, waitSeconds: number) => {
    const r = await sqsClient().send(
      new ReceiveMessageCommand({
        QueueUrl: opts.queueUrl,
        MaxNumberOfMessages: Math.min(10, max),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp", "SenderId"],
        MessageAttributeNames: ["All"],
      }),
      { abortSignal: abort.signal },
    );
    return r.Messages ?? [];
  };

  /** One batch: a long poll, then, with a window, what more comes within it. */
  const batch = async () => {
    const messages = await receive(batchSize, WAIT_TIME_SECONDS);
    if (!messages.length || windowMs === 0) return messages;
    const until = Date.now() + windowMs;
    while (running && messages.length < batchSize && Date.now() < until) {
      const wait = Math.min(WAIT_TIME_SECONDS, Math.ceil((until - Date.now()) / 1000));
      messages.push(...(await receive(batchSize - messages.length, wait)));
    }
    return messages;
  };

  const invoke = async (records: SQSRecord[]): Promise<void> => {
    const hiddenUntil = Date.now() + visibilityMs;
    let backoff: number = THROTTLE_BACKOFF_MS.first;
    let response: SQSBatchResponse | undefined;
    for (;;) {
      try {
        response = await opts.handler({ Records: records });
        break;
      } catch (e) {
        if (throttled(e) && running && Date.now() + backoff < hiddenUntil) {
          await sleep(backoff);
          backoff = Math.min(THROTTLE_BACKOFF_MS.max, backoff * 2);
          continue;
        }
        // a function error, a timeout, or throttled until the batch shows again: all of it comes
        // back after its visibility timeout
        log.warn(throttled(e) ? "event_source.throttled" : "event_source.function_failed", {
          function: mapping.functionName,
          messages: records.length,
          error: e,
        });
        return;
      }
    }
    const failures = response?.batchItemFailures ?? [];
    let failed = new Set<string>();
    if (failures.length && !reportsFailures) {
      // Lambda ignores the response and deletes the whole batch: the failures would be lost
      log.error("event_source.batch_item_failures_ignored", {
        function: mapping.functionName,
        failures: failures.length,
        reason: "the mapping's FunctionResponseTypes lacks ReportBatchItemFailures",
      });
    } else if (failures.length) {
      const ids = new Set(records.map((r) => r.messageId));
      failed = failures.every((f) => f.itemIdentifier && ids.has(f.itemIdentifier))
        ? new Set(failures.map((f) => f.itemIdentifier))
        : ids;
    }
    const done = records.filter((r) => !failed.has(r.messageId));
    for (let i = 0; i < done.length; i += 10) {
      const chunk = done.slice(i, i + 10);
      const out = await sqsClient().send(
        new DeleteMessageBatchCommand({
          QueueUrl: opts.queueUrl,
          Entries: chunk.map((r, k) => ({ Id: String(k), ReceiptHandle: r.receiptHandle })),
        }),
      );
      for (const f of out.Failed ?? [])
        log.warn("event_source.delete_failed", { function: mapping.functionName, code: f.Code });
    }
  };

  const poller = async () => {
    while (running) {
      await takeSlot();
      let kept = false;
      try {
        if (!running) break;
        const messages = await batch();
        if (!messages.length) continue;
        const records = messages.map((m) => recordOf(m, mapping.queueArn));
        kept = true;
        const run: Promise<void> = invoke(records)
          .catch((e) => log.warn("event_source.batch_failed", { function: mapping.functionName, error: e }))
          .finally(() => {
            invocations.delete(run);
            freeSlot();
          });
        invocations.add(run);
      } catch (e) {
        if (!running) break;
        log.warn("event_source.poll_failed", { function: mapping.functionName, error: e });
        await sleep(500);
      } finally {
        if (!kept) freeSlot();
      }
    }
  };
  const loops = [poller()];
  return {
    async stop() {
      running = false;
      abort.abort();
      for (const wake of waiting.splice(0)) wake();
      await Promise.allSettled(loops);
      await Promise.allSettled([...invocations]);
    },
  };
}

function recordOf(
  m: {
    MessageId?: string;
    ReceiptHandle?: string;
    Body?: string;
    MD5OfBody?: string;
    Attributes?: Record<string, string>;
    MessageAttributes?: Record<string, { DataType?: string; StringValue?: string }>;
  },
  queueArn: string,
): SQSRecord {
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? "",
    attributes: {
      ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? "1",
      SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
      // who sent it, as SQS names the signer (the IAM gateway keeps it locally)
      SenderId: m.Attributes?.SenderId ?? "",
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
        k,
        {
          dataType: v.DataType ?? "String",
          stringValue: v.StringValue,
          stringListValues: [],
          binaryListValues: [],
        },
      ]),
    ),
    md5OfBody: m.MD5OfBody ?? "",
    eventSource: "aws:sqs",
    eventSourceARN: queueArn,
    awsRegion: process.env.AWS_REGION ?? "us-east-1",
  };
}

/** Lambda refused the invoke for concurrency: the function never ran. */
function throttled(e: unknown): boolean {
  return e instanceof LambdaServiceError && e.name === "TooManyRequestsException";
}
