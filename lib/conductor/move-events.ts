// compute-events' half of a resize or cold migration: each host's report of a step moves the
// instance, the migration and the claims on, then casts the next step (Nova's resize_instance →
// finish_resize, confirm_resize, revert_resize → finish_revert_resize). Each report is fenced
// by the move's uuid, its attempt and the host it must come from. A repeated report finds its
// transition applied already and repeats only what is idempotent (releases, the next cast), so a
// Lambda that died between a write and its cast is finished by the redelivery.

import { sendBuildRequest } from "../aws/send.js";
import { fault, withoutHosts } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { updateMigration } from "../instances/migrations.js";
import {
  confirmed,
  destinationFailed,
  destinationFinished,
  destinationTask,
  evacuated,
  revertedOnDestination,
  revertFinished,
  sourceMigrated,
} from "../instances/move.js";
import { rebindPorts } from "../instances/networking.js";
import { getInstance } from "../instances/queries.js";
import { conductorRequest } from "../instances/request-spec.js";
import type { InstanceRef } from "../instances/transition.js";
import type { InstanceRecord, MoveContext } from "../instances/types.js";
import type { Logger } from "../log.js";
import type { ComputeMessage } from "../messages/compute.js";
import type { MoveStepReport } from "../messages/reports.js";
import { moveAllocation, release } from "../placement/claims.js";
import { getHost } from "../placement/hosts.js";
import { isServiceUp } from "../placement/liveness.js";
import { applyLiveReport, isLiveMigrationStep } from "./live-migrate.js";
import { failMove, nextMoveCast, reportEvent } from "./moves.js";
import { applyRebuildReport } from "./rebuild.js";

export type CastToHost = (host: string, msg: ComputeMessage, log: Logger) => Promise<void>;

/** The terminate an evacuated guest's source gets: its report frees the evacuation's claim there. */
export function evacuatedGuestTerminate(
  host: string,
  instanceUuid: string,
  migrationUuid: string,
): ComputeMessage {
  return {
    version: 1,
    kind: "terminate_instance",
    request_id: `req-evacuated-${migrationUuid}`,
    instance_uuid: instanceUuid,
    host,
    migration_uuid: migrationUuid,
  };
}

export async function applyMoveReport(r: MoveStepReport, log: Logger, cast: CastToHost): Promise<void> {
  const id = r.instance_uuid;
  const mlog = log.child({
    request_id: r.request_id,
    instance_uuid: id,
    migration_uuid: r.migration_uuid,
    step: r.step,
    attempt: r.attempt,
  });
  const rec = await getInstance(id);
  // a rebuild on the server's own host: its token travels as the step's migration_uuid
  if (r.step === "rebuild_instance" && rec && !rec.deleted && rec.rebuild?.uuid === r.migration_uuid)
    return applyRebuildReport(r, rec, mlog);
  const move = rec?.migration;
  // (a move marked failed is over for its hosts: what they report now is fenced)
  if (!rec || rec.deleted || move?.uuid !== r.migration_uuid || move.status === "error")
    return fenced(r, rec, mlog, cast);

  if (isLiveMigrationStep(r.step)) return applyLiveReport(r, rec, move, mlog, cast);
  const ref = { id, request_id: r.request_id };
  const ev = (ok: boolean) => reportEvent(r, ok);
  switch (r.step) {
    case "resize_instance": {
      if (!r.ok) {
        const text = `Resize of instance ${id} failed on its source host: ${withoutHosts(r.details ?? "error", [r.host])}`;
        await failMove(rec, fault(text, r.details ?? text), mlog, { event: ev(false) });

        return;
      }
      const done = await sourceMigrated(ref, move.uuid, r.host, r.attempt, ev(true));
      if (done) await updateMigration(move.uuid, ["migrating"], "post-migrating");
      const now = done ?? (await getInstance(id));
      // the destination's turn (again, if this report is a redelivery and it has not finished)
      if (now?.migration?.uuid === move.uuid && now.migration.attempt === r.attempt) {
        const next = await nextMoveCast(now, r.request_id);
        if (next?.kind === "finish_resize") await cast(next.host, next, mlog);
      }
      mlog.info("compute_events.move_source_done", { applied: Boolean(done) });
      return;
    }
    case "finish_resize":
      return r.ok ? finished(r, ref, move, mlog) : destinationFailedReport(r, rec, move, mlog);
    case "rebuild_instance": {
      if (!r.ok) return destinationFailedReport(r, rec, move, mlog);
      const done = await evacuated(
        ref,
        move,
        r.host,
        r.attempt,
        r.power_state,
        move.power_on !== false,
        ev(true),
      );
      if (done) {
        await updateMigration(move.uuid, ["pre-migrating"], "done");
        await rebindPorts(done);
        // a source already back (up again before the rebuild ended) destroys its copy now
        const source = await getHost(move.source_host);
        if (source && isServiceUp(source))
          await cast(move.source_host, evacuatedGuestTerminate(move.source_host, id, move.uuid), mlog);
      }
      mlog.info("compute_events.evacuated", { applied: Boolean(done), host: r.host });
      return;
    }
    case "confirm_resize": {
      // the old guest is gone: the source's space is free only now (Nova's order)
      await release(move.source_host, move.uuid);
      const done = await confirmed(ref, move, r.host, ev(r.ok));
      if (done) await updateMigration(move.uuid, ["confirming"], "confirmed");
      mlog.info("compute_events.move_confirmed", { applied: Boolean(done) });
      return;
    }
    case "revert_resize": {
      if (!r.ok) {
        // the new guest could not be destroyed: the revert stays in progress for an operator
        mlog.error("compute_events.revert_failed", { details: r.details });
        return;
      }
      // Placement's revert: the destination's claim goes, the source's is the instance's again,
      // at the next attempt (the fencing token of the source's finish_revert_resize).
      const next = r.attempt + 1;
      if (!rec.deleted && rec.host === r.host && rec.attempt === r.attempt) {
        await release(r.host, id, r.attempt);
        await moveAllocation(move.source_host, move.uuid, id, { attempt: next });
      }
      const done = await revertedOnDestination(ref, move, r.host, r.attempt, next, ev(true));
      if (done) await rebindPorts(done);
      const now = done ?? (await getInstance(id));
      // deleted while this ran: its delete released what the record named then (the destination's
      // claim, the migration's on the source), not the source's claim handed to it just above
      if (now?.deleted) await release(move.source_host, id, next);
      if (
        now?.migration?.uuid === move.uuid &&
        now.task_state === "resize_reverting" &&
        now.host === move.source_host &&
        now.attempt === next
      ) {
        await cast(
          move.source_host,
          {
            version: 1,
            kind: "finish_revert_resize",
            request_id: r.request_id,
            instance_uuid: id,
            host: move.source_host,
            migration_uuid: move.uuid,
            attempt: next,
            same_host: move.source_host === r.host,
            guest: await guestSpecFor(now),
            power_on: move.old_vm_state === "active",
          },
          mlog,
        );
      }
      mlog.info("compute_events.move_reverted_on_destination", { applied: Boolean(done) });
      return;
    }
    case "finish_revert_resize": {
      const done = await revertFinished(ref, move, r.host, r.attempt, r.power_state, ev(r.ok));
      if (done) await updateMigration(move.uuid, ["reverting"], "reverted");
      mlog.info("compute_events.move_reverted", { applied: Boolean(done) });
      return;
    }
  }
}

/** The destination runs it: VERIFY_RESIZE. */
async function finished(r: MoveStepReport, ref: InstanceRef, move: MoveContext, log: Logger): Promise<void> {
  const done = await destinationFinished(ref, move, r.host, r.attempt, r.power_state, reportEvent(r, true));
  if (done) await updateMigration(move.uuid, ["post-migrating"], "finished");
  if (done) await rebindPorts(done);
  log.info("compute_events.move_finished", { applied: Boolean(done), host: r.host });
}

/**
 * The destination could not finish: its claim goes back and the move goes to the next alternate
 * through the conductor, as a failed build does (Nova's MigrationTask reschedule); past
 * max_attempts the conductor fails the move.
 */
async function destinationFailedReport(
  r: MoveStepReport,
  rec: InstanceRecord,
  move: MoveContext,
  log: Logger,
): Promise<void> {
  const ref = { id: rec.id, request_id: r.request_id };
  // (the step's own event: finish_resize, or an evacuation's rebuild_instance)
  const failed = await destinationFailed(ref, move, r.host, r.attempt, reportEvent(r, false));
  // a redelivery after the write: the record says this host failed last at this attempt
  const now = failed ?? (await getInstance(rec.id));
  const m = now?.migration;
  if (
    !now ||
    m?.uuid !== move.uuid ||
    m.attempt !== r.attempt ||
    m.dest_host !== null ||
    m.tried.at(-1) !== r.host ||
    now.task_state !== destinationTask(m)
  ) {
    return;
  }
  await release(r.host, rec.id, r.attempt);
  const alternates = (now.alternates ?? []).filter((a) => a.host !== r.host);
  const tried = [...new Set(m.tried)];
  await sendBuildRequest({
    ...conductorRequest(rec, r.request_id, {
      num_attempts: r.attempt - m.source_attempt + 1,
      hosts: tried,
      last_fault: `${move.type === "evacuation" ? "Evacuation" : "Resize"} of instance ${rec.id} was re-scheduled: ${withoutHosts(r.details ?? "error", [...tried, ...alternates.map((a) => a.host)])}`,
    }),
    alternates,
    move: { migration_uuid: move.uuid, base_attempt: m.source_attempt },
  });
  log.info("compute_events.move_rescheduled", {
    host: r.host,
    next_attempt: r.attempt + 1,
    alternates: alternates.map((a) => a.host),
  });
}

/**
 * A report for a move the record is not in (over, failed, or the instance deleted). A
 * destination that built a guest for it must not keep the guest or its claim; anything else
 * changes nothing.
 */
async function fenced(
  r: MoveStepReport,
  rec: InstanceRecord | undefined,
  log: Logger,
  cast: CastToHost,
): Promise<void> {
  const livesThere = rec && !rec.deleted && rec.host === r.host;
  // every step that leaves a guest running where it ran
  const built =
    r.step === "finish_resize" || r.step === "rebuild_instance" || r.step === "finish_revert_resize";

  if (built && r.ok && !(livesThere && rec.attempt === r.attempt)) {
    await release(r.host, r.instance_uuid, r.attempt);
    // a same-host move's guest is the instance's own: only the claim goes
    if (livesThere) return;
    await cast(
      r.host,
      {
        version: 1,
        kind: "terminate_instance",
        request_id: r.request_id,
        instance_uuid: r.instance_uuid,
        host: r.host,
      },
      log,
    );
  }
  log.info("compute_events.move_report_fenced", { current_host: rec?.host, deleted: rec?.deleted });
}
