// POST /servers/{id}/action: Nova's server actions. lock and unlock (lock_server.py) are done
// here, each recorded as an instance action; the actions that need a hypervisor or services this
// system does not have answer 501, saying so; anything else is Nova's 400 for an unknown action.
import type { ActionName, InstanceAction, InstanceRecord } from "../../instances/types.js";
import { ApiError, badRequest, instanceNotFound, policyForbidden } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseLockBody } from "../validation/servers.js";
import { findServer } from "./servers.js";

/** Nova's lock_server unlock_override rule: only it may lift another's (an admin's) lock. */
const UNLOCK_OVERRIDE = "os_compute_api:os-lock-server:unlock:unlock_override";

function action(name: ActionName, call: RouteCall): InstanceAction {
  const { auth, requestId } = call.ctx;
  return {
    action: name,
    request_id: requestId,
    user_id: auth.user_id,
    project_id: auth.project_id,
    start_time: call.deps.now().toISOString(),
    message: null,
    events: {},
  };
}

async function write(
  call: RouteCall,
  rec: InstanceRecord,
  fields: Pick<InstanceRecord, "locked_by" | "locked_reason">,
  name: ActionName,
) {
  const updated = await call.deps.updateServer(rec.id, {
    fields,
    action: action(name, call),
    now: call.deps.now(),
  });
  if (!updated) throw instanceNotFound(rec.id);
}

/** Nova: the owner's project locks as "owner", anyone else (an admin) as "admin". */
async function lock(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const { reason } = parseLockBody(arg, call.ctx.version);
  const lockedBy = rec.project_id === call.ctx.auth.project_id ? "owner" : "admin";
  await write(call, rec, { locked_by: lockedBy, locked_reason: reason }, "lock");
  return { status: 202 };
}

/** An owner may not lift an admin's lock (Nova's is_expected_locked_by, then unlock_override). */
async function unlock(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  const { auth } = call.ctx;
  const expected = rec.project_id === auth.project_id ? "owner" : "admin";
  if (rec.locked_by && rec.locked_by !== expected && !auth.isAdmin) throw policyForbidden(UNLOCK_OVERRIDE);
  await write(call, rec, { locked_by: null, locked_reason: null }, "unlock");
  return { status: 202 };
}

/**
 * Nova's actions that need what this system does not have yet: power operations and consoles
 * (issue 11), moving or rebuilding a server, images and backups, networks and volumes.
 */
const UNSUPPORTED = new Set([
  "os-start",
  "os-stop",
  "reboot",
  "os-getConsoleOutput",
  "os-getVNCConsole",
  "os-getSPICEConsole",
  "os-getSerialConsole",
  "os-getRDPConsole",
  "pause",
  "unpause",
  "suspend",
  "resume",
  "shelve",
  "shelveOffload",
  "unshelve",
  "rescue",
  "unrescue",
  "resize",
  "confirmResize",
  "revertResize",
  "migrate",
  "os-migrateLive",
  "evacuate",
  "rebuild",
  "createImage",
  "createBackup",
  "changePassword",
  "trigger_crash_dump",
  "os-resetState",
  "injectNetworkInfo",
  "resetNetwork",
  "addFixedIp",
  "removeFixedIp",
  "addFloatingIp",
  "removeFloatingIp",
  "addSecurityGroup",
  "removeSecurityGroup",
  "forceDelete",
  "restore",
]);

export async function serverAction(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const body = parseJsonBody(call.body);
  if (body === null || typeof body !== "object" || Array.isArray(body) || Object.keys(body).length !== 1) {
    throw badRequest("Malformed request body");
  }
  const [name, arg] = Object.entries(body)[0]!;
  ctx.logFields.action = name;
  const rec = await findServer(deps, id, ctx.auth);
  if (name === "lock") return lock(call, rec, arg);
  if (name === "unlock") return unlock(call, rec);
  if (UNSUPPORTED.has(name)) {
    throw new ApiError(
      "notImplemented",
      `The requested functionality is not supported: novaless cannot '${name}' a server yet (it has no hypervisor operations beyond build and delete).`,
    );
  }
  throw badRequest(`There is no such action: ${name}`);
}

export const serverActionRoutes: Route[] = [
  { method: "POST", pattern: "/servers/:id/action", handler: serverAction },
];
