// Neutron's networks (flat or vlan provider networks, and project networks) over
// lib/network/store/, with ML2's type drivers' checks and network.py's default policies.
import { randomUUID } from "node:crypto";
import type { Hono } from "hono";
import { z } from "zod";
import { invalidInput } from "../../network/cidr.js";
import { createNetwork, deleteNetwork, updateNetwork } from "../../network/store/networks.js";
import { deletePort } from "../../network/store/ports.js";
import { getNetwork, listNetworks, type Network, portsOn } from "../../network/store/table.js";
import type { AuthContext, AuthDeps } from "../auth.js";
import { memberOf, policyRefused, seesNetwork } from "./policy.js";
import {
  type Attr,
  attr,
  type Body,
  boolAttr,
  json,
  type Made,
  type NetEnv,
  notFound,
  projectOf,
  refuse,
  resourceRoutes,
  stamp,
  stringAttr,
  updateBody,
} from "./request.js";
import { ensureDefaultGroup } from "./security-groups.js";
import { NETWORK_ATTRIBUTES, networkView } from "./views.js";

/** The physical network a project network (no provider attributes) is flat on: docs/networking.md. */
export const DEFAULT_PHYSICAL_NETWORK = "physnet1";
const DEFAULT_MTU = 1500;

/** A network the caller sees, or Neutron's NetworkNotFound. */
export async function visibleNetwork(auth: AuthContext, id: string): Promise<Network> {
  const n = await getNetwork(id);
  if (!n || !seesNetwork(auth, n)) throw notFound("Network", id);
  return n;
}

const PHYSICAL_NETWORK: Attr<string> = {
  schema: z.string().min(1),
  reason: (v) => `'${json(v)}' is not a valid string`,
};
const MTU: Attr<number> = { schema: z.int().min(68), reason: (v) => `'${json(v)}' is not a valid MTU` };
const HINTS: Attr<string[]> = {
  schema: z.array(z.string()),
  reason: (v) => `'${json(v)}' is not a list of strings`,
};

const NETWORK_CREATE = [
  "name",
  "admin_state_up",
  "shared",
  "router:external",
  "provider:network_type",
  "provider:physical_network",
  "provider:segmentation_id",
  "mtu",
  "description",
  "availability_zone_hints",
  "project_id",
  "tenant_id",
  "port_security_enabled",
];
const NETWORK_UPDATE = ["name", "admin_state_up", "shared", "description", "mtu", "port_security_enabled"];
/** The network attributes with enforce_policy that only admins set (network.py's policies). */
const NETWORK_ADMIN_ATTRS = [
  "shared",
  "router:external",
  "provider:network_type",
  "provider:physical_network",
  "provider:segmentation_id",
];

/** Which admin-only attributes a body sets (a false shared or router:external is the default, unset). */
const adminAttrsSet = (body: Body, attrs: readonly string[]) =>
  attrs.filter((a) => body[a] !== undefined && body[a] !== false);

/**
 * The network's segment, checked as ML2's type drivers check theirs (type_flat.py, type_vlan.py).
 * Without provider attributes, a flat network on physnet1 (docs/networking.md says why).
 */
function segmentOf(body: Body): Record<string, unknown> {
  const type = body["provider:network_type"] ?? "flat";
  const physnet = body["provider:physical_network"];
  const segId = body["provider:segmentation_id"];
  if (type !== "flat" && type !== "vlan")
    throw invalidInput(`network_type value '${String(type)}' not supported`);
  attr(body, "provider:physical_network", PHYSICAL_NETWORK);
  if (type === "flat") {
    if (segId !== undefined && segId !== null)
      throw invalidInput("segmentation_id prohibited for flat provider network");
    return {
      "provider:network_type": "flat",
      "provider:physical_network": physnet ?? DEFAULT_PHYSICAL_NETWORK,
      "provider:segmentation_id": null,
    };
  }
  if (segId === undefined || segId === null)
    // ML2 would allocate one from network_vlan_ranges; novaless keeps no tenant VLAN ranges
    throw invalidInput("segmentation_id required for VLAN provider network");
  const n = typeof segId === "string" && /^\d+$/.test(segId) ? Number(segId) : segId;
  if (!Number.isInteger(n) || (n as number) < 1 || (n as number) > 4094)
    throw invalidInput("segmentation_id out of range (1 through 4094)");
  if (physnet === undefined)
    throw invalidInput("segmentation_id requires physical_network for VLAN provider network");
  return {
    "provider:network_type": "vlan",
    "provider:physical_network": physnet,
    "provider:segmentation_id": n,
  };
}

const mtuOf = (body: Body): number => attr(body, "mtu", MTU) ?? DEFAULT_MTU;

async function createOneNetwork(auth: AuthContext, body: Body, deps: AuthDeps): Promise<Made> {
  const project = projectOf(auth, body);
  const adminAttrs = adminAttrsSet(body, NETWORK_ADMIN_ATTRS);
  if (!memberOf(auth, auth.project_id)) throw policyRefused("create_network");
  if (adminAttrs.length && !auth.isAdmin)
    throw policyRefused(
      "create_network",
      adminAttrs.map((name) => ({ name })),
    );
  if (body["router:external"] === true)
    // no routers, so no external networks
    throw invalidInput("router:external networks are not supported: novaless has no routers");
  const now = stamp(deps.now());
  const network = {
    id: randomUUID(),
    name: stringAttr(body, "name") ?? "",
    description: stringAttr(body, "description") ?? "",
    project_id: project,
    admin_state_up: boolAttr(body, "admin_state_up") ?? true,
    shared: boolAttr(body, "shared") ?? false,
    mtu: mtuOf(body),
    availability_zone_hints: hints(body),
    // the port-security extension: the default its ports take
    port_security_enabled: boolAttr(body, "port_security_enabled") ?? true,
    ...segmentOf(body),
    created_at: now,
    updated_at: now,
  };
  // Neutron makes the project's default security group before its network (BEFORE_CREATE)
  await ensureDefaultGroup(auth, project, deps.now());
  await createNetwork(network);
  const stored = await getNetwork(network.id);
  return { view: networkView(stored!, auth), undo: () => deleteNetwork(network.id) };
}

export function networkRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  resourceRoutes(app, {
    name: "network",
    notFound: (id) => notFound("Network", id),
    attributes: NETWORK_ATTRIBUTES,
    createAttributes: NETWORK_CREATE,
    view: networkView,
    visible: async (auth) => (await listNetworks()).filter((n) => seesNetwork(auth, n)),
    find: visibleNetwork,
    create: (auth, body) => createOneNetwork(auth, body, deps),
  });

  app.put("/v2.0/networks/:id", async (c) => {
    const auth = c.get("auth");
    const n = await visibleNetwork(auth, c.req.param("id"));
    const body = await updateBody(c, "network", [...NETWORK_UPDATE, ...NETWORK_ADMIN_ATTRS]);
    const provider = NETWORK_ADMIN_ATTRS.filter((a) => a.startsWith("provider:") && body[a] !== undefined);
    const attrs = [...(body.shared !== undefined ? ["shared"] : []), ...provider];
    if (!memberOf(auth, n.project_id)) refuse(auth, n.project_id, "update_network");
    if (attrs.length && !auth.isAdmin)
      refuse(
        auth,
        n.project_id,
        "update_network",
        attrs.map((name) => ({ name })),
      );
    if (provider.length) throw invalidInput("Only VLAN type networks can be updated.");
    if (body["router:external"] === true)
      throw invalidInput("router:external networks are not supported: novaless has no routers");
    const changes: Body = { updated_at: stamp(deps.now()) };
    for (const k of ["name", "description"] as const) {
      const v = stringAttr(body, k);
      if (v !== undefined) changes[k] = v;
    }
    for (const k of ["admin_state_up", "shared", "port_security_enabled"] as const) {
      const v = boolAttr(body, k);
      if (v !== undefined) changes[k] = v;
    }
    if (body.mtu !== undefined) changes.mtu = mtuOf(body);
    const updated = await updateNetwork(n.id, changes);
    if (!updated) throw notFound("Network", n.id);
    return c.json({ network: networkView(updated, auth) });
  });

  app.delete("/v2.0/networks/:id", async (c) => {
    const auth = c.get("auth");
    const n = await visibleNetwork(auth, c.req.param("id"));
    if (!memberOf(auth, n.project_id)) refuse(auth, n.project_id, "delete_network");
    // Neutron deletes the network's DHCP ports itself; any other port keeps it in use
    for (const p of await portsOn(n.id)) if (p.device_owner === "network:dhcp") await deletePort(p.id);
    if (!(await deleteNetwork(n.id))) throw notFound("Network", n.id);
    return c.body(null, 204);
  });
}

const hints = (body: Body): string[] => attr(body, "availability_zone_hints", HINTS) ?? [];
