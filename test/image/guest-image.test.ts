// The project's guest image (scripts/image/build.ts), booted with plain qemu-system-x86_64 from a
// qcow2 overlay, with a config drive made as the libvirt driver makes one (config-drive.ts,
// genisoimage) on an IDE cdrom, its virtio NIC's tap on a bridge in a network namespace of the
// test's own. It must show its banner (uuid, hostname, the fixed IP), count its uptime, run its
// user_data (which also reads back the key the drive gave), answer ping from the bridge, print
// an NMI and power off on the ACPI power button; then once more with the drive on a virtio disk.
// KVM when it works here, else TCG (NOVALESS_GUEST_ACCEL=kvm|tcg decides). Needs root (the
// namespace and the tap); without it or the tools this file says why and skips, except in CI,
// where it fails.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeConfigDrive } from "../../lib/compute/drivers/config-drive.js";
import type { GuestPort } from "../../lib/compute/drivers/driver.js";
import { ensureGuestImage, missingBuildTools } from "../../scripts/image/build.js";
import { guestSpec } from "../drivers/guest.js";

const has = (command: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

function missingPrerequisites(): string[] {
  const why: string[] = [];
  if (process.getuid?.() !== 0) why.push("not root (the test makes a network namespace and a tap)");
  for (const [command, pkg] of [
    ["qemu-system-x86_64", "qemu-system-x86"],
    ["qemu-img", "qemu-utils"],
    ["genisoimage", "genisoimage"],
    ["ip", "iproute2"],
    ["ping", "iputils-ping"],
  ] as const)
    if (!has(command)) why.push(`${command} is missing (Debian's ${pkg})`);
  const build = missingBuildTools();
  if (build.missing.length > 0)
    why.push(`the image build lacks ${build.missing.join(", ")} (Debian's ${build.packages.join(" ")})`);
  if (!existsSync("/dev/net/tun")) why.push("/dev/net/tun is missing");
  return why;
}

const missing = missingPrerequisites();
const CI = Boolean(process.env.CI);
if (missing.length > 0 && !CI) console.warn(`test/image/guest-image.test.ts: skipped: ${missing.join("; ")}`);

const NS = `novaless-img-${process.pid}`;
const GUEST_IP = "192.0.2.10";
const BRIDGE_IP = "192.0.2.1";
const MAC = "fa:16:3e:00:0a:01";
const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGd1ZXN0LWltYWdlLXRlc3Qta2V5LW5vdC1yZWFs guest-image-test";
const USER_DATA = `#!/bin/sh
echo "user_data ran on $(hostname)"
echo "user_data authorized_keys: $(cat /root/.ssh/authorized_keys)"
`;

const port: GuestPort = {
  port_id: "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9",
  network_id: "9f8e7d6c-0000-4000-8000-000000000001",
  network_name: "test",
  mac_address: MAC,
  fixed_ips: [
    {
      subnet_id: "5e6f7a8b-0000-4000-8000-000000000001",
      ip_address: GUEST_IP,
      version: 4,
      cidr: "192.0.2.0/24",
      gateway_ip: BRIDGE_IP,
      dns_nameservers: ["192.0.2.53"],
      host_routes: [],
    },
  ],
  network_type: "flat",
  physical_network: "physnet1",
  segmentation_id: null,
  mtu: 1500,
};
const guest = guestSpec("guest-image", {
  hostname: "image-test",
  key_name: "test",
  key_data: `${KEY}\n`,
  user_data: Buffer.from(USER_DATA).toString("base64"),
  ports: [port],
});

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: "pipe", timeout: 10_000 });

interface Guest {
  child: ChildProcess;
  serial: string;
  qmp: string;
  exit: Promise<number | null>;
  stderr: () => string;
}

let dir = "";
let image = "";
const guests: Guest[] = [];

/** A guest of an overlay of the image: the config drive `drive` ("ide" cdrom or "virtio" disk). */
function boot(name: string, accel: string, drive: "ide" | "virtio", nic: boolean): Guest {
  const overlay = join(dir, `${name}.qcow2`);
  rmSync(overlay, { force: true });
  execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", image, overlay], {
    timeout: 30_000,
  });
  const serial = join(dir, `${name}.log`);
  const qmp = join(dir, `${name}.qmp`);
  rmSync(serial, { force: true });
  const cdrom = join(dir, "disk.config");
  const args = [
    ...["-accel", accel, "-m", "128", "-nodefaults", "-display", "none", "-no-reboot"],
    ...["-serial", `file:${serial}`, "-qmp", `unix:${qmp},server=on,wait=off`],
    ...["-drive", `file=${overlay},if=virtio,format=qcow2`],
    ...(drive === "ide"
      ? ["-drive", `file=${cdrom},if=ide,media=cdrom,format=raw,readonly=on`]
      : ["-drive", `file=${cdrom},if=virtio,format=raw,readonly=on`]),
    ...(nic
      ? [
          "-netdev",
          "tap,id=n0,ifname=tap0,script=no,downscript=no",
          "-device",
          `virtio-net-pci,netdev=n0,mac=${MAC}`,
        ]
      : []),
  ];
  // `ip netns exec` execs qemu itself, so the child is qemu (its tap is made in the namespace)
  const child = spawn("ip", ["netns", "exec", NS, "qemu-system-x86_64", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const g = { child, serial, qmp, exit, stderr: () => stderr };
  guests.push(g);
  return g;
}

const consoleOf = (g: Guest) => (existsSync(g.serial) ? readFileSync(g.serial, "utf8") : "");

/** Waits for `pattern` on the guest's console; fails early if qemu exits or says `failOn`. */
async function waitFor(
  g: Guest,
  pattern: RegExp,
  timeoutMs: number,
  failOn?: RegExp,
): Promise<RegExpMatchArray> {
  const until = Date.now() + timeoutMs;
  let exited = false;
  void g.exit.then(() => {
    exited = true;
  });
  for (;;) {
    const m = consoleOf(g).match(pattern);
    if (m) return m;
    const failed = failOn?.test(g.stderr());
    if (exited || failed || Date.now() > until)
      throw new Error(
        `guest console: no ${pattern} ${exited ? "(qemu exited)" : failed ? `(qemu: ${failOn})` : `after ${timeoutMs / 1000} s`}\n` +
          `--- console ---\n${consoleOf(g).slice(-3000)}\n--- qemu stderr ---\n${g.stderr()}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One QMP command (after the capabilities handshake); its `return`. */
function qmp(g: Guest, command: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const conn = createConnection(g.qmp);
    const timer = setTimeout(() => {
      conn.destroy();
      reject(new Error(`QMP ${command}: no answer in 10 s`));
    }, 10_000);
    let buffered = "";
    let step = 0;
    conn.on("data", (d) => {
      buffered += d.toString();
      let nl = buffered.indexOf("\n");
      while (nl >= 0) {
        const msg = JSON.parse(buffered.slice(0, nl)) as { QMP?: unknown; return?: unknown; error?: unknown };
        buffered = buffered.slice(nl + 1);
        nl = buffered.indexOf("\n");
        if (msg.error) {
          clearTimeout(timer);
          conn.end();
          return reject(new Error(`QMP ${command}: ${JSON.stringify(msg.error)}`));
        }
        if (msg.QMP) conn.write(`${JSON.stringify({ execute: "qmp_capabilities" })}\n`);
        else if ("return" in msg && step++ === 0) conn.write(`${JSON.stringify({ execute: command })}\n`);
        else if ("return" in msg) {
          clearTimeout(timer);
          conn.end();
          resolve(msg.return);
        }
      }
    });
    conn.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`QMP ${command}: ${err.message}`));
    });
  });
}

async function stop(g: Guest): Promise<void> {
  if (g.child.exitCode !== null || g.child.signalCode !== null) return;
  g.child.kill("SIGKILL");
  await g.exit;
}

/**
 * KVM where /dev/kvm opens and a guest gets as far as its bootloader on it (a nested or partial
 * KVM can fail inside the BIOS), else TCG.
 */
async function chooseAccel(): Promise<{ accel: string; why: string }> {
  const asked = process.env.NOVALESS_GUEST_ACCEL;
  if (asked) return { accel: asked, why: "NOVALESS_GUEST_ACCEL" };
  try {
    accessSync("/dev/kvm", constants.R_OK | constants.W_OK);
  } catch {
    return { accel: "tcg", why: "no usable /dev/kvm" };
  }
  const started = Date.now();
  const probe = boot("kvm-probe", "kvm", "ide", false);
  const took = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  try {
    await waitFor(probe, /SYSLINUX/, 5_000, /KVM internal error/);
    return { accel: "kvm", why: `/dev/kvm works (bootloader after ${took()})` };
  } catch {
    const error = probe.stderr().match(/KVM internal error[^\n]*/)?.[0] ?? "no bootloader within 5 s";
    return { accel: "tcg", why: `KVM failed here (${error}, after ${took()})` };
  } finally {
    await stop(probe);
  }
}

describe.skipIf(missing.length > 0 && !CI)("the guest image (build/guest.qcow2)", () => {
  let g: Guest;
  let accel = "tcg";
  let booted = 0;

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`cannot run, and CI skips nothing: ${missing.join("; ")}`);
    const built = await ensureGuestImage();
    image = built.path;
    dir = mkdtempSync(join(tmpdir(), "novaless-guest-image-"));
    await makeConfigDrive(guest, join(dir, "disk.config"), "bridge", "the test");
    ip("netns", "add", NS);
    ip("-n", NS, "link", "set", "lo", "up");
    ip("-n", NS, "link", "add", "br0", "type", "bridge");
    ip("-n", NS, "addr", "add", `${BRIDGE_IP}/24`, "dev", "br0");
    ip("-n", NS, "link", "set", "br0", "up");
    ip("-n", NS, "tuntap", "add", "dev", "tap0", "mode", "tap");
    ip("-n", NS, "link", "set", "tap0", "master", "br0", "up");
    const chosen = await chooseAccel();
    accel = chosen.accel;
    console.info(
      `guest image: ${image} (${built.built ? `built in ${built.built.seconds.toFixed(1)} s` : "fresh, reused"}); ` +
        `accelerator ${accel}: ${chosen.why}`,
    );
    booted = Date.now();
    g = boot("guest", accel, "ide", true);
  });

  afterAll(async () => {
    for (const guest of guests) await stop(guest);
    try {
      ip("netns", "del", NS);
    } catch {
      // not made (the test skipped or failed before)
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("boots to its banner: the config drive's uuid, hostname and fixed IP", async () => {
    await waitFor(g, /novaless-guest ready/, 120_000);
    console.info(
      `guest image: banner ${((Date.now() - booted) / 1000).toFixed(1)} s after qemu started (${accel})`,
    );
    const out = consoleOf(g);
    expect(out).toContain("novaless-guest: config drive /dev/sr0 mounted");
    expect(out).toContain(`novaless-guest uuid ${guest.instance_uuid}`);
    expect(out).toContain("novaless-guest hostname image-test");
    expect(out).toContain(`novaless-guest address eth0 ${GUEST_IP}/24`);
  });

  it("prints its uptime every second, counting up", async () => {
    const first = Number((await waitFor(g, /novaless-guest uptime (\d+)/, 30_000))[1]);
    await waitFor(g, new RegExp(`novaless-guest uptime ${first + 2}\\b`), 30_000);
    const counts = [...consoleOf(g).matchAll(/novaless-guest uptime (\d+)/g)].map((m) => Number(m[1]));
    expect(counts.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]!);
  });

  it("runs its user_data script, after writing the drive's public key", async () => {
    await waitFor(g, /novaless-guest: user_data exited 0/, 30_000);
    const out = consoleOf(g);
    expect(out).toContain("user_data ran on image-test");
    expect(out).toContain(`user_data authorized_keys: ${KEY}`);
  });

  it("answers ping on its fixed IP, from the bridge", async () => {
    let last: unknown;
    for (let i = 0; i < 5; i++) {
      try {
        execFileSync("ip", ["netns", "exec", NS, "ping", "-c1", "-W2", GUEST_IP], {
          stdio: "pipe",
          timeout: 10_000,
        });
        return;
      } catch (err) {
        last = err;
      }
    }
    throw new Error(`ping ${GUEST_IP} failed 5 times: ${String(last)}`);
  });

  it("prints an NMI on its console (virsh inject-nmi)", async () => {
    await qmp(g, "inject-nmi");
    await waitFor(g, /NMI received/, 30_000);
  });

  it("powers off on the ACPI power button (virsh shutdown)", async () => {
    await qmp(g, "system_powerdown");
    const code = await Promise.race([g.exit, new Promise((r) => setTimeout(() => r("timeout"), 60_000))]);
    expect(code, consoleOf(g).slice(-2000)).toBe(0);
    expect(consoleOf(g)).toContain("novaless-guest: ACPI power button: powering off");
    expect(consoleOf(g)).toContain("reboot: Power down");
  });

  it("finds its config drive on a virtio disk too", async () => {
    // booted after the first is gone: two TCG guests at once starve each other on 2 cores
    const v = boot("virtio-drive", accel, "virtio", false);
    await waitFor(v, /novaless-guest ready/, 120_000);
    expect(consoleOf(v)).toMatch(/novaless-guest: config drive \/dev\/vd[b-z] mounted/);
    expect(consoleOf(v)).toContain(`novaless-guest uuid ${guest.instance_uuid}`);
    await stop(v);
  });
});
