// Deletes of one queue's handled messages, sent in DeleteMessageBatch requests (up to 10 a
// request, SQS's limit) instead of one DeleteMessage each, as AWS's own buffered SQS client does
// (the SDK for Java's AmazonSQSBufferedAsyncClient: maxBatchOpenMs). A compute host deletes a
// message only once its work is done and reported (spooled), so a delete that waits a moment
// changes nothing but the request count: a host that dies meanwhile leaves the message to SQS,
// which hands it out again after its visibility timeout, as for a host that died just before its
// delete; every cast is idempotent on the host (at-least-once delivery).
import { DeleteMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { sqsClient } from "./clients.js";

/** SQS's most entries in one DeleteMessageBatch. */
export const SQS_BATCH_MAX = 10;

export interface DeleteBatchOptions {
  /**
   * The longest a delete waits for others to join its request (ms). It must stay well under the
   * queue's visibility timeout, or the message shows again before its delete.
   */
  maxWaitMs: number;
  /** sent as soon as this many wait (≤ 10; a caller whose work waits on its deletes: its concurrency) */
  maxEntries?: number;
  /** names the queue's owner in errors (a host) */
  owner?: string;
  client?: () => SQSClient;
}

interface Waiting {
  receiptHandle: string;
  messageId: string;
  resolve: () => void;
  reject: (e: Error) => void;
}

/** One queue's waiting deletes. */
export class DeleteBatch {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly maxEntries: number;

  constructor(
    readonly queueUrl: string,
    private readonly opts: DeleteBatchOptions,
  ) {
    this.maxEntries = Math.max(1, Math.min(SQS_BATCH_MAX, opts.maxEntries ?? SQS_BATCH_MAX));
  }

  /**
   * Resolves once the message is deleted; rejects (naming the queue and message) if SQS refused
   * it. `maxWaitMs` (the batch's by default) is how long this one may wait: every delete waiting
   * goes when the first of them is due, so none is sent before one that was waiting already.
   */
  delete(receiptHandle: string, messageId = "", maxWaitMs = this.opts.maxWaitMs): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ receiptHandle, messageId, resolve, reject });
      if (this.waiting.length >= this.maxEntries) {
        void this.flush();
        return;
      }
      const due = Date.now() + maxWaitMs;
      if (this.timer && due >= this.due) return;
      clearTimeout(this.timer);
      this.due = due;
      this.timer = setTimeout(() => void this.flush(), maxWaitMs);
    });
  }

  /** when the waiting deletes go (the earliest any of them may) */
  private due = Number.POSITIVE_INFINITY;

  /** Sends every waiting delete now (a stop); resolves when they are all answered. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due = Number.POSITIVE_INFINITY;
    const sends: Promise<void>[] = [];
    while (this.waiting.length) sends.push(this.send(this.waiting.splice(0, SQS_BATCH_MAX)));
    await Promise.all(sends);
  }

  /**
   * Forgets the waiting deletes, unsent (a host that dies): their messages show again after the
   * visibility timeout. Their callers are told so.
   */
  drop(reason: string): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due = Number.POSITIVE_INFINITY;
    for (const w of this.waiting.splice(0))
      w.reject(new Error(`message ${w.messageId} of ${this.queueUrl} not deleted: ${reason}`));
  }

  private async send(batch: Waiting[]): Promise<void> {
    const who = this.opts.owner ? ` (host ${this.opts.owner})` : "";
    try {
      const out = await (this.opts.client ?? sqsClient)().send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: batch.map((w, i) => ({ Id: String(i), ReceiptHandle: w.receiptHandle })),
        }),
      );
      const failed = new Map((out.Failed ?? []).map((f) => [f.Id, f]));
      for (const [i, w] of batch.entries()) {
        const f = failed.get(String(i));
        if (!f) w.resolve();
        else
          w.reject(
            new Error(
              `delete of message ${w.messageId} from ${this.queueUrl}${who} failed: ${f.Code}${f.Message ? ` (${f.Message})` : ""}`,
            ),
          );
      }
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      for (const w of batch)
        w.reject(
          new Error(`delete of message ${w.messageId} from ${this.queueUrl}${who} failed: ${error.message}`, {
            cause: error,
          }),
        );
    }
  }
}
