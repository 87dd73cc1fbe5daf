// POST /servers/{id}/action {"shelve"|"shelveOffload"|"unshelve"} (Nova's shelve.py with
// compute/api.py's checks). Shelve stops the server on its host and snapshots it; with
// shelved_offload_time = 0 the host lets it go at once (SHELVED_OFFLOADED, its claim freed),
// otherwise the watchdog offloads it later, or an admin does. Unshelve of a SHELVED server starts
// it on its host again; of a SHELVED_OFFLOADED one goes through the conductor, which schedules it
// as a build (lib/conductor/unshelve.ts). Each is an instance action; quota stays counted while
// shelved, as in Nova.
import { randomUUID } from "node:crypto";
import { aggregateZoneByHost, hostAvailabilityZone } from "../../catalog/aggregates.js";
import { schedulerConfig } from "../../config.js";
import { conductorRequest } from "../../instances/request-spec.js";
import { unshelveFields } from "../../instances/shelve.js";
import type { Update } from "../../instances/transition.js";
import type { InstanceAction, InstanceRecord, TaskState, UnshelveContext } from "../../instances/types.js";
import { WORKFLOWS, type WorkflowRun } from "../../instances/workflows.js";
import type { ShelveInstance } from "../../messages/compute.js";
import type { ShelveDeps } from "../deps.js";
import { badRequest, conflict, policyForbidden } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { parseUnshelveBody } from "../validation/server-shelve.js";
import { serverStatus } from "../views/servers.js";
import { availableZoneNames } from "../zones.js";
import { acceptOrFault, actionRecord } from "./instance-action.js";
import { checkInstance, checkInstanceHost, refusedBy } from "./instance-checks.js";

/** Nova's shelve policies whose default is admin. */
const SHELVE_OFFLOAD_POLICY = "os_compute_api:os-shelve:shelve_offload";
const UNSHELVE_TO_HOST_POLICY = "os_compute_api:os-shelve:unshelve_to_host";

function shelveDeps(call: RouteCall): ShelveDeps {
  const s = call.deps.shelve;
  if (!s) throw new Error("the API was built without its shelve dependencies");
  return s;
}

/** The server's host's queue (Nova's check_instance_host). */
const hostQueue = async (call: RouteCall, rec: InstanceRecord): Promise<string> =>
  (await checkInstanceHost(call.deps, rec)).queue_url;

/**
 * The accepting write (the task state `task`, and `more`: an unshelve's context), then the cast
 * or request `send`; when it cannot be sent, the begin is taken back (lib/instances/accept.ts), so
 * the server is not left in a task nobody carries out. Nova's 409 when the begin was refused.
 */
async function accept(
  call: RouteCall,
  rec: InstanceRecord,
  apiAction: string,
  task: Exclude<TaskState, null>,
  a: InstanceAction,
  send: (begun: InstanceRecord) => Promise<void>,
  more?: { update: Update; run: WorkflowRun },
): Promise<void> {
  const s = shelveDeps(call);
  const begun = await acceptOrFault(
    call,
    {
      instance_uuid: rec.id,
      request_id: a.request_id,
      write: () => s.begin(rec, task, a, more?.update),
      abandon: () => s.abandon(rec.id, task, more?.run),
    },
    send,
  );
  if (!begun) await refusedBy(call, rec, apiAction);
}

/** shelve: Nova's check_instance_lock and check_instance_state (instance-checks.ts). */
export async function shelve(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  const s = shelveDeps(call);
  checkInstance(rec, call.ctx.auth, "shelve", "shelve");
  const queueUrl = await hostQueue(call, rec);
  const action = actionRecord("shelve", call);
  const offload = s.shelvedOffloadTime() === 0;
  await accept(call, rec, "shelve", "shelving", action, async (begun) => {
    // Nova's API creates the snapshot's image before the cast; the host's driver fills it
    const imageId = await s.createShelvedImage(begun, call.ctx.auth);
    const msg: ShelveInstance = {
      version: 1,
      kind: "shelve_instance",
      op: "shelve",
      request_id: action.request_id,
      instance_uuid: rec.id,
      host: rec.host!,
      attempt: rec.attempt,
      offload,
      image_id: imageId,
    };
    await s.castToCompute(queueUrl, msg);
  });
  return { status: 202 };
}

/** shelveOffload: admin by default; Nova's checks (instance-checks.ts). */
export async function shelveOffload(call: RouteCall, rec: InstanceRecord): Promise<ApiResult> {
  const s = shelveDeps(call);
  if (!call.ctx.auth.isAdmin) throw policyForbidden(SHELVE_OFFLOAD_POLICY);
  checkInstance(rec, call.ctx.auth, "shelve_offload", "shelveOffload");
  const queueUrl = await hostQueue(call, rec);
  const action = actionRecord("shelveOffload", call);
  await accept(call, rec, "shelveOffload", "shelving_offloading", action, () =>
    s.castToCompute(queueUrl, {
      version: 1,
      kind: "shelve_instance",
      op: "offload",
      request_id: action.request_id,
      instance_uuid: rec.id,
      host: rec.host!,
      attempt: rec.attempt,
      offload: true,
      image_id: null,
    }),
  );
  return { status: 202 };
}

/**
 * unshelve (Nova's compute API unshelve): a zone (2.77; null unpins it, 2.91) and a host (2.91,
 * admins) only for a SHELVED_OFFLOADED server; the zone must be available and the host must be
 * in the zone the server ends up pinned to.
 */
export async function unshelve(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const s = shelveDeps(call);
  const { deps, ctx } = call;
  const body = parseUnshelveBody(arg, ctx.version);
  checkInstance(rec, ctx.auth, "unshelve", "unshelve");
  const zonePassed = body.availability_zone !== undefined;
  if ((zonePassed || body.host) && rec.vm_state !== "shelved_offloaded") {
    throw conflict(
      `Specifying an availability zone or a host when unshelving server "${rec.id}" with status "${serverStatus(rec)}" is not supported. The server status must be SHELVED_OFFLOADED.`,
    );
  }
  if (zonePassed && body.availability_zone && !(await availableZoneNames(deps)).has(body.availability_zone))
    throw badRequest("The requested availability zone is not available");
  if (body.host) {
    if (!ctx.auth.isAdmin) throw policyForbidden(UNSHELVE_TO_HOST_POLICY);
    const found = await deps.getHost(body.host);
    if (!found || found.service.deleted_at) throw badRequest(`Compute host ${body.host} could not be found.`);
    const expected = zonePassed ? body.availability_zone : rec.request_spec?.availability_zone;
    if (expected) {
      const zone = hostAvailabilityZone(
        found,
        aggregateZoneByHost(await deps.listAggregates()),
        schedulerConfig().default_availability_zone,
      );
      if (zone !== expected)
        throw conflict(`Host "${body.host}" is not in the availability zone "${expected}".`);
    }
  }
  const action = actionRecord("unshelve", call);
  if (rec.vm_state === "shelved") {
    // still on its host (Nova's conductor casts start_instance): no scheduler
    const queueUrl = await hostQueue(call, rec);
    await accept(call, rec, "unshelve", "unshelving", action, async (begun) =>
      s.castToCompute(queueUrl, {
        version: 1,
        kind: "shelve_instance",
        op: "start",
        request_id: action.request_id,
        instance_uuid: rec.id,
        host: rec.host!,
        attempt: rec.attempt,
        offload: false,
        // the shelve's snapshot, deleted once the server runs again
        image_id: rec.shelve?.image_id ?? null,
        guest: await s.guestSpecFor(begun),
      }),
    );
    return { status: 202 };
  }
  const unshelveCtx: UnshelveContext = {
    uuid: randomUUID(),
    request_id: action.request_id,
    base_attempt: rec.attempt,
    requested_host: body.host ?? null,
    tried: [],
  };
  await accept(
    call,
    rec,
    "unshelve",
    "unshelving",
    action,
    () => {
      ctx.logFields.unshelve_uuid = unshelveCtx.uuid;
      return deps.sendBuildRequest({
        ...conductorRequest(rec, action.request_id),
        unshelve: { unshelve_uuid: unshelveCtx.uuid, base_attempt: rec.attempt },
      });
    },
    {
      update: unshelveFields(unshelveCtx, body.availability_zone, rec.request_spec !== undefined),
      run: { workflow: WORKFLOWS.unshelve, uuid: unshelveCtx.uuid },
    },
  );
  return { status: 202 };
}
