// Shelve, shelve offload and unshelve on the instance record (Nova's compute API shelve,
// shelve_offload and unshelve, the compute manager's shelve_instance, shelve_offload_instance and
// unshelve_instance, the conductor's unshelve_instance). The API begins each in one conditional
// write; compute-events applies the host's report; an unshelve of an offloaded server goes
// through the conductor, which places it as a build is placed. Every write is conditioned on the
// state it expects (and the host's on its host and attempt, an unshelve's on its uuid), so a
// duplicated, late or zombie report changes nothing.

import { inState } from "../aws/dynamo-conditions.js";
import { createImage } from "../catalog/image-create.js";
import { placedOn } from "./build.js";
import { serverImageRecord } from "./snapshot.js";
import {
  type HostReportWrite,
  type InstanceRef,
  merge,
  transition,
  transitionWithEvent,
  type Update,
} from "./transition.js";
import type {
  ActionEvent,
  Fault,
  InstanceRecord,
  ShelveContext,
  TaskState,
  UnshelveContext,
} from "./types.js";
import { inWorkflow, reportedBy, WORKFLOWS } from "./workflows.js";

/** The host's events (wrap_instance_event on the compute manager's methods). */
export const EVENT_SHELVE = "compute_shelve_instance";
export const EVENT_SHELVE_OFFLOAD = "compute_shelve_offload_instance";
export const EVENT_UNSHELVE = "compute_unshelve_instance";
/** an unshelve of a SHELVED server is the conductor's start_instance */
export const EVENT_START = "compute_start_instance";
/** the conductor's scheduling for an unshelve (its EventReporter 'schedule_instances') */
export const EVENT_UNSHELVE_SCHEDULE = "schedule_instances";

/** Nova's check_instance_state for shelve: these vm_states, no task. */
export const SHELVE_FROM = ["active", "stopped", "paused", "suspended"] as const;

/** The task states of a shelve under way on its host (Nova's, up to the offload). */
const SHELVING: Exclude<TaskState, null>[] = [
  "shelving",
  "shelving_image_pending_upload",
  "shelving_image_uploading",
];

const POWER_SHUTDOWN = 4;

/** The unshelve's context and, when a zone was given (2.77) or unpinned (2.91), the request spec's zone. */
export function unshelveFields(
  ctx: UnshelveContext,
  zone: string | null | undefined,
  hasSpec: boolean,
): Update {
  const set = ["#us = :us"];
  const remove: string[] = [];
  const values: Record<string, unknown> = { ":us": ctx };
  const names: Record<string, string> = { "#us": "unshelve" };
  if (zone !== undefined) {
    // Nova saves the request spec's availability_zone before scheduling
    names["#rs"] = "request_spec";
    names["#az"] = "availability_zone";
    if (zone === null) {
      if (hasSpec) remove.push("#rs.#az");
    } else if (hasSpec) {
      set.push("#rs.#az = :az");
      values[":az"] = zone;
    } else {
      set.push("#rs = :rs");
      values[":rs"] = { availability_zone: zone };
    }
  }
  return { set, remove, condition: "attribute_not_exists(#us)", names, values };
}

/** What a host's shelve_done report applies. */
export interface ShelveDone {
  op: "shelve" | "offload" | "start";
  host: string;
  attempt: number;
  ok: boolean;
  offloaded: boolean;
  power_state: number;
  at: string;
}

/** The task states each op's report may find (a shelve offloading at once stays shelving). */
const OP_TASKS: Record<ShelveDone["op"], Exclude<TaskState, null>[]> = {
  shelve: SHELVING,
  offload: ["shelving_offloading"],
  start: ["unshelving"],
};

/** The vm_states each op's report may find. */
const OP_VM: Record<ShelveDone["op"], string[]> = {
  shelve: [...SHELVE_FROM],
  offload: ["shelved"],
  start: ["shelved"],
};

/**
 * compute-events: the host finished (or failed) a shelve, an offload or the start of a SHELVED
 * server. ok: shelve → SHELVED (or SHELVED_OFFLOADED when the guest is gone too), offload →
 * SHELVED_OFFLOADED with no host, start → ACTIVE without its shelve. Not ok: Nova's
 * reverts_task_state and wrap_instance_fault: the task state goes back to none, with a fault.
 */
export function shelveDone(
  ref: InstanceRef,
  r: ShelveDone,
  imageId: string | null,
  f: Fault | null,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = {
    ":false": false,
    ":h": r.host,
    ":n": r.attempt,
    ":now": r.at,
    ":null": null,
    ":power": r.power_state,
  };
  const set = ["updated_at = :now", "task_state = :null", "power_state = :power", "power_state_at = :now"];
  const remove: string[] = [];
  const names: Record<string, string> = {};
  const condition = [
    "deleted = :false",
    "host = :h",
    "attempt = :n",
    inState(values, "task_state", OP_TASKS[r.op]),
    inState(values, "vm_state", OP_VM[r.op]),
  ];
  if (!r.ok) {
    set.push("fault = :fault");
    values[":fault"] = f;
  } else if (r.op === "start") {
    set.push("vm_state = :vm");
    values[":vm"] = "active";
    remove.push("shelve");
  } else {
    set.push("vm_state = :vm");
    values[":vm"] = r.offloaded ? "shelved_offloaded" : "shelved";
    if (r.offloaded) remove.push("host", "node", "alternates");
    if (r.op === "shelve") {
      set.push("shelve = :shelve");
      values[":shelve"] = { at: r.at, image_id: imageId, host: r.host } satisfies ShelveContext;
    }
  }
  return transitionWithEvent(ref, ev, { set, remove, condition: condition.join(" AND "), names, values });
}

/** The task states a shelve's snapshot stage may follow (SQS does not keep the reports' order). */
const STAGE_FROM: Record<"image_pending_upload" | "image_uploading", TaskState[]> = {
  image_pending_upload: ["shelving"],
  image_uploading: ["shelving", "shelving_image_pending_upload"],
};

/**
 * compute-events: the shelve's snapshot moved on (Nova's update_task_state in _shelve_instance):
 * shelving_image_pending_upload, then shelving_image_uploading. Fenced by host and attempt; a
 * stage that arrives after a later one changes nothing.
 */
export function shelveProgress(r: {
  instance_uuid: string;
  host: string;
  attempt: number;
  stage: "image_pending_upload" | "image_uploading";
  sent_at: string;
}): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = {
    ":next": `shelving_${r.stage}`,
    ":now": r.sent_at,
    ":false": false,
    ":h": r.host,
    ":n": r.attempt,
  };
  return transition(r.instance_uuid, {
    set: ["task_state = :next", "updated_at = :now"],
    condition: `deleted = :false AND host = :h AND attempt = :n AND ${inState(values, "task_state", STAGE_FROM[r.stage] as string[])}`,
    values,
  });
}

/** The power state a shelved guest reports: shut down. */
export const SHELVED_POWER = POWER_SHUTDOWN;

// ---- unshelve of a SHELVED_OFFLOADED server, through the conductor ----

export type UnshelvePlaceOutcome =
  | { kind: "placed" | "already-placed"; record: InstanceRecord }
  | { kind: "gone"; record: undefined };

/**
 * Conductor: the unshelve's attempt `attempt` goes to `host` (the fencing token the host's report
 * is conditioned on), with the alternates a reschedule of it goes to. Only from an earlier
 * attempt; a re-run for the same attempt and host is `already-placed`.
 */
export async function placeUnshelve(
  rec: InstanceRecord,
  uuid: string,
  attempt: number,
  dest: { host: string; nodename: string; availability_zone: string },
  alternates: unknown[],
  ev: ActionEvent,
): Promise<UnshelvePlaceOutcome> {
  const ref = { id: rec.id, request_id: rec.unshelve?.request_id ?? rec.request_id };
  const at = placedOn(attempt, dest, alternates);
  const placed = await transitionWithEvent(
    ref,
    ev,
    inWorkflow(WORKFLOWS.unshelve, uuid, {
      set: [...at.set, "task_state = :spawning"],
      condition: "attempt < :n AND task_state = :unshelving",
      values: { ...at.values, ":spawning": "spawning", ":unshelving": "unshelving" },
    }),
  );
  if (placed) return { kind: "placed", record: placed };
  if (
    rec.unshelve?.uuid === uuid &&
    rec.attempt === attempt &&
    rec.host === dest.host &&
    rec.vm_state === "shelved_offloaded" &&
    !rec.deleted
  ) {
    return { kind: "already-placed", record: rec };
  }
  return { kind: "gone", record: undefined };
}

/** The host's report of an unshelve is for this unshelve, attempt and host, still spawning. */
function spawningHere(uuid: string, host: string, attempt: number, more: Update): Update {
  return merge(
    reportedBy(WORKFLOWS.unshelve, uuid, { host, attempt }),
    { set: [], condition: "task_state = :spawning", values: { ":spawning": "spawning" } },
    more,
  );
}

/** A host's report of a step of the unshelve (its uuid), with what the step reports besides. */
type UnshelveReport<Args extends unknown[] = []> = HostReportWrite<string, Args>;

/** compute-events: the host runs it again: ACTIVE, its shelve and unshelve over. */
export const unshelved: UnshelveReport<[number, string]> = (ref, uuid, host, attempt, power, at, ev) =>
  transitionWithEvent(
    ref,
    ev,
    spawningHere(uuid, host, attempt, {
      set: [
        "vm_state = :active",
        "task_state = :null",
        "power_state = :power",
        "power_state_at = :at",
        "launched_at = :at",
      ],
      remove: ["#us", "shelve", "alternates", "fault"],
      condition: "attribute_exists(#us)",
      values: { ":active": "active", ":null": null, ":power": power, ":at": at },
    }),
  );

/**
 * compute-events: the host could not spawn it: back to unshelving (the reschedule's), the host
 * added to those tried. The host and attempt stay, so a repeated report finds the failure
 * recorded and only finishes the reschedule.
 */
export const unshelveAttemptFailed: UnshelveReport = (ref, uuid, host, attempt, ev) =>
  transitionWithEvent(
    ref,
    ev,
    spawningHere(uuid, host, attempt, {
      set: ["task_state = :unshelving", "#us.tried = list_append(#us.tried, :tried)"],
      condition: "attribute_exists(#us)",
      values: { ":unshelving": "unshelving", ":tried": [host] },
    }),
  );

/**
 * Conductor: the unshelve is over without a host (NoValidHost, its attempts exhausted, an error
 * in the workflow): SHELVED_OFFLOADED again with no task (Nova's conductor), no host, and a fault
 * when one is given (Nova's NoValidHost on unshelve leaves none).
 */
export function unshelveEnded(
  ref: InstanceRef,
  uuid: string,
  f: Fault | null,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  return transitionWithEvent(
    ref,
    ev,
    inWorkflow(WORKFLOWS.unshelve, uuid, {
      set: ["task_state = :null", ...(f ? ["fault = :fault"] : [])],
      remove: ["#us", "host", "node", "alternates"],
      condition: "attribute_exists(#us)",
      values: { ":null": null, ...(f ? { ":fault": f } : {}) },
    }),
  );
}

/**
 * Nova's API's create_image for a shelve (compute_utils.create_image): `<server>-shelved`, a
 * snapshot the caller's project owns, queued until the host's driver has filled it.
 */
export async function createShelvedImage(
  rec: InstanceRecord,
  by: { project_id: string; user_id: string },
): Promise<string> {
  const image = await serverImageRecord(rec, {
    name: `${rec.name}-shelved`,
    type: "snapshot",
    metadata: {},
    projectId: by.project_id,
    userId: by.user_id,
    now: new Date(),
  });
  await createImage(image);
  return image.id;
}
