// The watchdog's share of deferred deletes (Nova's _reclaim_queued_deletes, which each compute
// service runs for its own servers; here one watchdog for the fleet): a SOFT_DELETED server whose
// deleted_at + reclaim_instance_interval has passed, its task over, is deleted for good through
// the one delete path (lib/instances/delete.ts), as a forceDelete would. Read from the
// `soft-delete` partition of the by-vm-state index only: it costs nothing while none is
// soft-deleted. Runs at least once and may run twice at once: the delete is conditioned on the
// record as read and on its still being due, so a second run (or a restore accepted meanwhile)
// finds nothing to do, and nothing (claim, ports, quota) is released twice.
import { randomUUID } from "node:crypto";
import { forgetServerGroupMember } from "../catalog/server-groups.js";
import { reclaimInstanceInterval } from "../config.js";
import { deleteServer } from "../instances/delete.js";
import { listInstancesInVmState } from "../instances/queries.js";
import { reclaimDue } from "../instances/soft-delete.js";
import { log } from "../log.js";

/** The SOFT_DELETED servers reclaimed now: their ids. */
export async function reclaimSoftDeleted(now: Date, interval = reclaimInstanceInterval()): Promise<string[]> {
  // Nova: "CONF.reclaim_instance_interval <= 0, skipping..."
  if (interval <= 0) return [];
  const reclaimed: string[] = [];
  for (const rec of await listInstancesInVmState("soft-delete")) {
    if (!reclaimDue(rec, interval, now)) continue;
    // (Nova's periodic records no instance action: the delete that soft-deleted it is the user's)
    const requestId = `req-${randomUUID()}`;
    const deleted = await deleteServer(rec.id, requestId, undefined, (r) => reclaimDue(r, interval, now));
    if (!deleted) continue;
    await forgetServerGroupMember(rec.id).catch((error: unknown) =>
      log.warn("watchdog.reclaim.group_member_not_removed", { instance_uuid: rec.id, error }),
    );
    log.info("watchdog.reclaimed", {
      request_id: requestId,
      instance_uuid: rec.id,
      host: rec.host,
      deleted_at: rec.deleted_at,
      reclaim_instance_interval: interval,
    });
    reclaimed.push(rec.id);
  }
  return reclaimed;
}
