// Interface attach and detach (os-interface POST and DELETE) on the local runtime's fake hosts, with
// the seeded `public` network: Nova's answers and refusals, the port made (or the user's bound) at
// the server's host and in its views and its host's guest, a detach that deletes what the attach
// made and only unbinds the user's port, a host that cannot plug the NIC (nothing left behind),
// duplicated casts and reports, a delete during an attach, and a move that carries the new port.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { castToCompute } from "../../lib/aws/send.js";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { applyReport } from "../../lib/conductor/compute-events.js";
import { getInstance } from "../../lib/instances/queries.js";
import { log } from "../../lib/log.js";
import { PUBLIC_NETWORK_ID, PUBLIC_SUBNET_ID } from "../../lib/network/seed.js";
import { getHost } from "../../lib/placement/hosts.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let demo: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client: demo } = await startTestRuntime({ hosts: 2, buildMs: 20, seedNetwork: true }));
  admin = demo.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const neutron = (c: Client, method: string, path: string, body?: unknown) =>
  c.call(method, `/networking/v2.0/${path}`, body);
const message = (r: { body: Record<string, { message?: string }> }) => Object.values(r.body)[0]?.message;
const attach = (c: Client, id: string, a: Record<string, unknown> = {}) =>
  c.post(`/v2.1/servers/${id}/os-interface`, { interfaceAttachment: a });
const detach = (c: Client, id: string, port: string) => c.delete(`/v2.1/servers/${id}/os-interface/${port}`);
const hostOf = async (id: string) =>
  (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"] as string;
const fakeOf = (host: string) => runtime.hosts.get(host)!.driver as FakeDriver;
const guestPorts = async (id: string) =>
  (fakeOf(await hostOf(id)).specOf(id)?.ports ?? []).map((p) => p.port_id);
const ifaces = async (id: string) =>
  (await demo.get(`/v2.1/servers/${id}/os-interface`)).body.interfaceAttachments as {
    port_id: string;
    net_id: string;
    fixed_ips: { ip_address: string; subnet_id: string }[];
    mac_addr: string;
  }[];
const portsOf = async (id: string) => (await neutron(admin, "GET", `ports?device_id=${id}`)).body.ports;

async function server(name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const id = await demo.createServer({ name, networks: [{ uuid: PUBLIC_NETWORK_ID }], ...extra });
  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  return id;
}

/** The server's instance action of `rid` with its events, as an admin reads it. */
async function actionOf(id: string, rid: string) {
  return (await admin.at("2.51").get(`/v2.1/servers/${id}/os-instance-actions/${rid}`)).body.instanceAction;
}

describe("os-interface attach and detach", () => {
  it("attaches a port on the one network there is (no body), bound at the server's host, in its views and its guest; detach deletes it", async () => {
    const id = await server("att-net");
    const before = await ifaces(id);
    const r = await attach(demo, id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body.interfaceAttachment;
    expect(a).toMatchObject({
      net_id: PUBLIC_NETWORK_ID,
      port_state: "ACTIVE",
      mac_addr: expect.stringMatching(/^fa:16:3e(:[0-9a-f]{2}){3}$/),
      fixed_ips: [{ subnet_id: PUBLIC_SUBNET_ID, ip_address: expect.stringMatching(/^10\.20\./) }],
    });
    expect(a.tag).toBeUndefined();
    // the port as Neutron shows it: the server's, bound to its host
    const host = await hostOf(id);
    const port = (await neutron(admin, "GET", `ports/${a.port_id}`)).body.port;
    expect(port).toMatchObject({
      device_id: id,
      device_owner: expect.stringMatching(/^compute:/),
      "binding:host_id": host,
      status: "ACTIVE",
      mac_address: a.mac_addr,
    });
    // the views: os-interface, show, addresses, ips
    expect((await ifaces(id)).map((i) => i.port_id)).toEqual([...before.map((i) => i.port_id), a.port_id]);
    expect(
      (await demo.get(`/v2.1/servers/${id}/os-interface/${a.port_id}`)).body.interfaceAttachment,
    ).toEqual(a);
    const addresses = (await demo.get(`/v2.1/servers/${id}`)).body.server.addresses.public as {
      addr: string;
      "OS-EXT-IPS-MAC:mac_addr": string;
    }[];
    expect(addresses.map((x) => x.addr)).toContain(a.fixed_ips[0].ip_address);
    expect(addresses.find((x) => x.addr === a.fixed_ips[0].ip_address)!["OS-EXT-IPS-MAC:mac_addr"]).toBe(
      a.mac_addr,
    );
    // the host's guest has the NIC, and its console says so
    expect(await guestPorts(id)).toEqual([...before.map((i) => i.port_id), a.port_id]);
    expect(await fakeOf(host).consoleOutput(id)).toContain(
      `NIC ${a.mac_addr} (port ${a.port_id}) plugged in`,
    );
    // Nova's instance action and its host's event
    const actions = (await demo.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions;
    expect(actions[0]).toMatchObject({ action: "attach_interface", message: null });
    expect((await actionOf(id, actions[0].request_id)).events).toEqual([
      expect.objectContaining({ event: "compute_attach_interface", result: "Success", host }),
    ]);

    // detach: a cast (202); the host unplugs it, then the port Nova made is deleted
    expect((await detach(demo, id, a.port_id)).status).toBe(202);
    await eventually(
      () => ifaces(id),
      (l) => l.length === before.length,
    );
    expect((await neutron(admin, "GET", `ports/${a.port_id}`)).status).toBe(404);
    expect(await guestPorts(id)).toEqual(before.map((i) => i.port_id));
    // its address is free again: another port may have it
    const again = await neutron(admin, "POST", "ports", {
      port: { network_id: PUBLIC_NETWORK_ID, fixed_ips: [{ ip_address: a.fixed_ips[0].ip_address }] },
    });
    expect(again.status).toBe(201);
    await neutron(admin, "DELETE", `ports/${again.body.port.id}`);
    const detachAction = (await demo.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions[0];
    expect(detachAction.action).toBe("detach_interface");
    expect((await actionOf(id, detachAction.request_id)).events).toEqual([
      expect.objectContaining({ event: "compute_detach_interface", result: "Success" }),
    ]);
    // detaching it again: it is not attached (Nova's compute's PortNotFound)
    const gone = await detach(demo, id, a.port_id);
    expect([gone.status, message(gone)]).toEqual([404, `Port ${a.port_id} is not attached`]);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("attaches the user's port and detaches it unbound, kept with its address; it then goes to another server", async () => {
    const [one, two] = await Promise.all([server("att-port-1"), server("att-port-2")]);
    const made = await neutron(demo, "POST", "ports", {
      port: { network_id: PUBLIC_NETWORK_ID, name: "mine" },
    });
    expect(made.status).toBe(201);
    const p = made.body.port;
    for (const id of [one, two]) {
      const r = await attach(demo, id, { port_id: p.id });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.interfaceAttachment).toMatchObject({
        port_id: p.id,
        net_id: PUBLIC_NETWORK_ID,
        mac_addr: p.mac_address,
        fixed_ips: [{ ip_address: p.fixed_ips[0].ip_address }],
      });
      const bound = (await neutron(admin, "GET", `ports/${p.id}`)).body.port;
      expect([bound.device_id, bound["binding:host_id"]]).toEqual([id, await hostOf(id)]);
      // the other server cannot have it meanwhile: Nova's PortInUse
      const other = id === one ? two : one;
      const taken = await attach(demo, other, { port_id: p.id });
      expect([taken.status, message(taken)]).toEqual([409, `Port ${p.id} is still in use.`]);
      expect((await detach(demo, id, p.id)).status).toBe(202);
      // a detach is a cast: the port's device goes when the host is done (tempest's wait)
      const free = await eventually(
        async () => (await neutron(admin, "GET", `ports/${p.id}`)).body.port,
        (x) => x.device_id === "",
      );
      expect(free).toMatchObject({ device_owner: "", "binding:host_id": "", fixed_ips: p.fixed_ips });
      expect(await guestPorts(id)).not.toContain(p.id);
      expect((await ifaces(id)).map((i) => i.port_id)).not.toContain(p.id);
    }
    // attached again, then the server deleted: the user's port stays, unbound (preserve_on_delete)
    expect((await attach(demo, one, { port_id: p.id })).status).toBe(200);
    expect((await demo.delete(`/v2.1/servers/${one}`)).status).toBe(204);
    await admin.waitForStatus(one, ["GONE"]);
    const kept = (await neutron(admin, "GET", `ports/${p.id}`)).body.port;
    expect([kept.device_id, kept.fixed_ips]).toEqual(["", p.fixed_ips]);
    await demo.delete(`/v2.1/servers/${two}`);
    await neutron(demo, "DELETE", `ports/${p.id}`);
  });

  it("attaches with a fixed IP; one another port holds is Nova's 409, one off the network a 400, and neither leaves a port", async () => {
    const id = await server("att-ip");
    const r = await attach(demo, id, {
      net_id: PUBLIC_NETWORK_ID,
      fixed_ips: [{ ip_address: "10.20.200.7" }],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.interfaceAttachment.fixed_ips).toEqual([
      { subnet_id: PUBLIC_SUBNET_ID, ip_address: "10.20.200.7" },
    ]);
    const held = (await portsOf(id)).length;
    const taken = await attach(demo, id, {
      net_id: PUBLIC_NETWORK_ID,
      fixed_ips: [{ ip_address: "10.20.200.7" }],
    });
    expect([taken.status, message(taken)]).toEqual([409, "Fixed IP 10.20.200.7 is already in use."]);
    const off = await attach(demo, id, {
      net_id: PUBLIC_NETWORK_ID,
      fixed_ips: [{ ip_address: "192.0.2.9" }],
    });
    expect([off.status, message(off)]).toEqual([
      400,
      `Invalid input received: Fixed IP 192.0.2.9 is not a valid ip address for network ${PUBLIC_NETWORK_ID}.`,
    ]);
    expect((await portsOf(id)).length).toBe(held);
    expect(await guestPorts(id)).toHaveLength(held);
    // the refused attach is recorded, its event failed (Nova's compute raised it)
    const actions = (await demo.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions;
    const refused = actions.find((x: { action: string; message: string | null }) => x.message === "Error");
    expect(refused).toMatchObject({ action: "attach_interface" });
    await demo.delete(`/v2.1/servers/${id}`);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await portsOf(id)).toEqual([]);
  });

  it("refuses as Nova does: the request's shape, the network and port, the server's lock and state", async () => {
    const id = await server("att-refusals");
    const refused = async (r: Promise<{ status: number; body: Record<string, { message?: string }> }>) => {
      const x = await r;
      return [x.status, message(x)];
    };
    const missing = "5c8f1d5a-0000-4000-8000-00000000dead";
    expect(await refused(attach(demo, id, { net_id: PUBLIC_NETWORK_ID, port_id: missing }))).toEqual([
      400,
      "Must not input both network_id and port_id",
    ]);
    expect(await refused(attach(demo, id, { fixed_ips: [{ ip_address: "10.20.0.9" }] }))).toEqual([
      400,
      "Must input network_id when request IP address",
    ]);
    expect(await refused(attach(demo, id, { net_id: missing }))).toEqual([
      404,
      `Network ${missing} could not be found.`,
    ]);
    expect(await refused(attach(demo, id, { port_id: missing }))).toEqual([
      404,
      `Port id ${missing} could not be found.`,
    ]);
    expect((await attach(demo, id, { net_id: "nope" })).status).toBe(400);
    expect(await refused(attach(demo, id, { tag: "eth9" }))).toEqual([
      400,
      'Invalid input for field/attribute interfaceAttachment. Value: {"tag":"eth9"}. Additional properties are not allowed (\'tag\' was unexpected)',
    ]);
    // an admin's port cannot go to the demo project's server: Nova's PortNotUsable
    const adminPort = await neutron(admin, "POST", "ports", { port: { network_id: PUBLIC_NETWORK_ID } });
    expect(await refused(attach(admin, id, { port_id: adminPort.body.port.id }))).toEqual([
      400,
      `Port ${adminPort.body.port.id} not usable for instance ${id}.`,
    ]);
    // ... nor can the member see it
    expect((await attach(demo, id, { port_id: adminPort.body.port.id })).status).toBe(404);
    await neutron(admin, "DELETE", `ports/${adminPort.body.port.id}`);
    // two networks the project may use: Nova's NetworkAmbiguous
    const mine = await neutron(demo, "POST", "networks", { network: { name: "mine" } });
    const ambiguous = await refused(attach(demo, id));
    expect(ambiguous).toEqual([
      400,
      "Multiple possible networks found, use a Network ID to be more specific.",
    ]);
    await neutron(demo, "DELETE", `networks/${mine.body.network.id}`);
    // a network whose subnet is full: Nova's NoMoreFixedIps, and no port left
    const small = (await neutron(admin, "POST", "networks", { network: { name: "small", shared: true } }))
      .body.network;
    await neutron(admin, "POST", "subnets", {
      subnet: { network_id: small.id, ip_version: 4, cidr: "192.168.61.0/30" },
    });
    const only = await neutron(admin, "POST", "ports", { port: { network_id: small.id } });
    expect(only.status).toBe(201);
    expect(await refused(attach(demo, id, { net_id: small.id }))).toEqual([
      400,
      `No fixed IP addresses available for network: ${small.id}`,
    ]);
    expect((await neutron(admin, "GET", `ports?network_id=${small.id}`)).body.ports).toHaveLength(1);
    await neutron(admin, "DELETE", `ports/${only.body.port.id}`);
    expect((await neutron(admin, "DELETE", `networks/${small.id}`)).status).toBe(204);
    // locked: the owner is refused, an admin is not
    expect((await demo.post(`/v2.1/servers/${id}/action`, { lock: null })).status).toBe(202);
    expect(await refused(attach(demo, id))).toEqual([409, `Instance ${id} is locked`]);
    const port = (await ifaces(id))[0]!.port_id;
    expect(await refused(detach(demo, id, port))).toEqual([409, `Instance ${id} is locked`]);
    expect((await demo.post(`/v2.1/servers/${id}/action`, { unlock: null })).status).toBe(202);
    // suspended: not a state Nova attaches or detaches in
    expect((await demo.post(`/v2.1/servers/${id}/action`, { suspend: null })).status).toBe(202);
    await admin.waitForStatus(id, ["SUSPENDED"]);
    expect(await refused(attach(demo, id))).toEqual([
      409,
      `Cannot 'attach_interface' instance ${id} while it is in vm_state suspended`,
    ]);
    expect(await refused(detach(demo, id, port))).toEqual([
      409,
      `Cannot 'detach_interface' instance ${id} while it is in vm_state suspended`,
    ]);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("a tag from 2.49, shown from 2.70; a stopped server gets the port in its definition", async () => {
    const id = await server("att-tag");
    expect((await demo.post(`/v2.1/servers/${id}/action`, { "os-stop": null })).status).toBe(202);
    await admin.waitForStatus(id, ["SHUTOFF"]);
    const r = await attach(demo.at("2.70"), id, { net_id: PUBLIC_NETWORK_ID, tag: "data" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.interfaceAttachment.tag).toBe("data");
    expect(await guestPorts(id)).toContain(r.body.interfaceAttachment.port_id);
    const listed = (await demo.at("2.70").get(`/v2.1/servers/${id}/os-interface`)).body.interfaceAttachments;
    expect(listed.map((i: { tag: string | null }) => i.tag)).toEqual([null, "data"]);
    // started again, its guest keeps it
    expect((await demo.post(`/v2.1/servers/${id}/action`, { "os-start": null })).status).toBe(202);
    await admin.waitForStatus(id, ["ACTIVE"]);
    expect(await guestPorts(id)).toContain(r.body.interfaceAttachment.port_id);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("a host that cannot plug the NIC: Nova's 500, the port made for it deleted, the user's unbound", async () => {
    const id = await server("att-fails");
    const fake = fakeOf(await hostOf(id));
    const held = await portsOf(id);
    fake.failInterfaceAttach = true;
    try {
      const r = await attach(demo, id);
      expect([r.status, message(r)]).toEqual([500, `Failed to attach network adapter device to ${id}`]);
      const p = (await neutron(demo, "POST", "ports", { port: { network_id: PUBLIC_NETWORK_ID } })).body.port;
      const r2 = await attach(demo, id, { port_id: p.id });
      expect(r2.status).toBe(500);
      expect((await neutron(admin, "GET", `ports/${p.id}`)).body.port.device_id).toBe("");
      await neutron(demo, "DELETE", `ports/${p.id}`);
    } finally {
      fake.failInterfaceAttach = false;
    }
    expect((await portsOf(id)).map((p: { id: string }) => p.id)).toEqual(
      held.map((p: { id: string }) => p.id),
    );
    expect(await guestPorts(id)).toHaveLength(held.length);
    const actions = (await admin.at("2.51").get(`/v2.1/servers/${id}/os-instance-actions`)).body
      .instanceActions;
    expect((await actionOf(id, actions[0].request_id)).events).toEqual([
      expect.objectContaining({
        event: "compute_attach_interface",
        result: "Error",
        details: expect.stringContaining("set to fail every interface attach"),
      }),
    ]);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("at least once: a cast delivered twice plugs one NIC; a report applied twice adds one VIF", async () => {
    const id = await server("att-dup");
    const r = await attach(demo, id);
    expect(r.status).toBe(200);
    const portId = r.body.interfaceAttachment.port_id as string;
    const rec = await getInstance(id);
    const rid = Object.values(rec!.actions).find((a) => a.action === "attach_interface")!.request_id;
    const host = await hostOf(id);
    const queue = (await getHost(host))!.queue_url!;
    const [port] = fakeOf(host)
      .specOf(id)!
      .ports!.filter((p) => p.port_id === portId);
    // the same cast again (SQS's at-least-once): the host answers again, nothing changes
    await castToCompute(queue, {
      version: 1,
      kind: "attach_interface",
      request_id: rid,
      instance_uuid: id,
      host,
      port: port!,
    });
    await castToCompute(queue, {
      version: 1,
      kind: "attach_interface",
      request_id: "req-another-delivery",
      instance_uuid: id,
      host,
      port: port!,
    });
    await new Promise((res) => setTimeout(res, 500));
    expect((await guestPorts(id)).filter((p) => p === portId)).toHaveLength(1);
    expect((await ifaces(id)).filter((i) => i.port_id === portId)).toHaveLength(1);
    // the host's report applied again (a resend after a lost answer): one VIF still
    const report = {
      version: 1 as const,
      kind: "attach_interface_done" as const,
      host,
      sent_at: new Date().toISOString(),
      request_id: rid,
      instance_uuid: id,
      port_id: portId,
      started_at: new Date().toISOString(),
      ok: true,
      details: null,
    };
    await applyReport(report, log);
    await applyReport({ ...report, ok: false, details: "late and wrong" }, log);
    expect((await ifaces(id)).filter((i) => i.port_id === portId)).toHaveLength(1);
    expect((await neutron(admin, "GET", `ports/${portId}`)).body.port.device_id).toBe(id);
    // a detach's cast delivered twice: one detach, the port deleted once
    expect((await detach(demo, id, portId)).status).toBe(202);
    await eventually(
      () => ifaces(id),
      (l) => !l.some((i) => i.port_id === portId),
    );
    const detachRid = (await demo.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions[0]
      .request_id;
    await castToCompute(queue, {
      version: 1,
      kind: "detach_interface",
      request_id: detachRid,
      instance_uuid: id,
      host,
      port: port!,
    });
    await applyReport({ ...report, kind: "detach_interface_done", request_id: detachRid }, log);
    await new Promise((res) => setTimeout(res, 500));
    expect((await ifaces(id)).length).toBe(1);
    expect(await guestPorts(id)).toHaveLength(1);
    await demo.delete(`/v2.1/servers/${id}`);
  });

  it("a server deleted while its host plugs the port: the port goes with it", async () => {
    const id = await server("att-del");
    const fake = fakeOf(await hostOf(id));
    fake.interfaceMs = 1500;
    try {
      const attaching = attach(demo, id);
      await eventually(
        async () =>
          Object.values((await getInstance(id))!.actions).some((a) => a.interface?.state === "pending"),
        Boolean,
      );
      const pending = Object.values((await getInstance(id))!.actions).find((a) => a.interface)!.interface!;
      expect((await demo.delete(`/v2.1/servers/${id}`)).status).toBe(204);
      const r = await attaching;
      expect([r.status, message(r)]).toEqual([404, `Instance ${id} could not be found.`]);
      await admin.waitForStatus(id, ["GONE"]);
      expect((await neutron(admin, "GET", `ports/${pending.port_id}`)).status).toBe(404);
      expect(await portsOf(id)).toEqual([]);
    } finally {
      fake.interfaceMs = 0;
    }
  });

  it("a server created without a network gets one by attach, and its delete frees the port", async () => {
    const id = await demo.at("2.37").createServer({ name: "att-none", networks: "none" });
    expect((await admin.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    expect(await ifaces(id)).toEqual([]);
    const r = await attach(demo, id, { net_id: PUBLIC_NETWORK_ID });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await demo.get(`/v2.1/servers/${id}`)).body.server.addresses.public).toHaveLength(1);
    expect(await guestPorts(id)).toEqual([r.body.interfaceAttachment.port_id]);
    expect((await demo.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect((await neutron(admin, "GET", `ports/${r.body.interfaceAttachment.port_id}`)).status).toBe(404);
  });

  it("a cold migration carries the attached port: the destination's guest has it, bound there", async () => {
    const id = await server("att-move");
    const r = await attach(demo, id);
    expect(r.status).toBe(200);
    const portId = r.body.interfaceAttachment.port_id as string;
    const source = await hostOf(id);
    expect((await admin.post(`/v2.1/servers/${id}/action`, { migrate: null })).status).toBe(202);
    await admin.waitForStatus(id, ["VERIFY_RESIZE", "ERROR"]);
    expect((await admin.post(`/v2.1/servers/${id}/action`, { confirmResize: null })).status).toBe(204);
    await admin.waitForStatus(id, ["ACTIVE"]);
    const dest = await hostOf(id);
    expect(dest).not.toBe(source);
    expect(await guestPorts(id)).toContain(portId);
    expect((await neutron(admin, "GET", `ports/${portId}`)).body.port["binding:host_id"]).toBe(dest);
    await demo.delete(`/v2.1/servers/${id}`);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await portsOf(id)).toEqual([]);
  });
});
