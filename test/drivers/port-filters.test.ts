// The libvirt host's security groups without a guest (lib/compute/drivers/libvirt-filters.ts),
// with the real nft in a network namespace of the test's own: a port on a Linux bridge gets its
// chains, one on Open vSwitch none (the facts name the bridge), a port without port security
// none; removal and the start's sweep leave nothing of a tap; a host without nft enforces nothing
// and says why. What the rules do to a guest's traffic, test/drivers/libvirt-qemu.test.ts shows.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuestPort } from "../../lib/compute/drivers/driver.js";
import { PortFilters } from "../../lib/compute/drivers/libvirt-filters.js";
import type { BoundPort } from "../../lib/compute/drivers/vif.js";

const which = (p: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${p} || test -x /usr/sbin/${p}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};
const why =
  process.getuid?.() !== 0
    ? "needs root (a network namespace)"
    : !which("nft")
      ? "nft is missing (apt-get install nftables)"
      : !which("ip")
        ? "ip is missing (apt-get install iproute2)"
        : undefined;
if (why) console.warn(`test/drivers/port-filters.test.ts: ${why}: these tests skip`);

const INSTANCE = "7d0e3c1a-0000-4000-8000-00000000f001";

function port(n: number, portSecurity = true): GuestPort {
  return {
    port_id: `${n}c0ffee0-0000-4000-8000-00000000f00${n}`,
    network_id: "9f8e7d6c-0000-4000-8000-0000000000f1",
    network_name: "flat-net",
    mac_address: `fa:16:3e:00:30:0${n}`,
    fixed_ips: [
      {
        subnet_id: "5e6f7a8b-0000-4000-8000-0000000000f1",
        ip_address: `10.30.0.${n}`,
        version: 4,
        cidr: "10.30.0.0/24",
        gateway_ip: null,
        dns_nameservers: [],
        host_routes: [],
      },
    ],
    network_type: "flat",
    physical_network: "physnet1",
    segmentation_id: null,
    mtu: 1500,
    filter: {
      port_security_enabled: portSecurity,
      security_groups: ["0c4b7e2a-0000-4000-8000-00000000c001"],
      rules: [
        {
          direction: "ingress",
          ethertype: "IPv4",
          protocol: "tcp",
          port_range_min: 22,
          port_range_max: 22,
          remote_ips: ["0.0.0.0/0"],
        },
      ],
    },
  };
}

const onLinux = (p: GuestPort): BoundPort => ({ port: p, bridge: "br-flat", kind: "linux" });
const onOvs = (p: GuestPort): BoundPort => ({ port: p, bridge: "br-ex", kind: "openvswitch" });

describe.skipIf(Boolean(why))("a libvirt host's port filters, with nft", () => {
  const netns = `nlpf${process.pid}`;
  const nft = (...args: string[]) =>
    execFileSync("ip", ["netns", "exec", netns, "nft", ...args], { timeout: 10_000 }).toString();
  const table = () => nft("list", "table", "bridge", "novaless");

  beforeAll(() => {
    execFileSync("ip", ["netns", "add", netns], { timeout: 10_000 });
  });
  afterAll(() => {
    execFileSync("ip", ["netns", "del", netns], { timeout: 10_000 });
  });

  it("chains for a filtered port on a Linux bridge, none on Open vSwitch or without port security; removed, swept", async () => {
    const f = new PortFilters({ host: "h", netns, ovsBridges: ["br-ex"] });
    await f.start([]);
    expect(f.facts()).toMatchObject({
      security_groups_enforced: true,
      security_groups_enforcement: expect.stringContaining(
        "ports on Open vSwitch bridges (br-ex) are not filtered",
      ),
    });
    await f.apply(INSTANCE, [onLinux(port(1)), onOvs(port(2)), onLinux(port(3, false))]);
    let listed = table();
    expect(listed).toContain("chain o-tap1c0ffee0-00");
    expect(listed).toContain("tcp dport 22 return");
    expect(listed).not.toContain("tap2c0ffee0-00");
    expect(listed).not.toContain("tap3c0ffee0-00");

    // port security turned off: its chains go, in the same kind of transaction
    await f.apply(INSTANCE, [onLinux(port(1, false))]);
    expect(table()).not.toContain("tap1c0ffee0-00");
    await f.apply(INSTANCE, [onLinux(port(1))]);
    await f.remove(INSTANCE, [port(1), port(2)]);
    expect(table()).not.toContain("tap1c0ffee0-00");

    // a start keeps what its guests have and sweeps the rest
    await f.apply(INSTANCE, [onLinux(port(1)), onLinux(port(4))]);
    const restarted = new PortFilters({ host: "h", netns, ovsBridges: [] });
    await restarted.start([{ instanceUuid: INSTANCE, ports: [onLinux(port(4))] }]);
    listed = table();
    expect(listed).not.toContain("tap1c0ffee0-00");
    expect(listed).toContain("chain i-tap4c0ffee0-00");
  });

  it("a host without nft enforces nothing and says why", async () => {
    const path = process.env.PATH;
    const empty = mkdtempSync(join(tmpdir(), "novaless-no-nft-"));
    process.env.PATH = empty;
    try {
      const f = new PortFilters({ host: "h", ovsBridges: [] });
      await f.start([]);
      expect(f.enforced).toBe(false);
      expect(f.facts()).toEqual({
        security_groups_enforced: false,
        security_groups_unenforced:
          "nft does not run on host h (apt-get install nftables): nft --version (host h): nft is not installed",
      });
      // nothing to do, nothing refused: the guests run unfiltered
      await f.apply(INSTANCE, [onLinux(port(1))]);
      await f.remove(INSTANCE, [port(1)]);
    } finally {
      process.env.PATH = path;
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
