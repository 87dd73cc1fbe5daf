// Neutron's Networking v2 API on DevStack's path, /networking: networks (flat or vlan provider
// networks, and project networks), subnets and ports over lib/network/store.ts, with Neutron's
// shapes, its errors ({"NeutronError": {type, message, detail}}) and its default policies
// (./policy.ts). No routers, floating IPs or security groups: their paths are Neutron's 404 for
// an unknown resource. A missing or unknown token is Keystone's 401, as keystonemiddleware
// answers in front of Neutron.
import { randomUUID } from "node:crypto";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { refreshNetworkInfo } from "../../instances/networking.js";
import {
  checkPools,
  defaultGateway,
  defaultPools,
  invalidInput,
  isValidForSubnet,
  NetworkingError,
  normalizeAddress,
  parseAddress,
  parseCidr,
} from "../../network/cidr.js";
import { allocate, type FixedIpRequest, generatedMac } from "../../network/ports.js";
import {
  allocateAddress,
  createNetwork,
  createPort,
  createSubnet,
  deleteNetwork,
  deletePort,
  deleteSubnet,
  getNetwork,
  getPort,
  getSubnet,
  listNetworks,
  listPorts,
  listSubnets,
  type Network,
  type Port,
  portCreated,
  portShown,
  portsOn,
  releaseAddress,
  type Subnet,
  updateNetwork,
  updatePort,
  updateSubnet,
} from "../../network/store.js";
import { API_FUNCTION_TIMEOUT_SECONDS } from "../../resources.js";
import { type AuthContext, type AuthDeps, authenticate } from "../auth.js";
import { UNAUTHORIZED_BODY } from "../errors.js";
import {
  type AttributeRule,
  memberOf,
  NeutronForbidden,
  policyRefused,
  pretendNotFound,
  readerOf,
  seesNetwork,
} from "./policy.js";
import { quotaRoutes } from "./quotas.js";
import {
  extensionsDocument,
  NETWORK_ATTRIBUTES,
  networkView,
  PORT_ATTRIBUTES,
  portView,
  resourcesDocument,
  SUBNET_ATTRIBUTES,
  selectFields,
  subnetView,
  versionsDocument,
} from "./views.js";

type NetEnv = { Variables: { baseUrl: string; netAuth: AuthContext } };
type C = Context<NetEnv>;
type Body = Record<string, unknown>;

/** The physical network a project network (no provider attributes) is flat on: docs/networking.md. */
export const DEFAULT_PHYSICAL_NETWORK = "physnet1";
const DEFAULT_MTU = 1500;

const badRequest = (message: string) => new NetworkingError(400, "HTTPBadRequest", message);
const notFound = (kind: "Network" | "Subnet" | "Port", id: string) =>
  new NetworkingError(404, `${kind}NotFound`, `${kind} ${id} could not be found.`);

/** Neutron's timestamps: seconds, UTC, a Z. */
const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/** The request's `{"<resource>": {...}}`, refused with Neutron's texts (api/v2/base.py prepare_request_body). */
async function resourceBody(c: C, resource: string, allowed: readonly string[]): Promise<Body> {
  return resourceOf(await requestBody(c), resource, allowed);
}

async function requestBody(c: C): Promise<Body> {
  let parsed: unknown;
  try {
    parsed = JSON.parse((await c.req.text()) || "null");
  } catch {
    // neutron/api/wsgi.py: webob's HTTPBadRequest with its own text
    throw badRequest("Malformed request body");
  }
  if (!parsed || typeof parsed !== "object") throw badRequest("Resource body required");
  return parsed as Body;
}

function resourceOf(parsed: Body, resource: string, allowed: readonly string[]): Body {
  const body = parsed[resource];
  if (!body || typeof body !== "object" || Array.isArray(body))
    throw badRequest(`Unable to find '${resource}' in request body`);
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length) throw badRequest(`Unrecognized attribute(s) '${unknown.join(", ")}'`);
  return body as Body;
}

/** A resource made by a POST, and how to take it back when a bulk create is refused later on. */
type Made = { view: Body; undo: () => Promise<unknown> };

/**
 * POST of one resource ({"network": {...}}) or of several, Neutron's bulk create
 * ({"networks": [...]}, each item its attributes or {"network": {...}}: api/v2/base.py
 * prepare_request_body). A bulk create is all or nothing, as Neutron's: when an item is refused,
 * those made before it are deleted and the refusal answered.
 */
async function createResources(
  c: C,
  resource: "network" | "subnet" | "port",
  allowed: readonly string[],
  create: (body: Body) => Promise<Made>,
) {
  const parsed = await requestBody(c);
  const collection = `${resource}s`;
  if (!(collection in parsed))
    return c.json({ [resource]: (await create(resourceOf(parsed, resource, allowed))).view }, 201);
  const items = parsed[collection];
  if (!Array.isArray(items) || items.length === 0) throw badRequest("Resources required");
  const made: Made[] = [];
  try {
    for (const item of items) {
      const wrapped = item && typeof item === "object" && resource in item ? item : { [resource]: item };
      made.push(await create(resourceOf(wrapped, resource, allowed)));
    }
  } catch (e) {
    for (const m of made.reverse()) await m.undo().catch(() => undefined);
    throw e;
  }
  return c.json({ [collection]: made.map((m) => m.view) }, 201);
}

/** neutron-lib's validators' "Invalid input for <attr>. Reason: …." */
const invalidAttr = (attr: string, reason: string) =>
  badRequest(`Invalid input for ${attr}. Reason: ${reason}.`);

function stringAttr(body: Body, attr: string, max = 255): string | undefined {
  const v = body[attr];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw invalidAttr(attr, `'${JSON.stringify(v)}' is not a valid string`);
  if (v.length > max) throw invalidAttr(attr, `'${v}' exceeds maximum length of ${max}`);
  return v;
}

function boolAttr(body: Body, attr: string): boolean | undefined {
  const v = body[attr];
  if (v === undefined) return undefined;
  if (typeof v === "boolean") return v;
  if (typeof v === "string" && /^(true|false)$/i.test(v)) return v.toLowerCase() === "true";
  throw invalidAttr(attr, `'${JSON.stringify(v)}' cannot be converted to boolean`);
}

/** The project a new resource goes to: the caller's, another's for admins only (base.py). */
function projectOf(auth: AuthContext, body: Body): string {
  const asked = (body.project_id ?? body.tenant_id) as string | undefined;
  if (asked === undefined || asked === auth.project_id) return auth.project_id;
  if (!auth.isAdmin)
    throw badRequest(
      "Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges",
    );
  return asked;
}

/**
 * Neutron's list filters: each query parameter an attribute, repeated ones any of their values.
 * With Neutron's filter-validation (on by default), a parameter that is no attribute of the
 * resource is its 400 (api_common.get_filters_from_dict, the keys as a Python list).
 */
const NOT_FILTERS = new Set(["fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse"]);
function filtered<T>(
  c: C,
  items: T[],
  view: (item: T, auth: AuthContext) => Record<string, unknown>,
  attributes: readonly string[],
): Record<string, unknown>[] {
  const q = c.req.queries();
  const invalid = Object.keys(q).filter((k) => !NOT_FILTERS.has(k) && !attributes.includes(k));
  if (invalid.length)
    throw badRequest(`[${invalid.map((k) => `'${k}'`).join(", ")}] is invalid attribute for filtering`);
  const auth = c.get("netAuth");
  const fields = q.fields ?? [];
  // Neutron filters in its database, before policy hides attributes: a member's filter on
  // provider:network_type matches as an admin's would
  const matches = (v: Record<string, unknown>) =>
    Object.entries(q).every(([k, wanted]) => {
      if (NOT_FILTERS.has(k)) return true;
      if (k === "fixed_ips") return wanted.every((w) => fixedIpMatches(v.fixed_ips, w));
      const have = v[k];
      return wanted.some((w) =>
        typeof have === "boolean" ? String(have) === w.toLowerCase() : String(have ?? "") === w,
      );
    });
  return items.filter((i) => matches(view(i, ADMIN_VIEW))).map((i) => selectFields(view(i, auth), fields));
}

/** The caller every attribute is shown to, for filtering. */
const ADMIN_VIEW: AuthContext = { user_id: "", project_id: "", roles: ["admin"], isAdmin: true };

/** `fixed_ips=ip_address=10.0.0.5` or `fixed_ips=subnet_id=<id>` (Neutron's port filter). */
function fixedIpMatches(fixedIps: unknown, filter: string): boolean {
  const [key, value] = filter.split("=", 2);
  const ips = (fixedIps ?? []) as Record<string, string>[];
  if (key === "ip_address") return ips.some((f) => f.ip_address === (normalizeAddress(value ?? "") ?? value));
  if (key === "subnet_id") return ips.some((f) => f.subnet_id === value);
  return true;
}

/** A network the caller sees, or Neutron's NetworkNotFound. */
async function visibleNetwork(auth: AuthContext, id: string): Promise<Network> {
  const n = await getNetwork(id);
  if (!n || !seesNetwork(auth, n)) throw notFound("Network", id);
  return n;
}

/** get_subnet: an admin, the owner's readers, anyone on a shared network. */
async function visibleSubnet(auth: AuthContext, id: string): Promise<{ subnet: Subnet; network?: Network }> {
  const subnet = await getSubnet(id);
  if (!subnet) throw notFound("Subnet", id);
  if (readerOf(auth, subnet.project_id)) return { subnet, network: await getNetwork(subnet.network_id) };
  const network = await getNetwork(subnet.network_id);
  if (!network || !seesNetwork(auth, network)) throw notFound("Subnet", id);
  return { subnet, network };
}

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

/**
 * Refuse an action the caller may not take on a resource it sees: Neutron's 403 on its own
 * project's, a 404 on another's (api/v2/base.py hides what is not the caller's).
 */
function refuse(auth: AuthContext, owner: string, action: string, attrs: AttributeRule[] = []): never {
  if (auth.project_id === owner) throw policyRefused(action, attrs);
  throw pretendNotFound();
}

// ── Networks ──────────────────────────────────────────────────────────────────────────────────

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
const NETWORK_UPDATE = ["name", "admin_state_up", "shared", "description", "mtu"];
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
  if (physnet !== undefined && (typeof physnet !== "string" || !physnet))
    throw invalidAttr("provider:physical_network", `'${JSON.stringify(physnet)}' is not a valid string`);
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

function mtuOf(body: Body): number {
  const v = body.mtu;
  if (v === undefined) return DEFAULT_MTU;
  if (!Number.isInteger(v) || (v as number) < 68)
    throw invalidAttr("mtu", `'${JSON.stringify(v)}' is not a valid MTU`);
  return v as number;
}

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
    ...segmentOf(body),
    created_at: now,
    updated_at: now,
  };
  await createNetwork(network);
  const stored = await getNetwork(network.id);
  return { view: networkView(stored!, auth), undo: () => deleteNetwork(network.id) };
}

function networkRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  app.get("/v2.0/networks", async (c) => {
    const auth = c.get("netAuth");
    const visible = (await listNetworks())
      .filter((n) => seesNetwork(auth, n))
      .sort((a, b) => a.id.localeCompare(b.id));
    return c.json({ networks: filtered(c, visible, networkView, NETWORK_ATTRIBUTES) });
  });

  app.get("/v2.0/networks/:id", async (c) => {
    const auth = c.get("netAuth");
    const n = await visibleNetwork(auth, c.req.param("id"));
    return c.json({ network: selectFields(networkView(n, auth), c.req.queries("fields") ?? []) });
  });

  app.post("/v2.0/networks", (c) =>
    createResources(c, "network", NETWORK_CREATE, (body) => createOneNetwork(c.get("netAuth"), body, deps)),
  );

  app.put("/v2.0/networks/:id", async (c) => {
    const auth = c.get("netAuth");
    const n = await visibleNetwork(auth, c.req.param("id"));
    const body = await resourceBody(c, "network", [...NETWORK_UPDATE, ...NETWORK_ADMIN_ATTRS]);
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
    for (const k of ["admin_state_up", "shared"] as const) {
      const v = boolAttr(body, k);
      if (v !== undefined) changes[k] = v;
    }
    if (body.mtu !== undefined) changes.mtu = mtuOf(body);
    const updated = await updateNetwork(n.id, changes);
    if (!updated) throw notFound("Network", n.id);
    return c.json({ network: networkView(updated, auth) });
  });

  app.delete("/v2.0/networks/:id", async (c) => {
    const auth = c.get("netAuth");
    const n = await visibleNetwork(auth, c.req.param("id"));
    if (!memberOf(auth, n.project_id)) refuse(auth, n.project_id, "delete_network");
    // Neutron deletes the network's DHCP ports itself; any other port keeps it in use
    for (const p of await portsOn(n.id)) if (p.device_owner === "network:dhcp") await deletePort(p.id);
    if (!(await deleteNetwork(n.id))) throw notFound("Network", n.id);
    return c.body(null, 204);
  });
}

function hints(body: Body): string[] {
  const v = body.availability_zone_hints;
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((h) => typeof h !== "string"))
    throw invalidAttr("availability_zone_hints", `'${JSON.stringify(v)}' is not a list of strings`);
  return v as string[];
}

// ── Subnets ───────────────────────────────────────────────────────────────────────────────────

const SUBNET_CREATE = [
  "network_id",
  "cidr",
  "ip_version",
  "gateway_ip",
  "allocation_pools",
  "dns_nameservers",
  "host_routes",
  "enable_dhcp",
  "name",
  "description",
  "project_id",
  "tenant_id",
];
const SUBNET_UPDATE = ["name", "description", "dns_nameservers", "host_routes", "gateway_ip", "enable_dhcp"];

/** An address attribute of the subnet's version (db_base_plugin_v2 _validate_ip_version's text). */
function addressOfVersion(value: unknown, attr: string, version: 4 | 6): string {
  const a = typeof value === "string" ? parseAddress(value) : undefined;
  if (!a) throw invalidAttr(attr, `'${String(value)}' is not a valid IP address`);
  if (a.version !== version)
    throw invalidInput(`${attr} '${value}' does not match the ip_version '${version}'`);
  return normalizeAddress(value as string)!;
}

function nameservers(body: Body, version: 4 | 6): string[] | undefined {
  const v = body.dns_nameservers;
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw invalidAttr("dns_nameservers", `'${JSON.stringify(v)}' is not a list`);
  const list = v.map((a) => addressOfVersion(a, "dns_nameserver", version));
  const dup = list.find((a, i) => list.indexOf(a) !== i);
  if (dup) throw invalidAttr("dns_nameservers", `Duplicate nameserver '${dup}'`);
  return list;
}

function hostRoutes(body: Body, version: 4 | 6): { destination: string; nexthop: string }[] | undefined {
  const v = body.host_routes;
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw invalidAttr("host_routes", `'${JSON.stringify(v)}' is not a list`);
  return v.map((r) => {
    if (!r || typeof r !== "object" || typeof r.destination !== "string" || typeof r.nexthop !== "string")
      throw invalidAttr("host_routes", `Invalid data format for hostroute: '${JSON.stringify(r)}'`);
    const dest = routeDestination(r.destination);
    if (dest.version !== version)
      throw invalidInput(`route destination '${r.destination}' does not match the ip_version '${version}'`);
    return { destination: dest.text, nexthop: addressOfVersion(r.nexthop, "route nexthop", version) };
  });
}

/** A host route's destination: a subnet, or a default route (a /0, which no subnet may be). */
function routeDestination(text: string): { version: 4 | 6; text: string } {
  const [address, len] = text.split("/");
  const a = len === "0" ? parseAddress(address ?? "") : undefined;
  if (a) return { version: a.version, text: a.version === 4 ? "0.0.0.0/0" : "::/0" };
  return parseCidr(text);
}

/** A gateway_ip given: an address of the subnet's version, not its network or broadcast address. */
function gatewayOf(value: unknown, cidrText: string, version: 4 | 6): string | null {
  if (value === null) return null;
  const gw = addressOfVersion(value, "gateway_ip", version);
  const cidr = parseCidr(cidrText);
  const a = parseAddress(gw)!;
  // Neutron lets a gateway lie outside the subnet (an on-link route); inside, it must be a host's
  if (
    a.value >= cidr.first &&
    a.value <= cidr.last &&
    !isValidForSubnet(cidr, a) &&
    !(version === 6 && a.value === cidr.first)
  )
    throw invalidInput(`Gateway is not valid on subnet`);
  return gw;
}

async function createOneSubnet(auth: AuthContext, body: Body, deps: AuthDeps): Promise<Made> {
  if (typeof body.network_id !== "string")
    throw badRequest("Failed to parse request. Required attribute 'network_id' not specified");
  if (body.cidr === undefined)
    throw badRequest("Failed to parse request. Required attribute 'cidr' not specified");
  if (body.ip_version === undefined)
    throw badRequest("Failed to parse request. Required attribute 'ip_version' not specified");
  const version = Number(body.ip_version);
  if (version !== 4 && version !== 6)
    throw invalidAttr("ip_version", `${JSON.stringify(body.ip_version)} is not in [4, 6]`);
  const project = projectOf(auth, body);
  const network = await visibleNetwork(auth, body.network_id);
  // create_subnet: ADMIN_OR_NET_OWNER_MEMBER
  if (!memberOf(auth, network.project_id)) {
    if (!network.shared) throw pretendNotFound();
    throw policyRefused("create_subnet");
  }
  const cidr = parseCidr(body.cidr as string);
  if (cidr.version !== version)
    throw invalidInput(`cidr '${body.cidr}' does not match the ip_version '${version}'`);
  const gateway_ip =
    body.gateway_ip === undefined ? defaultGateway(cidr) : gatewayOf(body.gateway_ip, cidr.text, version);
  let allocation_pools = defaultPools(cidr, gateway_ip);
  if (body.allocation_pools !== undefined) {
    if (!Array.isArray(body.allocation_pools))
      throw invalidAttr("allocation_pools", `'${JSON.stringify(body.allocation_pools)}' is not a list`);
    checkPools(body.allocation_pools, cidr, gateway_ip);
    allocation_pools = body.allocation_pools.map((p: { start: string; end: string }) => ({
      start: normalizeAddress(p.start)!,
      end: normalizeAddress(p.end)!,
    }));
  }
  const now = stamp(deps.now());
  const subnet: Subnet = {
    id: randomUUID(),
    network_id: network.id,
    project_id: project,
    ip_version: version,
    cidr: cidr.text,
    gateway_ip,
    allocation_pools,
    name: stringAttr(body, "name") ?? "",
    description: stringAttr(body, "description") ?? "",
    dns_nameservers: nameservers(body, version) ?? [],
    host_routes: hostRoutes(body, version) ?? [],
    enable_dhcp: boolAttr(body, "enable_dhcp") ?? true,
    revision_number: 0,
    created_at: now,
    updated_at: now,
  };
  await createSubnet(subnet);
  return { view: subnetView(subnet), undo: () => deleteSubnet(subnet) };
}

function subnetRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  app.get("/v2.0/subnets", async (c) => {
    const auth = c.get("netAuth");
    const networks = new Map((await listNetworks()).map((n) => [n.id, n]));
    const visible = (await listSubnets())
      .filter((s) => {
        const n = networks.get(s.network_id);
        return readerOf(auth, s.project_id) || (n !== undefined && seesNetwork(auth, n));
      })
      .sort((a, b) => a.id.localeCompare(b.id));
    return c.json({ subnets: filtered(c, visible, subnetView, SUBNET_ATTRIBUTES) });
  });

  app.get("/v2.0/subnets/:id", async (c) => {
    const { subnet } = await visibleSubnet(c.get("netAuth"), c.req.param("id"));
    return c.json({ subnet: selectFields(subnetView(subnet), c.req.queries("fields") ?? []) });
  });

  app.post("/v2.0/subnets", (c) =>
    createResources(c, "subnet", SUBNET_CREATE, (body) => createOneSubnet(c.get("netAuth"), body, deps)),
  );

  app.put("/v2.0/subnets/:id", async (c) => {
    const auth = c.get("netAuth");
    const { subnet, network } = await visibleSubnet(auth, c.req.param("id"));
    const owner = network?.project_id ?? subnet.project_id;
    if (!memberOf(auth, owner)) refuse(auth, subnet.project_id, "update_subnet");
    const body = await resourceBody(c, "subnet", SUBNET_UPDATE);
    const changes: Body = { updated_at: stamp(deps.now()) };
    for (const k of ["name", "description"] as const) {
      const v = stringAttr(body, k);
      if (v !== undefined) changes[k] = v;
    }
    const dhcp = boolAttr(body, "enable_dhcp");
    if (dhcp !== undefined) changes.enable_dhcp = dhcp;
    const dns = nameservers(body, subnet.ip_version);
    if (dns) changes.dns_nameservers = dns;
    const routes = hostRoutes(body, subnet.ip_version);
    if (routes) changes.host_routes = routes;
    if (body.gateway_ip !== undefined) {
      const gw = gatewayOf(body.gateway_ip, subnet.cidr, subnet.ip_version);
      // the pools stay as they are: a gateway inside one conflicts (Neutron's 409)
      checkPools(subnet.allocation_pools, parseCidr(subnet.cidr), gw);
      changes.gateway_ip = gw;
    }
    const updated = await updateSubnet(subnet.id, changes);
    if (!updated) throw notFound("Subnet", subnet.id);
    return c.json({ subnet: subnetView(updated) });
  });

  app.delete("/v2.0/subnets/:id", async (c) => {
    const auth = c.get("netAuth");
    const { subnet, network } = await visibleSubnet(auth, c.req.param("id"));
    if (!memberOf(auth, network?.project_id ?? subnet.project_id))
      refuse(auth, subnet.project_id, "delete_subnet");
    if (!(await deleteSubnet(subnet))) throw notFound("Subnet", subnet.id);
    return c.body(null, 204);
  });
}

// ── Ports ─────────────────────────────────────────────────────────────────────────────────────

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
];
const PORT_UPDATE = [
  "name",
  "description",
  "admin_state_up",
  "fixed_ips",
  "device_id",
  "device_owner",
  "binding:host_id",
];

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

function fixedIpsOf(body: Body): FixedIpRequest[] | undefined {
  const v = body.fixed_ips;
  if (v === undefined) return undefined;
  if (!Array.isArray(v))
    throw invalidAttr("fixed_ips", `Invalid data format for fixed IP: '${JSON.stringify(v)}'`);
  return v.map((f) => {
    if (!f || typeof f !== "object" || Object.keys(f).some((k) => k !== "subnet_id" && k !== "ip_address"))
      throw invalidAttr("fixed_ips", `Invalid data format for fixed IP: '${JSON.stringify(f)}'`);
    if (f.ip_address !== undefined && !parseAddress(f.ip_address))
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
  return { attributes, allowed };
}

async function createOnePort(auth: AuthContext, body: Body, deps: AuthDeps): Promise<Made> {
  if (typeof body.network_id !== "string")
    throw badRequest("Failed to parse request. Required attribute 'network_id' not specified");
  const project = projectOf(auth, body);
  const network = await visibleNetwork(auth, body.network_id);
  // base.py _validate_network_tenant_ownership: another project's unshared network is hidden
  if (!auth.isAdmin && !network.shared && network.project_id !== project) throw pretendNotFound();
  if (!memberOf(auth, auth.project_id)) throw policyRefused("create_port");
  const rules = portAttrRules(auth, body, network, false);
  if (!rules.allowed) throw policyRefused("create_port", rules.attributes);
  const mac = body.mac_address === undefined ? generatedMac() : String(body.mac_address).toLowerCase();
  if (!MAC.test(mac))
    throw invalidAttr("mac_address", `'${String(body.mac_address)}' is not a valid MAC address`);
  const wanted = fixedIpsOf(body);
  const now = stamp(deps.now());
  const host = stringAttr(body, "binding:host_id") ?? "";
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
  return { view: portView((await getPort(port.id))!, auth), undo: () => deletePort(port.id) };
}

function portRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  app.get("/v2.0/ports", async (c) => {
    const auth = c.get("netAuth");
    const ownedNetworks = auth.isAdmin
      ? undefined
      : new Set((await listNetworks()).filter((n) => readerOf(auth, n.project_id)).map((n) => n.id));
    const now = deps.now();
    const visible = (await listPorts())
      .filter((p) => portShown(p, now))
      .filter((p) => !ownedNetworks || readerOf(auth, p.project_id) || ownedNetworks.has(p.network_id))
      .sort((a, b) => a.id.localeCompare(b.id));
    return c.json({ ports: filtered(c, visible, portView, PORT_ATTRIBUTES) });
  });

  app.get("/v2.0/ports/:id", async (c) => {
    const auth = c.get("netAuth");
    const { port } = await visiblePort(auth, c.req.param("id"), deps.now());
    return c.json({ port: selectFields(portView(port, auth), c.req.queries("fields") ?? []) });
  });

  app.post("/v2.0/ports", (c) =>
    createResources(c, "port", PORT_CREATE, (body) => createOnePort(c.get("netAuth"), body, deps)),
  );

  app.put("/v2.0/ports/:id", async (c) => {
    const auth = c.get("netAuth");
    const { port, network } = await visiblePort(auth, c.req.param("id"), deps.now());
    if (!network) throw notFound("Network", port.network_id);
    const body = await resourceBody(c, "port", PORT_UPDATE);
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
    if (wanted) await changeAddresses(port, network, wanted);
    const updated = await updatePort(port.id, changes);
    if (!updated) throw notFound("Port", port.id);
    // Neutron's network-changed event to Nova: the server's addresses follow its port
    await serverPortChanged(port);
    return c.json({ port: portView(updated, auth) });
  });

  app.delete("/v2.0/ports/:id", async (c) => {
    const auth = c.get("netAuth");
    const { port, network } = await visiblePort(auth, c.req.param("id"), deps.now());
    if (!memberOf(auth, port.project_id) && !(network && memberOf(auth, network.project_id)))
      refuse(auth, port.project_id, "delete_port");
    if (!(await deletePort(port.id))) throw notFound("Port", port.id);
    // network-vif-deleted: the server no longer shows it
    await serverPortChanged(port);
    return c.body(null, 204);
  });
}

/** A port of a server (a build's, or one bound to it) changed: the server's view follows. */
async function serverPortChanged(port: Port): Promise<void> {
  if (typeof port.device_id === "string" && String(port.device_owner ?? "").startsWith("compute:"))
    await refreshNetworkInfo(port.device_id);
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

// ── The app ───────────────────────────────────────────────────────────────────────────────────

function neutronError(status: number, type: string, message: string, c: C) {
  return c.json({ NeutronError: { type, message, detail: "" } }, status as 400);
}

export function networkApp(deps: AuthDeps): Hono<NetEnv> {
  const app = new Hono<NetEnv>({ strict: false });
  app.onError((e, c) => {
    if (e instanceof NetworkingError) return neutronError(e.status, e.type, e.message, c);
    if (e instanceof NeutronForbidden) return neutronError(403, e.type, e.message, c);
    throw e;
  });

  app.get("/", (c) => c.json(versionsDocument(c.get("baseUrl"))));

  // Keystone's middleware's part, for /v2.0 and everything under it
  const requireToken: MiddlewareHandler<NetEnv> = async (c, next) => {
    const auth = await authenticate(Object.fromEntries(c.req.raw.headers), deps);
    if (!auth) return c.json(UNAUTHORIZED_BODY, 401);
    c.set("netAuth", auth);
    await next();
  };
  app.use("/v2.0", requireToken);
  app.use("/v2.0/*", requireToken);
  app.get("/v2.0", (c) => c.json(resourcesDocument(c.get("baseUrl"))));
  app.get("/v2.0/extensions", (c) => c.json(extensionsDocument()));
  app.get("/v2.0/extensions/:alias", (c) => {
    const alias = c.req.param("alias");
    const extension = extensionsDocument().extensions.find((e) => e.alias === alias);
    // neutron/api/extensions.py ExtensionController.show
    if (!extension)
      throw new NetworkingError(404, "HTTPNotFound", `Extension with alias ${alias} does not exist`);
    return c.json({ extension });
  });

  networkRoutes(app, deps);
  subnetRoutes(app, deps);
  portRoutes(app, deps);
  quotaRoutes(app);

  // routers, floating IPs, security groups and anything else: Neutron's answer to a resource it
  // does not serve (no such extension loaded)
  app.all("*", () => {
    throw new NetworkingError(404, "HTTPNotFound", "The resource could not be found.");
  });
  return app;
}
