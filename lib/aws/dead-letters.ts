// Dead-letter queues for operators: list what is parked there (with the reason novaless
// recorded, or SQS's receive count when it gave up retrying) and redrive it to its source queue.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { resources } from "../config.js";
import { DLQ_SUFFIX } from "../resources.js";
import { sqsClient } from "./clients.js";

export const REASON_ATTRIBUTE = "novaless.dead_letter_reason";
export const SOURCE_ATTRIBUTE = "novaless.source_queue";
const ATTRIBUTE_READS_AT_ONCE = 32;
/** SQS's largest ListQueues page */
const LIST_QUEUES_PAGE = 1000;

export interface DeadLetterQueue {
  url: string;
  name: string;
  /** the queue its messages came from (the DLQ's name without the suffix); "" for compute-events' */
  sourceUrl: string;
  approximateMessages: number;
}

export interface DeadLetter {
  messageId: string;
  body: string;
  /** why novaless parked it, or why SQS did (it kept failing) */
  reason: string;
  receiveCount: number;
  sentAt: string;
}

/** A dead-letter queue whose messages have nowhere to go back to. */
export class NotRedrivable extends Error {
  override name = "NotRedrivable";
}

/** The build-requests DLQ and every compute host's DLQ (found by the compute queue prefix). */
export async function listDeadLetterQueues(): Promise<DeadLetterQueue[]> {
  const { buildRequestsQueueUrl, buildRequestsDlqUrl, computeEventsDlqUrl, computeQueuePrefix } = resources();
  const pairs: [string, string][] = [];
  if (buildRequestsDlqUrl) pairs.push([buildRequestsDlqUrl, buildRequestsQueueUrl]);
  // hosts' reports compute-events could not apply (malformed, or speaking for another host); they
  // came through its function URL, not a queue, so there is nothing to redrive them to
  if (computeEventsDlqUrl) pairs.push([computeEventsDlqUrl, ""]);
  // MaxResults set: without it SQS answers at most 1,000 queues and no NextToken, so past about
  // 500 hosts (two queues each) their DLQs would silently fall out of sight.
  let next: string | undefined;
  do {
    const r = await sqsClient().send(
      new ListQueuesCommand({
        QueueNamePrefix: computeQueuePrefix,
        MaxResults: LIST_QUEUES_PAGE,
        NextToken: next,
      }),
    );
    for (const url of r.QueueUrls ?? []) {
      if (url.endsWith(DLQ_SUFFIX)) pairs.push([url, url.slice(0, -DLQ_SUFFIX.length)]);
    }
    next = r.NextToken;
  } while (next);
  // One attribute read per queue, a fleet's worth of them: several at a time.
  const out: DeadLetterQueue[] = [];
  let next_ = 0;
  const worker = async () => {
    while (next_ < pairs.length) {
      const [url, sourceUrl] = pairs[next_++]!;
      const a = await sqsClient().send(
        new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages"] }),
      );
      out.push({
        url,
        name: url.slice(url.lastIndexOf("/") + 1),
        sourceUrl,
        approximateMessages: Number(a.Attributes?.ApproximateNumberOfMessages ?? 0),
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(ATTRIBUTE_READS_AT_ONCE, pairs.length) }, worker));
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

function toDeadLetter(m: Message): DeadLetter {
  const count = Number(m.Attributes?.ApproximateReceiveCount ?? 0);
  return {
    messageId: m.MessageId ?? "",
    body: m.Body ?? "",
    reason:
      m.MessageAttributes?.[REASON_ATTRIBUTE]?.StringValue ??
      "kept failing: SQS moved it here after maxReceiveCount receives",
    receiveCount: count,
    sentAt: new Date(Number(m.Attributes?.SentTimestamp ?? 0)).toISOString(),
  };
}

async function receive(url: string, max: number, visibility: number): Promise<Message[]> {
  const r = await sqsClient().send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: Math.min(10, max),
      VisibilityTimeout: visibility,
      WaitTimeSeconds: 0,
      MessageAttributeNames: ["All"],
      MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp"],
    }),
  );
  return r.Messages ?? [];
}

/** Look without taking: messages are made visible again right after they are read. */
export async function peekDeadLetters(url: string, max = 100): Promise<DeadLetter[]> {
  const seen = new Map<string, Message>();
  for (let empty = 0; seen.size < max && empty < 2; ) {
    const batch = await receive(url, max - seen.size, 30);
    if (!batch.length) empty++;
    for (const m of batch) seen.set(m.MessageId ?? "", m);
  }
  const all = [...seen.values()];
  for (let i = 0; i < all.length; i += 10) {
    await sqsClient().send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: all
          .slice(i, i + 10)
          .map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
      }),
    );
  }
  return all.map(toDeadLetter);
}

/**
 * Move up to `max` messages back to the source queue: send first, then delete, so a crash in
 * between duplicates a message (every consumer is idempotent) and never loses one.
 */
export async function redrive(dlq: DeadLetterQueue, max?: number): Promise<number> {
  if (!dlq.sourceUrl)
    throw new NotRedrivable(
      "it has no source queue to redrive to: its messages are hosts' reports, which came through compute-events' function URL and are trusted only from the host that signed them",
    );
  // Only what is there now: a message that is still poison comes straight back, and draining
  // "until empty" would move it round forever.
  const limit = Math.min(max ?? Number.POSITIVE_INFINITY, (await peekDeadLetters(dlq.url, 10_000)).length);
  let moved = 0;
  while (moved < limit) {
    const batch = await receive(dlq.url, Math.min(10, limit - moved), 60);
    if (!batch.length) break;
    for (const m of batch) {
      await sqsClient().send(new SendMessageCommand({ QueueUrl: dlq.sourceUrl, MessageBody: m.Body ?? "" }));
      await sqsClient().send(new DeleteMessageCommand({ QueueUrl: dlq.url, ReceiptHandle: m.ReceiptHandle }));
      moved++;
    }
  }
  return moved;
}
