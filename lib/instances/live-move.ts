// A live migration on the instance's record (Nova's live_migration, post_live_migration and
// post_live_migration_at_destination): accepted by the API as any move (move-accept.ts, task
// state `migrating`), placed by the conductor (placeMove), then each host's report applied here.
// Every write is one conditional UpdateItem on the move's uuid and, for a host's report, on its
// attempt and the host it must come from (workflows.ts's fences), so a duplicated, late or zombie
// report changes nothing. The guest never stops: vm_state stays active throughout.

import type { MoveReport } from "./move.js";
import { merge, transition, transitionWithEvent } from "./transition.js";
import type { InstanceAction, InstanceRecord } from "./types.js";
import { inWorkflow, reportedBy, WORKFLOWS } from "./workflows.js";

/**
 * compute-events: the source copied the guest over and let its own go (Nova's
 * _post_live_migration): the instance points at the destination from now on, at the move's
 * attempt; the task stays `migrating` until the destination has taken it over.
 */
export const liveMigrated: MoveReport = (ref, move, source, attempt, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(reportedBy(WORKFLOWS.move, move.uuid, { host: source, field: "migration.source_host", attempt }), {
      set: ["host = :dh", "node = :dn", "availability_zone = :daz", "attempt = :ra", "spawn_attempt = :ra"],
      remove: ["alternates"],
      condition: "task_state = :migrating AND host = :rh",
      values: {
        ":dh": move.dest_host,
        ":dn": move.dest_node ?? move.dest_host,
        ":daz": move.dest_az,
        ":migrating": "migrating",
      },
    }),
  );

/**
 * compute-events: the destination took the guest over (Nova's post_live_migration_at_destination):
 * the move is over for the instance, ACTIVE with no task on its new host.
 */
export const liveCompleted: MoveReport<[number]> = (ref, move, dest, attempt, power, ev) =>
  transitionWithEvent(
    ref,
    ev,
    merge(reportedBy(WORKFLOWS.move, move.uuid, { host: dest, field: "migration.dest_host", attempt }), {
      set: ["task_state = :null", "power_state = :power", "power_state_at = :now"],
      remove: ["migration"],
      condition: "task_state = :migrating AND host = :rh AND attempt = :ra",
      values: { ":null": null, ":power": power, ":migrating": "migrating" },
    }),
  );

/**
 * API: an abort of the live migration (DELETE /servers/{id}/migrations/{mid}), recorded as its
 * own instance action (Nova's live_migration_cancel). The mark stops any step not yet begun; the
 * source stops the copy under way.
 */
export function markLiveAbort(rec: InstanceRecord, a: InstanceAction): Promise<InstanceRecord | undefined> {
  const move = rec.migration;
  if (!move) return Promise.resolve(undefined);
  return transition(
    rec.id,
    inWorkflow(WORKFLOWS.move, move.uuid, {
      set: ["migration.abort_requested = :true", "actions.#rid = :action"],
      condition: "task_state = :migrating",
      names: { "#rid": a.request_id },
      values: { ":true": true, ":action": a, ":migrating": "migrating" },
    }),
  );
}

/** API: force_complete's own instance action (Nova's live_migration_force_complete). */
export function recordLiveAction(
  rec: InstanceRecord,
  a: InstanceAction,
): Promise<InstanceRecord | undefined> {
  const move = rec.migration;
  if (!move) return Promise.resolve(undefined);
  return transition(
    rec.id,
    inWorkflow(WORKFLOWS.move, move.uuid, {
      set: ["actions.#rid = :action"],
      condition: "task_state = :migrating",
      names: { "#rid": a.request_id },
      values: { ":action": a, ":migrating": "migrating" },
    }),
  );
}
