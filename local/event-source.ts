// The local stand-in for Lambda's SQS event source mapping: long-poll a queue, hand batches to
// the handler, delete what succeeded and leave failures to be redelivered (and, after the
// queue's maxReceiveCount, moved to its DLQ by SQS itself).
// With a doorbell (the IAM gateway's "a message was sent to this queue"), the pollers are pushed
// to instead of polling: one poller receives (without waiting) per message sent, and a slow sweep
// catches what no send announced (a failed message visible again, an emulator's own redrive). A
// long poll of every poller would wake them all for each message (fauxqs does), each an SQS call.
// Concurrency, as Lambda's SQS event source mapping (docs.aws.amazon.com/lambda/latest/dg/
// services-sqs-scaling.html, services-sqs-errorhandling.html): with ScalingConfig.MaximumConcurrency
// it never has more invocations in flight than that (one poller each here); a throttled invoke
// (TooManyRequestsException) is retried with a growing backoff while the batch is still hidden,
// then left: its messages come back after the queue's visibility timeout, not lost, not failed.
import { setMaxListeners } from "node:events";
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { sqsClient } from "../lib/aws/clients.js";
import { log } from "../lib/log.js";
import { LambdaServiceError } from "./lambda.js";

/** A throttled batch's retries: from the first wait, doubling up to the last. */
const THROTTLE_BACKOFF_MS = { first: 100, max: 2000 } as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface EventSource {
  stop(): Promise<void>;
}

export interface EventSourceOptions {
  queueUrl: string;
  queueArn: string;
  handler: (e: SQSEvent) => Promise<SQSBatchResponse>;
  batchSize?: number;
  /** how soon a failed message is retried locally (Lambda would wait for the visibility timeout) */
  retryDelaySeconds?: number;
  /** concurrent pollers, as Lambda scales its pollers (without maximumConcurrency) */
  pollers?: number;
  /**
   * The mapping's ScalingConfig.MaximumConcurrency (2–1000): at most this many invocations at
   * once; it replaces `pollers`.
   */
  maximumConcurrency?: number;
  /** the queue's visibility timeout (seconds): how long a throttled batch is retried (default 30) */
  visibilityTimeoutSeconds?: number;
  /**
   * Registers `ring`, to be called for each message sent to the queue (after its delay); the
   * pollers then receive when rung instead of long-polling.
   */
  doorbell?: (ring: () => void) => void;
  /** with a doorbell: how often, in all, the pollers look without being rung (ms) */
  sweepMs?: number;
}

/** abort listeners one receive adds at most: the SDK's retry race, the in-process or HTTP transport */
const LISTENERS_PER_RECEIVE = 3;

export function startEventSource(opts: EventSourceOptions): EventSource {
  const abort = new AbortController();
  let running = true;
  if (
    opts.maximumConcurrency !== undefined &&
    !(
      Number.isInteger(opts.maximumConcurrency) &&
      opts.maximumConcurrency >= 2 &&
      opts.maximumConcurrency <= 1000
    )
  )
    throw new Error(`MaximumConcurrency must be an integer from 2 to 1000, got ${opts.maximumConcurrency}`);
  const pollers = opts.maximumConcurrency ?? opts.pollers ?? 2;
  // Every poller's receive listens on this one signal, a few listeners each (the SDK's retry
  // race, the transport): more than Node's default 10 once the pollers are many, and no leak.
  setMaxListeners(pollers * LISTENERS_PER_RECEIVE, abort.signal);
  const visibilityMs = (opts.visibilityTimeoutSeconds ?? 30) * 1000;
  const batchSize = opts.batchSize ?? 10;
  // rings not yet taken by a poller, and the pollers waiting for one
  let rings = 0;
  const waiting = new Set<() => void>();
  const ring = () => {
    if (!running) return;
    const next = waiting.values().next();
    if (next.done) rings++;
    else next.value();
  };
  opts.doorbell?.(ring);
  /** until rung, or the poller's share of the sweep has passed */
  const rung = (): Promise<void> => {
    if (rings > 0) {
      rings--;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, (opts.sweepMs ?? 1000) * pollers);
      waiting.add(done);
    });
  };
  const poller = async () => {
    let idle = true;
    while (running) {
      try {
        if (opts.doorbell && idle) await rung();
        if (!running) break;
        const r = await sqsClient().send(
          new ReceiveMessageCommand({
            QueueUrl: opts.queueUrl,
            MaxNumberOfMessages: batchSize,
            WaitTimeSeconds: opts.doorbell ? 0 : 1,
            MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp", "SenderId"],
          }),
          { abortSignal: abort.signal },
        );
        const messages = r.Messages ?? [];
        // Each message taken answers its ring; an empty answer, every ring so far. A full batch:
        // more may wait, so look again at once (and wake another poller). A smaller one took all
        // there was: the next receive waits for a ring (a message sent meanwhile rang already),
        // not an empty receive after every batch.
        rings = messages.length ? Math.max(0, rings - (messages.length - 1)) : 0;
        idle = messages.length < batchSize;
        if (messages.length === batchSize) ring();
        if (!messages.length) continue;
        const records: SQSRecord[] = messages.map((m) => ({
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
          messageAttributes: {},
          md5OfBody: m.MD5OfBody ?? "",
          eventSource: "aws:sqs",
          eventSourceARN: opts.queueArn,
          awsRegion: process.env.AWS_REGION ?? "us-east-1",
        }));
        const hiddenUntil = Date.now() + visibilityMs;
        let failed = new Set<string>();
        let backoff: number = THROTTLE_BACKOFF_MS.first;
        let left = false;
        for (;;) {
          try {
            const res = await opts.handler({ Records: records });
            failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
          } catch (e) {
            if (throttled(e)) {
              if (running && Date.now() + backoff < hiddenUntil) {
                await sleep(backoff);
                backoff = Math.min(THROTTLE_BACKOFF_MS.max, backoff * 2);
                continue;
              }
              left = true;
            } else {
              log.error("event_source.handler_failed", { queue_url: opts.queueUrl, error: e });
              failed = new Set(records.map((rec) => rec.messageId));
            }
          }
          break;
        }
        if (left) {
          // The batch goes back to the queue when its visibility timeout runs out.
          log.warn("event_source.throttled", { queue_url: opts.queueUrl, messages: records.length });
          continue;
        }
        const done = messages.filter((m) => !failed.has(m.MessageId!));
        const retry = messages.filter((m) => failed.has(m.MessageId!));
        if (done.length) {
          await sqsClient().send(
            new DeleteMessageBatchCommand({
              QueueUrl: opts.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
        }
        if (retry.length) {
          await sqsClient().send(
            new ChangeMessageVisibilityBatchCommand({
              QueueUrl: opts.queueUrl,
              Entries: retry.map((m, i) => ({
                Id: String(i),
                ReceiptHandle: m.ReceiptHandle!,
                VisibilityTimeout: opts.retryDelaySeconds ?? 2,
              })),
            }),
          );
        }
      } catch (e) {
        if (!running) break;
        log.warn("event_source.poll_failed", { queue_url: opts.queueUrl, error: e });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  const loops = Array.from({ length: pollers }, () => poller());
  return {
    async stop() {
      running = false;
      for (const wake of [...waiting]) wake();
      abort.abort();
      await Promise.allSettled(loops);
    },
  };
}

/** Lambda refused the invoke for concurrency: the function never ran. */
function throttled(e: unknown): boolean {
  return e instanceof LambdaServiceError && e.name === "TooManyRequestsException";
}
