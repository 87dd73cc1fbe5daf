// The libvirt driver against real QEMU through real libvirtd: two libvirt hosts on this machine
// (local/libvirt-hosts.ts: a network namespace, a libvirtd and a Linux bridge per network each,
// the bridges joined), the guest image the project builds (build/guest.qcow2: a kernel and a
// busybox initramfs that reads its config drive, prints a banner and an uptime line a second on
// its serial console, and answers ping). One host: a guest's whole life. Two hosts: a live
// migration with its disk copied, and one aborted, the guest's port filtered by its security
// groups (nftables on its tap) all along: ping and a TCP connect admitted, refused, admitted again. Without root, QEMU, libvirtd or the image
// they skip, saying why on stderr; with CI set they fail instead.
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statfsSync } from "node:fs";
import { availableParallelism, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GuestPort,
  type GuestSpec,
  LiveMigrationAborted,
  type LiveMigrationProgress,
  POWER_STATE,
  type PowerState,
} from "../../lib/compute/drivers/driver.js";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";
import { tapName } from "../../lib/compute/drivers/network-data.js";
import type { PortFilter, PortFilterRule } from "../../lib/messages/port-filter.js";
import {
  type LibvirtHost,
  type LibvirtHosts,
  realGuestsUnavailable,
  startLibvirtHosts,
} from "../../local/libvirt-hosts.js";
import { ensureGuestImage } from "../../scripts/image/build.js";
import { dirStore } from "./dir-store.js";

const FILE = "test/drivers/libvirt-qemu.test.ts";

// build/guest.qcow2, built in beforeAll when missing or stale (scripts/image/build.ts)
const why = realGuestsUnavailable();
if (why) console.warn(`${FILE}: ${why}: ${process.env.CI ? "CI is set, so this fails" : "these tests skip"}`);

/**
 * kvm where the guest image boots under KVM, else TCG (qemu), and why; NOVALESS_LIBVIRT_VIRT_TYPE
 * overrides. /dev/kvm opening is not enough: a nested KVM without the CPU's virtualization flags
 * stops the guest within seconds ("paused (internal-error)"), so without vmx or svm it is TCG at
 * once, and with them the image must reach its kernel under KVM within 6 s.
 */
function virtType(disk: string): { type: "kvm" | "qemu"; why: string } {
  const forced = process.env.NOVALESS_LIBVIRT_VIRT_TYPE;
  if (forced === "kvm" || forced === "qemu") return { type: forced, why: "NOVALESS_LIBVIRT_VIRT_TYPE" };
  if (!existsSync("/dev/kvm")) return { type: "qemu", why: "no /dev/kvm" };
  if (!/\b(vmx|svm)\b/.test(readFileSync("/proc/cpuinfo", "utf8")))
    return { type: "qemu", why: "/dev/kvm is there, but the CPU shows no vmx or svm" };
  const serial = join(dirname(disk), "probe.log");
  try {
    const out = execFileSync(
      "sh",
      [
        "-c",
        '(sleep 6; echo "info status"; sleep 0.3; echo quit) | qemu-system-x86_64 -accel kvm -nodefaults -display none -m 128 -monitor stdio -serial file:"$1" -snapshot -drive file="$0",if=virtio',
        disk,
        serial,
      ],
      { timeout: 20_000, stdio: ["ignore", "pipe", "ignore"] },
    ).toString();
    const booted = existsSync(serial) && readFileSync(serial, "utf8").includes("Loading");
    if (/VM status: running/.test(out) && booted) return { type: "kvm", why: "the image boots under KVM" };
    return { type: "qemu", why: `KVM: ${/VM status: (.*)/.exec(out)?.[1]?.trim() ?? "no status"}` };
  } catch (e) {
    return { type: "qemu", why: `KVM probe failed: ${(e as Error).message}` };
  }
}

const IMAGE_ID = "6b1f0f7e-0000-4000-8000-00000000a001";
const NETWORK = {
  id: "9f8e7d6c-0000-4000-8000-0000000000f1",
  name: "flat-net",
  cidr: "10.20.0.0/24",
  physnet: "physnet1",
};

function port(n: number): GuestPort {
  return {
    port_id: `${n}a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9`,
    network_id: NETWORK.id,
    network_name: NETWORK.name,
    mac_address: `fa:16:3e:00:20:${n.toString(16).padStart(2, "0")}`,
    fixed_ips: [
      {
        subnet_id: "5e6f7a8b-0000-4000-8000-0000000000f1",
        ip_address: `10.20.0.${10 + n}`,
        version: 4,
        cidr: NETWORK.cidr,
        gateway_ip: null,
        dns_nameservers: [],
        host_routes: [],
      },
    ],
    network_type: "flat",
    physical_network: NETWORK.physnet,
    segmentation_id: null,
    mtu: 1500,
  };
}

function guest(n: number, hostname: string): GuestSpec {
  return {
    instance_uuid: crypto.randomUUID(),
    name: hostname,
    hostname,
    project_id: "p",
    user_id: "u",
    flavor: {
      id: "1",
      name: "m1.nano",
      vcpus: 1,
      memory_mb: 128,
      root_gb: 1,
      ephemeral_gb: 0,
      swap: 0,
      extra_specs: {},
    },
    image: { id: IMAGE_ID, name: "novaless-guest", properties: { disk_format: "qcow2" } },
    metadata: {},
    config_drive: true,
    ports: [port(n)],
  };
}

async function until<T>(what: string, get: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

const lastUptime = (console: string): number | undefined => {
  const all = [...console.matchAll(/^novaless-guest uptime (\d+)/gm)];
  return all.length ? Number(all[all.length - 1]![1]) : undefined;
};

const count = (text: string, what: string) => text.split(what).length - 1;

/** A security group rule of IPv4 from anywhere, as the Networking API resolves it. */
const sgRule = (over: Partial<PortFilterRule>): PortFilterRule => ({
  direction: "ingress",
  ethertype: "IPv4",
  protocol: null,
  port_range_min: null,
  port_range_max: null,
  remote_ips: ["0.0.0.0/0"],
  ...over,
});
const EGRESS = sgRule({ direction: "egress" });
const ICMP_IN = sgRule({ protocol: "icmp" });
const TCP_8080_IN = sgRule({ protocol: "tcp", port_range_min: 8080, port_range_max: 8080 });
const filterOf = (...rules: PortFilterRule[]): PortFilter => ({
  port_security_enabled: true,
  security_groups: ["0c4b7e2a-0000-4000-8000-00000000c001"],
  rules: [EGRESS, ...rules],
});
const banners = (console: string, uuid: string) => count(console, `novaless-guest uuid ${uuid}`);

describe.skipIf(Boolean(why) && !process.env.CI)("LibvirtDriver on QEMU through libvirtd", () => {
  let harness: LibvirtHosts | undefined;
  const drivers: LibvirtDriver[] = [];
  let work = "";
  let type: "kvm" | "qemu" = "qemu";
  let a: LibvirtDriver;
  let b: LibvirtDriver;
  const events: [string, PowerState][] = [];
  /** the images bucket's migrations/, where a move's disk goes */
  let migrations: ReturnType<typeof dirStore>;

  beforeAll(async () => {
    if (why) throw new Error(`${FILE}: ${why}`);
    const image = await ensureGuestImage();
    work = mkdtempSync(join(tmpdir(), "novaless-libvirt-qemu-"));
    // the probe boots a throwaway overlay (-snapshot), never the image itself
    copyFileSync(image.path, join(work, "probe.qcow2"));
    const probe = virtType(join(work, "probe.qcow2"));
    type = probe.type;
    console.info(`${FILE}: domain type ${type} (${type === "kvm" ? "KVM" : "TCG"}: ${probe.why})`);
    migrations = dirStore(join(work, "migrations"));
    harness = await startLibvirtHosts({
      hosts: ["host-a", "host-b"],
      networks: [
        { physnet: NETWORK.physnet, bridge: "br-flat", addresses: ["10.20.0.201/24", "10.20.0.202/24"] },
      ],
    });
    for (const h of harness.hosts) {
      // the operator's copy of the catalog image in each host's cache
      copyFileSync(image.path, join(h.imagesPath, IMAGE_ID));
      const d = new LibvirtDriver({
        host: h.name,
        uri: h.uri,
        virtType: type,
        instancesPath: h.instancesPath,
        imagesPath: h.imagesPath,
        linuxBridgeMappings: h.bridgeMappings,
        // the daemon's taps are in the host's namespace: so are their nftables rules
        netns: h.netns,
        shutdownTimeoutSeconds: 20,
        // long: a power change seen at once comes from libvirt's lifecycle events, not the poll
        pollMs: 60_000,
        imageStore: dirStore(join(work, "bucket")),
        migrationStore: migrations,
      });
      drivers.push(d);
      await d.init();
    }
    [a, b] = drivers as [LibvirtDriver, LibvirtDriver];
    a.onLifecycle((id, power) => events.push([id, power]));
  }, 90_000);

  afterAll(async () => {
    for (const d of drivers) await d.close().catch(() => undefined);
    await harness?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  const bootOf = async (d: LibvirtDriver, g: GuestSpec, seen: number) =>
    until(
      `the banner of ${g.instance_uuid}`,
      async () => {
        const out = await d.consoleOutput(g.instance_uuid);
        return banners(out, g.instance_uuid) > seen && count(out, "novaless-guest ready") > seen
          ? out
          : undefined;
      },
      60_000,
    );

  it("one host: spawn with a port and a config drive, console, ping, power actions, crash dump, events, diagnostics, snapshot, destroy", async () => {
    const h = harness!.hosts[0]!;
    // the host's inventory as libvirt sees it: this machine's CPUs and memory, the instances disk
    const facts = await a.machineFacts();
    expect(facts.cpus).toBe(availableParallelism());
    expect(Math.abs(facts.memoryBytes - totalmem()) / totalmem()).toBeLessThan(0.05);
    const fs = statfsSync(h.instancesPath);
    expect(facts.diskBytes).toBe(fs.blocks * fs.bsize);
    const g = guest(1, "alpha");
    const id = g.instance_uuid;
    const ip = g.ports![0]!.fixed_ips[0]!.ip_address;
    const t0 = Date.now();
    await a.spawn(g);
    let out = await bootOf(a, g, 0);
    console.info(`${FILE}: boot (define → banner): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(out).toContain(`novaless-guest uuid ${id}`);
    expect(out).toContain("novaless-guest hostname alpha");
    expect(out).toMatch(new RegExp(`novaless-guest address \\S+ ${ip.replace(/\./g, "\\.")}/24`));
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);
    await until("ping from the host", () => h.exec(["ping", "-c1", "-W1", ip]));

    // the tap is on the host's bridge, with the port's MAC on the guest's side
    const tap = tapName(g.ports![0]!.port_id);
    expect(await h.exec(["ip", "-o", "link", "show", tap])).toContain("master br-flat");
    expect(await a.dumpxml(id)).not.toContain("virtualport");

    const diag = await a.diagnostics(id);
    expect(diag).toMatchObject({ state: "running", driver: "libvirt", hypervisor: type, config_drive: true });
    expect(diag.memory_details.maximum).toBe(128);
    expect(diag.cpu_details).toHaveLength(1);
    expect(diag.cpu_details[0]!.time).toBeGreaterThan(0);
    expect(diag.nic_details[0]!.mac_address).toBe(g.ports![0]!.mac_address);
    expect(diag.nic_details[0]!.rx_packets).toBeGreaterThan(0);
    expect(diag.disk_details.map((x) => x.device)).toContain("vda");
    expect(diag.disk_details.find((x) => x.device === "vda")!.read_bytes).toBeGreaterThan(0);

    await a.pause(id);
    expect(a.powerState(id)).toBe(POWER_STATE.PAUSED);
    expect(await a.virshForTests(`domstate instance-${id}`)).toBe("paused");
    await a.unpause(id);
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);

    // suspend keeps the guest's memory on disk: it goes on counting from where it was
    const before = await until("an uptime line", async () => lastUptime(await a.consoleOutput(id)));
    await a.suspend(id);
    expect(a.powerState(id)).toBe(POWER_STATE.SUSPENDED);
    expect(await a.virshForTests(`dominfo instance-${id}`)).toMatch(/Managed save:\s+yes/);
    await a.resume(id);
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);
    await until("uptime counting on after resume", async () =>
      (lastUptime(await a.consoleOutput(id)) ?? 0) > before ? true : undefined,
    ).catch(async (e: Error) => {
      const state = await a.virshForTests(`domstate --reason instance-${id}`);
      throw new Error(
        `${e.message} (uptime ${before} before; ${state}): ${(await a.consoleOutput(id)).slice(-600)}`,
      );
    });
    expect(banners(await a.consoleOutput(id), id)).toBe(1);

    await a.triggerCrashDump(id);
    out = await until("the NMI on the console", async () => {
      const o = await a.consoleOutput(id);
      return /NMI/.test(o) ? o : undefined;
    });
    console.info(
      `${FILE}: NMI on the console: ${out
        .split("\n")
        .find((l) => /NMI/.test(l))
        ?.trim()}`,
    );

    const stages: string[] = [];
    const snapshotId = "6b1f0f7e-0000-4000-8000-00000000b001";
    const snap = await a.snapshot(id, snapshotId, async (s) => void stages.push(s));
    expect(stages).toEqual(["image_pending_upload", "image_uploading"]);
    expect(snap).toMatchObject({ disk_format: "qcow2", container_format: "bare" });
    const info = JSON.parse(
      execFileSync("qemu-img", ["info", "--output=json", join(work, "bucket", snapshotId)], {
        timeout: 20_000,
      }).toString(),
    );
    expect(info.format).toBe("qcow2");
    expect(info["backing-filename"]).toBeUndefined();
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);

    // the snapshot runs on the other host, fetched from the bucket into its image cache, and leaves
    // the cache with its guest (that it boots, the API's test shows: e2e/libvirt-guests)
    const fromSnapshot: GuestSpec = {
      ...guest(3, "from-snapshot"),
      image: {
        id: snapshotId,
        name: "alpha-snap",
        properties: { disk_format: "qcow2", image_type: "snapshot" },
      },
    };
    await b.spawn(fromSnapshot);
    expect(existsSync(join(harness!.hosts[1]!.imagesPath, snapshotId))).toBe(true);
    expect(b.powerState(fromSnapshot.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await b.destroy(fromSnapshot.instance_uuid);
    expect(existsSync(join(harness!.hosts[1]!.imagesPath, snapshotId))).toBe(false);

    // the console log goes on across the guest's QEMU processes: each boot one more banner
    await a.reboot(id, "SOFT");
    await bootOf(a, g, 1);
    await a.reboot(id, "HARD");
    await bootOf(a, g, 2);
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);

    // ACPI: the guest's acpid powers it off, well within the shutdown timeout
    const off = Date.now();
    await a.powerOff(id);
    expect(a.powerState(id)).toBe(POWER_STATE.SHUTDOWN);
    expect(await a.virshForTests(`domstate --reason instance-${id}`)).toBe("shut off (shutdown)");
    console.info(`${FILE}: ACPI power-off: ${((Date.now() - off) / 1000).toFixed(1)} s`);
    expect(await a.consoleOutput(id)).toContain("ACPI power button");
    await a.powerOn(id);
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);
    // still in its firmware, nothing answers ACPI: destroyed after the shutdown timeout
    await a.powerOff(id, 1);
    expect(await a.virshForTests(`domstate --reason instance-${id}`)).toBe("shut off (destroyed)");
    await a.powerOn(id);
    // its fifth boot: spawn, soft reboot, hard reboot, the two power-ons
    await until("a new boot", async () =>
      count(await a.consoleOutput(id), "SYSLINUX") > 4 ? true : undefined,
    );
    // the driver's own actions were no events
    expect(events.filter(([e]) => e === id)).toEqual([]);

    // stopped behind the driver's back: a lifecycle event, long before the minute's poll
    execFileSync("virsh", ["-q", "-c", h.uri, "destroy", `instance-${id}`], { timeout: 20_000 });
    await until(
      "the lifecycle event",
      async () => (events.some(([e, p]) => e === id && p === POWER_STATE.SHUTDOWN) ? true : undefined),
      5_000,
    );
    expect(a.powerState(id)).toBe(POWER_STATE.SHUTDOWN);

    await a.destroy(id);
    expect(a.has(id)).toBe(false);
    expect(await a.virshForTests("list --all --name")).not.toContain(id);
    expect(existsSync(join(h.instancesPath, id))).toBe(false);
    await expect(h.exec(["ip", "link", "show", tap])).rejects.toThrow(/does not exist/);
  }, 180_000);

  it("two hosts: a port's security groups enforced on its tap and refreshed (ping and TCP refused, then admitted), a live migration with its disk copied keeps the guest counting and answering on its address, its filters with it; an aborted one leaves it running on the source", async () => {
    const [ha, hb] = harness!.hosts as [LibvirtHost, LibvirtHost];
    // its port filtered: ICMP and TCP 8080 in (a listener of busybox's httpd, from user_data), all out
    const g: GuestSpec = {
      ...guest(2, "mover"),
      user_data: Buffer.from("#!/bin/sh\nhttpd -p 8080 -h /\n").toString("base64"),
    };
    g.ports = g.ports!.map((p) => ({ ...p, filter: filterOf(ICMP_IN, TCP_8080_IN) }));
    const id = g.instance_uuid;
    const ip = g.ports![0]!.fixed_ips[0]!.ip_address;
    const tap = tapName(g.ports![0]!.port_id);
    const ping = (h: LibvirtHost) => h.exec(["ping", "-c1", "-W1", ip]);
    const connect = (h: LibvirtHost, seconds = 3) =>
      h.exec(["timeout", String(seconds), "bash", "-c", `exec 3<>/dev/tcp/${ip}/8080`]);
    const refused = (what: Promise<unknown>) =>
      what.then(
        () => undefined,
        () => true,
      );
    const chains = (h: LibvirtHost) => h.exec(["nft", "list", "table", "bridge", "novaless"]);
    expect(a.facts()).toMatchObject({ security_groups_enforced: true });
    await a.spawn(g);
    expect(await chains(ha)).toContain(`chain o-${tap}`);
    await bootOf(a, g, 0);
    await until("ping on host-a", () => ping(ha));
    await until("TCP 8080 on host-a", () => connect(ha));

    // Nova's refresh_instance_security_rules: ICMP's rule removed, ping is refused within
    // seconds (TCP still admitted); back, ping answers again; TCP's removed, a connect times out
    const withRules = (...rules: PortFilterRule[]) =>
      g.ports!.map((p) => ({ ...p, filter: filterOf(...rules) }));
    const refresh = Date.now();
    await a.applyPortFilters(id, withRules(TCP_8080_IN));
    await until("ping refused", () => refused(ping(ha)), 10_000);
    console.info(
      `${FILE}: ping refused ${((Date.now() - refresh) / 1000).toFixed(1)} s after ICMP's rule went`,
    );
    await connect(ha);
    await a.applyPortFilters(id, withRules(ICMP_IN));
    await until("ping admitted again", () => ping(ha), 10_000);
    expect(await refused(connect(ha, 2))).toBe(true);
    await a.applyPortFilters(id, withRules(ICMP_IN, TCP_8080_IN));
    await until("TCP 8080 admitted again", () => connect(ha), 10_000);
    // kept in the guest's spec: the agent's next start enforces the same
    expect(a.specOf(id)!.ports![0]!.filter!.rules).toEqual([EGRESS, ICMP_IN, TCP_8080_IN]);
    await b.live!.preLiveMigration(g);
    const dest = { host: hb.name, ip: hb.ip, blockMigration: true };
    const job = (abort: AbortController, progress: LiveMigrationProgress[]) => ({
      abort: abort.signal,
      forceComplete: new AbortController().signal,
      onProgress: (p: LiveMigrationProgress) => progress.push(p),
    });

    // aborted once its progress shows (slowed to 1 MiB/s so that the abort lands mid-copy)
    await a.virshForTests(`migrate-setspeed instance-${id} 1`);
    const abort = new AbortController();
    const early: LiveMigrationProgress[] = [];
    const aborted = a.live!.liveMigrate(id, dest, job(abort, early)).then(
      () => undefined,
      (e: unknown) => e,
    );
    await until("progress", async () => (early.length ? true : undefined), 20_000);
    abort.abort();
    expect(await aborted).toBeInstanceOf(LiveMigrationAborted);
    expect(a.has(id)).toBe(true);
    expect(await a.virshForTests(`domstate instance-${id}`)).toBe("running");
    expect(
      execFileSync("virsh", ["-q", "-c", hb.uri, "list", "--all", "--name"], { timeout: 20_000 }).toString(),
    ).not.toContain(id);
    await until("ping on host-a after the abort", () => ha.exec(["ping", "-c1", "-W1", ip]));

    await a.virshForTests(`migrate-setspeed instance-${id} 8796093022207`);
    const before = await until("an uptime line", async () => lastUptime(await a.consoleOutput(id)));
    const progress: LiveMigrationProgress[] = [];
    const t0 = Date.now();
    await a.live!.liveMigrate(id, dest, job(new AbortController(), progress));
    await b.live!.postLiveMigrationAtDestination(g);
    console.info(
      `${FILE}: live migration (--copy-storage-inc) host-a → host-b: ${((Date.now() - t0) / 1000).toFixed(1)} s, ${progress.length} progress report(s), last ${JSON.stringify(progress.at(-1))}`,
    );
    expect(a.has(id)).toBe(false);
    expect(existsSync(join(ha.instancesPath, id))).toBe(false);
    expect(
      execFileSync("virsh", ["-q", "-c", ha.uri, "list", "--all", "--name"], { timeout: 20_000 }).toString(),
    ).not.toContain(id);
    expect(b.powerState(id)).toBe(POWER_STATE.RUNNING);
    expect(await b.virshForTests(`domstate instance-${id}`)).toBe("running");

    // the same guest, not a new boot: its uptime goes on from where it was
    const after = await until("uptime on host-b", async () => lastUptime(await b.consoleOutput(id)));
    expect(after).toBeGreaterThanOrEqual(before);
    expect(await b.consoleOutput(id)).not.toContain("SYSLINUX");
    console.info(`${FILE}: uptime ${before} on host-a before the move, ${after} on host-b after`);
    await until("ping on host-b", () => ping(hb));
    await until("TCP 8080 on host-b", () => connect(hb));
    expect(await hb.exec(["ip", "-o", "link", "show", tap])).toContain("master br-flat");
    // its filters came with it (pre_live_migration) and left host-a
    expect(await chains(hb)).toContain(`chain i-${tap}`);
    expect(await chains(ha)).not.toContain(tap);
    await expect(ha.exec(["ip", "link", "show", tap])).rejects.toThrow(/does not exist/);

    // and back, forced to complete: the guest is paused on host-b so the copy converges (Nova's
    // force_complete without post-copy), and host-a runs it on. Throttled so that
    // the force lands mid-copy (the disk copy counts its zeros against the limit: a few seconds).
    await a.live!.preLiveMigration(g);
    await b.virshForTests(`migrate-setspeed instance-${id} 256`);
    const force = new AbortController();
    const t1 = Date.now();
    const back: LiveMigrationProgress[] = [];
    const moving = b.live!.liveMigrate(
      id,
      { host: ha.name, ip: ha.ip, blockMigration: true },
      { abort: new AbortController().signal, forceComplete: force.signal, onProgress: (p) => back.push(p) },
    );
    await until("progress back", async () => (back.length ? true : undefined), 20_000);
    force.abort();
    await until("paused on host-b", async () =>
      (await b.virshForTests(`domstate instance-${id}`)) === "paused" ? true : undefined,
    );
    await moving;
    await a.live!.postLiveMigrationAtDestination(g);
    console.info(
      `${FILE}: live migration host-b → host-a, force_complete after its first progress: ${((Date.now() - t1) / 1000).toFixed(1)} s, ${back.length} progress report(s)`,
    );
    expect(b.has(id)).toBe(false);
    expect(a.powerState(id)).toBe(POWER_STATE.RUNNING);
    expect(await a.virshForTests(`domstate instance-${id}`)).toBe("running");
    const later = lastUptime(await b.consoleOutput(id).catch(() => "")) ?? after;
    await until("uptime on host-a again", async () =>
      (lastUptime(await a.consoleOutput(id)) ?? 0) > later ? true : undefined,
    );
    await until("ping on host-a again", () => ping(ha));
    expect(await chains(hb)).not.toContain(tap);

    // an agent's start: its guests' filters as their specs say, a gone guest's chains swept
    await ha.exec(["nft", "add", "chain", "bridge", "novaless", "o-tapdeadbeef-00"]);
    const restarted = new LibvirtDriver({
      host: ha.name,
      uri: ha.uri,
      virtType: type,
      instancesPath: ha.instancesPath,
      imagesPath: ha.imagesPath,
      linuxBridgeMappings: ha.bridgeMappings,
      netns: ha.netns,
      pollMs: 60_000,
    });
    await restarted.init();
    await restarted.close();
    expect(await chains(ha)).not.toContain("tapdeadbeef-00");
    expect(await chains(ha)).toContain(`chain o-${tap}`);
    await until("ping after the agent's start", () => ping(ha));

    await a.destroy(id);
    expect(a.has(id)).toBe(false);
    // no rule left of it
    expect(await chains(ha)).not.toContain(tap);
  }, 180_000);

  it("two hosts: a resize carries the disk to the other host through the bucket, grown; revert brings the original back; on its own host the disk is grown in place, the old one kept until revert or confirm", async () => {
    const [ha, hb] = harness!.hosts as [LibvirtHost, LibvirtHost];
    const g = guest(4, "resized");
    const id = g.instance_uuid;
    const bigger: GuestSpec = {
      ...g,
      flavor: { ...g.flavor, id: "2", name: "m1.bigger", memory_mb: 192, root_gb: 2 },
    };
    const diskOf = (h: LibvirtHost, dir = id) => join(h.instancesPath, dir, "disk");
    const info = (file: string) =>
      JSON.parse(
        execFileSync("qemu-img", ["info", "-U", "--output=json", file], { timeout: 20_000 }).toString(),
      ) as { "virtual-size": number; format: string; "backing-filename"?: string };
    // the mark: 64 KiB of 0x5a at 512 MiB, far past the image's 64 MiB (the guest runs from RAM
    // and never writes its disk); a disk made from the image reads zeros there
    const hasMark = (file: string) => {
      const r = spawnSync("qemu-io", ["-r", "-U", "-f", "qcow2", "-c", "read -P 0x5a 512M 64k", file], {
        timeout: 20_000,
      });
      return r.status === 0 && !/verification failed/.test(String(r.stdout));
    };
    const GiB = 2 ** 30;

    // off at once, as a power cut would (the guest never writes its disk), for the mark to go on
    await a.spawn(g);
    await a.virshForTests(`destroy instance-${id}`);
    expect(hasMark(diskOf(ha))).toBe(false);
    execFileSync("qemu-io", ["-f", "qcow2", "-c", "write -P 0x5a 512M 64k", diskOf(ha)], { timeout: 20_000 });
    expect(hasMark(diskOf(ha))).toBe(true);

    // the source flattens the disk into the bucket, once however often the cast comes; it shrinks
    // no disk (Nova's "Unable to resize disk down.")
    const m1 = { uuid: crypto.randomUUID(), sameHost: false };
    await expect(
      a.cold.migrateDiskAndPowerOff(id, m1, { ...g.flavor, name: "m1.none", root_gb: 0 }),
    ).rejects.toThrow(`Unable to resize disk down: instance ${id} on host host-a has disks of 1 GB (root)`);
    expect(migrations.puts).toEqual([]);
    const t0 = Date.now();
    await a.cold.migrateDiskAndPowerOff(id, m1);
    await a.cold.migrateDiskAndPowerOff(id, m1);
    expect(migrations.puts).toEqual([m1.uuid]);
    const handed = info(join(work, "migrations", m1.uuid));
    expect([handed.format, handed["backing-filename"], handed["virtual-size"]]).toEqual([
      "qcow2",
      undefined,
      GiB,
    ]);
    expect(a.powerState(id)).toBe(POWER_STATE.SHUTDOWN);

    // the destination defines it (left off here: test/e2e/libvirt-guests.test.ts boots one), grown
    // to the new flavor, the mark on it: not a disk made from the image
    await b.cold.finishMigration(bigger, m1, false);
    console.info(
      `${FILE}: cold migration host-a → host-b (flatten, bucket, fetch, grow, define): ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );
    expect(info(diskOf(hb))).toMatchObject({ format: "qcow2", "virtual-size": 2 * GiB });
    expect(hasMark(diskOf(hb))).toBe(true);
    expect(await b.dumpxml(id)).toContain("<memory unit='KiB'>196608</memory>");
    expect(b.powerState(id)).toBe(POWER_STATE.SHUTDOWN);
    // (a redelivered cast finds it finished)
    await b.cold.finishMigration(bigger, m1, true);
    expect(b.powerState(id)).toBe(POWER_STATE.SHUTDOWN);

    // revert: the destination's copy goes (revert_resize), the source's is back as it was (left
    // off here: test/e2e/libvirt-guests.test.ts reverts a running one)
    await b.destroy(id);
    await a.cold.finishRevertMigration(g, m1, false);
    expect(info(diskOf(ha))).toMatchObject({ "virtual-size": GiB, "backing-filename": expect.any(String) });
    expect(hasMark(diskOf(ha))).toBe(true);
    expect(existsSync(join(work, "migrations", m1.uuid))).toBe(false);
    expect(existsSync(join(hb.instancesPath, id))).toBe(false);
    expect(a.powerState(id)).toBe(POWER_STATE.SHUTDOWN);
    // a late copy of the source's cast hands nothing over again
    await a.cold.migrateDiskAndPowerOff(id, m1);
    expect(migrations.puts).toEqual([m1.uuid]);
    expect(existsSync(join(work, "migrations", m1.uuid))).toBe(false);

    // its own host: grown in place, the old directory kept beside it; revert puts it back
    const m2 = { uuid: crypto.randomUUID(), sameHost: true };
    await a.cold.migrateDiskAndPowerOff(id, m2);
    expect(migrations.puts).toEqual([m1.uuid]);
    await a.cold.finishMigration(bigger, m2, false);
    expect(info(diskOf(ha))["virtual-size"]).toBe(2 * GiB);
    expect(info(diskOf(ha, `${id}_resize`))["virtual-size"]).toBe(GiB);
    expect(hasMark(diskOf(ha))).toBe(true);
    expect(await a.dumpxml(id)).toContain("<memory unit='KiB'>196608</memory>");
    expect(a.powerState(id)).toBe(POWER_STATE.SHUTDOWN);
    await a.cold.finishRevertMigration(g, m2, false);
    expect(info(diskOf(ha))["virtual-size"]).toBe(GiB);
    expect(existsSync(join(ha.instancesPath, `${id}_resize`))).toBe(false);
    expect(await a.dumpxml(id)).toContain("<memory unit='KiB'>131072</memory>");
    expect(a.powerState(id)).toBe(POWER_STATE.SHUTDOWN);

    // and confirm removes what was kept
    const m3 = { uuid: crypto.randomUUID(), sameHost: true };
    await a.cold.migrateDiskAndPowerOff(id, m3);
    await a.cold.finishMigration(bigger, m3, false);
    await a.cold.confirmMigration(id, m3);
    expect(existsSync(join(ha.instancesPath, `${id}_resize`))).toBe(false);
    expect(info(diskOf(ha))["virtual-size"]).toBe(2 * GiB);
    expect(hasMark(diskOf(ha))).toBe(true);

    // a destination with no disk handed over fails, naming itself, the guest and the move, and
    // keeps nothing
    const lost = crypto.randomUUID();
    await expect(b.cold.finishMigration(bigger, { uuid: lost, sameHost: false }, true)).rejects.toThrow(
      `host host-b could not finish migration ${lost} of instance ${id}: migrations/${lost} is not in the images bucket`,
    );
    expect(b.has(id)).toBe(false);
    expect(existsSync(join(hb.instancesPath, id))).toBe(false);

    await a.destroy(id);
    expect(a.has(id)).toBe(false);
    expect(existsSync(join(ha.instancesPath, id))).toBe(false);
  }, 180_000);
});
