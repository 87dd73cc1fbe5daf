// Every transition of an instance is ONE conditional UpdateItem that also writes its
// os-instance-actions event, so a transition and its event never disagree and a repeated
// transition (a duplicated message, a re-run step) changes nothing.
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { unlessConditionFails } from "../aws/dynamo-errors.js";
import { eventKey, instancesTable, recordOf, storedEvent } from "./codec.js";
import type { ActionEvent, InstanceRecord } from "./types.js";

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
    UpdateExpression: `SET ${u.set.join(", ")}${u.remove?.length ? ` REMOVE ${u.remove.join(", ")}` : ""}`,
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

/** Apply `u` and record `ev` under the instance's create action, in the one write. */
export function transitionWithEvent(
  rec: InstanceRef,
  ev: ActionEvent,
  u: Update,
): Promise<InstanceRecord | undefined> {
  return transition(rec.id, merge(u, eventClause(rec, ev)));
}
