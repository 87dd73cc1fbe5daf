// The conductor's resize and cold migration (Nova's MigrationTask): the same state machine as a
// build, its steps here when the request is a move. The scheduler claims the destination for the
// instance (lib/conductor/select-destinations.ts, after the source's allocation became the
// migration's); BuildInstances records the destination and casts the next step (moveTask, through
// lib/conductor/task.ts); a failure at any point puts the instance back where it was, its claims
// whole (failMove).
import { castToCompute } from "../aws/send.js";
import { fault, maxRetriesFault } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { updateMigration } from "../instances/migrations.js";
import {
  closeFailedMove,
  EVENT_LIVE_MIGRATE,
  EVENT_MIGRATE,
  EVENT_REBUILD,
  MOVE_EVENTS,
  moveFailed,
  placeMove,
} from "../instances/move.js";
import { getInstance } from "../instances/queries.js";
import { event } from "../instances/transition.js";
import type { ActionEvent, Fault, InstanceRecord } from "../instances/types.js";
import { type Logger, log as rootLog } from "../log.js";
import { type MoveRequest, moveAttempt } from "../messages/build-request.js";
import type { ComputeMessage, MoveStepMessage } from "../messages/compute.js";
import type { MoveStepReport } from "../messages/reports.js";
import type { ConductorInput } from "../messages/scheduled.js";
import { moveAllocation, release, revertClaims } from "../placement/claims.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import { hostQueueFor } from "./host-casts.js";
import type { ConductorTask } from "./task.js";
import { abortedFault } from "./tasks.js";
import { NO_VALID_HOST_MESSAGE, type StatesError } from "./types.js";

export type MoveInput = ConductorInput & MoveRequest;

/**
 * The cast that moves a placed move on, from the record's state: the source powers off
 * (resize_migrating), or the destination finishes (resize_migrated: the source is done).
 */
export async function nextMoveCast(
  rec: InstanceRecord,
  requestId: string,
): Promise<MoveStepMessage | undefined> {
  const move = rec.migration;
  if (!move?.attempt) return undefined;
  const step = {
    version: 1 as const,
    request_id: requestId,
    instance_uuid: rec.id,
    migration_uuid: move.uuid,
    attempt: move.attempt,
    same_host: move.dest_host === move.source_host,
  };
  if (rec.task_state === "resize_migrating")
    return { ...step, kind: "resize_instance", host: move.source_host, new_flavor: move.new_flavor };
  if (rec.task_state === "rebuild_spawning" && move.dest_host) {
    return {
      ...step,
      kind: "rebuild_instance",
      host: move.dest_host,
      guest: await guestSpecFor(rec),
      power_on: move.power_on !== false,
    };
  }
  if (rec.task_state === "resize_migrated" && move.dest_host) {
    return {
      ...step,
      kind: "finish_resize",
      host: move.dest_host,
      guest: await guestSpecFor({ ...rec, flavor: move.new_flavor }),
      power_on: move.old_vm_state === "active",
    };
  }
  return undefined;
}

/** The host's event of the move step it reports (Nova's wrap_instance_event), with its result. */
export function reportEvent(r: MoveStepReport, ok: boolean): ActionEvent {
  return event(
    MOVE_EVENTS[r.step],
    r.attempt,
    ok ? "Success" : "Error",
    r.host,
    r.details,
    new Date(r.started_at),
    new Date(r.sent_at),
  );
}

/**
 * A move's task (Nova's MigrationTask, LiveMigrationTask, and an evacuation's rebuild elsewhere):
 * the record in the request's migration, the destination claimed at the move's attempt (above
 * every attempt the instance had), an alternate that takes the new flavor (not the source, unless
 * the move may stay there), and a failure that puts the instance back where it was (failMove).
 * Only the event's action, what is cast and a refusal's fault differ between the three.
 */
export function moveTask(
  name: string,
  eventName: string,
  cast: ConductorTask<MoveInput>["cast"],
  refusalFault: (error: StatesError | undefined) => Fault | undefined = () => undefined,
): ConductorTask<MoveInput> {
  const task: ConductorTask<MoveInput> = {
    name,
    claims: true,
    attempt: moveAttempt,
    async load(req) {
      const rec = await getInstance(req.instance_uuids[0]!);
      return rec && !rec.deleted && rec.migration?.uuid === req.move.migration_uuid ? rec : undefined;
    },
    alternate: (req, rec, n) => {
      const move = rec.migration!;
      return {
        resources: resourcesFromFlavor(move.new_flavor),
        exclude: [...req.retry.hosts, ...(move.same_host_allowed ? [] : [move.source_host])],
        recorded: move.attempt === n && move.dest_host ? move.dest_host : undefined,
      };
    },
    async place(req, { instance_uuid: id, selected, alternates }, n) {
      const rec = await getInstance(id);
      if (!rec) return { kind: "gone", deleted: true };
      const placed = await placeMove(
        { id, request_id: req.request_id },
        rec,
        n,
        selected,
        alternates,
        event(
          eventName,
          n,
          "Success",
          selected.host,
          `scheduled to ${selected.host} (attempt ${req.retry.num_attempts})`,
          new Date(),
        ),
      );
      return placed.kind === "gone" ? { kind: "gone" } : { kind: "placed", record: placed.record };
    },
    cast,
    async rollback(req, failure) {
      const rec = await task.load(req);
      if (!rec) return;
      const id = rec.id;
      const f =
        failure.action === "no_valid_host"
          ? fault(NO_VALID_HOST_MESSAGE, failure.details, 400)
          : failure.action === "max_retries_exceeded"
            ? maxRetriesFault(id, req.config.max_attempts, req.retry.last_fault, req.retry.hosts)
            : (refusalFault(failure.error) ?? abortedFault("Migration", id, failure.error));
      await failMove(rec, f, rootLog.child({ request_id: req.request_id, instance_uuid: id }), {
        attempt: moveAttempt(req),
      });
    },
  };
  return task;
}

/**
 * A resize or cold migration: the source powers off first (resize_migrating), or, on a reschedule
 * after the source handed over, the new destination finishes it.
 */
export const coldMoveTask = moveTask("move", EVENT_MIGRATE, async (req, now, { selected }) => {
  const dest = { dest_compute: selected.host, dest_node: selected.nodename, dest_host: selected.host };
  if (now.task_state === "resize_migrating") {
    await updateMigration(req.move.migration_uuid, ["pre-migrating", "migrating"], "migrating", dest);
  } else {
    // a reschedule after the source handed over: the status stays, the destination changes
    await updateMigration(req.move.migration_uuid, ["post-migrating"], "post-migrating", dest);
  }
  return nextMoveCast(now, req.request_id);
});

/** An evacuation (Nova's rebuild on another host): rebuild_instance to the destination. */
export const evacuationTask = moveTask("move", EVENT_REBUILD, async (req, now, { selected }) => {
  const dest = { dest_compute: selected.host, dest_node: selected.nodename, dest_host: selected.host };
  await updateMigration(req.move.migration_uuid, ["pre-migrating"], "pre-migrating", dest);
  return nextMoveCast(now, req.request_id);
});

/**
 * The move failed before it finished: the instance back in its old state with a fault, the
 * migration in error, every claim made for it released and the source's allocation the
 * instance's again (Nova's MigrationTask rollback, and its revert of the allocations). The
 * transition goes first, so a move that finished meanwhile is never undone; the releases are
 * idempotent and run again when a repeated step finds the move already failed. A source that
 * already powered its guest off is told to start it again.
 */
export async function failMove(
  rec: InstanceRecord,
  f: Fault,
  log: Logger,
  opts: {
    /** the event that says why, under the move's action: a host's step, or else the conductor's at `attempt` */
    event?: ActionEvent;
    /** the move's attempt that failed (the conductor's event is keyed by it) */
    attempt?: number;
    /**
     * the migration record's end: error, or a live migration's failed (a host's rollback) or
     * cancelled (aborted), as Nova's _rollback_live_migration sets it
     */
    status?: "error" | "failed" | "cancelled";
  } = {},
): Promise<boolean> {
  const move = rec.migration;
  if (!move) return false;
  const requestId = move.request_id ?? rec.request_id;
  let now: InstanceRecord | undefined = rec;
  if (move.status !== "error") {
    const restart = rec.task_state === "resize_migrated" && move.old_vm_state === "active";
    now = await moveFailed(
      { id: rec.id, request_id: requestId },
      move.uuid,
      f,
      opts.event ??
        event(
          move.type === "evacuation"
            ? EVENT_REBUILD
            : move.type === "live-migration"
              ? EVENT_LIVE_MIGRATE
              : EVENT_MIGRATE,
          opts.attempt ?? move.attempt ?? move.source_attempt + 1,
          "Error",
          null,
          f.details,
          new Date(),
        ),
      restart ? "powering-on" : null,
    );
    // lost to a concurrent step: failed by it already (then finish its settling), or moved on
    now ??= await getInstance(rec.id);
    if (now?.migration?.uuid !== move.uuid || now.migration.status !== "error") return false;
  }
  // Marked failed: settle the claims (each idempotent, so a re-run finishes what a dead one began).
  await revertClaims(rec.id, { above: move.source_attempt });
  await moveAllocation(move.source_host, move.uuid, rec.id, { attempt: move.source_attempt });
  // a delete that ran meanwhile may have released the instance's claim before that write and the
  // migration's after it: the claim just handed back would be no one's
  if ((await getInstance(rec.id))?.deleted !== false) {
    await release(move.source_host, rec.id, move.source_attempt);
  }
  if (now?.task_state === "powering-on") {
    // the source shut its guest down for the move: it starts again (a repeated start is harmless)
    const start: ComputeMessage = {
      version: 1,
      kind: "power_action",
      action: "start",
      request_id: requestId,
      instance_uuid: rec.id,
      host: move.source_host,
      guest: await guestSpecFor({ ...rec, flavor: move.old_flavor }),
    };
    await castToCompute(await hostQueueFor(move.source_host, rec.id, move.source_attempt), start);
  }
  const closed = await closeFailedMove(rec, move);
  // last: while it is open, the watchdog finds the move (and closes an orphaned record)
  await updateMigration(
    move.uuid,
    ["pre-migrating", "migrating", "post-migrating", "accepted", "queued", "preparing", "running"],
    opts.status ?? "error",
  );

  if (closed)
    log.warn("conductor.move_failed", { migration_uuid: move.uuid, fault: f.message, details: f.details });
  return closed;
}
