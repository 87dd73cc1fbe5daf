// Servers on networks, on the local runtime with the seeded `public` network: Nova's `networks`
// at each microversion and its refusals, the ports the conductor makes and binds once the host is
// chosen, the addresses and os-interface in the views, a reschedule that keeps the ports, a
// build aborted when the subnet is full, and a delete that frees what the server made (and only
// unbinds a port the user gave).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { PUBLIC_NETWORK_ID } from "../../lib/network/seed.js";
import { getPort } from "../../lib/network/store/table.js";
import { accessKeyIdOf } from "../../local/iam/identities.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let demo: Client;
let admin: Client;

beforeAll(async () => {
  // host-1 fails every build: a server forced there first is rescheduled (its ports kept)
  ({ runtime, client: demo } = await startTestRuntime({
    hosts: 3,
    failHosts: ["host-1"],
    buildMs: 20,
    seedNetwork: true,
  }));
  admin = demo.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const net = (c: Client, path: string, body?: unknown) =>
  c.call(body === undefined ? "GET" : "POST", `/networking/v2.0/${path}`, body);
const message = (r: { body: Record<string, { message?: string }> }) =>
  r.body.badRequest?.message ?? r.body.conflictingRequest?.message ?? r.body.itemNotFound?.message;
const create = (c: Client, server: Record<string, unknown>, hints?: Record<string, unknown>) =>
  c.post("/v2.1/servers", {
    server: { name: "net", flavorRef: "1", imageRef: "cirros", ...server },
    ...(hints ? { "os:scheduler_hints": hints } : {}),
  });

async function active(id: string) {
  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  return (await demo.get(`/v2.1/servers/${id}`)).body.server;
}

describe("a server's networks", () => {
  it("a reschedule keeps the server's port and rebinds it to the new host", async () => {
    // host-1 fails every build and, always empty, weighs best (test/e2e/reschedule.test.ts)
    const ids = await Promise.all([1, 2, 3].map((i) => demo.createServer({ name: `re${i}` })));
    let rescheduled = 0;
    for (const id of ids) {
      const s = await active(id);
      const host = (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"];
      const ports = (await net(admin, `ports?device_id=${id}`)).body.ports;
      expect(ports).toHaveLength(1);
      expect(ports[0]["binding:host_id"]).toBe(host);
      expect(s.addresses.public[0].addr).toBe(ports[0].fixed_ips[0].ip_address);
      const rid = (await admin.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions[0]
        .request_id;
      const events = (await admin.get(`/v2.1/servers/${id}/os-instance-actions/${rid}`)).body.instanceAction
        .events as { event: string; result: string; host: string }[];
      if (events.some((e) => e.event === "compute_build_and_run_instance" && e.result === "Error"))
        rescheduled++;
    }
    expect(rescheduled).toBeGreaterThan(0);
    for (const id of ids) await demo.delete(`/v2.1/servers/${id}`);
    for (const id of ids) await admin.waitForStatus(id, ["GONE"]);
    for (const id of ids) expect((await net(admin, `ports?device_id=${id}`)).body.ports).toEqual([]);
  });

  it("a create reads its network once: the zones come from the network the request was checked with", async () => {
    startMeter();
    meterReading({ reset: true });
    const r = await create(demo, { name: "one-network-read" });
    const api = meterReading({ reset: true })[accessKeyIdOf("api")];
    stopMeter();
    expect(r.status).toBe(202);
    // the project's networks listed (the `by-kind` Query) to pick the one there is; its
    // availability_zone_hints are read from that listing, not from a GetItem of the network
    expect(api?.requests["dynamodb:Query"]).toBe(1);
    expect(api?.requests["dynamodb:GetItem"]).toBeUndefined();
    await active(r.body.server.id);
    await demo.delete(`/v2.1/servers/${r.body.server.id}`);
    await admin.waitForStatus(r.body.server.id, ["GONE"]);
  });

  it("before 2.37, no networks: the one network there is, its address in the views and os-interface", async () => {
    const id = await demo.createServer({ name: "plain" });
    const building = await demo.get(`/v2.1/servers/${id}`);
    expect(building.body.server.addresses).toEqual({});
    const s = await active(id);
    const [addr] = s.addresses.public;
    expect(addr).toMatchObject({ version: 4, "OS-EXT-IPS:type": "fixed" });
    expect(addr.addr).toMatch(/^10\.20\./);
    const ifaces = (await demo.get(`/v2.1/servers/${id}/os-interface`)).body.interfaceAttachments;
    expect(ifaces).toHaveLength(1);
    expect(ifaces[0]).toMatchObject({
      net_id: PUBLIC_NETWORK_ID,
      mac_addr: addr["OS-EXT-IPS-MAC:mac_addr"],
      port_state: "ACTIVE",
      fixed_ips: [{ ip_address: addr.addr }],
    });
    const one = await demo.get(`/v2.1/servers/${id}/os-interface/${ifaces[0].port_id}`);
    expect(one.body.interfaceAttachment.port_id).toBe(ifaces[0].port_id);
    expect(
      (await demo.at("2.70").get(`/v2.1/servers/${id}/os-interface`)).body.interfaceAttachments[0].tag,
    ).toBe(null);
    expect((await demo.get(`/v2.1/servers/${id}/ips`)).body.addresses).toEqual({
      public: [{ version: 4, addr: addr.addr }],
    });
    expect((await demo.get(`/v2.1/servers/${id}/ips/public`)).body).toEqual({
      public: [{ version: 4, addr: addr.addr }],
    });
    expect((await demo.get(`/v2.1/servers/${id}/ips/other`)).status).toBe(404);
    // the port, as Neutron shows it: the server's, bound to its host (admins see the binding)
    const ports = (await net(admin, `ports?device_id=${id}`)).body.ports;
    expect(ports).toHaveLength(1);
    expect(ports[0]).toMatchObject({
      device_owner: expect.stringMatching(/^compute:/),
      "binding:host_id": s["OS-EXT-SRV-ATTR:host"] ?? expect.any(String),
      status: "ACTIVE",
    });
    // the host was told: the guest it built carries the port, with its subnet's gateway and segment
    const host = (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"];
    const guest = (runtime.hosts.get(host)!.driver as FakeDriver).specOf(id);
    expect(guest?.ports).toEqual([
      expect.objectContaining({
        port_id: ifaces[0].port_id,
        mac_address: addr["OS-EXT-IPS-MAC:mac_addr"],
        network_name: "public",
        network_type: "flat",
        physical_network: "physnet1",
        fixed_ips: [
          expect.objectContaining({ ip_address: addr.addr, cidr: "10.20.0.0/16", gateway_ip: "10.20.0.1" }),
        ],
      }),
    ]);
    // a second port, attached (test/e2e/interfaces.test.ts)
    const attached = await demo.post(`/v2.1/servers/${id}/os-interface`, { interfaceAttachment: {} });
    expect(attached.status).toBe(200);
    // delete frees the ports and their addresses
    expect((await demo.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await getPort(ifaces[0].port_id)).toBeUndefined();
    expect(await getPort(attached.body.interfaceAttachment.port_id)).toBeUndefined();
  });

  it("2.37: networks required; none has no port; auto picks public", async () => {
    const v = demo.at("2.37");
    const missing = await create(v, {});
    expect([missing.status, message(missing)]).toEqual([
      400,
      expect.stringContaining("'networks' is a required property"),
    ]);
    const none = (await create(v, { networks: "none" })).body.server.id;
    const auto = (await create(v, { networks: "auto" })).body.server.id;
    expect((await active(none)).addresses).toEqual({});
    expect(Object.keys((await active(auto)).addresses)).toEqual(["public"]);
    const bad = await create(v, { networks: [{ uuid: "not-a-uuid" }] });
    expect(bad.status).toBe(400);
    for (const id of [none, auto]) await demo.delete(`/v2.1/servers/${id}`);
  });

  it("a fixed IP is the server's; asked again it is Nova's FixedIpAlreadyInUse", async () => {
    const first = await create(demo, { networks: [{ uuid: PUBLIC_NETWORK_ID, fixed_ip: "10.20.7.7" }] });
    const id = first.body.server.id;
    expect((await active(id)).addresses.public[0].addr).toBe("10.20.7.7");
    const again = await create(demo, { networks: [{ uuid: PUBLIC_NETWORK_ID, fixed_ip: "10.20.7.7" }] });
    expect([again.status, message(again)]).toEqual([
      400,
      `Fixed IP address 10.20.7.7 is already in use on instance ${id}.`,
    ]);
    const many = await create(demo, {
      max_count: 2,
      networks: [{ uuid: PUBLIC_NETWORK_ID, fixed_ip: "10.20.7.8" }],
    });
    expect(message(many)).toBe(
      "Failed to launch instances: max_count cannot be greater than 1 if an fixed_ip is specified.",
    );
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("refusals: unknown network, a network without subnet, a port in use or given twice", async () => {
    const unknown = await create(demo, { networks: [{ uuid: "3f1e6a4c-0000-4e8a-9c2f-7d0a1b2c3d4e" }] });
    expect([unknown.status, message(unknown)]).toEqual([
      400,
      "Network 3f1e6a4c-0000-4e8a-9c2f-7d0a1b2c3d4e could not be found.",
    ]);
    const bare = (await net(demo, "networks", { network: { name: "bare" } })).body.network;
    const noSubnet = await create(demo, { networks: [{ uuid: bare.id }] });
    expect(message(noSubnet)).toBe(`Network ${bare.id} requires a subnet in order to boot instances on.`);
    // a second network available to demo makes "auto" (and no networks) ambiguous
    await net(demo, "subnets", { subnet: { network_id: bare.id, ip_version: 4, cidr: "192.168.50.0/24" } });
    const ambiguous = await create(demo.at("2.37"), { networks: "auto" });
    expect([ambiguous.status, message(ambiguous)]).toEqual([
      409,
      "Multiple possible networks found, use a Network ID to be more specific.",
    ]);
    const port = (await net(demo, "ports", { port: { network_id: bare.id } })).body.port;
    const twice = await create(demo, { networks: [{ port: port.id }, { port: port.id }] });
    expect(message(twice)).toContain("was specified twice");
    const multi = await create(demo, { max_count: 2, networks: [{ port: port.id }] });
    expect(message(multi)).toContain("Unable to launch multiple instances with a single configured port ID");
    // the user's port: bound to the server, unbound (not deleted) when the server goes
    const id = (await create(demo, { networks: [{ port: port.id }] })).body.server.id;
    const s = await active(id);
    expect(s.addresses.bare[0].addr).toBe(port.fixed_ips[0].ip_address);
    const inUse = await create(demo, { networks: [{ port: port.id }] });
    expect([inUse.status, message(inUse)]).toEqual([409, `Port ${port.id} is still in use.`]);
    await demo.delete(`/v2.1/servers/${id}`);
    await admin.waitForStatus(id, ["GONE"]);
    const after = await getPort(port.id);
    expect(after).toMatchObject({ device_id: "", "binding:host_id": "" });
    expect(after?.fixed_ips).toEqual(port.fixed_ips.map((f: Record<string, string>) => f));
    await demo.call("DELETE", `/networking/v2.0/ports/${port.id}`);
    expect((await demo.call("DELETE", `/networking/v2.0/networks/${bare.id}`)).status).toBe(204);
  });

  it("the ports follow the server: a cold migration binds them to the new host, shelve offload to none, unshelve to its host", async () => {
    const id = await demo.createServer({ name: "mover" });
    await active(id);
    const hostOf = async () => (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"];
    const binding = async () => (await net(admin, `ports?device_id=${id}`)).body.ports[0]["binding:host_id"];
    const source = await hostOf();
    // host-1 fails every build: the target is the other healthy host
    const target = ["host-2", "host-3"].find((h) => h !== source)!;
    const act = (body: unknown) => admin.at("2.56").post(`/v2.1/servers/${id}/action`, body);
    expect((await act({ migrate: { host: target } })).status).toBe(202);
    await admin.waitForStatus(id, ["VERIFY_RESIZE"]);
    expect(await binding()).toBe(target);
    expect((await act({ confirmResize: null })).status).toBe(204);
    await admin.waitForStatus(id, ["ACTIVE"]);
    expect((await act({ shelve: null })).status).toBe(202);
    await admin.waitForStatus(id, ["SHELVED", "SHELVED_OFFLOADED"]);
    if ((await admin.get(`/v2.1/servers/${id}`)).body.server.status === "SHELVED")
      expect((await act({ shelveOffload: null })).status).toBe(202);
    await admin.waitForStatus(id, ["SHELVED_OFFLOADED"]);
    expect(await eventually(binding, (b) => b === "")).toBe("");
    expect((await act({ unshelve: null })).status).toBe(202);
    const back = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(back.status).toBe("ACTIVE");
    expect(await binding()).toBe(back["OS-EXT-SRV-ATTR:host"]);
    // the same address all along
    expect((await demo.get(`/v2.1/servers/${id}`)).body.server.addresses.public).toHaveLength(1);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("Neutron's quotas, which `openstack quota show` reads: unlimited, the details counting what the project holds", async () => {
    const q = await net(demo, "quotas/demo");
    expect(q.body.quota).toMatchObject({ network: -1, subnet: -1, port: -1 });
    expect((await net(demo, "quotas/demo/default")).body.quota.port).toBe(-1);
    expect((await net(demo, "quotas/demo/details")).body.quota.network).toEqual({
      limit: -1,
      used: 0,
      reserved: 0,
    });
    expect((await net(demo, "quotas/admin")).status).toBe(403);
    expect((await net(admin, "quotas/demo")).status).toBe(200);
  });

  it("a network's availability_zone_hints go to the scheduler: no host there is NoValidHost; another zone asked is 400", async () => {
    const far = (
      await net(admin, "networks", {
        network: { name: "far", shared: true, availability_zone_hints: ["az9"] },
      })
    ).body.network;
    await net(admin, "subnets", { subnet: { network_id: far.id, ip_version: 4, cidr: "192.168.70.0/24" } });
    const asked = await create(demo, { availability_zone: "az1", networks: [{ uuid: far.id }] });
    expect([asked.status, message(asked)]).toEqual([
      400,
      "Availability zone az1 is not one the requested networks are available in (az9).",
    ]);
    const id = (await create(demo, { networks: [{ uuid: far.id }] })).body.server.id;
    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ERROR");
    expect(s.fault.details).toContain("availability zone of the server's networks (az9)");
    await demo.delete(`/v2.1/servers/${id}`);
    await admin.waitForStatus(id, ["GONE"]);
    expect((await admin.call("DELETE", `/networking/v2.0/networks/${far.id}`)).status).toBe(204);
  });

  it("a port changed or deleted in the Networking front: the server's addresses follow (Nova's network-changed)", async () => {
    const id = await demo.createServer({ name: "follower" });
    const before = (await active(id)).addresses.public[0].addr;
    const [port] = (await net(admin, `ports?device_id=${id}`)).body.ports;
    const moved = await admin.call("PUT", `/networking/v2.0/ports/${port.id}`, {
      port: { fixed_ips: [{ ip_address: "10.20.250.9" }] },
    });
    expect(moved.status).toBe(200);
    expect((await demo.get(`/v2.1/servers/${id}`)).body.server.addresses.public).toEqual([
      expect.objectContaining({ addr: "10.20.250.9" }),
    ]);
    expect(before).not.toBe("10.20.250.9");
    expect((await admin.call("DELETE", `/networking/v2.0/ports/${port.id}`)).status).toBe(204);
    expect((await demo.get(`/v2.1/servers/${id}`)).body.server.addresses).toEqual({});
    expect((await demo.get(`/v2.1/servers/${id}/os-interface`)).body.interfaceAttachments).toEqual([]);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("a full subnet aborts the build (Nova's BuildAbortException), its claim and ports freed", async () => {
    const small = (await net(admin, "networks", { network: { name: "small", shared: true } })).body.network;
    // a /30: two usable addresses, one the gateway's: room for one port
    await net(admin, "subnets", { subnet: { network_id: small.id, ip_version: 4, cidr: "192.168.60.0/30" } });
    const a = (await create(demo, { networks: [{ uuid: small.id }] })).body.server.id;
    await active(a);
    const b = (await create(demo, { networks: [{ uuid: small.id }] })).body.server.id;
    const s = await admin.waitForStatus(b, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ERROR");
    expect(s.fault.message).toBe(
      `Build of instance ${b} aborted: No fixed IP addresses available for network: ${small.id}`,
    );
    const left = (await net(admin, `ports?device_id=${b}`)).body.ports;
    expect(
      left,
      JSON.stringify(left.map((p: Record<string, string>) => [p.device_id, p.network_id])),
    ).toEqual([]);
    for (const id of [a, b]) await demo.delete(`/v2.1/servers/${id}`);
    for (const id of [a, b]) await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
    expect((await admin.call("DELETE", `/networking/v2.0/networks/${small.id}`)).status).toBe(204);
  });
});
