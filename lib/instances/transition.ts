// Every transition of an instance is ONE conditional UpdateItem that also writes its
// os-instance-actions event, so a transition and its event never disagree and a repeated
// transition (a duplicated message, a re-run step) changes nothing.
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { inState } from "../aws/dynamo-conditions.js";
import { unlessConditionFails } from "../aws/dynamo-errors.js";
import type { ActionDoneReport } from "../messages/reports.js";
import { eventKey, instancesTable, recordOf, storedEvent } from "./codec.js";
import type { ActionEvent, InstanceAction, InstanceRecord, TaskState, VmState } from "./types.js";

export interface Update {
  set: string[];
  remove?: string[];
  condition: string;
  names?: Record<string, string>;
  values: Record<string, unknown>;
}

/** Apply one guarded transition; false when its condition did not hold. */
export async function transition(
  id: string,
  u: Update,
  returnValues: "ALL_NEW" | "ALL_OLD" = "ALL_NEW",
): Promise<InstanceRecord | undefined> {
  const r = await unlessConditionFails(
    dynamo().send(new UpdateCommand({ ...instanceUpdate(id, u), ReturnValues: returnValues })),
  );
  return r?.Attributes ? recordOf(r.Attributes) : undefined;
}

/** The UpdateItem of a transition: the command's input, or a transaction's Update. */
export function instanceUpdate(id: string, u: Update) {
  return {
    TableName: instancesTable(),
    Key: { id },
    UpdateExpression: [
      u.set.length ? `SET ${u.set.join(", ")}` : "",
      u.remove?.length ? `REMOVE ${u.remove.join(", ")}` : "",
    ]
      .filter(Boolean)
      .join(" "),
    ConditionExpression: `attribute_exists(id) AND ${u.condition}`,
    ExpressionAttributeNames: u.names && Object.keys(u.names).length ? u.names : undefined,
    ExpressionAttributeValues: u.values,
  };
}

/** The SET clause and names/values that record `event` under the instance's create action. */
export function eventClause(rec: { request_id: string }, ev: ActionEvent, tag = "ev"): Update {
  return {
    set: [`actions.#rid.events.#${tag} = :${tag}`],
    condition: "attribute_exists(actions.#rid)",
    names: { "#rid": rec.request_id, [`#${tag}`]: eventKey(ev.event, ev.attempt) },
    values: { [`:${tag}`]: storedEvent(ev) },
  };
}

/** A part that changes and requires nothing more (the record exists). */
export const NO_CHANGE: Update = { set: [], condition: "attribute_exists(id)", values: {} };

export function merge(...parts: Update[]): Update {
  return {
    set: parts.flatMap((p) => p.set),
    remove: parts.flatMap((p) => p.remove ?? []),
    condition: parts.map((p) => `(${p.condition})`).join(" AND "),
    names: Object.assign({}, ...parts.map((p) => p.names ?? {})),
    values: Object.assign({}, ...parts.map((p) => p.values)),
  };
}

export function event(
  name: string,
  attempt: number,
  result: ActionEvent["result"],
  host: string | null,
  details: string | null,
  start: Date,
  finish: Date | null = new Date(),
): ActionEvent {
  return {
    event: name,
    attempt,
    start_time: start.toISOString(),
    finish_time: finish ? finish.toISOString() : null,
    result,
    host,
    details,
  };
}

/** The instance a transition writes, and its create action (where the transition's event goes). */
export type InstanceRef = Pick<InstanceRecord, "id" | "request_id">;

/** A workflow's step on `host`, written with its event: the record as written, undefined when fenced. */
export type ReportTransition<C> = (
  ref: InstanceRef,
  ctx: C,
  host: string,
  ev: ActionEvent,
) => Promise<InstanceRecord | undefined>;

/** Apply `u` and record `ev` under the instance's create action, in the one write. */
export function transitionWithEvent(
  rec: InstanceRef,
  ev: ActionEvent,
  u: Update,
): Promise<InstanceRecord | undefined> {
  return transition(rec.id, merge(u, eventClause(rec, ev)));
}

/**
 * A host's report of a step of a workflow (`Ctx`: its move, rebuild or unshelve) by `host` at
 * `attempt`, with what the step reports besides (`Args`), applied with the report's event (the
 * last argument) in one write fenced on them; undefined when fenced.
 */
export type HostReportWrite<Ctx, Args extends unknown[] = []> = (
  ref: InstanceRef,
  ctx: Ctx,
  host: string,
  attempt: number,
  ...rest: [...Args, ev: ActionEvent]
) => Promise<InstanceRecord | undefined>;

/**
 * API: accept an action (a power action, a snapshot, a shelve, a move, a rebuild, an unshelve):
 * the task state it begins with and Nova's instance action in one write, conditioned on the state
 * the API checked (vm_state and task state as read, on the host read, or on none for an
 * offloaded server), so two concurrent requests give one 202 and one 409. `more` adds what the
 * action records and requires besides (a move's or rebuild's context). Undefined when the state
 * changed meanwhile.
 */
export function beginAction(
  rec: InstanceRecord,
  task: TaskState,
  a: InstanceAction,
  more?: Update,
): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = {
    ":task": task,
    ":now": a.start_time,
    ":action": a,
    ":false": false,
    ":vm": rec.vm_state,
    ":seen": rec.task_state,
  };
  if (rec.host) values[":h"] = rec.host;
  const begin: Update = {
    set: ["task_state = :task", "updated_at = :now", "actions.#rid = :action"],
    condition: `deleted = :false AND vm_state = :vm AND task_state = :seen AND ${
      rec.host ? "host = :h" : "attribute_not_exists(host)"
    }`,
    names: { "#rid": a.request_id },
    values,
  };
  return transition(rec.id, more ? merge(begin, more) : begin);
}

/** What a host reports of an action it began or ended (a power action's, a snapshot's). */
type HostAction = Pick<
  ActionDoneReport,
  "instance_uuid" | "request_id" | "host" | "sent_at" | "started_at" | "ok" | "details" | "power_state"
>;

/** The action's event as the host began it (Nova's EventReporter on the host's method). */
export function eventStarted(
  name: string,
  attempt: number,
  r: Pick<HostAction, "host" | "sent_at">,
): ActionEvent {
  return event(name, attempt, null, r.host, null, new Date(r.sent_at), null);
}

/** ... and as it ended: its result, with the driver's error when it failed. */
export function eventFinished(name: string, attempt: number, r: HostAction): ActionEvent {
  return event(
    name,
    attempt,
    r.ok ? "Success" : "Error",
    r.host,
    r.ok ? null : r.details,
    new Date(r.started_at),
    new Date(r.sent_at),
  );
}

/**
 * compute-events: the host is done with an action the API began: no task, the guest's power
 * state, `vm` when the action ends in one, and the action's event `ev` finished. Fenced by the
 * host, the action and its task states (`tasks`); undefined when fenced.
 */
export function endAction(
  r: HostAction,
  ev: ActionEvent,
  tasks: readonly TaskState[],
  vm?: VmState,
): Promise<InstanceRecord | undefined> {
  return transition(r.instance_uuid, endActionUpdate(r, ev, tasks, vm));
}

/** endAction's write, for a transaction that writes something else with it (a quota's release). */
export function endActionUpdate(
  r: HostAction,
  ev: ActionEvent,
  tasks: readonly TaskState[],
  vm?: VmState,
): Update {
  const values: Record<string, unknown> = {
    ":false": false,
    ":h": r.host,
    ":now": r.sent_at,
    ":null": null,
    ":power": r.power_state,
    ":ev": storedEvent(ev),
  };
  const set = [
    "updated_at = :now",
    "task_state = :null",
    "power_state = :power",
    "power_state_at = :now",
    "actions.#rid.events.#ev = :ev",
  ];
  if (vm) {
    set.push("vm_state = :vm");
    values[":vm"] = vm;
  }
  return {
    set,
    condition: `deleted = :false AND host = :h AND attribute_exists(actions.#rid) AND ${inState(values, "task_state", tasks, "t")}`,
    names: { "#rid": r.request_id, "#ev": eventKey(ev.event, ev.attempt) },
    values,
  };
}
