// The conductor Lambda's one entry: the state machine names the step in `action`, the request
// names the workflow; the step is the shared one (lib/conductor/task.ts) with that workflow's task.

import { getInstance } from "../instances/queries.js";
import { isMove, isRebuild, isUnshelve } from "../messages/build-request.js";
import { type ConductorInput, NOTHING_SCHEDULED, type Scheduled } from "../messages/scheduled.js";
import { liveMigrationTask } from "./live-migrate.js";
import { coldMoveTask, evacuationTask } from "./moves.js";
import { rebuildTask } from "./rebuild.js";
import { type ConductorTask, claimAlternateStep, type Failure, startStep } from "./task.js";
import { buildTask, causeOf } from "./tasks.js";
import type { NoValidHostAnswer, StatesError } from "./types.js";
import { unshelveTask } from "./unshelve.js";

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

const rollback = (task: ConductorTask, req: ConductorInput, f: Failure) =>
  task.rollback(req, f).then(() => ({}));

/** Each Step Functions action: the shared step it runs for a workflow's task. */
const STEPS: Record<ConductorEvent["action"], (task: ConductorTask, e: ConductorEvent) => Promise<unknown>> =
  {
    claim_alternate: (task, e) => claimAlternateStep(task, e.request),
    build_instances: (task, e) => startStep(task, e.request, e.scheduled ?? NOTHING_SCHEDULED),
    no_valid_host: (task, e) =>
      rollback(task, e.request, { action: "no_valid_host", details: noValidHostDetails(e) }),
    max_retries_exceeded: (task, e) =>
      rollback(task, e.request, { action: "max_retries_exceeded", error: e.error }),
    build_failed: (task, e) => rollback(task, e.request, { action: "build_failed", error: e.error }),
  };

/**
 * The workflow a request is in. A move's kind is its record's (the request names the migration):
 * a live migration and an evacuation place and cast their own way; a move whose record is gone
 * takes the cold move's steps, which find nothing to do.
 */
async function taskOf(req: ConductorInput): Promise<ConductorTask> {
  if (isRebuild(req)) return rebuildTask;
  if (isUnshelve(req)) return unshelveTask;
  if (!isMove(req)) return buildTask;
  const type = (await getInstance(req.instance_uuids[0]!))?.migration?.type;
  if (type === "live-migration") return liveMigrationTask;
  if (type === "evacuation") return evacuationTask;
  return coldMoveTask;
}

export async function conductorStep(e: ConductorEvent): Promise<unknown> {
  const step = Object.hasOwn(STEPS, e.action) ? STEPS[e.action] : undefined;
  if (!step) throw new Error(`unknown conductor action ${(e as { action: string }).action}`);
  return step(await taskOf(e.request), e);
}
