// Queues with their dead-letter queues, created idempotently: by the local runtime for the
// flow's queues and by each compute agent for its own host queue (in AWS too).
import { CreateQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { DLQ_RETENTION_SECONDS, DLQ_SUFFIX, type QueueSpec } from "../../infra/resources.js";
import { sqsClient } from "./clients.js";

export interface QueuePair {
  queueUrl: string;
  dlqUrl: string;
}

export async function ensureQueueWithDlq(
  name: string,
  spec: Omit<QueueSpec, "localName">,
): Promise<QueuePair> {
  const sqs = sqsClient();
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}${DLQ_SUFFIX}`,
      Attributes: { MessageRetentionPeriod: String(DLQ_RETENTION_SECONDS) },
    }),
  );
  const dlqAttrs = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }),
  );
  const q = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(spec.visibilityTimeout),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqAttrs.Attributes?.QueueArn,
          maxReceiveCount: spec.maxReceiveCount,
        }),
      },
    }),
  );
  return { queueUrl: q.QueueUrl!, dlqUrl: dlq.QueueUrl! };
}
