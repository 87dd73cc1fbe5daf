import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { applyReports } from "../../lib/conductor/compute-events.js";
import { withObservability } from "../../lib/metrics.js";

export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return withObservability(context, async () => {
    const failed = await applyReports(
      event.Records.map((r) => ({ messageId: r.messageId, body: r.body, senderId: r.attributes.SenderId })),
    );
    return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
  });
}
