// Queues with their dead-letter queues, created idempotently: by the local runtime for the
// flow's queues and by compute-events for each host that registers (in AWS too), and a host's
// deleted with its compute service.
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  type SQSClient,
  TagQueueCommand,
} from "@aws-sdk/client-sqs";
import { log } from "../log.js";
import { DLQ_RETENTION_SECONDS, DLQ_SUFFIX, type QueueSpec } from "../resources.js";
import { sqsClient } from "./clients.js";

export interface QueueWithDlq {
  queueUrl: string;
  dlqUrl: string;
  dlqArn: string;
}

/**
 * `name` and its dead-letter queue `name + DLQ_SUFFIX` (kept 14 days), the first redriving to the
 * second after `spec.maxReceiveCount` receives. The caller names the queue (compute host queues
 * are `${prefix}<host>`). Calling it again returns the same queues: a restarting agent registers
 * again. The redrive policy is set at creation and no caller reads the main queue's ARN, and the
 * dead-letter queue's is formed from its URL, so a host queue costs two requests (a 10,000-host
 * fleet registers them all at start); a queue whose attributes differ from the spec costs three or
 * four more, once (see createOrReconcile).
 */
export async function ensureQueueWithDlq(
  name: string,
  spec: Omit<QueueSpec, "localName">,
  client: SQSClient = sqsClient(),
  /** on both queues (a host's queues carry its name: the compute role's policy matches it) */
  tags?: Record<string, string>,
): Promise<QueueWithDlq> {
  const dlqUrl = await ensureDeadLetterQueue(`${name}${DLQ_SUFFIX}`, client, tags);
  const dlqArn = arnFromUrl(dlqUrl, await client.config.region()) ?? (await queueArn(client, dlqUrl));
  const queueUrl = await createOrReconcile(
    client,
    name,
    {
      VisibilityTimeout: String(spec.visibilityTimeout),
      RedrivePolicy: redrivePolicy(dlqArn, spec.maxReceiveCount),
    },
    tags,
  );
  return { queueUrl, dlqUrl, dlqArn };
}

/** A dead-letter queue of its own (kept 14 days): compute-events' takes the reports it cannot apply. */
export function ensureDeadLetterQueue(
  name: string,
  client: SQSClient = sqsClient(),
  tags?: Record<string, string>,
): Promise<string> {
  return createOrReconcile(client, name, { MessageRetentionPeriod: String(DLQ_RETENTION_SECONDS) }, tags);
}

/**
 * A redrive policy in SQS's own form, the one GetQueueAttributes answers: compact,
 * deadLetterTargetArn first, maxReceiveCount a number. CreateQueue compares what it is sent with
 * what SQS stored, so the same policy in any other form (`"maxReceiveCount":"5"`, keys reordered)
 * is refused with QueueNameExists when the queue exists (local/sqs-limits.ts cites AWS).
 */
export function redrivePolicy(deadLetterTargetArn: string, maxReceiveCount: number): string {
  return JSON.stringify({ deadLetterTargetArn, maxReceiveCount });
}

/**
 * CreateQueue, or the existing queue made to match. SQS answers QueueNameExists when the queue
 * exists with another value for an attribute sent (a stack upgrade changed the spec, an operator
 * changed the queue): then the queue is found, set to the spec and tagged, three more requests on
 * that path only, and the next registration's CreateQueue matches again. Failing there instead
 * would keep every host of an upgraded stack from registering at its next restart. Not read
 * first: that would add a request per queue to every registration of the fleet for a difference
 * that is almost never there.
 */
async function createOrReconcile(
  client: SQSClient,
  name: string,
  attributes: Record<string, string>,
  tags: Record<string, string> | undefined,
): Promise<string> {
  try {
    const out = await client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes, ...(tags ? { tags } : {}) }),
    );
    return out.QueueUrl!;
  } catch (e) {
    if ((e as { name?: string }).name !== "QueueNameExists") throw e;
    const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: name }));
    await client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: attributes }));
    if (tags) await client.send(new TagQueueCommand({ QueueUrl, Tags: tags }));
    log.warn("sqs.queue_reconciled", { queue: name, attributes, reason: (e as Error).message });
    return QueueUrl!;
  }
}

/** A host queue's messages: visible, in flight and delayed, in it and in its DLQ. */
export async function queuedMessages(queueUrl: string, client: SQSClient = sqsClient()): Promise<number> {
  const counts = await Promise.all(
    [queueUrl, `${queueUrl}${DLQ_SUFFIX}`].map(async (url) => {
      try {
        const a = await client.send(
          new GetQueueAttributesCommand({
            QueueUrl: url,
            AttributeNames: [
              "ApproximateNumberOfMessages",
              "ApproximateNumberOfMessagesNotVisible",
              "ApproximateNumberOfMessagesDelayed",
            ],
          }),
        );
        return Object.values(a.Attributes ?? {}).reduce((n, v) => n + Number(v), 0);
      } catch (e) {
        if (isQueueGone(e)) return 0;
        throw e;
      }
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}

/** Deletes a queue and its DLQ; one already gone is no error (a retried delete). */
export async function deleteQueueWithDlq(queueUrl: string, client: SQSClient = sqsClient()): Promise<void> {
  await Promise.all(
    [queueUrl, `${queueUrl}${DLQ_SUFFIX}`].map((QueueUrl) =>
      client.send(new DeleteQueueCommand({ QueueUrl })).catch((e: unknown) => {
        if (!isQueueGone(e)) throw e;
      }),
    ),
  );
}

const isQueueGone = (e: unknown) =>
  /QueueDoesNotExist|NonExistentQueue/.test(
    `${(e as { name?: string }).name} ${(e as { Code?: string }).Code}`,
  );

/**
 * A queue's ARN from its URL (`…/<account>/<name>`) and the client's region, as SQS forms it:
 * no request needed (a 10,000-host fleet creates 10,000 dead-letter queues at start). Undefined
 * for a URL of another shape, which the caller asks SQS about instead.
 */
export function arnFromUrl(queueUrl: string, region: string): string | undefined {
  const m = /\/(\d{12})\/([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/.exec(new URL(queueUrl).pathname);
  if (!m) return undefined;
  const partition = region.startsWith("cn-") ? "aws-cn" : region.startsWith("us-gov-") ? "aws-us-gov" : "aws";
  return `arn:${partition}:sqs:${region}:${m[1]}:${m[2]}`;
}

export async function queueArn(client: SQSClient, queueUrl: string): Promise<string> {
  const out = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] }),
  );
  const arn = out.Attributes?.QueueArn;
  if (!arn) throw new Error(`SQS returned no QueueArn for ${queueUrl}`);
  return arn;
}
