// Neutron's subnets over lib/network/store/: their addresses, pools, gateway, DNS servers and
// host routes checked as neutron-lib and db_base_plugin_v2 check them, subnet.py's policies.
import { randomUUID } from "node:crypto";
import type { Hono } from "hono";
import { z } from "zod";
import {
  checkPools,
  defaultGateway,
  defaultPools,
  invalidInput,
  isValidForSubnet,
  normalizeAddress,
  parseAddress,
  parseCidr,
} from "../../network/cidr.js";
import { createSubnet, deleteSubnet, updateSubnet } from "../../network/store/subnets.js";
import {
  getNetwork,
  getSubnet,
  listNetworks,
  listSubnets,
  type Network,
  type Subnet,
} from "../../network/store/table.js";
import type { AuthContext, AuthDeps } from "../auth.js";
import { visibleNetwork } from "./networks.js";
import { memberOf, policyRefused, pretendNotFound, readerOf, seesNetwork } from "./policy.js";
import {
  type Attr,
  attr,
  type Body,
  boolAttr,
  invalidAttr,
  json,
  LIST,
  type Made,
  type NetEnv,
  notFound,
  projectOf,
  refuse,
  required,
  resourceRoutes,
  stamp,
  stringAttr,
  updateBody,
} from "./request.js";
import { SUBNET_ATTRIBUTES, subnetView } from "./views.js";

/** get_subnet: an admin, the owner's readers, anyone on a shared network. */
export async function visibleSubnet(
  auth: AuthContext,
  id: string,
): Promise<{ subnet: Subnet; network?: Network }> {
  const subnet = await getSubnet(id);
  if (!subnet) throw notFound("Subnet", id);
  if (readerOf(auth, subnet.project_id)) return { subnet, network: await getNetwork(subnet.network_id) };
  const network = await getNetwork(subnet.network_id);
  if (!network || !seesNetwork(auth, network)) throw notFound("Subnet", id);
  return { subnet, network };
}

const IP_VERSION: Attr<4 | 6> = {
  schema: z.coerce.number().pipe(z.union([z.literal(4), z.literal(6)])),
  reason: (v) => `${json(v)} is not in [4, 6]`,
};
const HOST_ROUTES: Attr<{ destination: string; nexthop: string }[]> = {
  schema: z.array(z.object({ destination: z.string(), nexthop: z.string() })),
  reason: (v, issue) =>
    issue.path.length
      ? `Invalid data format for hostroute: '${json((v as unknown[])[issue.path[0] as number])}'`
      : `'${json(v)}' is not a list`,
};

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
  const v = attr(body, "dns_nameservers", LIST);
  if (v === undefined) return undefined;
  const list = v.map((a) => addressOfVersion(a, "dns_nameserver", version));
  const dup = list.find((a, i) => list.indexOf(a) !== i);
  if (dup) throw invalidAttr("dns_nameservers", `Duplicate nameserver '${dup}'`);
  return list;
}

function hostRoutes(body: Body, version: 4 | 6): { destination: string; nexthop: string }[] | undefined {
  const v = attr(body, "host_routes", HOST_ROUTES);
  return v?.map((r) => {
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
  required(body, "network_id", typeof body.network_id === "string");
  required(body, "cidr");
  required(body, "ip_version");
  const version = attr(body, "ip_version", IP_VERSION)!;
  const project = projectOf(auth, body);
  const network = await visibleNetwork(auth, body.network_id as string);
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
  // each pool's shape is checkPools' to refuse, with its own texts
  const pools = attr(body, "allocation_pools", LIST) as { start: string; end: string }[] | undefined;
  if (pools !== undefined) {
    checkPools(pools, cidr, gateway_ip);
    allocation_pools = pools.map((p: { start: string; end: string }) => ({
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

export function subnetRoutes(app: Hono<NetEnv>, deps: AuthDeps): void {
  resourceRoutes(app, {
    name: "subnet",
    notFound: (id) => notFound("Subnet", id),
    attributes: SUBNET_ATTRIBUTES,
    createAttributes: SUBNET_CREATE,
    view: subnetView,
    visible: async (auth) => {
      const networks = new Map((await listNetworks()).map((n) => [n.id, n]));
      return (await listSubnets()).filter((s) => {
        const n = networks.get(s.network_id);
        return readerOf(auth, s.project_id) || (n !== undefined && seesNetwork(auth, n));
      });
    },
    find: async (auth, id) => (await visibleSubnet(auth, id)).subnet,
    create: (auth, body) => createOneSubnet(auth, body, deps),
  });

  app.put("/v2.0/subnets/:id", async (c) => {
    const auth = c.get("auth");
    const { subnet, network } = await visibleSubnet(auth, c.req.param("id"));
    const owner = network?.project_id ?? subnet.project_id;
    if (!memberOf(auth, owner)) refuse(auth, subnet.project_id, "update_subnet");
    const body = await updateBody(c, "subnet", SUBNET_UPDATE);
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
    const auth = c.get("auth");
    const { subnet, network } = await visibleSubnet(auth, c.req.param("id"));
    if (!memberOf(auth, network?.project_id ?? subnet.project_id))
      refuse(auth, subnet.project_id, "delete_subnet");
    if (!(await deleteSubnet(subnet))) throw notFound("Subnet", subnet.id);
    return c.body(null, 204);
  });
}
