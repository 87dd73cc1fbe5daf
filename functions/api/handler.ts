// The API Lambda (API Gateway HTTP API, payload 2.0, $default stage): the Hono app through
// hono/aws-lambda's adapter.
import type { Context } from "aws-lambda";
import { handle, type LambdaEvent } from "hono/aws-lambda";
import { apiApp } from "../../lib/api/index.js";
import { withObservability } from "../../lib/metrics.js";

const serve = handle(apiApp());

export async function handler(event: LambdaEvent, context?: Context) {
  return withObservability(context, () => serve(event, context as Context));
}
