import type { Context, LambdaFunctionURLEventWithIAMAuthorizer, LambdaFunctionURLResult } from "aws-lambda";
import { applyReportRequest } from "../../lib/conductor/compute-events.js";
import { withObservability } from "../../lib/metrics.js";

/**
 * A host's report, POSTed to the function URL (AWS_IAM): 200 applied (a registration's answer
 * names the host's queue); 400 dead-lettered with its reason (sending it again would not help); a failure throws, Lambda answers 502 and the host
 * sends it again.
 */
export async function handler(
  event: LambdaFunctionURLEventWithIAMAuthorizer,
  context?: Context,
): Promise<LambdaFunctionURLResult> {
  return withObservability(context, async () => {
    const answer = (statusCode: number, body: object): LambdaFunctionURLResult => ({
      statusCode,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (event.requestContext.http.method !== "POST")
      return answer(405, { message: "compute-events takes a report as a POST" });
    const body = event.isBase64Encoded
      ? Buffer.from(event.body ?? "", "base64").toString("utf8")
      : (event.body ?? "");
    const outcome = await applyReportRequest({
      messageId: event.requestContext.requestId,
      body,
      senderId: event.requestContext.authorizer.iam.userId,
    });
    return outcome.applied ? answer(200, outcome) : answer(400, { dead_lettered: outcome.reason });
  });
}
