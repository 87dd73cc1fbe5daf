// POST /servers/{id}/action: Nova's server actions. lock and unlock (lock_server.py), the power
// actions (os-stop, os-start, reboot, pause, unpause, suspend, resume) and os-getConsoleOutput, which go to the server's host
// through its queue, and the moves and the rebuild, which go through the conductor
// (server-moves.ts, server-rebuild.ts), and the admin's os-resetState (server-reset-state.ts); each
// recorded as an instance action. The actions that
// need what this system does not have answer 501, saying so; anything else is Nova's 400 for an
// unknown action.
import { withoutHosts } from "../../instances/faults.js";
import { carriesGuest, type PowerActionName, type RebootType } from "../../instances/power.js";
import type { ActionName, InstanceAction, InstanceRecord } from "../../instances/types.js";
import { tailLog } from "../../messages/console-log.js";
import type { PowerDeps } from "../deps.js";
import { ApiError, badRequest, conflict, instanceNotFound, policyForbidden } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseConsoleOutputBody, parseRebootBody } from "../validation/server-actions.js";
import { parseLockBody } from "../validation/servers.js";
import { askHost } from "./host-answer.js";
import { actionRecord } from "./instance-action.js";
import {
  checkInstance,
  checkInstanceHost,
  instanceNotReady,
  type NovaAction,
  refusedBy,
} from "./instance-checks.js";
import { addSecurityGroup, removeSecurityGroup } from "./security-groups.js";
import { triggerCrashDump } from "./server-crash-dump.js";
import { forceDelete, restore } from "./server-deferred-delete.js";
import { createBackup, createImage } from "./server-images.js";
import { migrateLive } from "./server-live-migrate.js";
import { confirmResize, evacuate, migrate, resize, revertResize } from "./server-moves.js";
import { rebuild } from "./server-rebuild.js";
import { resetState } from "./server-reset-state.js";
import { shelve, shelveOffload, unshelve } from "./server-shelve.js";
import { findServer } from "./servers.js";

/** Nova's lock_server unlock_override rule: only it may lift another's (an admin's) lock. */
const UNLOCK_OVERRIDE = "os_compute_api:os-lock-server:unlock:unlock_override";

async function write(
  call: RouteCall,
  rec: InstanceRecord,
  fields: Pick<InstanceRecord, "locked_by" | "locked_reason">,
  name: ActionName,
) {
  const updated = await call.deps.updateServer(rec.id, {
    fields,
    action: actionRecord(name, call),
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
 * Nova's actions that need what this system does not have yet: graphical consoles, rescue,
 * passwords, fixed and floating IPs.
 */
const UNSUPPORTED = new Set([
  "os-getVNCConsole",
  "os-getSPICEConsole",
  "os-getSerialConsole",
  "os-getRDPConsole",
  "rescue",
  "unrescue",
  "changePassword",
  "injectNetworkInfo",
  "resetNetwork",
  "addFixedIp",
  "removeFixedIp",
  "addFloatingIp",
  "removeFloatingIp",
]);

function powerDeps(call: RouteCall): PowerDeps {
  const p = call.deps.power;
  if (!p) throw new Error("the API was built without its power-action dependencies");
  return p;
}

/** The power actions a user asks for by name (a soft delete and a restore have routes of their own). */
type UserPowerAction = Exclude<PowerActionName, "soft_delete" | "restore">;

/** The compute API method whose guard (instance-checks.ts) each power action runs. */
const GUARD: Record<Exclude<UserPowerAction, "reboot">, NovaAction> & Record<RebootType, NovaAction> = {
  stop: "stop",
  start: "start",
  SOFT: "soft_reboot",
  HARD: "hard_reboot",
  pause: "pause",
  unpause: "unpause",
  suspend: "suspend",
  resume: "resume",
};

/**
 * os-stop, os-start, reboot, pause, unpause, suspend, resume: Nova's checks (lock, host, state), then one conditional write (the
 * task state and the instance action) and the cast to the host. 202; the host's report finishes it.
 */
async function power(
  call: RouteCall,
  rec: InstanceRecord,
  action: UserPowerAction,
  apiAction: string,
  rebootType: RebootType | undefined,
): Promise<ApiResult> {
  const p = powerDeps(call);
  checkInstance(rec, call.ctx.auth, GUARD[action === "reboot" ? (rebootType ?? "SOFT") : action], apiAction);
  const host = await checkInstanceHost(call.deps, rec);
  const a: InstanceAction = { ...actionRecord(action, call) };
  // changed since it was read: answer as its state now says
  if (!(await p.begin(rec, action, rebootType, a))) await refusedBy(call, rec, apiAction);
  await p.castToCompute(host.queue_url, {
    version: 1,
    kind: "power_action",
    action,
    ...(action === "reboot" ? { reboot_type: rebootType ?? "SOFT" } : {}),
    request_id: call.ctx.requestId,
    instance_uuid: rec.id,
    host: host.host,
    ...(carriesGuest(action) ? { guest: await p.guestSpecFor(rec) } : {}),
  });
  return { status: 202 };
}

/**
 * Nova's console_output removes what XML 1.0 cannot carry (api/openstack/compute/console_output.py:
 * `re.compile('[\x00-\x08\x0B-\x1F]')`, substituted by ''): a real serial log's \r of every
 * line goes, tab and newline stay.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const NOT_PRINTABLE = /[\x00-\x08\x0B-\x1F]/g;

/**
 * os-getConsoleOutput: asks the host (its queue) and waits for its answer, which compute-events
 * keeps for the API; 409 when the guest is not running or the host does not answer in time.
 */
async function consoleOutput(
  call: RouteCall,
  rec: InstanceRecord,
  length: number | undefined,
): Promise<ApiResult> {
  const p = powerDeps(call);
  const running = rec.power_state === undefined ? rec.vm_state === "active" : rec.power_state === 1;
  const host = rec.host ? await call.deps.getHost(rec.host) : undefined;
  if (!rec.host || !host || !running) throw instanceNotReady(rec.id);
  const requestId = call.ctx.requestId;
  const answer = await askHost(
    p,
    host.queue_url,
    {
      version: 1,
      kind: "get_console_output",
      request_id: requestId,
      instance_uuid: rec.id,
      host: rec.host,
      ...(length !== undefined ? { length } : {}),
    },
    () => p.readConsoleOutput(rec.id, requestId),
  );
  if (!answer) {
    throw instanceNotReady(
      rec.id,
      `its host did not send the console output within ${p.consoleTimeoutMs / 1000} s`,
    );
  }
  if (answer.error !== null) {
    const text = call.ctx.auth.isAdmin ? answer.error : withoutHosts(answer.error, [rec.host]);
    throw conflict(`Unable to get the console output of instance ${rec.id}: ${text}`);
  }
  // the host tailed it already (Nova tails on the host); tailing again changes nothing
  const output = tailLog(answer.output, length);
  return { status: 200, body: { output: output.replace(NOT_PRINTABLE, "") } };
}

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
  if (name === "os-stop") return power(call, rec, "stop", name, undefined);
  if (name === "os-start") return power(call, rec, "start", name, undefined);
  if (name === "reboot") return power(call, rec, "reboot", name, parseRebootBody(arg));
  // pause_server.py and suspend_server.py: the owner or an admin (findServer), any body value
  if (name === "pause" || name === "unpause" || name === "suspend" || name === "resume")
    return power(call, rec, name, name, undefined);
  if (name === "os-getConsoleOutput") return consoleOutput(call, rec, parseConsoleOutputBody(arg));
  if (name === "resize") return resize(call, rec, arg);
  if (name === "migrate") return migrate(call, rec, arg);
  if (name === "evacuate") return evacuate(call, rec, arg);
  if (name === "confirmResize") return confirmResize(call, rec);
  if (name === "revertResize") return revertResize(call, rec);
  if (name === "rebuild") return rebuild(call, rec, arg);
  if (name === "os-migrateLive") return migrateLive(call, rec, arg);
  if (name === "createImage") return createImage(call, rec, arg);
  if (name === "createBackup") return createBackup(call, rec, arg);
  if (name === "shelve") return shelve(call, rec);
  if (name === "shelveOffload") return shelveOffload(call, rec);
  if (name === "unshelve") return unshelve(call, rec, arg);
  if (name === "trigger_crash_dump") return triggerCrashDump(call, rec, arg);
  if (name === "os-resetState") return resetState(call, rec, arg);
  // deferred_delete.py: any body value
  if (name === "restore") return restore(call, rec);
  if (name === "forceDelete") return forceDelete(call, rec);
  if (name === "addSecurityGroup") return addSecurityGroup(call, rec, arg);
  if (name === "removeSecurityGroup") return removeSecurityGroup(call, rec, arg);
  if (UNSUPPORTED.has(name)) {
    throw new ApiError(
      "notImplemented",
      `The requested functionality is not supported: novaless cannot '${name}' a server yet.`,
    );
  }
  throw badRequest(`There is no such action: ${name}`);
}

export const serverActionRoutes: Route[] = [
  { method: "POST", pattern: "/servers/:id/action", handler: serverAction },
];
