// A delete gives the instance's quota back in the same transaction that marks it deleted: a
// repeated delete finds it deleted and releases nothing, and no crash can leave one done without
// the other. An instance in ERROR keeps counting until it is deleted (Nova's default, legacy
// counting from instance records: see the report of issue 10), so a failed build releases nothing.
// A SOFT_DELETED server counts no more (Nova's count leaves it out), so its reclaim releases nothing.
import { TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isTransactionLost } from "../aws/dynamo-errors.js";
import { deltaOf, type Usage, upsizeDelta } from "../quotas/quotas.js";
import { releaseItem } from "../quotas/store.js";
import { getInstance } from "./queries.js";
import { markDeletedItem } from "./server-writes.js";
import type { InstanceAction, InstanceRecord } from "./types.js";

/**
 * What the instance counts in its project's usage: its flavor, and while a move is unconfirmed
 * the larger of the move's two flavors (a resize counts the larger until confirm or revert).
 * Once a revert or confirm has begun, the difference was given back in the same transaction
 * (lib/instances/move.ts beginRevert, beginConfirm): a reverting server counts its old flavor, a
 * confirming one its new, whichever flavor its record shows until the host has answered. (A
 * delete in between released the larger, and the project's usage fell below its servers' by the
 * difference: the soak's quota mismatch.)
 */
export function usageOf(rec: InstanceRecord): Usage {
  const own = deltaOf(1, rec.flavor);
  const m = rec.migration;
  if (!m) return own;
  if (m.status === "reverting" || m.status === "reverted") return deltaOf(1, m.old_flavor);
  if (m.status === "confirming" || m.status === "confirmed") return deltaOf(1, m.new_flavor);
  const other = rec.flavor.id === m.new_flavor.id ? m.old_flavor : m.new_flavor;
  const extra = upsizeDelta(rec.flavor, other);
  return { instances: own.instances, cores: own.cores + extra.cores, ram: own.ram + extra.ram };
}

/**
 * Whether the instance counts in its project's usage at all. Nova counts every instance not
 * deleted and not SOFT_DELETED (InstanceList.get_counts), and checks the quota again when one is
 * restored: here a restore takes its usage back when it is accepted (lib/instances/soft-delete.ts),
 * so a server being restored counts, and a soft delete gives it back when its host has powered
 * the guest off.
 */
export function countsInQuota(rec: Pick<InstanceRecord, "deleted" | "vm_state" | "task_state">): boolean {
  return !rec.deleted && (rec.vm_state !== "soft-delete" || rec.task_state === "restoring");
}

/**
 * Mark the instance deleted and release its usage (if it counts), at once. Returns the record as
 * the delete found it, or undefined if it was already deleted (or never existed), or when
 * `onlyIf` refuses the record as read (the watchdog's reclaim: still SOFT_DELETED and due). A
 * record that changed between the read and the write is read again.
 */
export async function markDeletedReleasing(
  id: string,
  now = new Date(),
  action?: InstanceAction,
  onlyIf?: (rec: InstanceRecord) => boolean,
): Promise<InstanceRecord | undefined> {
  for (;;) {
    const seen = await getInstance(id);
    if (!seen || seen.deleted || (onlyIf && !onlyIf(seen))) return undefined;
    try {
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            markDeletedItem(seen, now, action),
            ...(countsInQuota(seen) ? [releaseItem(seen.project_id, usageOf(seen), seen.user_id)] : []),
          ],
        }),
      );
      return seen;
    } catch (e) {
      // cancelled because the record moved meanwhile (or a concurrent transaction held it): read again
      if (!isTransactionLost(e)) throw e;
    }
  }
}
