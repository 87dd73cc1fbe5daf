import type { Context } from "aws-lambda";
import type { ConductorInput, Scheduled } from "../../lib/conductor/types.js";
import { withObservability } from "../../lib/metrics.js";
import { selectDestinations } from "../../lib/scheduler/manager.js";

/** select_destinations, invoked synchronously by the conductor state machine. */
export async function handler(event: { request: ConductorInput }, context?: Context): Promise<Scheduled> {
  return withObservability(context, () => selectDestinations(event.request));
}
