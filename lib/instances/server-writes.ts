// The API's writes of a server's record: create, the user's changes (PUT /servers/{id}, metadata,
// tags, lock) and the soft delete.
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { buildDeadline, instancesTable, itemOf } from "./codec.js";
import { changeShard } from "./queries.js";
import { instanceUpdate, merge, transition, type Update } from "./transition.js";
import type { InstanceAction, InstanceRecord } from "./types.js";

export async function createInstances(records: InstanceRecord[]): Promise<void> {
  const deadline = buildDeadline();
  await Promise.all(
    records.map((r) =>
      dynamo().send(
        new PutCommand({
          TableName: instancesTable(),
          // Watched from the start: a build request lost before the conductor is found too.
          Item: {
            ...itemOf(r),
            build_deadline: deadline,
            // a record written outside BUILD (an import, a test) is in the changes index at once
            ...(r.vm_state === "building" ? {} : { change_shard: changeShard(r.id) }),
          },
          ConditionExpression: "attribute_not_exists(id)",
        }),
      ),
    ),
  );
}

/**
 * API: soft-delete (the item stays so late messages find it deleted; `expires_at` lets DynamoDB's
 * TTL remove it later). Returns the record as it was just before the delete (its state then tells
 * who must release the claim), or undefined if it was already deleted.
 */
export async function markDeleted(id: string, now = new Date()): Promise<InstanceRecord | undefined> {
  return transition(id, deleteUpdate(id, now), "ALL_OLD");
}

function deleteUpdate(id: string, now: Date): Update {
  return {
    set: [
      // in the listings' changes index from now on (a build leaving BUILD: lib/instances/queries.ts)
      "change_shard = :cs",
      "deleted = :true",
      "vm_state = :deleted",
      "task_state = :null",
      "deleted_at = :now",
      "updated_at = :now",
      "expires_at = :ttl",
    ],
    remove: ["build_deadline"],
    condition: "deleted = :false",
    values: {
      ":true": true,
      ":false": false,
      ":deleted": "deleted",
      ":null": null,
      ":now": now.toISOString(),
      ":ttl": Math.floor(now.getTime() / 1000) + 7 * 86400,
      ":cs": changeShard(id),
    },
  };
}

/**
 * markDeleted as a transaction item, for a delete that must write something else atomically (the
 * quota release): conditioned on the record being still as `seen` (its attempt, state and last
 * update), since a transaction cannot return the record it changed.
 */
export function markDeletedItem(seen: InstanceRecord, now = new Date(), action?: InstanceAction) {
  const u = merge(deleteUpdate(seen.id, now), {
    // Nova's delete instance action, kept with the (soft-deleted) record: os-instance-actions reads
    // it from 2.21
    set: action ? ["actions.#rid = :action"] : [],
    condition: "attempt = :seen_attempt AND vm_state = :seen_vm AND updated_at = :seen_updated",
    names: action ? { "#rid": action.request_id } : {},
    values: {
      ":seen_attempt": seen.attempt,
      ":seen_vm": seen.vm_state,
      ":seen_updated": seen.updated_at,
      ...(action ? { ":action": action } : {}),
    },
  });
  return { Update: instanceUpdate(seen.id, u) };
}

/** What a user may change of a live server: PUT /servers/{id}, its metadata, tags and lock. */
export type ServerFields = Partial<
  Pick<
    InstanceRecord,
    "name" | "description" | "hostname" | "metadata" | "tags" | "locked_by" | "locked_reason"
  >
>;

export interface ServerUpdate {
  fields: ServerFields;
  /** an action to record with the change, in the same write (lock, unlock) */
  action?: InstanceAction;
  /**
   * Optimistic concurrency: the write applies only if the record is still as read (its
   * updated_at), so a read-modify-write of a whole map (metadata, tags) cannot lose another's
   * change.
   */
  ifUpdatedAt?: string;
  now?: Date;
}

/**
 * API: change a live server's user-visible fields. Returns the record after the change, or
 * undefined when it is deleted (or gone) or was changed since `ifUpdatedAt`.
 */
export async function updateServer(id: string, u: ServerUpdate): Promise<InstanceRecord | undefined> {
  const now = (u.now ?? new Date()).toISOString();
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":false": false, ":now": now };
  const set = ["updated_at = :now"];
  Object.entries(u.fields).forEach(([k, v], i) => {
    names[`#f${i}`] = k;
    values[`:f${i}`] = v;
    set.push(`#f${i} = :f${i}`);
  });
  const conditions = ["deleted = :false"];
  if (u.ifUpdatedAt !== undefined) {
    values[":seen"] = u.ifUpdatedAt;
    conditions.push("updated_at = :seen");
  }
  if (u.action) {
    names["#rid"] = u.action.request_id;
    values[":action"] = u.action;
    set.push("actions.#rid = :action");
  }
  return transition(id, { set, condition: conditions.join(" AND "), names, values });
}
