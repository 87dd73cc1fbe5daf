import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { intake } from "../../lib/conductor/intake.js";

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const failed = await intake(event.Records.map((r) => ({ messageId: r.messageId, body: r.body })));
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
}
