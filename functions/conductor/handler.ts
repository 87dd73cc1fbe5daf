import type { Context } from "aws-lambda";
import { type ConductorEvent, conductorStep } from "../../lib/conductor/dispatch.js";
import { withObservability } from "../../lib/metrics.js";

export async function handler(event: ConductorEvent, context?: Context): Promise<unknown> {
  return withObservability(context, () => conductorStep(event));
}
