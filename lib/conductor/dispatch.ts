// The conductor Lambda's one entry: the state machine names the step in `action`.

import { fault, maxRetriesFault } from "../instances/faults.js";
import { isMove, isRebuild, isUnshelve } from "../messages/build-request.js";
import { type ConductorInput, NOTHING_SCHEDULED, type Scheduled } from "../messages/scheduled.js";
import { liveRefusalFault } from "./live-migrate.js";
import { claimMoveAlternate, type MoveInput, moveStepFailed, startMove } from "./moves.js";
import { rebuildStep } from "./rebuild.js";
import {
  abortedFault,
  buildFailed,
  buildInstances,
  causeOf,
  claimAlternate,
  maxRetriesExceeded,
  noValidHost,
} from "./tasks.js";
import { NO_VALID_HOST_MESSAGE, type NoValidHostAnswer, type StatesError } from "./types.js";
import { unshelveStep } from "./unshelve.js";

export interface ConductorEvent {
  action: "max_retries_exceeded" | "claim_alternate" | "no_valid_host" | "build_instances" | "build_failed";
  request: ConductorInput;
  scheduled?: Scheduled;
  /** the scheduler's NoValidHost answer, for no_valid_host */
  no_valid_host?: NoValidHostAnswer["no_valid_host"];
  error?: StatesError;
}

/**
 * The NoValidHost summary for operators: the scheduler's answer, or (an execution of the
 * definition before NoValidHost was an answer, during a deploy) the error its Catch recorded.
 */
function noValidHostDetails(e: ConductorEvent): string {
  return e.no_valid_host?.details ?? causeOf(e.error).details;
}

export async function conductorStep(e: ConductorEvent): Promise<unknown> {
  const req = e.request;
  if (isMove(req)) return moveStep(e, req);
  if (isRebuild(req)) return rebuildStep(e.action, req, e.scheduled, e.error, noValidHostDetails(e));
  if (isUnshelve(req)) return unshelveStep(e.action, req, e.scheduled, e.error, noValidHostDetails(e));
  switch (e.action) {
    case "max_retries_exceeded":
      return maxRetriesExceeded(e.request).then(() => ({}));
    case "claim_alternate":
      return claimAlternate(e.request);
    case "no_valid_host":
      return noValidHost(e.request, noValidHostDetails(e)).then(() => ({}));
    case "build_instances":
      return buildInstances(e.request, e.scheduled ?? NOTHING_SCHEDULED);
    case "build_failed":
      return buildFailed(e.request, e.error).then(() => ({}));
    default:
      throw new Error(`unknown conductor action ${(e as { action: string }).action}`);
  }
}

/**
 * The same steps for a resize or cold migration (Nova's MigrationTask). Its failures leave the
 * server as it was, with a fault (Nova's NoValidHost on a resize is a fault on an ACTIVE server).
 */
async function moveStep(e: ConductorEvent, req: MoveInput): Promise<unknown> {
  const id = req.instance_uuids[0]!;
  switch (e.action) {
    case "claim_alternate":
      return claimMoveAlternate(req);
    case "build_instances":
      return startMove(req, e.scheduled ?? NOTHING_SCHEDULED);
    case "no_valid_host":
      await moveStepFailed(req, fault(NO_VALID_HOST_MESSAGE, noValidHostDetails(e), 400));
      return {};
    case "max_retries_exceeded":
      await moveStepFailed(
        req,
        maxRetriesFault(id, req.config.max_attempts, req.retry.last_fault, req.retry.hosts),
      );
      return {};
    case "build_failed":
      // a live migration's checks refused it (lib/conductor/live-migrate.ts): Nova's own text
      await moveStepFailed(
        req,
        liveRefusalFault(e.error?.Error, causeOf(e.error).message) ?? abortedFault("Migration", id, e.error),
      );
      return {};
    default:
      throw new Error(`unknown conductor action ${(e as { action: string }).action}`);
  }
}
