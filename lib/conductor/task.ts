// One shape for every conductor workflow (Nova's conductor TaskBase: `execute` runs `_execute` and,
// on any failure, `rollback`). Here the state machine is `execute`: it calls the steps below by
// name (claim_alternate, build_instances) and, on a failure it caught or a scheduling outcome
// that ends the workflow (no_valid_host, max_retries_exceeded, build_failed), the task's rollback.
// Each workflow (build, cold move, live migration, evacuation, rebuild, unshelve) is one
// descriptor; the steps every workflow shares are written once, here, so a fix to one lands in all.
import { computeMessageBody } from "../aws/send.js";
import { getInstance } from "../instances/queries.js";
import type { InstanceRecord } from "../instances/types.js";
import { type Logger, log as rootLog } from "../log.js";
import type { Destination } from "../messages/common.js";
import type { ComputeMessage } from "../messages/compute.js";
import {
  type ConductorInput,
  NOTHING_SCHEDULED,
  type Scheduled,
  selectionIn,
} from "../messages/scheduled.js";
import { release } from "../placement/claims.js";
import type { Resources } from "../placement/types.js";
import { claimFirstAlternate } from "./alternates.js";
import { hostQueueFor } from "./host-casts.js";
import type { AlternatesExhaustedAnswer, Cast, StatesError } from "./types.js";

/** Why a workflow ends without its host: the state machine's step that rolls it back. */
export type Failure =
  | { action: "no_valid_host"; details: string; error?: undefined }
  | { action: "max_retries_exceeded"; error: StatesError | undefined }
  | { action: "build_failed"; error: StatesError | undefined };

/** One instance's pick from the scheduler's (or ClaimAlternate's) answer. */
export interface Placement {
  instance_uuid: string;
  selected: Destination;
  alternates: Destination[];
}

/** What place answered: the record as placed (or placed already, by an earlier run), or gone. */
export type Placed = { kind: "placed"; record: InstanceRecord } | { kind: "gone"; deleted?: boolean };

/** What claim_alternate claims for an instance in the workflow. */
export interface AlternateClaim {
  /** the amounts the scheduler claimed on the first host */
  resources: Resources;
  /** hosts tried already (and the source, for a move that may not stay) */
  exclude: readonly string[];
  /** the host an earlier run of this step recorded for this attempt */
  recorded?: string;
}

export interface ConductorTask<R extends ConductorInput = ConductorInput> {
  /** the workflow's name in logs (conductor.cast_<name>, conductor.<name>_abandoned) */
  name: string;
  /** every selection of the answer (a build of several instances), or only the first */
  many?: boolean;
  /** false when the scheduler claims nothing for it (a rebuild keeps its allocation) */
  claims: boolean;
  /** the attempt its claims and casts carry: the fencing token */
  attempt(req: R): number;
  /** the record while it is in this workflow; undefined when deleted or the workflow is over */
  load(req: R): Promise<InstanceRecord | undefined>;
  /** what an alternate must take; absent for a workflow with no alternates */
  alternate?(req: R, rec: InstanceRecord, n: number): AlternateClaim;
  /** record the chosen host (its attempt the fencing token) with the action's event */
  place(req: R, p: Placement, n: number, log: Logger): Promise<Placed>;
  /** the message to cast to the placed host, or undefined when there is none (aborted meanwhile) */
  cast(
    req: R,
    rec: InstanceRecord,
    p: Placement,
    n: number,
    log: Logger,
  ): Promise<ComputeMessage | undefined>;
  /**
   * Back to the state before the workflow, with a fault, and every claim made for it released
   * (revertClaims), each write idempotent so a repeated step finishes what a dead one began. A
   * move's and an unshelve's transition goes first, so one that finished meanwhile is never
   * undone; a build's releases go first, as a repeat finds an ERROR build no longer building.
   */
  rollback(req: R, failure: Failure): Promise<void>;
}

function stepLog(req: ConductorInput, id: string, n: number): Logger {
  return rootLog.child({ request_id: req.request_id, instance_uuid: id, attempt: n });
}

/**
 * ClaimAlternate: the next alternate that takes the workflow's amounts, claimed without running
 * the filters again, as Nova's conductor does. Nothing for a record no longer in the workflow;
 * AlternatesExhausted when none can be claimed.
 */
export async function claimAlternateStep<R extends ConductorInput>(
  task: ConductorTask<R>,
  req: R,
): Promise<Scheduled | AlternatesExhaustedAnswer> {
  const n = task.attempt(req);
  const rec = task.alternate ? await task.load(req) : undefined;
  if (!rec || !task.alternate) return NOTHING_SCHEDULED;
  const { resources, exclude, recorded } = task.alternate(req, rec, n);
  return claimFirstAlternate(rec.id, n, req.alternates ?? [], exclude, resources, stepLog(req, rec.id, n), {
    recorded,
  });
}

/**
 * BuildInstances: start on the chosen host. Each pick is placed (the fencing token recorded, with
 * the action's event) and its cast produced for the state machine to send. A pick whose instance
 * has gone (deleted, or the workflow ended or moved on meanwhile) gets its claim back, unless the
 * instance lives on that claim: a repeated step after the workflow finished must not free it.
 */
export async function startStep<R extends ConductorInput>(
  task: ConductorTask<R>,
  req: R,
  scheduled: Scheduled,
): Promise<{ casts: Cast[] }> {
  const n = task.attempt(req);
  const casts: Cast[] = [];
  const picks = task.many ? scheduled.selections : scheduled.selections.slice(0, 1);
  for (const sel of picks) {
    const p = selectionIn(scheduled, sel);
    const id = p.instance_uuid;
    const log = stepLog(req, id, n);
    const placed = await task.place(req, p, n, log);
    if (placed.kind === "gone") {
      if (task.claims) await releaseUnlessLivesOn(id, p.selected.host, n);
      log.info(`conductor.${task.name}_abandoned`, {
        host: p.selected.host,
        ...(placed.deleted === undefined ? {} : { reason: placed.deleted ? "deleted" : "fenced" }),
      });
      continue;
    }
    const msg = await task.cast(req, placed.record, p, n, log);
    if (!msg) continue;
    const queueUrl = await hostQueueFor(msg.host, id, n);
    log.info(`conductor.cast_${task.name}`, {
      host: msg.host,
      step: msg.kind,
      alternates: p.alternates.map((a) => a.host),
    });
    casts.push({ queue_url: queueUrl, message_body: computeMessageBody(msg) });
  }
  return { casts };
}

/** Release `consumer`'s claim on `host` at `attempt`, unless the instance runs there on it. */
export async function releaseUnlessLivesOn(consumer: string, host: string, attempt: number): Promise<void> {
  const cur = await getInstance(consumer);
  const livesOnIt = cur && !cur.deleted && cur.host === host && cur.attempt === attempt;
  if (!livesOnIt) await release(host, consumer, attempt);
}
