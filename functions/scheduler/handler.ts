import type { Context } from "aws-lambda";
import { type SchedulerAnswer, selectDestinations } from "../../lib/conductor/select-destinations.js";
import type { ConductorInput } from "../../lib/messages/scheduled.js";
import { withObservability } from "../../lib/metrics.js";

/**
 * select_destinations, invoked synchronously by the conductor state machine: load → decide →
 * record, or a rebuild's check of its own host. NoValidHost is an answer the state machine routes
 * on, so the invocation succeeds and the function's Errors alarm stays for real failures.
 */
export async function handler(
  event: { request: ConductorInput },
  context?: Context,
): Promise<SchedulerAnswer> {
  return withObservability(context, () => selectDestinations(event.request));
}
