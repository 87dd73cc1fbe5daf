// The conductor's resize and cold migration (Nova's MigrationTask): the same state machine as a
// build, its steps here when the request is a move. The scheduler claims the destination for the
// instance (lib/conductor/select-destinations.ts, after the source's allocation became the
// migration's); StartMove records the destination and casts the next step; a failure at any
// point puts the instance back where it was, its claims whole (failMove).
import { castToCompute, computeMessageBody } from "../aws/send.js";
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
import {
  type ConductorInput,
  NOTHING_SCHEDULED,
  type Scheduled,
  selectionIn,
} from "../messages/scheduled.js";
import { consumerAllocations } from "../placement/allocations.js";
import { moveAllocation, release } from "../placement/claims.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import { claimFirstAlternate } from "./alternates.js";
import { hostQueueUrl } from "./host-queues.js";
import { startLiveMigration } from "./live-migrate.js";
import type { AlternatesExhaustedAnswer, Cast } from "./types.js";

export type MoveInput = ConductorInput & MoveRequest;

async function queueUrlOf(host: string): Promise<string> {
  const url = await hostQueueUrl(host);
  if (!url) throw new Error(`host ${host} has no queue_url; cannot cast a move step to it`);
  return url;
}

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
    return { ...step, kind: "resize_instance", host: move.source_host };
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

/** BuildInstances for a move: record the claimed destination (the move's token) and cast the next step. */
export async function startMove(req: MoveInput, scheduled: Scheduled): Promise<{ casts: Cast[] }> {
  const sel = scheduled.selections[0];
  if (!sel) return { casts: [] };
  const n = moveAttempt(req);
  const { instance_uuid: id, selected, alternates } = selectionIn(scheduled, sel);
  const log = rootLog.child({ request_id: req.request_id, instance_uuid: id, attempt: n });
  const rec = await getInstance(id);
  // a live migration places the same way, then goes its own way (lib/conductor/live-migrate.ts)
  if (rec?.migration?.type === "live-migration") return startLiveMigration(req, scheduled, rec);
  const placed = rec
    ? await placeMove(
        { id, request_id: req.request_id },
        rec,
        n,
        selected,
        alternates,
        event(
          rec.migration?.type === "evacuation" ? EVENT_REBUILD : EVENT_MIGRATE,
          n,
          "Success",
          selected.host,
          `scheduled to ${selected.host} (attempt ${req.retry.num_attempts})`,
          new Date(),
        ),
      )
    : ({ kind: "gone", record: undefined } as const);
  if (placed.kind === "gone") {
    // deleted, or the move ended meanwhile: the claim made for it goes back
    await release(selected.host, id, n);
    log.info("conductor.move_abandoned", { host: selected.host, migration_uuid: req.move.migration_uuid });
    return { casts: [] };
  }
  const now = placed.record;
  const dest = { dest_compute: selected.host, dest_node: selected.nodename, dest_host: selected.host };
  if (now.task_state === "resize_migrating") {
    await updateMigration(req.move.migration_uuid, ["pre-migrating", "migrating"], "migrating", dest);
  } else {
    // a reschedule after the source handed over, or an evacuation: the status stays, the destination changes
    const status = now.migration?.type === "evacuation" ? "pre-migrating" : "post-migrating";
    await updateMigration(req.move.migration_uuid, [status], status, dest);
  }
  const msg = await nextMoveCast(now, req.request_id);
  if (!msg) return { casts: [] };
  log.info("conductor.cast_move", {
    step: msg.kind,
    host: msg.host,
    alternates: alternates.map((a) => a.host),
  });
  return { casts: [{ queue_url: await queueUrlOf(msg.host), message_body: computeMessageBody(msg) }] };
}

/** ClaimAlternate for a move: the next alternate that takes the new flavor, without the filters. */
export async function claimMoveAlternate(req: MoveInput): Promise<Scheduled | AlternatesExhaustedAnswer> {
  const n = moveAttempt(req);
  const id = req.instance_uuids[0]!;
  const rec = await getInstance(id);
  const move = rec?.migration;
  if (!rec || rec.deleted || move?.uuid !== req.move.migration_uuid) return NOTHING_SCHEDULED;
  const exclude = [...req.retry.hosts, ...(move.same_host_allowed ? [] : [move.source_host])];
  const log = rootLog.child({ request_id: req.request_id, instance_uuid: id, attempt: n });
  return claimFirstAlternate(
    id,
    n,
    req.alternates ?? [],
    exclude,
    resourcesFromFlavor(move.new_flavor),
    log,
    {
      recorded: move.attempt === n && move.dest_host ? move.dest_host : undefined,
    },
  );
}

/** NoValidHost, MaxRetriesExceeded or an error in the workflow, for a move. */
export async function moveStepFailed(req: MoveInput, f: Fault): Promise<void> {
  const id = req.instance_uuids[0]!;
  const rec = await getInstance(id);
  if (!rec || rec.deleted || rec.migration?.uuid !== req.move.migration_uuid) return;
  await failMove(rec, f, rootLog.child({ request_id: req.request_id, instance_uuid: id }), {
    attempt: moveAttempt(req),
  });
}

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
  for (const a of await consumerAllocations(rec.id)) {
    if (a.attempt > move.source_attempt) await release(a.host, rec.id, a.attempt);
  }
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
    await castToCompute(await queueUrlOf(move.source_host), start);
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
