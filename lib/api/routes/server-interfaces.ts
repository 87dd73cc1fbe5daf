// A server's ports: os-interface (Nova's attach_interfaces.py) and ips (ips.py), read from its
// network info cache. Attaching and detaching a port to a running guest is not built: the hosts'
// drivers cannot hot-plug a NIC (docs/networking.md), so those answer 501 and say so.
import { ApiError, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { addressesView, interfaceAttachmentView } from "../views/addresses.js";
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
  if (!vif) throw notFound(`Instance ${rec.id} is not attached.`);
  return {
    status: 200,
    body: { interfaceAttachment: interfaceAttachmentView(vif, call.ctx.version.atLeast("2.70")) },
  };
}

async function hotPlug(call: RouteCall): Promise<ApiResult> {
  await serverOf(call);
  throw new ApiError(
    "notImplemented",
    "Attaching or detaching an interface of a server is not supported: novaless's hosts cannot hot-plug a port. Create the server with its networks instead.",
  );
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
  { method: "POST", pattern: "/servers/:id/os-interface", handler: hotPlug },
  { method: "DELETE", pattern: "/servers/:id/os-interface/:port_id", handler: hotPlug },
  { method: "GET", pattern: "/servers/:id/ips", handler: listIps },
  { method: "GET", pattern: "/servers/:id/ips/:network_label", handler: showIps },
];
