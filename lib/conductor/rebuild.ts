// The conductor's rebuild (Nova's ComputeTaskManager.rebuild_instance without evacuate): the same
// state machine as a build, its steps here when the request is a rebuild. SelectDestinations has
// the scheduler check a new image against the server's own host (select-destinations.ts, no
// claim); BuildInstances records it and casts rebuild_instance to that host (rebuildTask); a
// refusal or an error in the workflow is Nova's outcome (ERROR with a fault, the old image back).
// The host's report comes back through compute-events (applyRebuildReport).

import { fault, withoutHosts } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { getInstance } from "../instances/queries.js";
import {
  EVENT_COMPUTE_REBUILD,
  EVENT_REBUILD,
  rebuildFailed,
  rebuildRefused,
  rebuildScheduled,
  rebuilt,
} from "../instances/rebuild.js";
import { event } from "../instances/transition.js";
import type { InstanceRecord } from "../instances/types.js";
import { type Logger, log as rootLog } from "../log.js";
import type { RebuildRequest } from "../messages/build-request.js";
import type { MoveStepMessage } from "../messages/compute.js";
import type { MoveStepReport } from "../messages/reports.js";
import type { ConductorInput } from "../messages/scheduled.js";
import type { ConductorTask } from "./task.js";
import { abortedFault } from "./tasks.js";
import { NO_VALID_HOST_MESSAGE } from "./types.js";

export type RebuildInput = ConductorInput & RebuildRequest;

/** The record in this rebuild, or undefined (deleted, or the rebuild is over). */
async function inRebuild(req: RebuildInput): Promise<InstanceRecord | undefined> {
  const rec = await getInstance(req.instance_uuids[0]!);
  if (!rec || rec.deleted || rec.rebuild?.uuid !== req.rebuild.rebuild_uuid) return undefined;
  return rec;
}

/**
 * A rebuild's task: no alternates (it stays on its host) and no claim (it keeps its allocation).
 * Its start records rebuild_spawning (unless a repeated step finds it there) and casts
 * rebuild_instance to its host, fenced by the rebuild's uuid and the instance's attempt (the
 * host's step is idempotent). Its rollback is Nova's conductor on a failed rebuild: ERROR, a
 * fault, the old image back, its event Error.
 */
export const rebuildTask: ConductorTask<RebuildInput> = {
  name: "rebuild",
  claims: false,
  attempt: (req) => req.retry.num_attempts,
  load: inRebuild,
  async place(req, { selected }) {
    const rec = await inRebuild(req);
    if (!rec) return { kind: "gone" };
    const ctx = rec.rebuild!;
    if (selected.host !== rec.host)
      throw new Error(`rebuild of ${rec.id} scheduled to ${selected.host}, not its host`);
    const now =
      rec.task_state === "rebuild_spawning"
        ? rec
        : await rebuildScheduled(
            { id: rec.id, request_id: ctx.request_id },
            ctx,
            selected.host,
            event(
              EVENT_REBUILD,
              rec.attempt,
              "Success",
              selected.host,
              ctx.image_changed ? `${selected.host} accepts the new image` : "same image: not scheduled",
              new Date(),
            ),
          );
    return now?.task_state === "rebuild_spawning" ? { kind: "placed", record: now } : { kind: "gone" };
  },
  cast: (req, now) => rebuildCast(now, req.request_id),
  async rollback(req, failure) {
    const rec = await inRebuild(req);
    if (!rec) return;
    const f =
      failure.action === "no_valid_host"
        ? fault(NO_VALID_HOST_MESSAGE, failure.details)
        : abortedFault("Rebuild", rec.id, failure.error);
    const details = failure.action === "no_valid_host" ? `NoValidHost: ${failure.details}` : f.details;
    const ctx = rec.rebuild!;
    const done = await rebuildRefused(
      { id: rec.id, request_id: ctx.request_id },
      ctx,
      f,
      event(EVENT_REBUILD, rec.attempt, "Error", null, details, new Date()),
    );
    rootLog.warn("conductor.rebuild_failed", {
      request_id: req.request_id,
      instance_uuid: rec.id,
      fault: f.message,
      details: f.details,
      applied: Boolean(done),
    });
  },
};

/**
 * rebuild_instance to the server's own host: the guest destroyed and created from the new image
 * (the evacuation's step, on the same host). Its migration_uuid is the rebuild's uuid: Nova's
 * rebuild has no migration, and the token fences the host's report the same way.
 */
export async function rebuildCast(rec: InstanceRecord, requestId: string): Promise<MoveStepMessage> {
  const ctx = rec.rebuild!;
  return {
    version: 1,
    kind: "rebuild_instance",
    request_id: requestId,
    instance_uuid: rec.id,
    host: rec.host!,
    migration_uuid: ctx.uuid,
    attempt: rec.attempt,
    same_host: true,
    guest: await guestSpecFor(rec),
    power_on: ctx.old_vm_state !== "stopped",
  };
}

/** compute-events: the host's report of a rebuild on its own host (rebuild_instance whose token is the record's rebuild). */
export async function applyRebuildReport(r: MoveStepReport, rec: InstanceRecord, log: Logger): Promise<void> {
  const ctx = rec.rebuild!;
  const ref = { id: rec.id, request_id: ctx.request_id };
  const ev = event(
    EVENT_COMPUTE_REBUILD,
    r.attempt,
    r.ok ? "Success" : "Error",
    r.host,
    r.details,
    new Date(r.started_at),
    new Date(r.sent_at),
  );
  if (r.ok) {
    const done = await rebuilt(ref, ctx, r.host, r.attempt, r.power_state, r.sent_at, ev);
    log.info("compute_events.rebuilt", { applied: Boolean(done) });
    return;
  }
  const text = `Rebuild of instance ${rec.id} failed: ${withoutHosts(r.details ?? "error", [r.host])}`;
  const done = await rebuildFailed(
    ref,
    ctx,
    r.host,
    r.attempt,
    r.power_state,
    fault(text, r.details ?? text),
    ev,
  );
  log.warn("compute_events.rebuild_failed", { applied: Boolean(done), details: r.details });
}
