import type { Context, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { intake } from "../../lib/conductor/intake.js";
import { withObservability } from "../../lib/metrics.js";

/** build-requests' SQS event source (ReportBatchItemFailures): start each request's execution. */
export async function handler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return withObservability(context, () => intake(event, context));
}
