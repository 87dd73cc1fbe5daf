// The workflows that carry a context on the instance's record while they run (a move's
// MoveContext, a rebuild's RebuildContext, an unshelve's UnshelveContext), as data: where the
// context and its uuid are, and where the workflow's attempt (the fencing token of a host's
// report) is kept. The fences every step of every workflow shares, and the API's abandon of a
// begin whose request was never sent, are written once over this table.

import { merge, NO_CHANGE, transition, type Update } from "./transition.js";
import type { InstanceRecord, TaskState, VmState } from "./types.js";

export interface Workflow {
  /** the context's attribute, as the expressions name it */
  context: string;
  /** its uuid, as the expressions name it */
  uuid: string;
  /** the names those paths need (reserved words among them) */
  names: Record<string, string>;
  /** the attempt a host's report is fenced on (a move's own, or the instance's) */
  attempt: string;
  /** the vm_state the record keeps throughout, when it keeps one */
  vmState?: VmState;
}

export const WORKFLOWS = {
  /** a resize, cold or live migration, or evacuation (move.ts, live-move.ts) */
  move: {
    context: "migration",
    uuid: "migration.#mu",
    names: { "#mu": "uuid" },
    attempt: "migration.attempt",
  },
  /** a rebuild on the instance's own host (rebuild.ts; both are DynamoDB reserved words) */
  rebuild: {
    context: "#rb",
    uuid: "#rb.#ru",
    names: { "#rb": "rebuild", "#ru": "uuid" },
    attempt: "attempt",
  },
  /** an unshelve of a SHELVED_OFFLOADED server, through the conductor (shelve.ts) */
  unshelve: {
    context: "#us",
    uuid: "#us.#uu",
    names: { "#us": "unshelve", "#uu": "uuid" },
    attempt: "attempt",
    vmState: "shelved_offloaded",
  },
} as const satisfies Record<string, Workflow>;

/** The record is in this run of `wf`: not deleted, and its context's uuid is `uuid`. */
export function inWorkflow(wf: Workflow, uuid: string, more: Update = NO_CHANGE): Update {
  const values: Record<string, unknown> = { ":false": false, ":wf": uuid, ":now": new Date().toISOString() };
  if (wf.vmState) values[":wfvm"] = wf.vmState;
  return merge(
    {
      set: ["updated_at = :now"],
      condition: `deleted = :false${wf.vmState ? " AND vm_state = :wfvm" : ""} AND ${wf.uuid} = :wf`,
      names: wf.names,
      values,
    },
    more,
  );
}

/** Who reports a step: the host, where the record names it (`field`, the instance's host by default), at which attempt. */
export interface Reporter {
  host: string;
  field?: string;
  attempt?: number;
}

/** A host's report of a step of this run of `wf`, from `by.host` at `by.attempt`: the fence every report shares. */
export function reportedBy(wf: Workflow, uuid: string, by: Reporter): Update {
  const fence = `${by.field ?? "host"} = :rh${by.attempt === undefined ? "" : ` AND ${wf.attempt} = :ra`}`;
  return inWorkflow(wf, uuid, {
    set: [],
    condition: fence,
    values: { ":rh": by.host, ...(by.attempt === undefined ? {} : { ":ra": by.attempt }) },
  });
}

/** The run of a workflow an action began: which, and its context's uuid. */
export interface WorkflowRun {
  workflow: Workflow;
  uuid: string;
}

/**
 * API: take back a begin whose request could not be sent (nothing else happened yet): no task
 * again, the workflow's context gone (when the action began one), and what `restore` puts back;
 * unless something moved the record on meanwhile (it is no longer in the task `task` the begin
 * set, or in that run). Repeating it changes nothing.
 */
export function abandonAction(
  id: string,
  task: Exclude<TaskState, null>,
  run?: WorkflowRun,
  restore: Update = NO_CHANGE,
): Promise<InstanceRecord | undefined> {
  const undo = merge(
    {
      set: ["task_state = :null"],
      remove: run ? [run.workflow.context] : [],
      condition: "task_state = :begun",
      values: { ":null": null, ":begun": task },
    },
    restore,
  );
  if (run) return transition(id, inWorkflow(run.workflow, run.uuid, undo));
  return transition(
    id,
    merge(
      {
        set: ["updated_at = :now"],
        condition: "deleted = :false",
        values: { ":false": false, ":now": new Date().toISOString() },
      },
      undo,
    ),
  );
}
