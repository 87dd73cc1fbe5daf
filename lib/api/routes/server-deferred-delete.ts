// Nova's deferred delete (deferred_delete.py and servers.py's _delete): with
// reclaim_instance_interval > 0, DELETE /servers/{id} soft-deletes a server (SOFT_DELETED, its
// host powering the guest off, its claim and ports held) and the watchdog reclaims it once the
// interval has passed; `restore` brings it back, `forceDelete` deletes it at once. Every delete
// for good, whoever asks, goes through the one delete path (lib/instances/delete.ts).
import { usageOf } from "../../instances/quota-release.js";
import { defersDelete } from "../../instances/soft-delete.js";
import type { InstanceAction, InstanceRecord } from "../../instances/types.js";
import { log } from "../../log.js";
import { isServiceUp } from "../../placement/liveness.js";
import type { HostRecord } from "../../placement/types.js";
import type { DeferredDeleteDeps } from "../deps.js";
import { conflict, forbidden, instanceNotFound } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { acceptOrFault, actionRecord } from "./instance-action.js";
import {
  checkInstance,
  checkInstanceHost,
  checkTaskState,
  checkVmState,
  refusedBy,
} from "./instance-checks.js";

function deferredDeps(call: RouteCall): DeferredDeleteDeps {
  const d = call.deps.deferredDelete;
  if (!d) throw new Error("the API was built without its deferred-delete dependencies");
  return d;
}

/** The server's host when its compute service is up (Nova's servicegroup_api.service_is_up), else undefined. */
async function liveHost(call: RouteCall, rec: InstanceRecord): Promise<HostRecord | undefined> {
  const host = rec.host ? await call.deps.getHost(rec.host) : undefined;
  return host && isServiceUp(host) ? host : undefined;
}

/**
 * Nova's _delete: a request to delete a server whose live host is soft-deleting it already is
 * ignored ("Instance is already in deleting state, ignoring this request"): a delete, a second
 * soft delete or a forceDelete alike.
 */
const alreadyDeleting = (rec: InstanceRecord, host: HostRecord | undefined) =>
  host !== undefined && rec.task_state === "soft-deleting";

/** Delete for good, now (Nova's delete and force_delete): 404 when someone else deleted it first. */
async function hardDelete({ ctx, deps }: RouteCall, id: string): Promise<void> {
  const deleted = await deps.deleteServer(id, ctx.requestId, ctx.auth);
  // deleted meanwhile by someone else: Nova answers 404 for the loser of that race
  if (!deleted) throw instanceNotFound(id);
  // Nova removes a deleted server from its group; best effort (lists show live members only).
  await deps.forgetServerGroupMember(id).catch((error: unknown) =>
    log.warn("api.delete.group_member_not_removed", {
      request_id: ctx.requestId,
      instance_uuid: id,
      error,
    }),
  );
}

/**
 * DELETE /servers/{id} after its checks (servers.py's _delete): soft when the interval is set and
 * the server may be soft-deleted (lib/instances/soft-delete.ts defersDelete) on a live host, for
 * good otherwise (Nova's delete, and its local delete when the host is down). A server whose state
 * changed between the read and the soft delete's write is read and judged again.
 */
export async function deleteOrDefer(call: RouteCall, found: InstanceRecord): Promise<void> {
  const interval = call.deps.deferredDelete?.reclaimInterval() ?? 0;
  let rec = found;
  for (let tries = 0; ; tries++) {
    const host = await liveHost(call, rec);
    if (alreadyDeleting(rec, host)) return;
    // (a server that keeps changing under the soft delete is deleted at once, as Nova's delete does)
    if (interval <= 0 || !host || !defersDelete(rec) || tries >= 3) return hardDelete(call, rec.id);
    if (await softDelete(call, rec, host)) return;
    const now = await call.deps.getInstance(rec.id);
    if (!now || now.deleted) throw instanceNotFound(rec.id);
    rec = now;
  }
}

/**
 * Nova's soft_delete: the begin (task soft-deleting, deleted_at, the delete action) and the cast of
 * the host's soft_delete_instance, the begin taken back if the cast cannot be sent. A SHELVED
 * server's snapshot goes then, as Nova's _delete deletes it. False when the begin was refused.
 */
async function softDelete(call: RouteCall, rec: InstanceRecord, host: HostRecord): Promise<boolean> {
  const d = deferredDeps(call);
  const a: InstanceAction = actionRecord("delete", call);
  const begun = await accept(
    rec,
    a,
    () => d.beginSoftDelete(rec, a, call.deps.now()),
    () => d.abandonSoftDelete(rec),
    () =>
      d.castToCompute(host.queue_url, {
        version: 1,
        kind: "power_action",
        action: "soft_delete",
        request_id: a.request_id,
        instance_uuid: rec.id,
        host: host.host,
      }),
    call,
  );
  if (!begun) return false;
  if (rec.shelve?.image_id) await d.deleteServerImage(rec.shelve.image_id);
  return true;
}

/** acceptOrFault, with the begin's parts as this file's steps name them. */
const accept = (
  rec: InstanceRecord,
  a: InstanceAction,
  write: () => Promise<InstanceRecord | undefined>,
  abandon: () => Promise<unknown>,
  send: () => Promise<void>,
  call: RouteCall,
): Promise<InstanceRecord | undefined> =>
  acceptOrFault(call, { instance_uuid: rec.id, request_id: a.request_id, write, abandon }, send);

/**
 * restore (deferred_delete.py _restore, compute/api.py restore): the lock (Nova's generic 409 for
 * it), vm_state SOFT_DELETED with no task, the quota (403 when the server would not fit in it
 * again: Nova counts no SOFT_DELETED server), then the restore action and the host's
 * restore_instance (the guest powered on; ACTIVE when the host reports it). The usage taken is
 * given back if the restore is refused.
 */
export async function restore(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  const d = deferredDeps(call);
  const { deps } = call;
  // Nova's _restore catches the lock's InstanceIsLocked as the InstanceInvalidState it derives
  // from, which names no state: its 409 is the generic text, not "is locked"
  if (rec.locked_by && !call.ctx.auth.isAdmin)
    throw conflict(`Instance ${rec.id} is in an invalid state for 'restore'`);
  checkVmState(rec, "restore", "restore");
  checkTaskState(rec, "restore", "restore");
  const host = await checkInstanceHost(deps, rec);
  const usage = usageOf(rec);
  const reserved = await deps.quotas.reserveDelta(rec.project_id, usage, rec.user_id);
  if (!reserved.ok) throw forbidden(reserved.message);
  const giveBack = () =>
    deps.quotas.releaseUsage(rec.project_id, usage, rec.user_id).catch((error: unknown) =>
      log.error("api.restore.quota_not_released", {
        request_id: call.ctx.requestId,
        instance_uuid: rec.id,
        project_id: rec.project_id,
        ...usage,
        error,
      }),
    );
  const a = actionRecord("restore", call);
  let begun: InstanceRecord | undefined;
  try {
    begun = await accept(
      rec,
      a,
      () => d.beginRestore(rec, a),
      () => d.abandonRestore(rec.id),
      async () =>
        d.castToCompute(host.queue_url, {
          version: 1,
          kind: "power_action",
          action: "restore",
          request_id: a.request_id,
          instance_uuid: rec.id,
          host: host.host,
          guest: await d.guestSpecFor(rec),
        }),
      call,
    );
  } catch (e) {
    await giveBack();
    throw e;
  }
  if (!begun) {
    await giveBack();
    await refusedBy(call, rec, "restore");
  }
  return { status: 202 };
}

/**
 * forceDelete (deferred_delete.py _force_delete, compute/api.py force_delete): the lock only (any
 * vm_state, any task), then the delete for good, whatever reclaim_instance_interval says.
 */
export async function forceDelete(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  checkInstance(rec, call.ctx.auth, "force_delete", "forceDelete");
  if (!alreadyDeleting(rec, await liveHost(call, rec))) await hardDelete(call, rec.id);
  return { status: 202 };
}
