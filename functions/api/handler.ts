// The API Lambda (API Gateway HTTP API, payload 2.0): decode the event, route it, encode the answer.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { fromApiGatewayEvent, handleHttp, toApiGatewayResult } from "../../lib/api/index.js";
import { withObservability } from "../../lib/metrics.js";

export async function handler(
  event: APIGatewayProxyEventV2,
  context?: Context,
): Promise<APIGatewayProxyStructuredResultV2> {
  return withObservability(context, async () =>
    toApiGatewayResult(await handleHttp(fromApiGatewayEvent(event))),
  );
}
