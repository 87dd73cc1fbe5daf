// The conductor Lambda's one entry: the state machine names the step in `action`.
import { type ConductorInput, NOTHING_SCHEDULED, type Scheduled } from "../messages/scheduled.js";
import { buildFailed, buildInstances, claimAlternate, maxRetriesExceeded, noValidHost } from "./tasks.js";
import type { StatesError } from "./types.js";

export interface ConductorEvent {
  action: "max_retries_exceeded" | "claim_alternate" | "no_valid_host" | "build_instances" | "build_failed";
  request: ConductorInput;
  scheduled?: Scheduled;
  error?: StatesError;
}

export async function conductorStep(e: ConductorEvent): Promise<unknown> {
  switch (e.action) {
    case "max_retries_exceeded":
      return maxRetriesExceeded(e.request).then(() => ({}));
    case "claim_alternate":
      return claimAlternate(e.request);
    case "no_valid_host":
      return noValidHost(e.request, e.error ?? { Error: "NoValidHost" }).then(() => ({}));
    case "build_instances":
      return buildInstances(e.request, e.scheduled ?? NOTHING_SCHEDULED);
    case "build_failed":
      return buildFailed(e.request, e.error).then(() => ({}));
    default:
      throw new Error(`unknown conductor action ${(e as { action: string }).action}`);
  }
}
