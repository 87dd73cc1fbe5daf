// POST /servers/{id}/action {"trigger_crash_dump": null} (2.17; Nova's servers.py
// _action_trigger_crash_dump): the owner or an admin; check_instance_lock, check_instance_host
// and check_instance_state(ACTIVE, PAUSED, RESCUED, RESIZED, ERROR; task None). The instance
// action is recorded and the host is told; no task state changes, as in Nova. A driver that cannot
// (exec) fails the action's event on the host, with a fault.

import { z } from "zod";
import type { InstanceRecord } from "../../instances/types.js";
import type { PowerDeps } from "../deps.js";
import { notFound, RESOURCE_NOT_FOUND } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { validate } from "../validation/common.js";
import { actionRecord } from "./instance-action.js";
import { checkInstance, checkInstanceHost, refusedBy } from "./instance-checks.js";

export async function triggerCrashDump(
  call: RouteCall,
  rec: InstanceRecord,
  arg: unknown,
): Promise<ApiResult> {
  // an action of 2.17: before it, Nova's router has no such method for the version
  if (!call.ctx.version.atLeast("2.17")) throw notFound(RESOURCE_NOT_FOUND);
  // Nova's schema: {"trigger_crash_dump": null}
  validate(z.null(), arg);
  const p: PowerDeps | undefined = call.deps.power;
  if (!p) throw new Error("the API was built without its power-action dependencies");
  checkInstance(rec, call.ctx.auth, "trigger_crash_dump", "trigger_crash_dump");
  const host = await checkInstanceHost(call.deps, rec);
  const action = actionRecord("trigger_crash_dump", call);
  const updated = await call.deps.updateServer(rec.id, { fields: {}, action, now: call.deps.now() });
  if (!updated) return refusedBy(call, rec, "trigger_crash_dump");
  await p.castToCompute(host.queue_url, {
    version: 1,
    kind: "trigger_crash_dump",
    request_id: action.request_id,
    instance_uuid: rec.id,
    host: host.host,
  });
  return { status: 202 };
}
