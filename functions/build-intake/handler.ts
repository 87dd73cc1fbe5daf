import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { intake } from "../../lib/conductor/intake.js";
import { withObservability } from "../../lib/metrics.js";

export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return withObservability(context, async () => {
    const failed = await intake(event.Records.map((r) => ({ messageId: r.messageId, body: r.body })));
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  });
}
