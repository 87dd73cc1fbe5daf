// The local stand-in for Lambda's SQS event source mapping: long-poll a queue, hand batches to
// the handler, delete what succeeded and leave failures to be redelivered (and, after the
// queue's maxReceiveCount, moved to its DLQ by SQS itself).
// With a doorbell (the IAM gateway's "a message was sent to this queue"), the pollers are pushed
// to instead of polling: one poller receives (without waiting) per message sent, and a slow sweep
// catches what no send announced (a failed message visible again, an emulator's own redrive). A
// long poll of every poller would wake them all for each message (fauxqs does), each an SQS call.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { sqsClient } from "../lib/aws/clients.js";
import { log } from "../lib/log.js";

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
  /** concurrent pollers, as Lambda scales its pollers */
  pollers?: number;
  /**
   * Registers `ring`, to be called for each message sent to the queue (after its delay); the
   * pollers then receive when rung instead of long-polling.
   */
  doorbell?: (ring: () => void) => void;
  /** with a doorbell: how often, in all, the pollers look without being rung (ms) */
  sweepMs?: number;
}

export function startEventSource(opts: EventSourceOptions): EventSource {
  const abort = new AbortController();
  let running = true;
  const pollers = opts.pollers ?? 2;
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
        let failed = new Set<string>();
        try {
          const res = await opts.handler({ Records: records });
          failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
        } catch (e) {
          log.error("event_source.handler_failed", { queue_url: opts.queueUrl, error: e });
          failed = new Set(records.map((rec) => rec.messageId));
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
