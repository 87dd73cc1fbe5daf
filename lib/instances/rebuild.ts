// A rebuild on the instance's own host (Nova's compute API rebuild, the conductor's
// rebuild_instance without evacuate, the compute manager's rebuild_instance): the API begins it,
// the conductor has the scheduler check a new image against the host and casts to it,
// compute-events applies the host's report. Every write is ONE conditional UpdateItem on the
// rebuild's uuid (the record's RebuildContext) and the task state the step expects; the host's
// report is also fenced by the host and the instance's attempt, so a duplicated, late or zombie
// report changes nothing. No claim is made or released: the instance keeps its allocation.

import { inState } from "../aws/dynamo-conditions.js";
import {
  beginAction,
  type HostReportWrite,
  type InstanceRef,
  merge,
  type ReportTransition,
  transitionWithEvent,
  type Update,
} from "./transition.js";
import type { ActionEvent, Fault, InstanceAction, InstanceRecord, RebuildContext } from "./types.js";
import { abandonAction, inWorkflow, reportedBy, WORKFLOWS } from "./workflows.js";

/** The conductor's event (Nova's EventReporter 'rebuild_server', for rebuild and evacuate alike). */
export { EVENT_REBUILD } from "./move.js";
/** The host's event (wrap_instance_event on the compute manager's rebuild_instance). */
export const EVENT_COMPUTE_REBUILD = "compute_rebuild_instance";

/** What a rebuild changes on the record as it begins (Nova's instance.update(kwargs) in the API). */
export type RebuildFields = Partial<
  Pick<
    InstanceRecord,
    | "name"
    | "metadata"
    | "description"
    | "key_name"
    | "user_data"
    | "hostname"
    | "access_ip_v4"
    | "access_ip_v6"
  >
>;

/**
 * API: accept a rebuild. The new image and fields, the task state, the RebuildContext and Nova's
 * instance action in one write, conditioned on the state the API checked and on no move or
 * rebuild being under way, so two concurrent requests give one 202 and one 409. Undefined when
 * the state changed meanwhile.
 */
export function beginRebuild(
  rec: InstanceRecord,
  ctx: RebuildContext,
  image: InstanceRecord["image"],
  fields: RebuildFields,
  a: InstanceAction,
): Promise<InstanceRecord | undefined> {
  const names: Record<string, string> = { "#rb": "rebuild", "#img": "image" };
  const values: Record<string, unknown> = { ":ctx": ctx, ":image": image };
  const set = ["#rb = :ctx", "#img = :image"];
  Object.entries(fields).forEach(([k, v], i) => {
    names[`#f${i}`] = k;
    values[`:f${i}`] = v ?? null;
    set.push(`#f${i} = :f${i}`);
  });
  return beginAction(rec, "rebuilding", a, {
    set,
    condition: "attribute_not_exists(migration) AND attribute_not_exists(#rb)",
    names,
    values,
  });
}

/** API: take back a rebuild whose request could not be sent (the image it had comes back). */
export const abandonRebuild = (id: string, ctx: RebuildContext): Promise<InstanceRecord | undefined> =>
  abandonAction(
    id,
    "rebuilding",
    { workflow: WORKFLOWS.rebuild, uuid: ctx.uuid },
    {
      set: ["#img = :orig"],
      condition: "attribute_exists(id)",
      names: { "#img": "image" },
      values: { ":orig": ctx.orig_image },
    },
  );

/**
 * Conductor: the host may rebuild (its check passed, or the image is the same): rebuild_spawning,
 * with the conductor's event. Undefined when the record is not in this rebuild's first step.
 */
export const rebuildScheduled: ReportTransition<RebuildContext> = (ref, ctx, host, ev) =>
  transitionWithEvent(
    ref,
    ev,
    inWorkflow(WORKFLOWS.rebuild, ctx.uuid, {
      set: ["task_state = :spawning"],
      condition: "task_state = :rebuilding AND host = :h",
      values: { ":spawning": "rebuild_spawning", ":rebuilding": "rebuilding", ":h": host },
    }),
  );

/**
 * Conductor: the rebuild failed before its host took it (NoValidHost, an error in the workflow).
 * Nova's outcome: ERROR with a fault, the task state cleared, and the image it had put back
 * (Nova's conductor rolls back image_ref); the other fields keep what the request set.
 */
export function rebuildRefused(
  ref: InstanceRef,
  ctx: RebuildContext,
  f: Fault,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = {
    ":error": "error",
    ":null": null,
    ":orig": ctx.orig_image,
    ":fault": f,
  };
  return transitionWithEvent(
    ref,
    ev,
    inWorkflow(WORKFLOWS.rebuild, ctx.uuid, {
      set: ["vm_state = :error", "task_state = :null", "#img = :orig", "fault = :fault"],
      remove: ["#rb"],
      names: { "#img": "image" },
      condition: inState(values, "task_state", ["rebuilding", "rebuild_spawning"]),
      values,
    }),
  );
}

/** A report of this rebuild by `host` at `attempt`, out of rebuild_spawning. */
function reported(ctx: RebuildContext, host: string, attempt: number, more: Update): Update {
  return merge(
    reportedBy(WORKFLOWS.rebuild, ctx.uuid, { host, attempt }),
    {
      set: ["task_state = :null"],
      remove: ["#rb"],
      condition: "task_state = :spawning",
      values: { ":null": null, ":spawning": "rebuild_spawning" },
    },
    more,
  );
}

/** A host's report of a step of this rebuild, with what the step reports besides. */
type RebuildReport<Args extends unknown[] = []> = HostReportWrite<RebuildContext, Args>;

/**
 * compute-events: the host rebuilt the guest from the new image. A stopped server is stopped
 * again and an active or errored one runs (Nova's _do_rebuild_instance and its stop afterwards).
 */
export const rebuilt: RebuildReport<[number, string]> = (ref, ctx, host, attempt, power, at, ev) =>
  transitionWithEvent(
    ref,
    ev,
    reported(ctx, host, attempt, {
      set: ["vm_state = :vm", "power_state = :power", "power_state_at = :at", "launched_at = :at"],
      condition: "attribute_exists(#rb)",
      values: { ":vm": ctx.old_vm_state === "stopped" ? "stopped" : "active", ":power": power, ":at": at },
    }),
  );

/** compute-events: the host could not rebuild it: ERROR with a fault (Nova's _set_instance_obj_error_state). */
export const rebuildFailed: RebuildReport<[number, Fault]> = (ref, ctx, host, attempt, power, f, ev) =>
  transitionWithEvent(
    ref,
    ev,
    reported(ctx, host, attempt, {
      set: ["vm_state = :error", "fault = :fault", "power_state = :power"],
      condition: "attribute_exists(#rb)",
      values: { ":error": "error", ":fault": f, ":power": power },
    }),
  );
