// A guest's ports on each driver: exec gives the process its addresses (NOVALESS_FIXED_IPS,
// NOVALESS_NETWORK_DATA, config/openstack/latest/network_data.json); libvirt defines one bridge
// interface per port on libvirt's test driver (test:///default, which takes them: it plugs
// nothing), and refuses a port on an unmapped physical network before making anything. Every
// process and domain a test starts is destroyed by it.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { GuestPort, GuestSpec } from "../../lib/compute/drivers/driver.js";
import { EXEC_COMMAND_PROPERTY, ExecDriver } from "../../lib/compute/drivers/exec.js";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";
import { networkData } from "../../lib/compute/drivers/network-data.js";
import { PortBindingFailed } from "../../lib/compute/drivers/vif.js";
import { guestSpec } from "./guest.js";

const virsh = (() => {
  try {
    execFileSync("virsh", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!virsh)
  console.warn("test/drivers/ports.test.ts: virsh (Debian libvirt-clients) is missing: libvirt's tests skip");

const root = mkdtempSync(join(tmpdir(), "novaless-ports-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const subnet = {
  subnet_id: "5e6f7a8b-0000-4000-8000-000000000001",
  cidr: "10.20.0.0/16",
  gateway_ip: "10.20.0.1",
  dns_nameservers: ["10.20.0.2"],
  host_routes: [],
};
const flat: GuestPort = {
  port_id: "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9",
  network_id: "9f8e7d6c-0000-4000-8000-000000000001",
  network_name: "public",
  mac_address: "fa:16:3e:11:22:33",
  fixed_ips: [
    {
      ...subnet,
      subnet_id: "5e6f7a8b-0000-4000-8000-000000000006",
      ip_address: "2001:db8::5",
      version: 6,
      cidr: "2001:db8::/64",
      gateway_ip: "2001:db8::1",
      dns_nameservers: [],
    },
    { ...subnet, ip_address: "10.20.0.5", version: 4 },
  ],
  network_type: "flat",
  physical_network: "physnet1",
  segmentation_id: null,
  mtu: 1500,
};
const vlan: GuestPort = {
  ...flat,
  port_id: "1b2c3d4e-5f60-4182-93a4-b5c6d7e8f901",
  network_id: "9f8e7d6c-0000-4000-8000-000000000002",
  network_name: "db-vlan",
  mac_address: "fa:16:3e:44:55:66",
  fixed_ips: [{ ...subnet, cidr: "192.168.7.0/24", gateway_ip: null, ip_address: "192.168.7.9", version: 4 }],
  network_type: "vlan",
  physical_network: "physnet2",
  segmentation_id: 101,
  mtu: 1450,
};

const guest = (over: Partial<GuestSpec> = {}) => guestSpec("a1b2c3d4-0000-4000-8000-0000000000bb", over);

describe("ExecDriver with ports", () => {
  it("gives the process its addresses, IPv4 first, and network_data.json in its environment and config", async () => {
    const d = new ExecDriver({
      host: "exec-host",
      instancesPath: join(root, "exec"),
      cgroupRoot: null,
      pollMs: 100,
    });
    await d.init();
    const g = guest({
      image: { id: "img", name: "sleeper", properties: { [EXEC_COMMAND_PROPERTY]: "sleep 300" } },
      ports: [flat, vlan],
    });
    const bare = guest({ image: g.image });
    try {
      await d.spawn(g);
      await d.spawn(bare);
      const env = readFileSync(`/proc/${d.pidOf(g.instance_uuid)}/environ`, "utf8").split("\0");
      expect(env).toContain("NOVALESS_FIXED_IPS=10.20.0.5 192.168.7.9 2001:db8::5");
      const data = env
        .find((v) => v.startsWith("NOVALESS_NETWORK_DATA="))!
        .slice("NOVALESS_NETWORK_DATA=".length);
      expect(JSON.parse(data)).toEqual(networkData([flat, vlan]));
      const file = join(root, "exec", g.instance_uuid, "config/openstack/latest/network_data.json");
      expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(networkData([flat, vlan]));
      // a guest without ports: no addresses, Nova's empty document
      const bareEnv = readFileSync(`/proc/${d.pidOf(bare.instance_uuid)}/environ`, "utf8").split("\0");
      expect(bareEnv).toContain("NOVALESS_FIXED_IPS=");
      expect(bareEnv).toContain(
        `NOVALESS_NETWORK_DATA=${JSON.stringify({ links: [], networks: [], services: [] })}`,
      );
    } finally {
      for (const x of d.list()) await d.destroy(x.instance_uuid);
      await d.close();
    }
  });
});

describe.skipIf(!virsh)("LibvirtDriver with ports on test:///default", () => {
  it("defines a bridge interface per port, the vlan one tagged; an unmapped physical network fails the build, leaving nothing", async () => {
    const images = join(root, "_base");
    execFileSync("mkdir", ["-p", images]);
    const g = guest({ ports: [flat, vlan] });
    writeFileSync(join(images, g.image.id), Buffer.alloc(1024 * 1024));
    const d = new LibvirtDriver({
      host: "kvm-1",
      uri: "test:///default",
      virtType: "test",
      instancesPath: join(root, "instances"),
      imagesPath: images,
      shutdownTimeoutSeconds: 2,
      pollMs: 100,
      bridgeMappings: { physnet1: "br-ex", physnet2: "br-vlan" },
    });
    await d.init();
    try {
      await d.spawn(g);
      const xml = await d.dumpxml(g.instance_uuid);
      const interfaces = xml.match(/<interface type='bridge'>[\s\S]*?<\/interface>/g) ?? [];
      expect(interfaces).toHaveLength(2);
      expect(interfaces[0]).toContain("<mac address='fa:16:3e:11:22:33'/>");
      expect(interfaces[0]).toContain("<source bridge='br-ex'/>");
      expect(interfaces[0]).not.toContain("<vlan>");
      expect(interfaces[0]).toContain("<target dev='tap0a1b2c3d-4e'/>");
      expect(interfaces[1]).toContain("<source bridge='br-vlan'/>");
      expect(interfaces[1]).toMatch(/<vlan>\s*<tag id='101'\/>\s*<\/vlan>/);
      expect(interfaces[1]).toContain("<mtu size='1450'/>");
      expect(await d.virshForTests(`domstate instance-${g.instance_uuid}`)).toBe("running");

      const lost = guest({ ports: [{ ...vlan, physical_network: "physnet9" }] });
      const err = await d.spawn(lost).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PortBindingFailed);
      expect((err as Error).message).toContain(`Binding failed for port ${vlan.port_id} on host kvm-1`);
      expect((err as Error).message).toContain("physical network physnet9");
      expect(d.has(lost.instance_uuid)).toBe(false);
      expect(existsSync(join(root, "instances", lost.instance_uuid))).toBe(false);
    } finally {
      for (const x of d.list()) await d.destroy(x.instance_uuid);
      await d.close();
    }
  });
});
