import { selectDestinations } from "../../lib/conductor/select-destinations.js";
import type { ConductorInput, Scheduled } from "../../lib/conductor/types.js";

/** select_destinations, invoked synchronously by the conductor state machine. */
export async function handler(event: { request: ConductorInput }): Promise<Scheduled> {
  return selectDestinations(event.request);
}
