import type { Context } from "aws-lambda";
import { decideDestinations, loadRequest, recordOutcome } from "../../lib/conductor/select-destinations.js";
import { type ConductorInput, NOTHING_SCHEDULED, type Scheduled } from "../../lib/messages/scheduled.js";
import { withObservability } from "../../lib/metrics.js";

/** select_destinations, invoked synchronously by the conductor state machine: load → decide → record. */
export async function handler(event: { request: ConductorInput }, context?: Context): Promise<Scheduled> {
  return withObservability(context, async () => {
    const loaded = await loadRequest(event.request);
    if (!loaded) return NOTHING_SCHEDULED;
    const decided = await decideDestinations(loaded);
    return recordOutcome(loaded, decided);
  });
}
