// Queues with their dead-letter queues, created idempotently: by the local runtime for the
// flow's queues and by each compute agent for its own host queue (in AWS too).
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
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
 * are `${prefix}<host>`). Calling it again with the same spec returns the same queues; with a
 * different one SQS answers QueueNameExists. The redrive policy is set at creation and no caller
 * reads the main queue's ARN, and the dead-letter queue's is formed from its URL, so a host queue
 * costs two requests (a 10,000-host fleet registers them all at start).
 */
export async function ensureQueueWithDlq(
  name: string,
  spec: Omit<QueueSpec, "localName">,
  client: SQSClient = sqsClient(),
  /** on both queues (a host's queues carry its name: the compute role's policy matches it) */
  tags?: Record<string, string>,
): Promise<QueueWithDlq> {
  const dlq = await client.send(
    new CreateQueueCommand({
      QueueName: `${name}${DLQ_SUFFIX}`,
      Attributes: { MessageRetentionPeriod: String(DLQ_RETENTION_SECONDS) },
      ...(tags ? { tags } : {}),
    }),
  );
  const dlqUrl = dlq.QueueUrl!;
  const dlqArn = arnFromUrl(dlqUrl, await client.config.region()) ?? (await queueArn(client, dlqUrl));
  const queue = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(spec.visibilityTimeout),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: spec.maxReceiveCount }),
      },
      ...(tags ? { tags } : {}),
    }),
  );
  return { queueUrl: queue.QueueUrl!, dlqUrl, dlqArn };
}

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
