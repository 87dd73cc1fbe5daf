// A resize or cold migration on the instance's record (Nova's MigrationTask, resize_instance,
// finish_resize, confirm_resize and revert_resize): the API begins it, the conductor places it on
// the destination, compute-events applies each host's report. Every write is ONE conditional
// UpdateItem on the move's uuid (the record's MoveContext) and on the state the step expects; a
// host's report is also fenced by the move's attempt and the host it must come from, so a
// duplicated, late or zombie report changes nothing.

import { type TransactWriteCommandInput, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { inState } from "../aws/dynamo-conditions.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { transactUnlessConditionFails } from "../aws/dynamo-transact.js";
import type { Destination } from "../messages/common.js";
import type { MoveStepMessage, MoveStepName } from "../messages/compute.js";
import { type Usage, upsizeDelta } from "../quotas/quotas.js";
import { releaseItem } from "../quotas/store.js";
import type { PlaceOutcome } from "./build.js";
import { storedDestination } from "./codec.js";
import {
  beginAction,
  type HostReportWrite,
  type InstanceRef,
  instanceUpdate,
  merge,
  NO_CHANGE,
  type ReportTransition,
  transitionWithEvent,
  type Update,
} from "./transition.js";
import type {
  ActionEvent,
  Fault,
  InstanceAction,
  InstanceRecord,
  MigrationStatus,
  MoveContext,
  TaskState,
} from "./types.js";
import { inWorkflow, reportedBy, WORKFLOWS } from "./workflows.js";

/** The conductor's event of a move (Nova's MigrationTask reports `cold_migrate`). */
export const EVENT_MIGRATE = "cold_migrate";
/** ... and of an evacuation (Nova's conductor rebuild_instance). */
export const EVENT_REBUILD = "conductor_rebuild_server";
/** ... and of a live migration (Nova's conductor live_migrate_instance). */
export const EVENT_LIVE_MIGRATE = "conductor_live_migrate_instance";

/** The task state a destination works in: finishing a resize, or rebuilding an evacuated server. */
export const DESTINATION_TASK = { resize: "resize_migrated", evacuation: "rebuild_spawning" } as const;
export const destinationTask = (m: Pick<MoveContext, "type">) =>
  m.type === "evacuation" ? DESTINATION_TASK.evacuation : DESTINATION_TASK.resize;

/** Nova's compute events of each step (wrap_instance_event on the compute manager's methods). */
export const MOVE_EVENTS: Record<MoveStepName, string> = {
  rebuild_instance: "compute_rebuild_instance",
  resize_instance: "compute_resize_instance",
  finish_resize: "compute_finish_resize",
  confirm_resize: "compute_confirm_resize",
  revert_resize: "compute_revert_resize",
  finish_revert_resize: "compute_finish_revert_resize",
  pre_live_migration: "compute_pre_live_migration",
  live_migration: "compute_live_migration",
  post_live_migration_at_destination: "compute_post_live_migration_at_destination",
};

/** The task states a move runs in, up to its destination's finish (or a live move's end). */
const MOVE_TASKS: Exclude<TaskState, null>[] = [
  "resize_prep",
  "resize_migrating",
  "resize_migrated",
  "rebuilding",
  "rebuild_spawning",
  // a live migration: it fails back to its source wherever it was
  "migrating",
];

/** SET migration.status (a reserved word, hence the name). */
const status = (s: MigrationStatus): Update => ({
  set: ["migration.#ms = :ms"],
  condition: "attribute_exists(migration)",
  names: { "#ms": "status" },
  values: { ":ms": s },
});

/**
 * API: accept a move. The task state, the move and Nova's instance action in one write,
 * conditioned on the state the API checked (and on no move being under way), so two concurrent
 * requests give one 202 and one 409. Undefined when the state changed meanwhile.
 */
export function beginMove(
  rec: InstanceRecord,
  move: MoveContext,
  a: InstanceAction,
  task: TaskState = "resize_prep",
): Promise<InstanceRecord | undefined> {
  return beginAction(rec, task, a, {
    set: ["migration = :move"],
    condition: "attribute_not_exists(migration)",
    values: { ":move": move },
  });
}

/**
 * Conductor: the destination is claimed for attempt `attempt` (the move's fencing token). From
 * resize_prep the source is told next (resize_migrating); from resize_migrated (a reschedule: the
 * source is done already) the destination is. Succeeds only from an earlier attempt; the same
 * attempt on the same host again is `already-placed`; anything else is `gone`.
 */
export async function placeMove(
  ref: InstanceRef,
  rec: InstanceRecord,
  attempt: number,
  dest: Destination,
  alternates: readonly Destination[],
  ev: ActionEvent,
): Promise<PlaceOutcome> {
  const move = rec.migration;
  if (!move || rec.deleted) return { kind: "gone", record: rec };
  if (move.attempt === attempt && move.dest_host === dest.host)
    return { kind: "already-placed", record: rec };
  const from = rec.task_state;
  if (
    from !== "resize_prep" &&
    from !== "resize_migrated" &&
    from !== "rebuilding" &&
    from !== "rebuild_spawning" &&
    from !== "migrating"
  )
    return { kind: "gone", record: rec };
  // resize_prep → the source powers off; an evacuation's destination rebuilds at once; a
  // reschedule (the source done, or an evacuation) goes straight to the next destination
  const next: TaskState =
    from === "resize_prep" ? "resize_migrating" : from === "rebuilding" ? "rebuild_spawning" : from;
  const placed = await transitionWithEvent(
    ref,
    ev,
    inWorkflow(
      WORKFLOWS.move,
      move.uuid,
      // a reschedule's source is done already: the migration stays post-migrating
      merge(from === "resize_prep" ? status("migrating") : NO_CHANGE, {
        set: [
          "task_state = :next",
          "migration.dest_host = :dh",
          "migration.dest_node = :dn",
          "migration.dest_az = :daz",
          "migration.attempt = :n",
          "alternates = :alts",
        ],
        condition: "task_state = :from AND (migration.attempt = :null OR migration.attempt < :n)",
        values: {
          ":next": next,
          ":from": from,
          ":dh": dest.host,
          ":dn": dest.nodename,
          ":daz": dest.availability_zone || null,
          ":n": attempt,
          ":null": null,
          ":alts": alternates.map(storedDestination),
        },
      }),
    ),
  );
  return placed ? { kind: "placed", record: placed } : { kind: "gone", record: rec };
}

/** A host's report of a step of this move, with what the step reports besides. */
export type MoveReport<Args extends unknown[] = []> = HostReportWrite<MoveContext, Args>;

/** compute-events: the source shut the guest down and handed it over (resize_migrated). */
export const sourceMigrated: HostReportWrite<string> = (ref, migration, host, attempt, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(
      reportedBy(WORKFLOWS.move, migration, { host, field: "migration.source_host", attempt }),
      status("post-migrating"),
      {
        set: ["task_state = :next"],
        condition: "task_state = :from",
        values: { ":next": "resize_migrated", ":from": "resize_migrating" },
      },
    ),
  );

/**
 * The destination reported the guest running there (its report's fence included): the record
 * points at it, at the move's attempt, out of the task `from`, in `vm`.
 */
function landed(
  move: MoveContext,
  host: string,
  attempt: number,
  power: number,
  from: TaskState,
  vm: InstanceRecord["vm_state"],
): Update {
  return merge(reportedBy(WORKFLOWS.move, move.uuid, { host, field: "migration.dest_host", attempt }), {
    set: [
      "host = :rh",
      "node = :node",
      "availability_zone = :az",
      "attempt = :ra",
      "spawn_attempt = :ra",
      "vm_state = :vm",
      "task_state = :null",
      "power_state = :power",
      "power_state_at = :now",
    ],
    remove: ["alternates"],
    condition: "task_state = :from",
    values: {
      ":node": move.dest_node ?? host,
      ":az": move.dest_az,
      ":vm": vm,
      ":null": null,
      ":power": power,
      ":from": from,
    },
  });
}

/**
 * compute-events: the destination runs the guest with the new flavor. The instance is on the
 * destination now, at the move's attempt, in VERIFY_RESIZE (Nova's finish_resize).
 */
export const destinationFinished: MoveReport<[number]> = (ref, move, host, attempt, power, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(landed(move, host, attempt, power, "resize_migrated", "resized"), status("finished"), {
      set: ["flavor = :flavor"],
      condition: "attribute_exists(migration)",
      values: { ":flavor": move.new_flavor },
    }),
  );

/**
 * compute-events: an evacuated server runs (or is SHUTOFF, 2.95) on its destination, at the move's
 * attempt. The move is over for the instance; the source's allocation stays with the evacuation's
 * consumer until the source comes back and destroys its copy (Nova's _destroy_evacuated_instances).
 */
export const evacuated: MoveReport<[number, boolean]> = (ref, move, host, attempt, power, running, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(landed(move, host, attempt, power, "rebuild_spawning", running ? "active" : "stopped"), {
      set: [],
      remove: ["migration"],
      condition: "attribute_exists(migration)",
      values: {},
    }),
  );

/** compute-events: the destination could not finish; the event says why (the move reschedules). */
export const destinationFailed: MoveReport = (ref, move, host, attempt, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(reportedBy(WORKFLOWS.move, move.uuid, { host, field: "migration.dest_host", attempt }), {
      set: [
        "migration.dest_host = :null",
        "migration.dest_node = :null",
        "migration.tried = list_append(migration.tried, :tried)",
      ],
      condition: "task_state = :from",
      values: { ":null": null, ":from": destinationTask(move), ":tried": [host] },
    }),
  );

/**
 * The move failed before it finished (NoValidHost, the source or every destination failed, an
 * error in the workflow): the instance is back where it was, in its old state, with a fault; its
 * MoveContext stays, marked `error`, until the claims are settled (closeFailedMove), so a step
 * that dies in between is finished by the next and the audit still sees who holds the source.
 * Not after the destination finished (VERIFY_RESIZE is undone by revert, not here). `next` is
 * powering-on when the source had shut the guest down and is told to start it again (its
 * action_done then ends the task under the move's action).
 */
export function moveFailed(
  ref: InstanceRef,
  migration: string,
  f: Fault,
  ev: ActionEvent,
  next: TaskState = null,
): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = { ":next": next, ":fault": f, ":failed": "error" };
  return transitionWithEvent(
    ref,
    ev,
    inWorkflow(WORKFLOWS.move, migration, {
      set: ["task_state = :next", "fault = :fault", "migration.#ms = :failed"],
      remove: ["alternates"],
      condition: `${inState(values, "task_state", MOVE_TASKS, "t")} AND migration.#ms <> :failed`,
      names: { "#ms": "status" },
      values,
    }),
  );
}

/**
 * API (and the watchdog's auto-confirm): confirmResize accepted (Nova's migration `confirming`;
 * the task state stays none). A resize down's old, larger flavor stops counting in the same
 * transaction.
 */
export function beginConfirm(rec: InstanceRecord, a: InstanceAction): Promise<boolean> {
  return settledBegin(rec, a, "confirming", null, (m) => upsizeDelta(m.new_flavor, m.old_flavor));
}

/**
 * API: revertResize accepted (resize_reverting, migration `reverting`). A resize up's new, larger
 * flavor stops counting in the same transaction (usageOf counts a reverting server's old flavor).
 */
export function beginRevert(rec: InstanceRecord, a: InstanceAction): Promise<boolean> {
  return settledBegin(rec, a, "reverting", "resize_reverting", (m) =>
    upsizeDelta(m.old_flavor, m.new_flavor),
  );
}

/**
 * The record out of VERIFY_RESIZE into the confirm or revert, and the usage it no longer counts
 * given back, in one transaction: neither without the other, and never twice. False when the
 * record was not in VERIFY_RESIZE with that move any more.
 */
async function settledBegin(
  rec: InstanceRecord,
  a: InstanceAction,
  next: MigrationStatus,
  task: TaskState,
  back: (move: MoveContext) => Usage,
): Promise<boolean> {
  if (!rec.migration) return false;
  const u = inWorkflow(
    WORKFLOWS.move,
    rec.migration.uuid,
    merge(status(next), {
      set: ["task_state = :task", "actions.#rid = :action"],
      condition: "vm_state = :resized AND task_state = :null AND migration.#ms = :finished",
      names: { "#rid": a.request_id },
      values: {
        ":task": task,
        ":action": a,
        ":resized": "resized",
        ":null": null,
        ":finished": "finished",
      },
    }),
  );
  return releasingWith(instanceUpdate(rec.id, u), rec, back(rec.migration));
}

type InstanceUpdate = NonNullable<NonNullable<TransactWriteCommandInput["TransactItems"]>[number]["Update"]>;

/**
 * One conditioned write of the instance and the usage it gives back, in one transaction: false
 * when the write's condition (or a concurrent transaction) refused it, and nothing was released.
 */
async function releasingWith(update: InstanceUpdate, rec: InstanceRecord, back: Usage): Promise<boolean> {
  // nothing to give back (a move between flavors of the same size): the write alone
  if (!back.cores && !back.ram) return conditionHeld(dynamo().send(new UpdateCommand(update)));
  // (a concurrent transaction on the project's usage item is retried, not taken for a refusal)
  return transactUnlessConditionFails({
    TransactItems: [{ Update: update }, releaseItem(rec.project_id, back, rec.user_id)],
  });
}

/** compute-events: the source destroyed the old guest; the move is over (Nova's confirm_resize). */
export const confirmed: ReportTransition<MoveContext> = (ref, move, host, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(reportedBy(WORKFLOWS.move, move.uuid, { host, field: "migration.source_host" }), {
      set: ["vm_state = :old"],
      remove: ["migration"],
      condition: "vm_state = :resized AND migration.#ms = :confirming",
      names: { "#ms": "status" },
      values: { ":old": move.old_vm_state, ":resized": "resized", ":confirming": "confirming" },
    }),
  );

/**
 * compute-events: the destination destroyed the new guest (Nova's revert_resize). The instance
 * points back at the source, with the old flavor, at attempt `next` (its allocation there is the
 * instance's again, at that attempt), for the source's finish_revert_resize.
 */
export const revertedOnDestination: MoveReport<[number]> = (ref, move, host, attempt, next, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(reportedBy(WORKFLOWS.move, move.uuid, { host, field: "host", attempt }), {
      set: [
        "host = :sh",
        "node = :sn",
        "availability_zone = :saz",
        "flavor = :old",
        "attempt = :next",
        "spawn_attempt = :next",
        "migration.attempt = :next",
      ],
      condition: "attempt = :ra AND task_state = :reverting AND migration.#ms = :reverting_m",
      names: { "#ms": "status" },
      values: {
        ":sh": move.source_host,
        ":sn": move.source_node,
        ":saz": move.source_az,
        ":old": move.old_flavor,
        ":next": next,
        ":reverting": "resize_reverting",
        ":reverting_m": "reverting",
      },
    }),
  );

/** compute-events: the source runs the old guest again; the revert is over (finish_revert_resize). */
export const revertFinished: MoveReport<[number]> = (ref, move, host, attempt, power, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(reportedBy(WORKFLOWS.move, move.uuid, { host, field: "host", attempt }), {
      set: ["vm_state = :old", "task_state = :null", "power_state = :power", "power_state_at = :now"],
      remove: ["migration"],
      condition: "attempt = :ra AND task_state = :reverting",
      values: { ":old": move.old_vm_state, ":null": null, ":power": power, ":reverting": "resize_reverting" },
    }),
  );

/** What confirming a move does besides the record (the API's deps, or the real ones). */
export interface ConfirmIo {
  beginConfirm: typeof beginConfirm;
  updateMigration: (
    uuid: string,
    from: readonly MigrationStatus[],
    status: MigrationStatus,
  ) => Promise<boolean>;
  castToHost: (host: string, msg: MoveStepMessage) => Promise<void>;
}

/**
 * Confirm a finished move (the API's confirmResize, or the watchdog past resize_confirm_window):
 * the migration `confirming`, a resize down's old (larger) flavor no longer counted, and the
 * source told to destroy its copy; its report frees the source's claim. False when the record
 * was not in VERIFY_RESIZE with that move any more.
 */
export async function confirmMove(rec: InstanceRecord, a: InstanceAction, io: ConfirmIo): Promise<boolean> {
  const move = rec.migration;
  if (!move || !(await io.beginConfirm(rec, a))) return false;
  // (the record may still say post-migrating: compute-events writes the instance first, then it)
  await io.updateMigration(move.uuid, ["post-migrating", "finished"], "confirming");

  await io.castToHost(move.source_host, {
    version: 1,
    kind: "confirm_resize",
    request_id: a.request_id,
    instance_uuid: rec.id,
    host: move.source_host,
    migration_uuid: move.uuid,
    attempt: move.attempt ?? rec.attempt,
    same_host: move.source_host === move.dest_host,
  });
  return true;
}

/**
 * The end of a failed move, once its claims are settled: the MoveContext goes, and what a resize
 * up reserved is given back in the same transaction, so neither can happen twice. False when it
 * was closed already.
 */
export async function closeFailedMove(rec: InstanceRecord, move: MoveContext): Promise<boolean> {
  return releasingWith(
    instanceUpdate(
      rec.id,
      // (a delete in between gave the usage back whole: usageOf counts the move)
      {
        set: [],
        remove: ["migration"],
        condition: "deleted = :false AND migration.#mu = :mig AND migration.#ms = :failed",
        names: { "#mu": "uuid", "#ms": "status" },
        values: { ":mig": move.uuid, ":failed": "error", ":false": false },
      },
    ),
    rec,
    upsizeDelta(move.old_flavor, move.new_flavor),
  );
}
