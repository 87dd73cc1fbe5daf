// Interface attach and detach with the real clients (Debian's python3-openstackclient 6.0 and
// python3-novaclient 18.1) against the whole local runtime on fake hosts: `server add network`,
// `server add port`, `server add fixed ip` (os-interface from 2.44), `server remove port`,
// `server remove network`, `nova interface-list`, Nova's refusals as the CLI prints them, and the
// ports as `port list --server` and `server event list` show them. One runtime for the file.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Cloud, type Json, missing, startCloud, unique } from "./harness.js";

vi.setConfig({ testTimeout: 300_000 });

describe.skipIf(missing("openstack"))("interface attach and detach with the openstack CLI", () => {
  let cloud: Cloud;
  beforeAll(async () => {
    cloud = await startCloud({ hosts: 2 });
  });
  afterAll(async () => {
    await cloud?.stop();
  });

  const demo = { cloud: "demo" } as const;
  /** `port list --server`, by port id: the server's ports as Neutron binds them */
  const portsOf = async (server: string): Promise<Json[]> =>
    cloud.openstack(["port", "list", "--server", server, "--long"], demo);
  /** polls `port list --server` until `ok` (a detach is a cast) */
  async function portsUntil(server: string, ok: (ports: Json[]) => boolean): Promise<Json[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ports = await portsOf(server);
      if (ok(ports) || Date.now() > deadline) return ports;
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  it("server add network, add port, add fixed ip; remove port keeps the user's port; remove network takes every port of it", async () => {
    const name = unique("ifaces");
    const server = await cloud.openstack(
      ["server", "create", "--flavor", "m1.tiny", "--image", "cirros", "--network", "public", "--wait", name],
      demo,
    );
    expect(await portsOf(server.id)).toHaveLength(1);

    // a port on the network, made for the server (Nova's attach by net_id)
    await cloud.openstack(["server", "add", "network", name, "public"], { ...demo, json: false });
    const two = await portsOf(server.id);
    expect(two).toHaveLength(2);
    expect(two.every((p) => p.Status === "ACTIVE")).toBe(true);

    // the user's own port
    const mine = await cloud.openstack(["port", "create", "--network", "public", unique("mine")], demo);
    await cloud.openstack(["server", "add", "port", name, mine.name], { ...demo, json: false });
    const three = await portsOf(server.id);
    expect(three.map((p) => p.ID)).toContain(mine.id);
    const shown = await cloud.openstack(["server", "show", name], demo);
    expect(shown.addresses.public).toContain(mine.fixed_ips[0].ip_address);

    // os-interface with a fixed IP (OSC uses addFixedIp before 2.44), and its tag from 2.49
    const fixed = await cloud.openstack(
      ["server", "add", "fixed", "ip", "--fixed-ip-address", "10.20.201.9", "--tag", "data", name, "public"],
      { ...demo, version: "2.49" },
    );
    expect(fixed).toMatchObject({
      "Server ID": server.id,
      "Port State": "ACTIVE",
      Tag: "data",
      "Fixed IPs": [expect.objectContaining({ ip_address: "10.20.201.9" })],
    });
    expect(await portsOf(server.id)).toHaveLength(4);
    // novaclient's view of the same
    const listed = await cloud.nova(["interface-list", server.id], { cloud: "demo" });
    for (const p of [mine.id, fixed["Port ID"]]) expect(listed).toContain(p);

    // the user's port is unbound and kept (Nova's preserve_on_delete), with its address
    await cloud.openstack(["server", "remove", "port", name, mine.id], { ...demo, json: false });
    expect(
      (await portsUntil(server.id, (ps) => !ps.some((p) => p.ID === mine.id))).map((p) => p.ID),
    ).not.toContain(mine.id);
    const kept = await cloud.openstack(["port", "show", mine.id], demo);
    expect([kept.device_id, kept.fixed_ips]).toEqual(["", mine.fixed_ips]);

    // every port of the network goes, the boot port and the attached ones; those Nova made are deleted
    const made = (await portsOf(server.id)).map((p) => p.ID as string);
    await cloud.openstack(["server", "remove", "network", name, "public"], { ...demo, json: false });
    expect(await portsUntil(server.id, (ps) => ps.length === 0)).toEqual([]);
    for (const id of made) {
      const gone = await cloud.openstackFails(["port", "show", id], demo);
      expect(gone.stderr).toContain(`No Port found for ${id}`);
    }
    expect((await cloud.openstack(["server", "show", name], demo)).addresses).toEqual({});

    const events: Json[] = await cloud.openstack(["server", "event", "list", name], demo);
    const actions = events.map((e) => e.Action);
    expect(actions.filter((a) => a === "attach_interface")).toHaveLength(3);
    expect(actions.filter((a) => a === "detach_interface")).toHaveLength(made.length + 1);

    await cloud.openstack(["server", "delete", "--wait", name], { ...demo, json: false });
    await cloud.openstack(["port", "delete", mine.id], { ...demo, json: false });
  });

  it("Nova's refusals as the CLI prints them: a port in use, a fixed IP taken, a port not attached", async () => {
    const boot = [
      "server",
      "create",
      "--flavor",
      "m1.tiny",
      "--image",
      "cirros",
      "--network",
      "public",
      "--wait",
    ];
    const [a, b] = await Promise.all([
      cloud.openstack([...boot, unique("one")], demo),
      cloud.openstack([...boot, unique("two")], demo),
    ]);
    const [aPort] = await portsOf(a.id);
    // (these commands print nothing: no -f json)
    const quiet = { ...demo, json: false };
    const inUse = await cloud.openstackFails(["server", "add", "port", b.id, aPort.ID], quiet);
    expect(inUse.stderr).toContain(`Port ${aPort.ID} is still in use.`);
    const ip = aPort["Fixed IP Addresses"][0].ip_address;
    const taken = await cloud.openstackFails(
      ["server", "add", "fixed", "ip", "--fixed-ip-address", ip, b.id, "public"],
      { ...demo, version: "2.44" },
    );
    expect(taken.stderr).toContain(`Fixed IP ${ip} is already in use.`);
    const notHis = await cloud.openstackFails(["server", "remove", "port", b.id, aPort.ID], quiet);
    expect(notHis.stderr).toContain(`Port ${aPort.ID} is not attached`);
    // nothing was left behind by the refusals
    expect(await portsOf(b.id)).toHaveLength(1);
    await cloud.openstack(["server", "delete", "--wait", a.id, b.id], { ...demo, json: false });
  });
});
