import type { Context } from "aws-lambda";
import { selectDestinations } from "../../lib/conductor/select-destinations.js";
import type { ConductorInput, Scheduled } from "../../lib/messages/scheduled.js";
import { withObservability } from "../../lib/metrics.js";

/**
 * select_destinations, invoked synchronously by the conductor state machine: load → decide →
 * record, or a rebuild's check of its own host.
 */
export async function handler(event: { request: ConductorInput }, context?: Context): Promise<Scheduled> {
  return withObservability(context, () => selectDestinations(event.request));
}
