// Nova's deferred delete (reclaim_instance_interval > 0): a delete leaves the server SOFT_DELETED
// (vm_state soft-delete) with its claim, ports and guest held, the guest powered off by its host
// (Nova's soft_delete_instance); `restore` powers it on again (restore_instance), `forceDelete`
// and the watchdog's reclaim delete it for good through the one delete path (delete.ts).
//
// The quota: Nova counts no SOFT_DELETED instance and checks the quota again on restore. The usage
// item is a counter here, so each write that moves a server in or out of the count carries the
// change in its own transaction (countsInQuota says who counts): the host's report that the guest
// is off gives the usage back, a restore takes it when accepted and gives it back if the host
// could not power the guest on.
import { TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isTransactionLost } from "../aws/dynamo-errors.js";
import type { ActionDoneReport } from "../messages/reports.js";
import { countItem, releaseItem } from "../quotas/store.js";
import { doneVmState, POWER_EVENTS, tasksOf } from "./power.js";
import { getInstance } from "./queries.js";
import { countsInQuota, usageOf } from "./quota-release.js";
import {
  beginAction,
  endActionUpdate,
  eventFinished,
  instanceUpdate,
  merge,
  transition,
  type Update,
} from "./transition.js";
import type { InstanceAction, InstanceRecord, VmState } from "./types.js";
import { abandonAction } from "./workflows.js";

/** When the server was deleted for good (Nova's terminated_at); a soft-deleted one's deleted_at is when its reclaim counts from. */
export function terminatedAt(rec: Pick<InstanceRecord, "deleted" | "deleted_at">): string | null {
  return rec.deleted ? rec.deleted_at : null;
}

/**
 * Does a delete of this server defer (with reclaim_instance_interval > 0 and its host up)? Nova
 * soft-deletes any server that was launched once and is on a host whose service is up; the
 * others are deleted at once (a server never launched, SHELVED_OFFLOADED, or whose host is down:
 * Nova's local delete). Nova's soft delete also takes a server in the middle of a task or a move
 * (confirming a resize first); here those are deleted at once, through the one delete path that
 * ends a move or a task wherever it is, rather than racing it.
 */
export function defersDelete(rec: InstanceRecord): boolean {
  return (
    rec.launched_at !== null &&
    rec.host !== null &&
    rec.task_state === null &&
    rec.vm_state !== "building" &&
    rec.vm_state !== "resized" &&
    rec.vm_state !== "shelved_offloaded" &&
    !rec.migration &&
    !rec.rebuild &&
    !rec.unshelve
  );
}

/**
 * API: a delete deferred: task soft-deleting, deleted_at now (the reclaim counts from it, and a
 * second delete of a SOFT_DELETED server starts it again, as Nova's), Nova's delete action, in one
 * write conditioned on the state the API read. A SHELVED server's shelve goes (Nova deletes its
 * snapshot at the delete: the caller does, once this write holds). Undefined when the state
 * changed meanwhile.
 */
export function beginSoftDelete(
  rec: InstanceRecord,
  a: InstanceAction,
  now: Date,
): Promise<InstanceRecord | undefined> {
  return beginAction(rec, "soft-deleting", a, {
    set: ["deleted_at = :soft_at"],
    remove: rec.shelve ? ["shelve"] : [],
    condition: "attribute_exists(id)",
    values: { ":soft_at": now.toISOString() },
  });
}

/** API: take back a soft delete whose cast could not be sent: its deleted_at (and shelve) as they were. */
export function abandonSoftDelete(rec: InstanceRecord): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = {};
  const set: string[] = [];
  const remove: string[] = [];
  if (rec.deleted_at) {
    set.push("deleted_at = :was_at");
    values[":was_at"] = rec.deleted_at;
  } else remove.push("deleted_at");
  if (rec.shelve) {
    set.push("shelve = :was_shelve");
    values[":was_shelve"] = rec.shelve;
  }
  return abandonAction(rec.id, "soft-deleting", undefined, {
    set,
    remove,
    condition: "attribute_exists(id)",
    values,
  });
}

/**
 * API: a restore accepted (the caller reserved its usage first): task restoring and Nova's restore
 * action, conditioned on the state the API read. Undefined when the state changed meanwhile.
 */
export function beginRestore(rec: InstanceRecord, a: InstanceAction): Promise<InstanceRecord | undefined> {
  return beginAction(rec, "restoring", a);
}

/** API: take back a restore whose cast could not be sent (the caller gives its usage back). */
export function abandonRestore(id: string): Promise<InstanceRecord | undefined> {
  return abandonAction(id, "restoring");
}

/**
 * compute-events: the host finished a soft delete or a restore (Nova's soft_delete_instance and
 * restore_instance; on a failure their reverts_task_state: the task goes, the vm_state stays). The
 * action's end and the usage it moves in or out of the count are one transaction, conditioned on
 * the vm_state read, so a duplicated or late report moves nothing twice. A soft delete that failed
 * forgets its deleted_at; a restore done clears it.
 */
export async function finishDeferredDelete(
  r: ActionDoneReport & { action: "soft_delete" | "restore" },
): Promise<"applied" | "duplicate" | "fenced"> {
  for (;;) {
    const rec = await getInstance(r.instance_uuid);
    if (!rec || rec.deleted || rec.host !== r.host) return "fenced";
    const ev = eventFinished(POWER_EVENTS[r.action], rec.attempt, r);
    const tasks = tasksOf(r.action);
    if (!tasks.includes(rec.task_state)) {
      const done = rec.actions[r.request_id]?.events[`${ev.event}#${ev.attempt}`];
      return done?.finish_time ? "duplicate" : "fenced";
    }
    const vm: VmState | undefined = r.ok ? doneVmState(r.action) : undefined;
    const after = { deleted: false, vm_state: vm ?? rec.vm_state, task_state: null };
    const moves = countsInQuota(rec) && !countsInQuota(after);
    const end = merge(endActionUpdate(r, ev, tasks, vm), {
      set: [],
      remove: (r.action === "soft_delete" && !r.ok) || (r.action === "restore" && r.ok) ? ["deleted_at"] : [],
      condition: "vm_state = :seen_vm",
      values: { ":seen_vm": rec.vm_state },
    });
    try {
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            { Update: instanceUpdate(rec.id, end) },
            ...(moves ? [releaseItem(rec.project_id, usageOf(rec), rec.user_id)] : []),
          ],
        }),
      );
      return "applied";
    } catch (e) {
      // fenced, or changed meanwhile: read again and decide again
      if (!isTransactionLost(e)) throw e;
    }
  }
}

/**
 * os-resetState: the admin's vm_state and no task, with the action, in one write; a server that
 * did not count in its quota (SOFT_DELETED) counts again in the same transaction, as Nova's count
 * takes it in at once. Undefined when the server is deleted (or changed meanwhile and is now).
 */
export async function resetInstanceState(
  id: string,
  state: "active" | "error",
  action: InstanceAction,
): Promise<InstanceRecord | undefined> {
  const reset: Update = {
    set: ["vm_state = :vm", "task_state = :null", "updated_at = :now", "actions.#rid = :action"],
    // a build's watch ends with its BUILD state: the watchdog has nothing left to fence
    remove: ["build_deadline"],
    condition: "deleted = :false",
    names: { "#rid": action.request_id },
    values: { ":vm": state, ":null": null, ":now": action.start_time, ":action": action, ":false": false },
  };
  for (;;) {
    const rec = await getInstance(id);
    if (!rec || rec.deleted) return undefined;
    if (countsInQuota(rec)) {
      const updated = await transition(id, merge(reset, guardCounted()));
      if (updated) return updated;
      continue;
    }
    try {
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: instanceUpdate(
                id,
                merge(reset, {
                  set: [],
                  condition: "vm_state = :seen_vm AND task_state = :seen_task",
                  values: { ":seen_vm": rec.vm_state, ":seen_task": rec.task_state },
                }),
              ),
            },
            countItem(rec.project_id, usageOf(rec), rec.user_id),
          ],
        }),
      );
      return getInstance(id);
    } catch (e) {
      if (!isTransactionLost(e)) throw e;
    }
  }
}

/** The condition that the record still counts in its quota (countsInQuota, as DynamoDB evaluates it). */
function guardCounted(): Update {
  return {
    set: [],
    // (merge wraps it in its parentheses: DynamoDB refuses a pair more as redundant)
    condition: "vm_state <> :soft OR task_state = :restoring",
    values: { ":soft": "soft-delete", ":restoring": "restoring" },
  };
}

/** Is this SOFT_DELETED server due for its reclaim (Nova's _deleted_old_enough, its task over)? */
export function reclaimDue(rec: InstanceRecord, intervalSeconds: number, now: Date): boolean {
  if (rec.deleted || rec.vm_state !== "soft-delete" || rec.task_state !== null) return false;
  return !rec.deleted_at || Date.parse(rec.deleted_at) + intervalSeconds * 1000 <= now.getTime();
}
