// The watchdog's look at moves (its minute's second job, after builds): nothing stays in RESIZE
// or VERIFY_RESIZE for ever. A finished move past resize_confirm_window is confirmed (Nova's
// _poll_unconfirmed_resizes); a move whose host went down, or that made no progress within
// instance_build_timeout, fails back to its source (claims whole, a fault saying why); a confirm
// or revert whose host did not answer is cast again (each step is idempotent); a record whose
// instance has moved on is closed as an error. While hosts' reports cannot get through (the report
// path is suspect, or was less than service_down_time ago: lib/placement/report-path.ts), a move
// is not held to instance_build_timeout: its host may have made progress it could not report.
import { randomUUID } from "node:crypto";
import { castToCompute } from "../aws/send.js";
import { instanceBuildTimeout, moveOptions } from "../config.js";
import { fault } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { listOpenMigrations, updateMigration } from "../instances/migrations.js";
import { beginConfirm, confirmMove, MOVE_EVENTS } from "../instances/move.js";
import { getInstance } from "../instances/queries.js";
import { event } from "../instances/transition.js";
import type { InstanceRecord, MigrationRecord } from "../instances/types.js";
import { log } from "../log.js";
import type { MoveStepMessage } from "../messages/compute.js";
import { hostQueueUrl } from "../placement/host-queues.js";
import { watchLiveMigration } from "./live-migrate.js";
import { failMove } from "./moves.js";

/** A record without its instance's move for this long is closed (the API writes the record first). */
const ORPHAN_AFTER_SECONDS = 60;

export interface MoveWatchAction {
  instance_uuid: string;
  migration_uuid: string;
  action: "confirmed" | "failed" | "recast" | "closed";
  reason: string;
}

async function castToHost(host: string, msg: MoveStepMessage): Promise<void> {
  const url = await hostQueueUrl(host);
  if (url) await castToCompute(url, msg);
}

export async function watchMoves(
  now: Date,
  up: ReadonlyMap<string, boolean>,
  /** whether reports from this host may still be on their way (no deadline is held against it) */
  reportsDelayed: (host: string | null) => boolean = () => false,
): Promise<MoveWatchAction[]> {
  const open = await listOpenMigrations();
  const actions: MoveWatchAction[] = [];
  for (const m of open) {
    const a = await watchMove(m, now, up, reportsDelayed);
    if (a) {
      actions.push(a);
      log.warn(`watchdog.move_${a.action}`, { ...a });
    }
  }
  return actions;
}

async function watchMove(
  m: MigrationRecord,
  now: Date,
  up: ReadonlyMap<string, boolean>,
  reportsDelayed: (host: string | null) => boolean,
): Promise<MoveWatchAction | undefined> {
  const base = { instance_uuid: m.instance_uuid, migration_uuid: m.uuid };
  const age = (now.getTime() - Date.parse(m.updated_at)) / 1000;
  const rec = await getInstance(m.instance_uuid);
  const move = rec?.migration;
  if (!rec || rec.deleted || move?.uuid !== m.uuid) {
    // (a record just written, its instance's write not yet made, is left alone)
    if (age < ORPHAN_AFTER_SECONDS) return undefined;
    // the instance went (deleted) or the move ended without closing its record (a step died
    // between the two writes): the record is closed as an error
    if (await updateMigration(m.uuid, [m.status], "error"))
      return { ...base, action: "closed", reason: "its instance is no longer in this move" };
    return undefined;
  }
  const delayed = reportsDelayed(move.source_host) || reportsDelayed(move.dest_host ?? null);
  const timeout = delayed ? Number.POSITIVE_INFINITY : instanceBuildTimeout();
  const stale = age > timeout;
  // a failure marked on the record whose settling died half-way: finish it
  if (move.status === "error") {
    const closed = await failMove(rec, fault("", ""), log);
    return closed ? { ...base, action: "failed", reason: "its failure's settling was finished" } : undefined;
  }

  const window = moveOptions().resizeConfirmWindow;
  const isUp = (host: string | null) => host === null || up.get(host) === true;
  if (move.type === "live-migration") {
    const a = await watchLiveMigration(rec, m.status, age, timeout, isUp, log, castToHost);
    return a ? { ...base, ...a } : undefined;
  }
  switch (m.status) {
    case "finished": {
      if (window <= 0 || age <= window) return undefined;
      const confirmed = await confirmMove(rec, watchdogAction(rec, now), {
        beginConfirm,
        updateMigration,
        castToHost,
      });
      return confirmed
        ? { ...base, action: "confirmed", reason: `resize_confirm_window of ${window}s passed` }
        : undefined;
    }
    case "pre-migrating":
    case "migrating":
    case "post-migrating": {
      // the host the move waits on: the source until it has handed over, then the destination
      const waitsOn = rec.task_state === "resize_migrating" ? move.source_host : move.dest_host;
      const down = !isUp(waitsOn);
      if (!down && !stale) return undefined;
      const reason = down
        ? "its host is down (no heartbeat within service_down_time, or forced down)"
        : `it made no progress within instance_build_timeout (${instanceBuildTimeout()}s)`;
      const text = `Migration of instance ${rec.id} failed: ${reason}`;
      // the step that never came, as that host's event (the conductor's own when none was placed)
      const step =
        rec.task_state === "resize_migrating"
          ? "resize_instance"
          : rec.task_state === "resize_migrated"
            ? "finish_resize"
            : rec.task_state === "rebuild_spawning"
              ? "rebuild_instance"
              : undefined;
      const f = fault(text, `${text} (waiting on ${waitsOn ?? "the conductor"})`);
      const failed = await failMove(rec, f, log, {
        ...(step && move.attempt
          ? { event: event(MOVE_EVENTS[step], move.attempt, "Error", waitsOn, f.details, now) }
          : {}),
      });

      return failed ? { ...base, action: "failed", reason } : undefined;
    }
    case "confirming":
    case "reverting": {
      if (!stale) return undefined;
      const msg = await settleCast(rec);
      if (!msg || !isUp(msg.host)) return undefined;
      await castToHost(msg.host, msg);
      await updateMigration(m.uuid, [m.status], m.status);
      return { ...base, action: "recast", reason: `${msg.kind} had no answer within instance_build_timeout` };
    }
    default:
      return undefined;
  }
}

/** A confirm's or revert's step again, from where the record is. */
async function settleCast(rec: InstanceRecord): Promise<MoveStepMessage | undefined> {
  const move = rec.migration!;
  const requestId =
    Object.values(rec.actions)
      .filter((a) => a.action === (move.status === "confirming" ? "confirmResize" : "revertResize"))
      .sort((a, b) => b.start_time.localeCompare(a.start_time))[0]?.request_id ?? `req-${randomUUID()}`;
  const step = {
    version: 1 as const,
    request_id: requestId,
    instance_uuid: rec.id,
    migration_uuid: move.uuid,
    same_host: move.source_host === move.dest_host,
  };
  if (move.status === "confirming")
    return { ...step, kind: "confirm_resize", host: move.source_host, attempt: move.attempt ?? rec.attempt };
  if (move.dest_host && rec.host === move.dest_host && rec.attempt === move.attempt)
    return { ...step, kind: "revert_resize", host: move.dest_host, attempt: rec.attempt };
  if (rec.host === move.source_host) {
    return {
      ...step,
      kind: "finish_revert_resize",
      host: move.source_host,
      attempt: rec.attempt,
      guest: await guestSpecFor(rec),
      power_on: move.old_vm_state === "active",
    };
  }
  return undefined;
}

/** Nova's auto-confirm runs as an admin: recorded as a confirmResize action of its own. */
function watchdogAction(rec: InstanceRecord, now: Date) {
  return {
    action: "confirmResize" as const,
    request_id: `req-${randomUUID()}`,
    user_id: rec.user_id,
    project_id: rec.project_id,
    start_time: now.toISOString(),
    message: "confirmed by the watchdog: resize_confirm_window passed",
    events: {},
  };
}
