// The Networking v2 front at /networking over the real store (the local emulators through the AWS
// SDK), through the API's HTTP entry: Neutron's shapes, errors and default policies for networks,
// subnets and ports, an address handed to one port only, and 404 for what is not served.

import { randomUUID } from "node:crypto";
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { handleHttp } from "../../lib/api/router.js";
import { dynamo } from "../../lib/aws/clients.js";
import { seedIdentity } from "../../lib/identity/seed.js";
import { createPort, indexPortDevices, portCreated } from "../../lib/network/store/ports.js";
import { networkingTable, portsOfDevice } from "../../lib/network/store/table.js";
import { API_FUNCTION_TIMEOUT_SECONDS } from "../../lib/resources.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const BASE = "https://cloud.example.org";
const deps = { ...defaultDeps, now: () => new Date("2026-03-01T12:00:00.123Z") };

// biome-ignore lint/suspicious/noExplicitAny: Neutron's bodies; the assertions check their shape
type Json = any;

async function call(method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers["x-auth-token"] = token;
  const r = await handleHttp(
    {
      method,
      path: `/networking${path}`,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      baseUrl: BASE,
    },
    deps,
  );
  const json: Json =
    r.body && r.headers["content-type"]?.startsWith("application/json") ? JSON.parse(r.body) : undefined;
  return { status: r.status, json };
}

const ADMIN = "admin-token";
const DEMO = "demo-token";
let other: string;

const neutronError = (type: string, message: string) => ({ NeutronError: { type, message, detail: "" } });

/** A call to /identity (the admin's, unless it is a token request). */
async function identity(method: string, path: string, body?: unknown) {
  const r = await handleHttp(
    {
      method,
      path: `/identity/v3${path}`,
      headers: {
        "content-type": "application/json",
        ...(path === "/auth/tokens" ? {} : { "x-auth-token": ADMIN }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      baseUrl: BASE,
    },
    deps,
  );
  return { ...r, json: r.body ? JSON.parse(r.body) : undefined };
}

beforeAll(async () => {
  await seedIdentity({ adminPassword: "admin-secret", demo: true });
  // a member of another project: a token from /identity for a user the admin creates
  const project = await identity("POST", "/projects", { project: { name: "other", domain_id: "default" } });
  const user = await identity("POST", "/users", {
    user: { name: "carol", password: "carol-secret", domain_id: "default" },
  });
  const role = (await identity("GET", "/roles?name=member")).json.roles[0];
  await identity("PUT", `/projects/${project.json.project.id}/users/${user.json.user.id}/roles/${role.id}`);
  const token = await identity("POST", "/auth/tokens", {
    auth: {
      identity: {
        methods: ["password"],
        password: { user: { name: "carol", domain: { id: "default" }, password: "carol-secret" } },
      },
      scope: { project: { id: project.json.project.id } },
    },
  });
  expect(token.status).toBe(201);
  other = token.headers["x-subject-token"]!;
}, 60_000);

describe("the Networking v2 front", () => {
  let publicNet: Json;
  let subnet: Json;

  it("answers its versions without a token and Keystone's 401 without one on /v2.0", async () => {
    const v = await call("GET", "/");
    expect(v.status).toBe(200);
    expect(v.json.versions[0]).toMatchObject({ id: "v2.0", status: "CURRENT" });
    expect((await call("GET", "/v2.0/networks")).status).toBe(401);
    const r = await call("GET", "/v2.0", DEMO);
    expect(r.json.resources.map((x: Json) => x.collection)).toEqual(["networks", "subnets", "ports"]);
    const ext = await call("GET", "/v2.0/extensions", DEMO);
    expect(ext.json.extensions.map((e: Json) => e.alias)).toContain("provider");
    const one = await call("GET", "/v2.0/extensions/provider", DEMO);
    expect(one.json.extension).toEqual(ext.json.extensions.find((e: Json) => e.alias === "provider"));
    expect((await call("GET", "/v2.0/extensions/router", DEMO)).json).toEqual(
      neutronError("HTTPNotFound", "Extension with alias router does not exist"),
    );
  });

  it("an admin creates a shared flat provider network with a subnet; a member sees it without provider attributes", async () => {
    const n = await call("POST", "/v2.0/networks", ADMIN, {
      network: {
        name: "public",
        shared: true,
        "provider:network_type": "flat",
        "provider:physical_network": "physnet1",
      },
    });
    expect(n.status).toBe(201);
    publicNet = n.json.network;
    expect(publicNet).toMatchObject({
      name: "public",
      status: "ACTIVE",
      shared: true,
      "router:external": false,
      admin_state_up: true,
      mtu: 1500,
      project_id: "admin",
      tenant_id: "admin",
      subnets: [],
      "provider:network_type": "flat",
      "provider:physical_network": "physnet1",
      "provider:segmentation_id": null,
      port_security_enabled: true,
      revision_number: 0,
      created_at: "2026-03-01T12:00:00Z",
    });
    const s = await call("POST", "/v2.0/subnets", ADMIN, {
      subnet: { network_id: publicNet.id, cidr: "10.20.0.0/16", ip_version: 4, name: "public-v4" },
    });
    expect(s.status).toBe(201);
    subnet = s.json.subnet;
    expect(subnet).toMatchObject({
      cidr: "10.20.0.0/16",
      gateway_ip: "10.20.0.1",
      allocation_pools: [{ start: "10.20.0.2", end: "10.20.255.254" }],
      enable_dhcp: true,
      dns_nameservers: [],
      host_routes: [],
      ip_version: 4,
    });
    const seen = await call("GET", `/v2.0/networks/${publicNet.id}`, DEMO);
    expect(seen.status).toBe(200);
    expect(seen.json.network.subnets).toEqual([subnet.id]);
    expect(seen.json.network).not.toHaveProperty("provider:network_type");
    const listed = await call("GET", "/v2.0/networks?name=public", DEMO);
    expect(listed.json.networks.map((x: Json) => x.id)).toEqual([publicNet.id]);
    // filters on booleans as Neutron's clients send them, and on attributes a member is not shown
    const external = await call("GET", "/v2.0/networks?router:external=False&shared=True", DEMO);
    expect(external.json.networks.map((x: Json) => x.id)).toEqual([publicNet.id]);
    const flat = await call("GET", "/v2.0/networks?provider:network_type=flat&fields=id", DEMO);
    expect(flat.json.networks).toEqual([{ id: publicNet.id }]);
    // a member may not add a subnet to the admin's shared network
    const refused = await call("POST", "/v2.0/subnets", DEMO, {
      subnet: { network_id: publicNet.id, cidr: "10.21.0.0/24", ip_version: 4 },
    });
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual(
      neutronError("PolicyNotAuthorized", "rule:create_subnet is disallowed by policy"),
    );
  });

  it("refuses a member's provider network with Neutron's policy text", async () => {
    const r = await call("POST", "/v2.0/networks", DEMO, {
      network: { name: "mine", "provider:network_type": "flat", "provider:physical_network": "physnet2" },
    });
    expect(r.status).toBe(403);
    expect(r.json).toEqual(
      neutronError(
        "PolicyNotAuthorized",
        "((rule:create_network and rule:create_network:provider:network_type) and rule:create_network:provider:physical_network) is disallowed by policy",
      ),
    );
    const shared = await call("POST", "/v2.0/networks", DEMO, { network: { name: "mine", shared: true } });
    expect(shared.json.NeutronError.message).toBe(
      "(rule:create_network and rule:create_network:shared) is disallowed by policy",
    );
  });

  it("a vlan network needs its segmentation id, within 1-4094", async () => {
    const ok = await call("POST", "/v2.0/networks", ADMIN, {
      network: {
        name: "vlan100",
        "provider:network_type": "vlan",
        "provider:physical_network": "physnet1",
        "provider:segmentation_id": 100,
      },
    });
    expect(ok.status).toBe(201);
    expect(ok.json.network).toMatchObject({
      "provider:network_type": "vlan",
      "provider:segmentation_id": 100,
    });
    const none = await call("POST", "/v2.0/networks", ADMIN, {
      network: { name: "v", "provider:network_type": "vlan", "provider:physical_network": "physnet1" },
    });
    expect(none.status).toBe(400);
    expect(none.json.NeutronError.type).toBe("InvalidInput");
    const out = await call("POST", "/v2.0/networks", ADMIN, {
      network: {
        name: "v",
        "provider:network_type": "vlan",
        "provider:physical_network": "physnet1",
        "provider:segmentation_id": 4095,
      },
    });
    expect(out.json).toEqual(
      neutronError(
        "InvalidInput",
        "Invalid input for operation: segmentation_id out of range (1 through 4094).",
      ),
    );
    // one network per VLAN on a physical network, until it is deleted
    const vlan100 = {
      network: {
        name: "again",
        "provider:network_type": "vlan",
        "provider:physical_network": "physnet1",
        "provider:segmentation_id": 100,
      },
    };
    expect((await call("POST", "/v2.0/networks", ADMIN, vlan100)).json).toEqual(
      neutronError(
        "VlanIdInUse",
        "Unable to create the network. The VLAN 100 on physical network physnet1 is in use.",
      ),
    );
    const elsewhere = await call("POST", "/v2.0/networks", ADMIN, {
      network: { ...vlan100.network, "provider:physical_network": "physnet2" },
    });
    expect(elsewhere.status).toBe(201);
    expect((await call("DELETE", `/v2.0/networks/${ok.json.network.id}`, ADMIN)).status).toBe(204);
    const reused = await call("POST", "/v2.0/networks", ADMIN, vlan100);
    expect(reused.status).toBe(201);
    for (const n of [elsewhere, reused])
      expect((await call("DELETE", `/v2.0/networks/${n.json.network.id}`, ADMIN)).status).toBe(204);
  });

  it("a project network is its project's: invisible to another project, flat on physnet1 for the admin", async () => {
    const n = await call("POST", "/v2.0/networks", DEMO, { network: { name: "demo-net" } });
    expect(n.status).toBe(201);
    const id = n.json.network.id;
    expect(n.json.network.project_id).toBe("demo");
    expect((await call("GET", `/v2.0/networks/${id}`, other)).json).toEqual(
      neutronError("NetworkNotFound", `Network ${id} could not be found.`),
    );
    const listed = await call("GET", "/v2.0/networks", other);
    expect(listed.json.networks.map((x: Json) => x.id)).not.toContain(id);
    expect(listed.json.networks.map((x: Json) => x.id)).toContain(publicNet.id);
    const asAdmin = await call("GET", `/v2.0/networks/${id}`, ADMIN);
    expect(asAdmin.json.network).toMatchObject({
      "provider:network_type": "flat",
      "provider:physical_network": "physnet1",
    });
    // another project's port on it is hidden as Neutron hides it
    expect((await call("POST", "/v2.0/ports", other, { port: { network_id: id } })).status).toBe(404);
    const renamed = await call("PUT", `/v2.0/networks/${id}`, DEMO, { network: { name: "renamed" } });
    expect(renamed.json.network).toMatchObject({ name: "renamed", revision_number: 1 });
    expect((await call("DELETE", `/v2.0/networks/${id}`, other)).status).toBe(404);
    expect((await call("DELETE", `/v2.0/networks/${id}`, DEMO)).status).toBe(204);
  });

  it("a port gets an address; the same fixed IP asked again is Neutron's 409; delete frees it", async () => {
    const p = await call("POST", "/v2.0/ports", DEMO, {
      port: { network_id: publicNet.id, name: "p1", device_id: "server-1", device_owner: "compute:nova" },
    });
    expect(p.status).toBe(201);
    const port = p.json.port;
    expect(port).toMatchObject({ status: "DOWN", project_id: "demo", device_id: "server-1" });
    expect(port.mac_address).toMatch(/^fa:16:3e(:[0-9a-f]{2}){3}$/);
    expect(port.fixed_ips).toHaveLength(1);
    expect(port.fixed_ips[0].subnet_id).toBe(subnet.id);
    expect(port).not.toHaveProperty("binding:host_id");
    const ip = port.fixed_ips[0].ip_address;

    // a member asking a fixed IP on a network it does not own: Neutron's policy refuses it
    const asked = await call("POST", "/v2.0/ports", DEMO, {
      port: { network_id: publicNet.id, device_id: "server-2", fixed_ips: [{ ip_address: ip }] },
    });
    expect(asked.status).toBe(403);
    expect(asked.json.NeutronError.message).toBe(
      "((rule:create_port and (rule:create_port:fixed_ips and (rule:create_port:fixed_ips:ip_address))) and rule:create_port:device_id) is disallowed by policy",
    );
    const taken = await call("POST", "/v2.0/ports", ADMIN, {
      port: { network_id: publicNet.id, fixed_ips: [{ subnet_id: subnet.id, ip_address: ip }] },
    });
    expect(taken.status).toBe(409);
    expect(taken.json).toEqual(
      neutronError("IpAddressAlreadyAllocated", `IP address ${ip} already allocated in subnet ${subnet.id}`),
    );

    const byIp = await call("GET", `/v2.0/ports?fixed_ips=ip_address%3D${ip}`, DEMO);
    expect(byIp.json.ports.map((x: Json) => x.id)).toEqual([port.id]);
    const byDevice = await call("GET", "/v2.0/ports?device_id=server-1", DEMO);
    expect(byDevice.json.ports.map((x: Json) => x.id)).toEqual([port.id]);
    // read through the by-device index, which follows the port's device_id
    expect(await portsOfDevice("server-1")).toMatchObject([{ id: port.id, device_id: "server-1" }]);
    // a port an older release wrote has no key until the seed gives it one
    await dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: { pk: `port#${port.id}` },
        UpdateExpression: "REMOVE device",
      }),
    );
    expect(await portsOfDevice("server-1")).toEqual([]);
    expect(await indexPortDevices()).toBe(1);
    expect(await indexPortDevices()).toBe(0);
    expect(await portsOfDevice("server-1")).toMatchObject([{ id: port.id }]);
    const redevised = await call("PUT", `/v2.0/ports/${port.id}`, DEMO, { port: { device_id: "server-9" } });
    expect(redevised.json.port.device_id).toBe("server-9");
    expect(redevised.json.port).not.toHaveProperty("device");
    expect(await portsOfDevice("server-1")).toEqual([]);
    const devices = async (q: string) =>
      (await call("GET", `/v2.0/ports?${q}`, DEMO)).json.ports.map((x: Json) => x.id);
    expect(await devices("device_id=server-1")).toEqual([]);
    expect(await devices("device_id=server-1&device_id=server-9")).toEqual([port.id]);
    // another project's member sees none of the demo project's ports by device either
    expect((await call("GET", "/v2.0/ports?device_id=server-9", other)).json.ports).toEqual([]);
    // a free port (device_id "") is found by its empty device_id, which no index key holds
    const freed = await call("PUT", `/v2.0/ports/${port.id}`, DEMO, { port: { device_id: "" } });
    expect(freed.status).toBe(200);
    expect(await portsOfDevice("server-9")).toEqual([]);
    expect(await devices("device_id=")).toContain(port.id);
    // (a compute port with no device tells no server of its change)
    const rebound = await call("PUT", `/v2.0/ports/${port.id}`, DEMO, { port: { device_id: "server-1" } });
    expect(rebound.status).toBe(200);
    expect(await devices("device_id=server-1&fields=id")).toEqual([port.id]);

    // bound by an admin: ACTIVE on a bridge
    const bound = await call("PUT", `/v2.0/ports/${port.id}`, ADMIN, {
      port: { "binding:host_id": "host-1" },
    });
    expect(bound.json.port).toMatchObject({
      status: "ACTIVE",
      "binding:vif_type": "bridge",
      "binding:host_id": "host-1",
    });
    const memberBinds = await call("PUT", `/v2.0/ports/${port.id}`, DEMO, {
      port: { "binding:host_id": "h" },
    });
    expect(memberBinds.status).toBe(403);

    // the network is in use while the port is on it
    const inUse = await call("DELETE", `/v2.0/networks/${publicNet.id}`, ADMIN);
    expect(inUse.status).toBe(409);
    expect(inUse.json).toEqual(
      neutronError(
        "NetworkInUse",
        `Unable to complete operation on network ${publicNet.id}. There are one or more ports still in use on the network.`,
      ),
    );
    const subnetInUse = await call("DELETE", `/v2.0/subnets/${subnet.id}`, ADMIN);
    expect(subnetInUse.status).toBe(409);
    expect(subnetInUse.json.NeutronError.type).toBe("SubnetInUse");

    expect((await call("DELETE", `/v2.0/ports/${port.id}`, DEMO)).status).toBe(204);
    expect((await call("GET", `/v2.0/ports/${port.id}`, DEMO)).json).toEqual(
      neutronError("PortNotFound", `Port ${port.id} could not be found.`),
    );
    const reused = await call("POST", "/v2.0/ports", ADMIN, {
      port: { network_id: publicNet.id, fixed_ips: [{ ip_address: ip }] },
    });
    expect(reused.status).toBe(201);
    expect(reused.json.port.fixed_ips).toEqual([{ subnet_id: subnet.id, ip_address: ip }]);

    // a changed fixed IP: the new one taken, the old one freed
    const next = ip.replace(/\.(\d+)$/, (_: string, d: string) => `.${Number(d) + 100}`);
    const moved = await call("PUT", `/v2.0/ports/${reused.json.port.id}`, ADMIN, {
      port: { fixed_ips: [{ subnet_id: subnet.id, ip_address: next }] },
    });
    expect(moved.status).toBe(200);
    expect(moved.json.port.fixed_ips).toEqual([{ subnet_id: subnet.id, ip_address: next }]);
    expect((await call("GET", `/v2.0/ports?fixed_ips=ip_address%3D${ip}`, ADMIN)).json.ports).toEqual([]);
    expect((await call("DELETE", `/v2.0/ports/${reused.json.port.id}`, ADMIN)).status).toBe(204);
  });

  it("a port being created is seen by no one until it holds its addresses; one its create left half-made shows after the create's deadline", async () => {
    // what a concurrent reader meets between the port's item and its addresses (ci63 listed it)
    const id = randomUUID();
    const until = deps.now().getTime() + API_FUNCTION_TIMEOUT_SECONDS * 1000;
    await createPort({
      id,
      network_id: publicNet.id,
      project_id: "demo",
      name: "half-made",
      mac_address: "fa:16:3e:00:00:01",
      creating_until: until,
    });
    const listed = async (at = deps) =>
      (
        await handleHttp(
          {
            method: "GET",
            path: "/networking/v2.0/ports",
            headers: { "x-auth-token": DEMO },
            body: undefined,
            baseUrl: BASE,
          },
          at,
        )
      ).body;
    expect(await listed()).not.toContain(id);
    expect((await call("GET", `/v2.0/ports/${id}`, DEMO)).json).toEqual(
      neutronError("PortNotFound", `Port ${id} could not be found.`),
    );
    // a create that died there cannot be running past its deadline: its owner sees the port, and deletes it
    const later = { ...deps, now: () => new Date(until) };
    expect(await listed(later)).toContain(id);
    // made: seen at once
    await portCreated(id);
    expect(await listed()).toContain(id);
    expect((await call("GET", `/v2.0/ports/${id}`, DEMO)).json.port).not.toHaveProperty("creating_until");
    expect((await call("DELETE", `/v2.0/ports/${id}`, DEMO)).status).toBe(204);
  });

  it("filters subnets, and refuses an overlapping or mismatched one", async () => {
    const v6 = await call("POST", "/v2.0/subnets", ADMIN, {
      subnet: { network_id: publicNet.id, cidr: "fd00:20::/64", ip_version: 6, name: "public-v6" },
    });
    expect(v6.status).toBe(201);
    expect(v6.json.subnet.gateway_ip).toBe("fd00:20::");
    const byVersion = await call("GET", `/v2.0/subnets?network_id=${publicNet.id}&ip_version=6`, DEMO);
    expect(byVersion.json.subnets.map((s: Json) => s.id)).toEqual([v6.json.subnet.id]);
    const byCidr = await call("GET", "/v2.0/subnets?cidr=10.20.0.0/16", DEMO);
    expect(byCidr.json.subnets.map((s: Json) => s.id)).toEqual([subnet.id]);
    const byName = await call("GET", "/v2.0/subnets?name=public-v4&fields=id&fields=name", DEMO);
    expect(byName.json.subnets).toEqual([{ id: subnet.id, name: "public-v4" }]);
    const overlap = await call("POST", "/v2.0/subnets", ADMIN, {
      subnet: { network_id: publicNet.id, cidr: "10.20.5.0/24", ip_version: 4 },
    });
    expect(overlap.status).toBe(400);
    expect(overlap.json.NeutronError.type).toBe("InvalidInput");
    const mismatch = await call("POST", "/v2.0/subnets", ADMIN, {
      subnet: { network_id: publicNet.id, cidr: "10.30.0.0/24", ip_version: 6 },
    });
    expect(mismatch.json).toEqual(
      neutronError(
        "InvalidInput",
        "Invalid input for operation: cidr '10.30.0.0/24' does not match the ip_version '6'.",
      ),
    );
    const updated = await call("PUT", `/v2.0/subnets/${subnet.id}`, ADMIN, {
      subnet: {
        dns_nameservers: ["10.20.0.53"],
        host_routes: [
          { destination: "192.168.0.0/24", nexthop: "10.20.0.254" },
          { destination: "0.0.0.0/0", nexthop: "10.20.0.253" },
        ],
      },
    });
    expect(updated.json.subnet).toMatchObject({
      dns_nameservers: ["10.20.0.53"],
      host_routes: [
        { destination: "192.168.0.0/24", nexthop: "10.20.0.254" },
        { destination: "0.0.0.0/0", nexthop: "10.20.0.253" },
      ],
    });
    const gwInPool = await call("PUT", `/v2.0/subnets/${subnet.id}`, ADMIN, {
      subnet: { gateway_ip: "10.20.0.9" },
    });
    expect(gwInPool.status).toBe(409);
    expect(gwInPool.json.NeutronError.type).toBe("GatewayConflictWithAllocationPools");
    // a port with no fixed_ips gets one IPv4 and one IPv6 address, as Neutron's IPAM gives them
    const p = await call("POST", "/v2.0/ports", DEMO, { port: { network_id: publicNet.id } });
    expect(p.json.port.fixed_ips.map((f: Json) => f.subnet_id)).toEqual([subnet.id, v6.json.subnet.id]);
    expect((await call("DELETE", `/v2.0/ports/${p.json.port.id}`, DEMO)).status).toBe(204);
    expect((await call("DELETE", `/v2.0/subnets/${v6.json.subnet.id}`, ADMIN)).status).toBe(204);
  });

  it("answers bad bodies with Neutron's 400", async () => {
    const none = await call("POST", "/v2.0/networks", DEMO, { net: {} });
    expect(none.json).toEqual(neutronError("HTTPBadRequest", "Unable to find 'network' in request body"));
    const unknown = await call("POST", "/v2.0/networks", DEMO, { network: { colour: "blue" } });
    expect(unknown.json).toEqual(neutronError("HTTPBadRequest", "Unrecognized attribute(s) 'colour'"));
    const filter = await call("GET", "/v2.0/networks?colour=blue", DEMO);
    expect(filter.json).toEqual(
      neutronError("HTTPBadRequest", "['colour'] is invalid attribute for filtering"),
    );
  });

  it("creates in bulk, all or nothing: a refused item takes back those made before it", async () => {
    const nets = await call("POST", "/v2.0/networks", DEMO, {
      networks: [{ name: "bulk-1" }, { network: { name: "bulk-2" } }],
    });
    expect(nets.status).toBe(201);
    expect(nets.json.networks.map((n: Json) => n.name)).toEqual(["bulk-1", "bulk-2"]);
    const [a, b] = nets.json.networks.map((n: Json) => n.id);
    const subnets = await call("POST", "/v2.0/subnets", DEMO, {
      subnets: [
        { network_id: a, cidr: "10.60.0.0/28", ip_version: 4 },
        { network_id: b, cidr: "10.60.0.0/28", ip_version: 4 },
      ],
    });
    expect(subnets.json.subnets.map((s: Json) => s.cidr)).toEqual(["10.60.0.0/28", "10.60.0.0/28"]);
    const refused = await call("POST", "/v2.0/ports", DEMO, {
      ports: [
        { network_id: a, fixed_ips: [{ ip_address: "10.60.0.5" }] },
        { network_id: a, fixed_ips: [{ ip_address: "10.60.0.5" }] },
      ],
    });
    expect(refused.status).toBe(409);
    expect(refused.json.NeutronError.type).toBe("IpAddressAlreadyAllocated");
    expect((await call("GET", `/v2.0/ports?network_id=${a}`, DEMO)).json.ports).toEqual([]);
    const empty = await call("POST", "/v2.0/ports", DEMO, { ports: [] });
    expect(empty.json).toEqual(neutronError("HTTPBadRequest", "Resources required"));
    for (const s of subnets.json.subnets) await call("DELETE", `/v2.0/subnets/${s.id}`, DEMO);
    for (const id of [a, b]) expect((await call("DELETE", `/v2.0/networks/${id}`, DEMO)).status).toBe(204);
  });

  it("routers: none, in Neutron's shapes (an empty list with its filters, fields and paging; RouterNotFound); a router's create is not served", async () => {
    for (const q of [
      "",
      "?name=r1&admin_state_up=true",
      "?fields=id&fields=name",
      "?limit=2&router:external=x",
    ]) {
      const r = await call("GET", `/v2.0/routers${q}`, DEMO);
      if (q.includes("router:external")) {
        expect([r.status, r.json]).toEqual([
          400,
          neutronError("HTTPBadRequest", "['router:external'] is invalid attribute for filtering"),
        ]);
        continue;
      }
      expect([r.status, r.json]).toEqual([200, { routers: [] }]);
    }
    const paged = await call("GET", "/v2.0/routers?limit=2", DEMO);
    expect(paged.json.routers).toEqual([]);
    const id = randomUUID();
    expect((await call("GET", `/v2.0/routers?limit=2&marker=${id}`, DEMO)).json).toEqual(
      neutronError("RouterNotFound", `Router ${id} could not be found.`),
    );
    for (const [method, path] of [
      ["GET", `/v2.0/routers/${id}`],
      ["PUT", `/v2.0/routers/${id}`],
      ["DELETE", `/v2.0/routers/${id}`],
      ["PUT", `/v2.0/routers/${id}/add_router_interface`],
    ] as const) {
      const r = await call(method, path, DEMO, method === "PUT" ? { router: {} } : undefined);
      expect([r.status, r.json]).toEqual([
        404,
        neutronError("RouterNotFound", `Router ${id} could not be found.`),
      ]);
    }
    const create = await call("POST", "/v2.0/routers", DEMO, { router: { name: "r1" } });
    expect([create.status, create.json]).toEqual([
      404,
      neutronError("HTTPNotFound", "The resource could not be found."),
    ]);
    expect((await call("GET", "/v2.0/routers")).status).toBe(401);
  });

  it("networks carry router:external, false for every one (none is external), and filter on it", async () => {
    const all = (await call("GET", "/v2.0/networks", DEMO)).json.networks;
    expect(all.length).toBeGreaterThan(0);
    for (const n of all) expect(n["router:external"]).toBe(false);
    expect((await call("GET", "/v2.0/networks?router:external=true", DEMO)).json.networks).toEqual([]);
    expect(
      (await call("GET", "/v2.0/networks?router%3Aexternal=False", DEMO)).json.networks.map(
        (n: Json) => n.id,
      ),
    ).toEqual(all.map((n: Json) => n.id));
  });

  it("serves no floating IPs", async () => {
    for (const path of ["/v2.0/floatingips"]) {
      const r = await call("GET", path, DEMO);
      expect(r.status).toBe(404);
      expect(r.json).toEqual(neutronError("HTTPNotFound", "The resource could not be found."));
    }
  });

  it("a network's delete counts its ports by its count item, not by the lagging index", async () => {
    const n = await call("POST", "/v2.0/networks", DEMO, { network: { name: "counted" } });
    const id = n.json.network.id;
    // a port the index has not shown yet: the count its create left for the network
    await dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: { pk: `ports#${id}` },
        UpdateExpression: "ADD ports :one",
        ExpressionAttributeValues: { ":one": 1 },
      }),
    );
    expect((await call("DELETE", `/v2.0/networks/${id}`, DEMO)).json.NeutronError.type).toBe("NetworkInUse");
    await dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: { pk: `ports#${id}` },
        UpdateExpression: "ADD ports :minus",
        ExpressionAttributeValues: { ":minus": -1 },
      }),
    );
    expect((await call("DELETE", `/v2.0/networks/${id}`, DEMO)).status).toBe(204);
  });

  it("deletes the network once its ports are gone", async () => {
    expect((await call("DELETE", `/v2.0/networks/${publicNet.id}`, DEMO)).status).toBe(404);
    expect((await call("DELETE", `/v2.0/networks/${publicNet.id}`, ADMIN)).status).toBe(204);
    expect((await call("GET", `/v2.0/subnets/${subnet.id}`, ADMIN)).status).toBe(404);
  });
});
