// POST /servers/{id}/action: resize, migrate, confirmResize and revertResize (Nova's servers.py
// _action_resize / _action_confirm_resize / _action_revert_resize and migrate_server.py
// _migrate, with compute/api.py's checks). A move is accepted here (the migration record, the
// task state and the instance action, then the request to the conductor) and answered 202; the
// conductor and the hosts do the rest. Confirm and revert are cast to the host that holds what
// must go.
import { moveOptions } from "../../config.js";
import { confirmMove } from "../../instances/move.js";
import {
  acceptMove,
  MOVE_BEGINS,
  type MoveKind,
  MoveNotQueued,
  type MoveRequestSpec,
} from "../../instances/move-accept.js";
import type { InstanceRecord, MigrationRecord } from "../../instances/types.js";
import { log } from "../../log.js";
import type { FlavorSpec } from "../../messages/common.js";
import { isServiceUp } from "../../placement/liveness.js";
import { flavorSpec, newAdminPass } from "../build.js";
import type { MoveDeps } from "../deps.js";
import { ApiError, badRequest, forbidden, notFound, policyForbidden } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { canSeeFlavor } from "../validation/flavors.js";
import { parseEvacuateBody, parseMigrateBody, parseResizeBody } from "../validation/server-actions.js";
import { actionRecord } from "./instance-action.js";
import {
  checkHosted,
  checkInstance,
  checkLock,
  checkTaskState,
  checkVmState,
  instanceNotReady,
  refusedBy,
} from "./instance-checks.js";

const MIGRATE_POLICY = "os_compute_api:os-migrate-server:migrate";
const MIGRATE_HOST_POLICY = "os_compute_api:os-migrate-server:migrate:host";
const EVACUATE_POLICY = "os_compute_api:os-evacuate";

/** The API action each move is refused as (Nova's InstanceInvalidState names it). */
const API_ACTION: Record<MoveKind, string> = {
  resize: "resize",
  migration: "migrate",
  evacuation: "evacuate",
  "live-migration": "os-migrateLive",
};

function moveDeps(call: RouteCall): MoveDeps {
  const m = call.deps.moves;
  if (!m) throw new Error("the API was built without its move dependencies");
  return m;
}

/** resize: a new flavor (Nova's compute API resize with a flavor id). */
export async function resize(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const { flavorRef } = parseResizeBody(arg);
  checkInstance(rec, call.ctx.auth, "resize", "resize");
  checkHosted(rec);
  const flavor = await call.deps.getFlavor(flavorRef);
  if (!flavor || flavor.disabled || !canSeeFlavor(flavor, call.ctx.auth))
    throw badRequest("Unable to locate requested flavor.");
  if (flavor.id === rec.flavor.id) throw badRequest("When resizing, instances must change flavor!");
  if (flavor.root_gb === 0 && rec.flavor.root_gb !== 0) {
    throw badRequest(
      "Server disk was unable to be resized because: Resize to zero disk flavor is not allowed.",
    );
  }
  await accept(call, rec, "resize", flavorSpec(flavor), null);
  return { status: 202 };
}

/** migrate: the same flavor elsewhere; an admin's, with a host to ask for from 2.56. */
export async function migrate(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const { auth, version } = call.ctx;
  if (!auth.isAdmin) throw policyForbidden(MIGRATE_POLICY);
  const { host } = parseMigrateBody(arg, version.atLeast("2.56"));
  if (host && !auth.isAdmin) throw policyForbidden(MIGRATE_HOST_POLICY);
  checkInstance(rec, auth, "resize", "migrate");
  checkHosted(rec);
  if (host) {
    const found = await call.deps.getHost(host);
    if (!found || found.service.deleted_at) throw badRequest(`Compute host ${host} could not be found.`);
    if (host === rec.host) throw badRequest("Cannot migrate to the host where the server exists.");
  }
  await accept(call, rec, "migration", rec.flavor, host);
  return { status: 202 };
}

/**
 * evacuate (an admin's): rebuild the server on another host because its own is down (Nova's
 * evacuate.py and compute/api.py evacuate). Refused while the source's compute service is up
 * (Nova's ComputeServiceInUse, a 400). From 2.95 the server ends SHUTOFF on its new host.
 */
export async function evacuate(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const { auth, version } = call.ctx;
  if (!auth.isAdmin) throw policyForbidden(EVACUATE_POLICY);
  const { host, adminPass } = parseEvacuateBody(arg, version);
  if (host) {
    const found = await call.deps.getHost(host);
    if (!found || found.service.deleted_at) throw notFound(`Compute host ${host} not found.`);
    if (host === rec.host) throw badRequest("The target host can't be the same one.");
  }
  checkInstance(rec, auth, "evacuate", "evacuate");
  checkHosted(rec);
  const source = await call.deps.getHost(rec.host);
  if (source && isServiceUp(source)) throw badRequest(`Compute service of ${rec.host} is still in use.`);
  await accept(call, rec, "evacuation", rec.flavor, host, {
    // Nova before 2.95 started an evacuated server; from 2.95 it ends SHUTOFF
    powerOn: !version.atLeast("2.95") && rec.vm_state !== "stopped",
  });
  // the admin password only before 2.14 (Nova then returned it); none is set on a guest here
  if (!version.atLeast("2.14")) return { status: 200, body: { adminPass: adminPass ?? newAdminPass() } };
  return { status: 200 };
}

/** The move accepted (lib/instances/move-accept.ts), its refusals as Nova's answers. */
export async function accept(
  call: RouteCall,
  rec: InstanceRecord,
  kind: MoveKind,
  newFlavor: FlavorSpec,
  requestedHost: string | null,
  extra: Partial<Pick<MoveRequestSpec, "powerOn" | "force" | "blockMigration">> = {},
): Promise<MigrationRecord> {
  const m = moveDeps(call);
  const { ctx, deps } = call;
  const apiAction = API_ACTION[kind];
  try {
    const r = await acceptMove(
      rec,
      {
        kind,
        newFlavor,
        requestedHost,
        // Nova puts the source in the ignore list unless a resize may stay (a migration never does)
        sameHostAllowed: kind === "resize" && moveOptions().allowResizeToSameHost,
        ...extra,
        action: actionRecord(MOVE_BEGINS[kind].action, call),
      },
      {
        ...m,
        sendBuildRequest: deps.sendBuildRequest,
        reserveDelta: deps.quotas.reserveDelta,
        releaseUsage: (project, delta, user) =>
          deps.quotas.releaseUsage(project, delta, user).catch((error: unknown) =>
            log.error("api.move.quota_not_released", {
              request_id: ctx.requestId,
              instance_uuid: rec.id,
              error,
            }),
          ),
        now: deps.now,
      },
    );
    if (!r.ok && r.reason === "quota") throw forbidden(r.message);
    if (!r.ok) return await refusedBy(call, rec, apiAction);
    ctx.logFields.migration_uuid = r.migration.uuid;
    return r.migration;
  } catch (e) {
    if (!(e instanceof MoveNotQueued)) throw e;
    ctx.logFields.error = e;
    throw new ApiError(
      "computeFault",
      `The server could not be ${kind === "resize" ? "resized" : kind === "evacuation" ? "evacuated" : "migrated"}: its request could not be queued. Please try again.`,
    );
  }
}

/**
 * Nova: confirm and revert need VERIFY_RESIZE and its finished migration; a migration not
 * finished is a 400 between the vm_state and the task_state checks, as in Nova.
 */
function checkResized(
  call: RouteCall,
  rec: InstanceRecord,
  action: "confirm_resize" | "revert_resize",
  apiAction: string,
): NonNullable<InstanceRecord["migration"]> {
  checkLock(rec, call.ctx.auth);
  checkVmState(rec, action, apiAction);
  if (rec.migration?.status !== "finished") throw badRequest("Instance has not been resized.");
  checkTaskState(rec, action, apiAction);
  return rec.migration;
}

/** confirmResize: the source's copy and its claim go; 204 (Nova's answer). */
export async function confirmResize(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  const m = moveDeps(call);
  checkResized(call, rec, "confirm_resize", "confirmResize");
  const confirmed = await confirmMove(rec, actionRecord("confirmResize", call), {
    beginConfirm: m.beginConfirm,
    updateMigration: m.updateMigration,
    castToHost: (host, msg) => cast(call, host, msg),
  });
  if (!confirmed) await refusedBy(call, rec, "confirmResize");
  return { status: 204 };
}

/** revertResize: the destination's copy goes, then the source's comes back; 202. */
export async function revertResize(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  const m = moveDeps(call);
  const move = checkResized(call, rec, "revert_resize", "revertResize");
  const begun = await m.beginRevert(rec, actionRecord("revertResize", call));
  if (!begun) await refusedBy(call, rec, "revertResize");
  // (the record may still say post-migrating: compute-events writes the instance first, then it)
  await m.updateMigration(move.uuid, ["post-migrating", "finished"], "reverting");

  await cast(call, rec.host!, {
    version: 1,
    kind: "revert_resize",
    request_id: call.ctx.requestId,
    instance_uuid: rec.id,
    host: rec.host!,
    migration_uuid: move.uuid,
    attempt: rec.attempt,
    same_host: move.source_host === move.dest_host,
  });
  return { status: 202 };
}

async function cast(
  call: RouteCall,
  host: string,
  msg: Parameters<MoveDeps["castToCompute"]>[1],
): Promise<void> {
  const found = await call.deps.getHost(host);
  if (!found?.queue_url) throw instanceNotReady(msg.instance_uuid);
  await moveDeps(call).castToCompute(found.queue_url, msg);
}
