// Neutron's ports over lib/network/store/: their MAC and fixed IPs (the IPAM of
// lib/network/ports.ts), port.py's policies per attribute, and the server's view following a
// change of its port (Neutron's network-changed event to Nova).
import { randomUUID } from "node:crypto";
import type { Hono } from "hono";
import { z } from "zod";
import { refreshNetworkInfo } from "../../instances/networking.js";
import type { Membership } from "../../instances/port-filters.js";
import {
  type FilterChange,
  membersChanged,
  refreshPortFilters,
} from "../../instances/security-group-refresh.js";
import { invalidInput, normalizeAddress, parseAddress } from "../../network/cidr.js";
import { allocate, type FixedIpRequest, generatedMac } from "../../network/ports.js";
import { allocateAddress, releaseAddress } from "../../network/store/addresses.js";
import {
  createPort,
  deletePort,
  portCreated,
  portShown,
  securityGroupsOf,
  setPortSecurityGroups,
  updatePort,
} from "../../network/store/ports.js";
import { getSecurityGroups, setMemberAddresses } from "../../network/store/security-groups.js";
import {
  deviceKey,
  getNetwork,
  getPort,
  getSubnet,
  listNetworks,
  listPorts,
  type Network,
  type Port,
  portsOfDevice,
  portsOn,
} from "../../network/store/table.js";
import { API_FUNCTION_TIMEOUT_SECONDS } from "../../resources.js";
import type { AuthContext, AuthDeps } from "../auth.js";
import { Refusal } from "../errors.js";
import type { ListQuery } from "./listing.js";
import { visibleNetwork } from "./networks.js";
import { type AttributeRule, memberOf, policyRefused, pretendNotFound, readerOf } from "./policy.js";
import {
  type Attr,
  attr,
  type Body,
  boolAttr,
  invalidAttr,
  json,
  type Made,
  type NetEnv,
  notFound,
  projectOf,
  refuse,
  required,
  resourceRoutes,
  securityGroupNotFound,
  stamp,
  stringAttr,
  updateBody,
} from "./request.js";
import { ensureDefaultGroup } from "./security-groups.js";
import { PORT_ATTRIBUTES, portView } from "./views.js";

/** get_port: an admin, the port's project's readers, the network owner's readers. */
async function visiblePort(
  auth: AuthContext,
  id: string,
  now: Date,
): Promise<{ port: Port; network?: Network }> {
  const port = await getPort(id);
  if (!port || !portShown(port, now)) throw notFound("Port", id);
  const network = await getNetwork(port.network_id);
  if (!readerOf(auth, port.project_id) && !(network && readerOf(auth, network.project_id)))
    throw notFound("Port", id);
  return { port, network };
}

const badFixedIp = (v: unknown) => `Invalid data format for fixed IP: '${json(v)}'`;
/** A port's fixed_ips: a list of a subnet, an address or both (each checked further below). */
const FIXED_IPS: Attr<{ subnet_id?: unknown; ip_address?: unknown }[]> = {
  schema: z.array(z.strictObject({ subnet_id: z.string().optional(), ip_address: z.string().optional() })),
  reason: (v, issue) => badFixedIp(issue.path.length ? (v as unknown[])[issue.path[0] as number] : v),
};
/** A MAC as given (any value, as text), lower case. */
const MAC_ADDRESS: Attr<string> = {
  schema: z.coerce
    .string()
    .toLowerCase()
    .regex(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/),
  reason: (v) => `'${String(v)}' is not a valid MAC address`,
};

/** neutron-lib's uuid_list, after convert_none_to_empty_list (null is none). */
const SECURITY_GROUPS: Attr<string[]> = {
  schema: z
    .array(z.string().regex(/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i))
    .refine((a) => new Set(a).size === a.length),
  reason: (v, issue) => {
    if (!Array.isArray(v)) return `'${json(v)}' is not a list`;
    const dups = [...new Set(v.filter((x, i) => v.indexOf(x) !== i))];
    if (issue.code === "custom" && dups.length) return `Duplicate items in the list: '${dups.join(", ")}'`;
    return `'${String(v[issue.path[0] as number])}' is not a valid UUID`;
  },
};
const securityGroupsAttr = (body: Body) =>
  body.security_groups === null ? [] : attr(body, "security_groups", SECURITY_GROUPS);

/** Neutron's port security checks refuse security groups on a port without it. */
const portSecurityRequired = () =>
  new Refusal(
    400,
    "Port security must be enabled and port must have an IP address in order to use security groups.",
    "PortSecurityAndIPRequiredForSecurityGroups",
  );

/**
 * _get_security_groups_on_port: every group asked for is there and the port's project's (an
 * admin's port may take any); Neutron's SecurityGroupNotFound names those that are not.
 */
async function checkPortGroups(auth: AuthContext, project: string, ids: readonly string[]): Promise<void> {
  if (!ids.length) return;
  const found = await getSecurityGroups(ids);
  const missing = ids.filter((id) => {
    const g = found.get(id);
    return !g || !(auth.isAdmin || g.project_id === project);
  });
  if (missing.length) throw securityGroupNotFound(missing.join(", "));
}

/** Neutron's trusted ports (a `network:` device owner): no port security, no security groups. */
const trusted = (deviceOwner: unknown) =>
  typeof deviceOwner === "string" && deviceOwner.startsWith("network:");

const PORT_CREATE = [
  "network_id",
  "name",
  "description",
  "admin_state_up",
  "mac_address",
  "fixed_ips",
  "device_id",
  "device_owner",
  "project_id",
  "tenant_id",
  "binding:host_id",
  "binding:vnic_type",
  "security_groups",
  "port_security_enabled",
];
const PORT_UPDATE = [
  "name",
  "description",
  "admin_state_up",
  "fixed_ips",
  "device_id",
  "device_owner",
  "binding:host_id",
  "security_groups",
  "port_security_enabled",
];

function fixedIpsOf(body: Body): FixedIpRequest[] | undefined {
  return attr(body, "fixed_ips", FIXED_IPS)?.map((f) => {
    if (f.ip_address !== undefined && (typeof f.ip_address !== "string" || !parseAddress(f.ip_address)))
      throw invalidAttr("fixed_ips", `'${f.ip_address}' is not a valid IP address`);
    if (f.subnet_id === undefined && f.ip_address === undefined)
      throw invalidInput("IP allocation requires subnet_id or ip_address");
    return f as FixedIpRequest;
  });
}

/**
 * The enforce_policy attributes a port body sets, in neutron-lib's attribute order (mac_address,
 * fixed_ips, device_id, device_owner, then binding:host_id), each named in the rule Neutron
 * builds; and whether all pass (port.py's defaults). On a create an attribute at its default is
 * not set (policy.py _is_attribute_explicitly_set); on an update every one given is.
 */
function portAttrRules(
  auth: AuthContext,
  body: Body,
  network: Network,
  update: boolean,
): { attributes: AttributeRule[]; allowed: boolean } {
  const netOwner = memberOf(auth, network.project_id);
  const attributes: AttributeRule[] = [];
  let allowed = true;
  const given = (k: string) => body[k] !== undefined && (update || body[k] !== "");
  if (given("mac_address")) {
    attributes.push({ name: "mac_address" });
    allowed &&= netOwner;
  }
  const fixed = fixedIpsOf(body);
  if (fixed) {
    const keys = [...new Set(fixed.flatMap((f) => Object.keys(f)))];
    attributes.push({ name: "fixed_ips", keys });
    // fixed_ips and fixed_ips:subnet_id: the network's owner or a shared network;
    // fixed_ips:ip_address: the network's owner only
    allowed &&= netOwner || (network.shared === true && !keys.includes("ip_address"));
  }
  if (given("device_id")) attributes.push({ name: "device_id" });
  if (given("device_owner")) {
    attributes.push({ name: "device_owner" });
    allowed &&= netOwner || !String(body.device_owner).startsWith("network:");
  }
  if (given("binding:host_id")) {
    attributes.push({ name: "binding:host_id" });
    allowed &&= auth.isAdmin;
  }
  if (body.port_security_enabled !== undefined) {
    attributes.push({ name: "port_security_enabled" });
    allowed &&= netOwner;
  }
  return { attributes, allowed };
}

async function createOnePort(auth: AuthContext, body: Body, deps: AuthDeps): Promise<Made> {
  required(body, "network_id", typeof body.network_id === "string");
  const project = projectOf(auth, body);
  const network = await visibleNetwork(auth, body.network_id as string);
  // base.py _validate_network_tenant_ownership: another project's unshared network is hidden
  if (!auth.isAdmin && !network.shared && network.project_id !== project) throw pretendNotFound();
  if (!memberOf(auth, auth.project_id)) throw policyRefused("create_port");
  const rules = portAttrRules(auth, body, network, false);
  if (!rules.allowed) throw policyRefused("create_port", rules.attributes);
  const mac = attr(body, "mac_address", MAC_ADDRESS) ?? generatedMac();
  const wanted = fixedIpsOf(body);
  const now = stamp(deps.now());
  const host = stringAttr(body, "binding:host_id") ?? "";
  const security = await portSecurityOnCreate(auth, body, network, project, deps.now());
  const port = {
    id: randomUUID(),
    network_id: network.id,
    project_id: project,
    name: stringAttr(body, "name") ?? "",
    description: stringAttr(body, "description") ?? "",
    admin_state_up: boolAttr(body, "admin_state_up") ?? true,
    mac_address: mac,
    device_id: stringAttr(body, "device_id") ?? "",
    device_owner: stringAttr(body, "device_owner") ?? "",
    "binding:host_id": host,
    ...security,
    revision_number: 0,
    created_at: now,
    updated_at: now,
  };
  // Neutron creates a port and its addresses in one transaction: hidden until they are given,
  // and a refused address leaves no port
  await createPort({ ...port, creating_until: deps.now().getTime() + API_FUNCTION_TIMEOUT_SECONDS * 1000 });
  try {
    await allocate({ ...port, fixed_ips: [] }, network, wanted);
  } catch (e) {
    await deletePort(port.id);
    throw e;
  }
  await portCreated(port.id);
  // the servers of groups naming its groups as remote admit its addresses within the sync window
  await membersChanged(
    security.security_groups.map((g): Membership => [g, port.id]),
    requestId(),
  );
  return {
    view: portView((await getPort(port.id))!, auth),
    undo: () => deleteFrontPort({ ...port, fixed_ips: [] }),
  };
}

const requestId = () => `req-${randomUUID()}`;

/**
 * A new port's port security and groups (ml2's port security extension driver, then
 * _ensure_default_security_group_on_port): port security as asked, else its network's; its groups
 * as asked, else its project's default group (made now if need be, unless another project's
 * member creates it); none for a trusted port. Groups without port security are refused.
 */
async function portSecurityOnCreate(
  auth: AuthContext,
  body: Body,
  network: Network,
  project: string,
  now: Date,
): Promise<{ port_security_enabled: boolean; security_groups: string[] }> {
  const asked = securityGroupsAttr(body);
  const given = boolAttr(body, "port_security_enabled");
  if (trusted(body.device_owner)) return { port_security_enabled: false, security_groups: [] };
  const enabled = given ?? network.port_security_enabled !== false;
  if (!enabled) {
    if (asked?.length) throw portSecurityRequired();
    return { port_security_enabled: false, security_groups: [] };
  }
  if (asked !== undefined) {
    await checkPortGroups(auth, project, asked);
    return { port_security_enabled: true, security_groups: asked };
  }
  const fallback = await ensureDefaultGroup(auth, project, now);
  return { port_security_enabled: true, security_groups: fallback ? [fallback] : [] };
}

/** Delete a port; the servers of the groups naming its groups as remote are told within the sync window. */
async function deleteFrontPort(port: Port): Promise<boolean> {
  const deleted = await deletePort(port.id);
  if (deleted)
    await membersChanged(
      securityGroupsOf(port).map((g): Membership => [g, port.id]),
      requestId(),
    );
  return deleted;
}

/**
 * An update's security groups and port security, as ml2 checks them: groups given without port
 * security (given or kept) are refused; turning it off while the port keeps groups is
 * PortSecurityPortHasSecurityGroup. Undefined when the update changes neither.
 */
async function portSecurityOnUpdate(
  auth: AuthContext,
  body: Body,
  port: Port,
): Promise<{ port_security_enabled: boolean; security_groups: string[] } | undefined> {
  const asked = securityGroupsAttr(body);
  const given = boolAttr(body, "port_security_enabled");
  if (asked === undefined && given === undefined) return undefined;
  const enabled = given ?? port.port_security_enabled !== false;
  const groups = asked ?? securityGroupsOf(port);
  if (!enabled) {
    if (asked?.length) throw portSecurityRequired();
    if (groups.length)
      throw new Refusal(
        409,
        "Port has security group associated. Cannot disable port security or IP address until security group is removed.",
        "PortSecurityPortHasSecurityGroup",
      );
  }
  if (asked !== undefined && !trusted(port.device_owner)) await checkPortGroups(auth, port.project_id, asked);
  return { port_security_enabled: enabled, security_groups: trusted(port.device_owner) ? [] : groups };
}

/**
 * The ports a list's filters can match, read by an index where one narrows them: a device's (the
 * SDK's and Ansible's `?device_id=<server>`, per server), a network's; undefined when none does
 * (a filter on a free port's empty device_id, or none at all): every port is read.
 */
async function portsFiltered(filters: ListQuery["filters"]): Promise<Port[] | undefined> {
  const values = (name: string) => filters.find(([k]) => k === name)?.[1];
  const devices = values("device_id");
  const networks = values("network_id");
  let ports: Port[][];
  if (devices && !devices.includes("")) ports = await Promise.all([...new Set(devices)].map(portsOfDevice));
  else if (networks) ports = await Promise.all([...new Set(networks)].map(portsOn));
  else return undefined;
  return ports.flat();
}

export function portRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  resourceRoutes(app, {
    name: "port",
    notFound: (id) => notFound("Port", id),
    attributes: PORT_ATTRIBUTES,
    createAttributes: PORT_CREATE,
    view: portView,
    visible: async (auth, filters) => {
      const now = deps.now();
      const narrowed = await portsFiltered(filters);
      const ports = (narrowed ?? (await listPorts())).filter((p) => portShown(p, now));
      if (auth.isAdmin) return ports;
      // a port is its project's readers', and its network's project's: the networks of the
      // others' ports are read (a few, where an index narrowed them), or all of them
      const others = [
        ...new Set(ports.filter((p) => !readerOf(auth, p.project_id)).map((p) => p.network_id)),
      ];
      const networks = narrowed
        ? await Promise.all(others.map((id) => getNetwork(id, true)))
        : await listNetworks();
      const owned = new Set(
        networks.filter((n): n is Network => !!n && readerOf(auth, n.project_id)).map((n) => n.id),
      );
      return ports.filter((p) => readerOf(auth, p.project_id) || owned.has(p.network_id));
    },
    find: async (auth, id) => (await visiblePort(auth, id, deps.now())).port,
    create: (auth, body) => createOnePort(auth, body, deps),
  });

  app.put("/v2.0/ports/:id", async (c) => {
    const auth = c.get("auth");
    const { port, network } = await visiblePort(auth, c.req.param("id"), deps.now());
    if (!network) throw notFound("Network", port.network_id);
    const body = await updateBody(c, "port", PORT_UPDATE);
    if (!memberOf(auth, port.project_id) && !memberOf(auth, network.project_id))
      refuse(auth, port.project_id, "update_port");
    const rules = portAttrRules(auth, body, network, true);
    if (!rules.allowed) refuse(auth, port.project_id, "update_port", rules.attributes);
    const changes: Body = { updated_at: stamp(deps.now()) };
    for (const k of ["name", "description", "device_id", "device_owner", "binding:host_id"] as const) {
      const v = stringAttr(body, k);
      if (v !== undefined) changes[k] = v;
    }
    const up = boolAttr(body, "admin_state_up");
    if (up !== undefined) changes.admin_state_up = up;
    const wanted = fixedIpsOf(body);
    const security = await portSecurityOnUpdate(auth, body, port);
    if (wanted) await changeAddresses(port, network, wanted);
    const change: FilterChange = {};
    if (security) {
      const set = await setPortSecurityGroups(port.id, security, stamp(deps.now()));
      if (!set) throw notFound("Port", port.id);
      change.ports = [port.id];
      change.joined = set.joined.map((g): Membership => [g, port.id]);
      change.left = set.left.map((g): Membership => [g, port.id]);
    }
    const readAt = Date.now();
    const updated = await updatePort(port.id, changes);
    if (!updated) throw notFound("Port", port.id);
    // its addresses changed: its memberships hold the new ones, and the servers admitting its
    // groups' members admit them
    if (wanted) {
      await setMemberAddresses(
        updated.id,
        securityGroupsOf(updated),
        updated.fixed_ips.map((f) => f.ip_address),
        readAt,
      );
      change.addressesOf = securityGroupsOf(updated);
    }
    // Neutron's network-changed event to Nova: the server's addresses and groups follow its port
    await serverPortChanged(port);
    await refreshPortFilters(change, requestId());
    return c.json({ port: portView(updated, auth) });
  });

  app.delete("/v2.0/ports/:id", async (c) => {
    const auth = c.get("auth");
    const { port, network } = await visiblePort(auth, c.req.param("id"), deps.now());
    if (!memberOf(auth, port.project_id) && !(network && memberOf(auth, network.project_id)))
      refuse(auth, port.project_id, "delete_port");
    if (!(await deleteFrontPort(port))) throw notFound("Port", port.id);
    // network-vif-deleted: the server no longer shows it
    await serverPortChanged(port);
    return c.body(null, 204);
  });
}

/** A port of a server (a build's, or one bound to it) changed: the server's view follows. */
async function serverPortChanged(port: Port): Promise<void> {
  // (a free port's device_id is "": no server to tell)
  const device = deviceKey(port.device_id);
  if (device && String(port.device_owner ?? "").startsWith("compute:")) await refreshNetworkInfo(device);
}

/**
 * A port's new fixed_ips: those it keeps stay, those left out are released, new ones allocated.
 * Released first (the store holds one address per subnet per port, so a change of address on a
 * subnet frees the old one before taking the new); when an allocation is refused, the released
 * addresses are taken back where still free and the refusal answered.
 */
async function changeAddresses(port: Port, network: Network, wanted: FixedIpRequest[]): Promise<void> {
  const keeps = (f: { subnet_id: string; ip_address: string }) =>
    wanted.some(
      (w) =>
        (w.subnet_id === undefined || w.subnet_id === f.subnet_id) &&
        (w.ip_address === undefined
          ? w.subnet_id === f.subnet_id
          : normalizeAddress(w.ip_address) === f.ip_address),
    );
  const kept = port.fixed_ips.filter(keeps);
  const removed = port.fixed_ips.filter((f) => !keeps(f));
  const added = wanted.filter(
    (w) =>
      !kept.some(
        (f) =>
          (w.subnet_id === undefined || w.subnet_id === f.subnet_id) &&
          (w.ip_address === undefined || normalizeAddress(w.ip_address) === f.ip_address),
      ),
  );
  for (const f of removed) await releaseAddress(f.subnet_id, f.ip_address, port.id);
  try {
    // the port as it is now: the removed addresses are no longer its own
    await allocate({ ...port, fixed_ips: kept }, network, added);
  } catch (e) {
    for (const f of removed) {
      const s = await getSubnet(f.subnet_id);
      if (s) await allocateAddress(s, port.id, f.ip_address).catch(() => undefined);
    }
    throw e;
  }
}
