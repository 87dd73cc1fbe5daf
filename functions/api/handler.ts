// The API Lambda (API Gateway HTTP API, payload 2.0): decode the event, route it, encode the answer.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { fromApiGatewayEvent, handleHttp, toApiGatewayResult } from "../../lib/api/index.js";

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const response = await handleHttp(fromApiGatewayEvent(event));
  return toApiGatewayResult(response);
}
