// Deleting a server wherever it is in the flow: mark it deleted (every later fenced write then
// fails), tell its host to tear down whatever it built, and give its claim back.

import { castToCompute } from "../aws/send.js";
import { log } from "../log.js";
import { release } from "../placement/claims.js";
import { getHost } from "../placement/hosts.js";
import { isServiceUp } from "../placement/liveness.js";
import { OPEN_MIGRATION_STATUSES, updateMigration } from "./migrations.js";
import { deallocateForInstance, holdsPorts } from "./networking.js";
import { markDeletedReleasing } from "./quota-release.js";
import { deleteServerImage } from "./snapshot.js";
import type { InstanceAction, InstanceRecord } from "./types.js";

/**
 * Returns the record as the delete found it, or undefined if it was already deleted (idempotent) or
 * `onlyIf` refused it. A conductor
 * that claims after this point finds the instance deleted and releases its own claim.
 *
 * Who releases, as Nova: a guest that may be running on a live host keeps its claim until that
 * host has destroyed it (releasing first would let the scheduler fill space the guest still
 * uses); otherwise (nothing running yet, ERROR, or the host is down) the claim goes at once.
 * A host that never gets to it leaves a `consumer_deleted` claim the placement audit repairs.
 */
export async function deleteServer(
  id: string,
  requestId: string,
  by?: { user_id: string; project_id: string },
  /** delete only a record this accepts as read (the watchdog's reclaim); undefined otherwise */
  onlyIf?: (rec: InstanceRecord) => boolean,
): Promise<InstanceRecord | undefined> {
  // the quota is given back, and Nova's delete action recorded, in the same write
  // (lib/instances/quota-release.ts)
  const now = new Date();
  const action: InstanceAction | undefined = by && {
    action: "delete",
    request_id: requestId,
    user_id: by.user_id,
    project_id: by.project_id,
    start_time: now.toISOString(),
    message: null,
    events: {},
  };
  const rec = await markDeletedReleasing(id, now, action, onlyIf);
  if (!rec) return undefined;
  let releasedBy: "api" | "host" | null = null;
  if (rec.host) {
    const host = await getHost(rec.host);
    // `rec` is the record as the delete found it.
    // a paused or suspended guest still holds its host's memory (or its saved state) until
    // destroyed; a SOFT_DELETED one being restored may be running already
    const mayRun =
      rec.vm_state === "active" ||
      rec.vm_state === "paused" ||
      rec.vm_state === "suspended" ||
      rec.task_state === "spawning" ||
      rec.task_state === "restoring";
    const hostUp = host !== undefined && isServiceUp(host);
    releasedBy = mayRun && hostUp ? "host" : "api";
    if (releasedBy === "api") await release(rec.host, id, rec.attempt);
    if (host?.queue_url) {
      await castToCompute(host.queue_url, {
        version: 1,
        kind: "terminate_instance",
        request_id: requestId,
        instance_uuid: id,
        host: rec.host,
        attempt: rec.attempt,
      });
    }
  }
  if (rec.migration) await endMoveOnDelete(rec, requestId);
  // Nova's deallocate_for_instance: the ports it made go, the user's are unbound
  if (holdsPorts(rec)) await deallocateForInstance({ ...rec, deleted: true });
  // Nova's delete of a shelved server deletes its shelve's snapshot too
  if (rec.shelve?.image_id) await deleteServerImage(rec.shelve.image_id);
  log.info("instance.deleted", {
    request_id: requestId,
    instance_uuid: id,
    host: rec.host,
    attempt: rec.attempt,
    claim_released_by: releasedBy,
  });
  return rec;
}

/**
 * A server deleted during a move, or in VERIFY_RESIZE: the host the record does not point at has
 * its own copy (the destination's new guest before the move finished, the source's old guest
 * after) and its own claim (the instance's on the destination, the migration's on the source).
 * Both go; the migration ends in error (Nova's delete of a resizing server does not confirm it).
 */
async function endMoveOnDelete(rec: InstanceRecord, requestId: string): Promise<void> {
  const move = rec.migration!;
  await release(move.source_host, move.uuid);
  const other = rec.host === move.source_host ? move.dest_host : move.source_host;
  if (
    rec.host === move.source_host &&
    move.dest_host &&
    move.attempt !== null &&
    move.dest_host !== rec.host
  ) {
    await release(move.dest_host, rec.id, move.attempt);
  }
  if (other && other !== rec.host) {
    const host = await getHost(other);
    if (host?.queue_url) {
      await castToCompute(host.queue_url, {
        version: 1,
        kind: "terminate_instance",
        request_id: requestId,
        instance_uuid: rec.id,
        host: other,
      });
    }
  }
  await updateMigration(move.uuid, OPEN_MIGRATION_STATUSES, "error");
}
