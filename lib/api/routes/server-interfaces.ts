// A server's ports: os-interface (Nova's attach_interfaces.py) and ips (ips.py), read from its
// network info cache; attach and detach through lib/instances/interfaces.ts. Nova's attach is an
// RPC call: the API makes or binds the port, casts to the server's host and waits for its report
// (the 200 carries the attachment). Its detach is a cast: 202, and the host's report removes the
// port. A driver without hot-plug (exec) is refused before anything is made.
import { setTimeout as sleep } from "node:timers/promises";
import {
  attachFailed,
  attachNotSupported,
  EVENT_ATTACH,
  EVENT_DETACH,
  InterfaceRefused,
} from "../../instances/interfaces.js";
import { event } from "../../instances/transition.js";
import type { InstanceRecord } from "../../instances/types.js";
import { getPort } from "../../network/store/table.js";
import type { HostRecord } from "../../placement/types.js";
import type { InterfaceDeps } from "../deps.js";
import { ApiError, badRequest, conflict, instanceNotFound, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseAttachBody } from "../validation/server-interfaces.js";
import { addressesView, interfaceAttachmentView } from "../views/addresses.js";
import { actionRecord } from "./instance-action.js";
import { checkInstance, checkInstanceHost, refusedBy } from "./instance-checks.js";
import { findServer } from "./servers.js";

async function serverOf(call: RouteCall) {
  call.ctx.logFields.instance_uuid = call.params.id;
  return findServer(call.deps, call.params.id!, call.ctx.auth);
}

async function listInterfaces(call: RouteCall): Promise<ApiResult> {
  const rec = await serverOf(call);
  const showTag = call.ctx.version.atLeast("2.70");
  return {
    status: 200,
    body: { interfaceAttachments: (rec.network_info ?? []).map((v) => interfaceAttachmentView(v, showTag)) },
  };
}

async function showInterface(call: RouteCall): Promise<ApiResult> {
  const rec = await serverOf(call);
  const portId = call.params.port_id!;
  const vif = (rec.network_info ?? []).find((v) => v.port_id === portId);
  if (!vif) {
    // Nova's show reads the port: one that is not there is PortNotFound, another's is not the server's
    const port = await getPort(portId);
    const visible = port && (call.ctx.auth.isAdmin || port.project_id === call.ctx.auth.project_id);
    throw notFound(
      visible
        ? `Instance ${rec.id} does not have a port with id ${portId}`
        : `Port id ${portId} could not be found.`,
    );
  }
  return {
    status: 200,
    body: { interfaceAttachment: interfaceAttachmentView(vif, call.ctx.version.atLeast("2.70")) },
  };
}

function interfaceDeps(call: RouteCall): InterfaceDeps {
  const d = call.deps.interfaces;
  if (!d) throw new Error("the API was built without its interface dependencies");
  return d;
}

/** The driver of the server's host has no hot-plug (its facts say so: exec). */
const cannotHotPlug = (host: HostRecord) => host.hypervisor_facts?.attach_interface === false;

/** Nova's status for a refusal of the attach or detach. */
function refusal(e: InterfaceRefused): ApiError {
  switch (e.status) {
    case 404:
      return notFound(e.message);
    case 409:
      return conflict(e.message);
    case 500:
      return new ApiError("computeFault", e.message);
    default:
      return badRequest(e.message);
  }
}

/** POST /servers/{id}/os-interface: Nova's create, answered once the host has plugged the port. */
async function attachInterface(call: RouteCall): Promise<ApiResult> {
  const d = interfaceDeps(call);
  const req = parseAttachBody(parseJsonBody(call.body), call.ctx.version);
  const rec = await serverOf(call);
  if (req.net_id && req.port_id) throw badRequest("Must not input both network_id and port_id");
  if (req.fixed_ip && !req.net_id) throw badRequest("Must input network_id when request IP address");
  checkInstance(rec, call.ctx.auth, "attach_interface", "attach_interface");
  const host = await checkInstanceHost(call.deps, rec);
  // Nova's compute checks its driver's supports_attach_interface before it allocates anything
  if (cannotHotPlug(host)) throw badRequest(attachNotSupported(rec.id));
  const action = actionRecord("attach_interface", call);
  const rid = action.request_id;
  const who = { project_id: call.ctx.auth.project_id, isAdmin: call.ctx.auth.isAdmin };
  const resolved = await d.resolve(rec, req, rid, who).catch((e) => {
    throw e instanceof InterfaceRefused ? refusal(e) : e;
  });
  const { request, attachment } = resolved;
  const begun = await d.beginAttach(rec, action, attachment);
  if (!begun) return refusedBy(call, rec, "attach_interface");
  const placed = { ...begun, host: host.host };
  /** the attach did not reach the host: its port freed, the action's event failed (Nova's fault: `why`) */
  const abandon = (why: string, refused: boolean) =>
    d.settleAttachFailed(
      rec.id,
      rid,
      attachment,
      event(EVENT_ATTACH, 0, "Error", null, why, new Date(action.start_time)),
      "failed",
      refused ? why : undefined,
    );
  let port: Awaited<ReturnType<InterfaceDeps["guestPorts"]>>[number] | undefined;
  try {
    const vif = await d.allocate(placed, request, attachment, call.deps.now());
    [port] = await d.guestPorts({ network_info: [vif] });
  } catch (e) {
    await abandon(e instanceof Error ? e.message : String(e), e instanceof InterfaceRefused);
    throw e instanceof InterfaceRefused ? refusal(e) : e;
  }
  try {
    await d.castToCompute(host.queue_url, {
      version: 1,
      kind: "attach_interface",
      request_id: rid,
      instance_uuid: rec.id,
      host: host.host,
      port: port!,
      ...(attachment.tag !== undefined ? { tag: attachment.tag } : {}),
    });
  } catch (e) {
    await abandon(`the attach could not be cast to host ${host.host}: ${(e as Error).message}`, false);
    throw e;
  }
  return attachOutcome(call, d, rec.id, rid, attachment.port_id);
}

/** The host's report, as the attachment it settled: the attachment's view, or Nova's refusal. */
async function attachOutcome(
  call: RouteCall,
  d: InterfaceDeps,
  id: string,
  rid: string,
  portId: string,
): Promise<ApiResult> {
  const deadline = Date.now() + d.attachTimeoutMs;
  for (;;) {
    const rec: InstanceRecord | undefined = await call.deps.getInstance(id);
    // deleted while its host plugged the port: the port went with it
    if (!rec || rec.deleted) throw instanceNotFound(id);
    const a = rec.actions[rid]?.interface;
    if (a?.state === "attached") {
      const vif = (rec.network_info ?? []).find((v) => v.port_id === portId);
      if (vif)
        return {
          status: 200,
          body: { interfaceAttachment: interfaceAttachmentView(vif, call.ctx.version.atLeast("2.70")) },
        };
      // detached again already (a detach raced the answer): Nova's show of a port gone
      throw notFound(`Port id ${portId} could not be found.`);
    }
    if (a?.state === "failed") {
      // AttachInterfaceNotSupported is a 400, InterfaceAttachFailed Nova's 500
      if (a.error === "not_supported") throw badRequest(attachNotSupported(id));
      throw new ApiError("computeFault", attachFailed(id));
    }
    if (Date.now() >= deadline)
      throw new ApiError(
        "computeFault",
        `Instance ${id}'s host did not report the interface attach within ${d.attachTimeoutMs / 1000} s: port ${portId} is attached when it does (GET /servers/${id}/os-interface), or freed if it cannot.`,
      );
    await sleep(d.attachPollMs);
  }
}

/** How many times a detach's begin is tried when the network info changed under it. */
const BEGIN_TRIES = 3;

/** DELETE /servers/{id}/os-interface/{port_id}: Nova's delete, a cast (202). */
async function detachInterface(call: RouteCall): Promise<ApiResult> {
  const d = interfaceDeps(call);
  let rec = await serverOf(call);
  const portId = call.params.port_id!;
  const action = actionRecord("detach_interface", call);
  for (let tries = 1; ; tries++) {
    checkInstance(rec, call.ctx.auth, "detach_interface", "detach_interface");
    const host = await checkInstanceHost(call.deps, rec);
    const index = (rec.network_info ?? []).findIndex((v) => v.port_id === portId);
    // Nova's compute: PortNotFound, which its controller answers 404
    if (index < 0) throw notFound(`Port ${portId} is not attached`);
    const vif = rec.network_info![index]!;
    // a detach of it is under way already: this one is it again
    if (vif.detaching) return { status: 202 };
    // the controller's answer to the driver's NotImplementedError
    if (cannotHotPlug(host))
      throw new ApiError("notImplemented", "The requested functionality is not supported.");
    const begun = await d.beginDetach(rec, action, index, portId);
    if (!begun) {
      const now = await call.deps.getInstance(rec.id);
      if (!now || now.deleted) throw instanceNotFound(rec.id);
      // its state changed: Nova's 409; its network info changed: looked at again
      if (
        tries >= BEGIN_TRIES ||
        now.vm_state !== rec.vm_state ||
        now.task_state !== rec.task_state ||
        now.host !== rec.host
      )
        return refusedBy(call, rec, "detach_interface");
      rec = now;
      continue;
    }
    const [port] = await d.guestPorts({ network_info: [vif] });
    try {
      await d.castToCompute(host.queue_url, {
        version: 1,
        kind: "detach_interface",
        request_id: action.request_id,
        instance_uuid: rec.id,
        host: host.host,
        port: port!,
      });
    } catch (e) {
      await d.settleDetachFailed(
        rec.id,
        action.request_id,
        portId,
        event(
          EVENT_DETACH,
          0,
          "Error",
          null,
          `the detach could not be cast to host ${host.host}: ${(e as Error).message}`,
          new Date(action.start_time),
        ),
        false,
      );
      throw e;
    }
    return { status: 202 };
  }
}

async function listIps(call: RouteCall): Promise<ApiResult> {
  const rec = await serverOf(call);
  return { status: 200, body: { addresses: addressesView(rec, false) } };
}

async function showIps(call: RouteCall): Promise<ApiResult> {
  const rec = await serverOf(call);
  const label = call.params.network_label!;
  const addresses = addressesView(rec, false);
  if (!Object.hasOwn(addresses, label)) throw notFound("Instance is not a member of specified network");
  return { status: 200, body: { [label]: addresses[label] } };
}

export const serverInterfaceRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/os-interface", handler: listInterfaces },
  { method: "GET", pattern: "/servers/:id/os-interface/:port_id", handler: showInterface },
  { method: "POST", pattern: "/servers/:id/os-interface", handler: attachInterface },
  { method: "DELETE", pattern: "/servers/:id/os-interface/:port_id", handler: detachInterface },
  { method: "GET", pattern: "/servers/:id/ips", handler: listIps },
  { method: "GET", pattern: "/servers/:id/ips/:network_label", handler: showIps },
];
