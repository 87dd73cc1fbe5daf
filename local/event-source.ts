// The local stand-in for Lambda's SQS event source mapping: long-poll a queue, hand batches to
// the handler, delete what succeeded and leave failures to be redelivered (and, after the
// queue's maxReceiveCount, moved to its DLQ by SQS itself).
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
}

export function startEventSource(opts: EventSourceOptions): EventSource {
  const abort = new AbortController();
  let running = true;
  const poller = async () => {
    while (running) {
      try {
        const r = await sqsClient().send(
          new ReceiveMessageCommand({
            QueueUrl: opts.queueUrl,
            MaxNumberOfMessages: opts.batchSize ?? 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp", "SenderId"],
          }),
          { abortSignal: abort.signal },
        );
        const messages = r.Messages ?? [];
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
  const loops = Array.from({ length: opts.pollers ?? 2 }, () => poller());
  return {
    async stop() {
      running = false;
      abort.abort();
      await Promise.allSettled(loops);
    },
  };
}
