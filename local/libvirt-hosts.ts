// Dev only: N libvirt hosts on this machine, for the libvirt driver's tests against real QEMU.
// Each host is
//  - a network namespace (`ip netns`) with its own management address, on which its daemon
//    listens on qemu+tcp (auth none: only the namespaces reach it) for peer-to-peer migration;
//  - its own libvirtd, in a private mount namespace (`ip netns exec` gives one) where its own
//    directories are bound over /etc/libvirt (its libvirtd.conf with its own host_uuid, its
//    qemu.conf), /run/libvirt, /var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt; its
//    unix socket is kept outside them, so the driver reaches it from the root namespace
//    (qemu+unix:///system?socket=…);
//  - its own instances directory and image cache, outside the bound ones, at the same path in
//    the root namespace (where the driver runs) and in its daemon's. Nova assumes one
//    instances_path on every host, and a migrated domain's XML names its disks by the source's
//    paths: so each daemon also sees every other host's instances and image-cache paths as its
//    own directories (bind mounts), as a real host would see the one instances_path;
//  - a Linux bridge per network (e.g. br-flat), with an address of the host's on it.
// In the root namespace, one bridge without addresses joins the hosts' management links, and one
// bridge per network joins that network's bridges on every host (veth pairs), so a guest moved
// from one host to another answers on the same address. Nothing listens outside the namespaces.
//
// QEMU runs as root with no security driver and no ownership changes (qemu.conf: user and group
// root, dynamic_ownership 0, security_driver "none"), its serial log written by QEMU itself
// (stdio_handler "file": no virtlogd), and without cgroup controllers or a private /dev, so
// the hosts need nothing but the daemon.
//
// A harness whose process died without stopping it (SIGKILL, a crash) leaves its namespaces, their
// daemons and QEMUs, and its links behind. Each harness leaves a lease in LEASES naming its tag
// (every namespace and link it makes is named `<tag>-…`), its process and its directory; the next
// harness to start sweeps what a lease of a dead process names.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { hostCommand } from "../lib/compute/drivers/host-command.js";
import { missingBuildTools } from "../scripts/image/build.js";

/** Where each running harness leaves its lease (tmpfs: a reboot leaves none, and no namespace). */
export const LEASES = "/run/novaless-libvirt-hosts";

interface Lease {
  tag: string;
  pid: number;
  /** its directory, removed with it when the harness made it */
  root: string;
  ownRoot: boolean;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * What harnesses of dead processes left: their namespaces' processes killed (libvirtd, QEMU), the
 * namespaces and links named by their tags removed, their directories too. The names swept.
 */
export async function sweepDeadHarnesses(): Promise<string[]> {
  if (!existsSync(LEASES)) return [];
  const swept: string[] = [];
  for (const file of readdirSync(LEASES).filter((f) => f.endsWith(".json"))) {
    let lease: Lease;
    try {
      lease = JSON.parse(readFileSync(join(LEASES, file), "utf8")) as Lease;
    } catch {
      rmSync(join(LEASES, file), { force: true });
      continue;
    }
    if (alive(lease.pid)) continue;
    const mine = (name: string) => name.startsWith(`${lease.tag}-`);
    const namespaces = (await runCommand(["ip", "netns", "list"], "list namespaces"))
      .split("\n")
      .map((l) => l.split(" ")[0]!)
      .filter(mine);
    for (const ns of namespaces) await killNamespace(ns).catch(() => undefined);
    for (const ns of namespaces)
      await runCommand(["ip", "netns", "del", ns], "remove a stale host").catch(() => undefined);
    const links = (await runCommand(["ip", "-o", "link", "show"], "list links"))
      .split("\n")
      .map((l) => l.split(":")[1]?.trim().split("@")[0] ?? "")
      .filter(mine);
    for (const link of links)
      await runCommand(["ip", "link", "del", link], "remove a stale link").catch(() => undefined);
    if (lease.ownRoot) rmSync(lease.root, { recursive: true, force: true });
    rmSync(join(LEASES, file), { force: true });
    swept.push(...namespaces, ...links);
  }
  return swept;
}

/** Every external command's deadline unless told otherwise. */
const COMMAND_MS = 20_000;
const DAEMON_READY_MS = 30_000;
const DAEMON_STOP_MS = 5_000;

/** A network each host has a bridge for. */
export interface HarnessNetwork {
  /** the physical network Neutron names (provider:physical_network) */
  physnet: string;
  /** the bridge's name on every host (at most 15 characters) */
  bridge: string;
  /** per host, in order: its own address on the network, CIDR form (e.g. 10.20.0.201/24) */
  addresses: string[];
}

export interface LibvirtHostsOptions {
  /** the hosts' names, e.g. ["host-a", "host-b"] */
  hosts: string[];
  networks: HarnessNetwork[];
  /** where every host's directories go (default: a new temporary directory) */
  root?: string;
}

export interface LibvirtHost {
  name: string;
  /** the network namespace */
  netns: string;
  /** the driver's connection from the root namespace (qemu+unix, the daemon's own socket) */
  uri: string;
  /** the management address: other hosts' daemons migrate to qemu+tcp://<ip>/system */
  ip: string;
  hostUuid: string;
  instancesPath: string;
  imagesPath: string;
  /** physical network → Linux bridge, for the driver's linuxBridgeMappings */
  bridgeMappings: Record<string, string>;
  /** the daemon's log */
  logFile: string;
  /** a command in the host's network namespace, with a deadline */
  exec(argv: string[], timeoutMs?: number): Promise<string>;
}

export interface LibvirtHosts {
  hosts: LibvirtHost[];
  root: string;
  /** destroys every domain, stops the daemons, removes namespaces, bridges, links and directories */
  stop(): Promise<void>;
}

/** Debian packages of the programs the harness runs. */
const TOOLS: readonly [program: string, pkg: string][] = [
  ["qemu-system-x86_64", "qemu-system-x86"],
  ["qemu-img", "qemu-utils"],
  ["libvirtd", "libvirt-daemon-system libvirt-daemon-driver-qemu"],
  ["virsh", "libvirt-clients"],
  ["genisoimage", "genisoimage"],
  ["ip", "iproute2"],
  ["ping", "iputils-ping"],
  // the guests' security groups (lib/compute/drivers/libvirt-filters.ts)
  ["nft", "nftables"],
];

const onPath = (program: string): boolean =>
  (process.env.PATH ?? "")
    .split(":")
    .concat(["/usr/sbin", "/sbin"])
    .some((d) => d && existsSync(join(d, program)));

/** Why the harness cannot run here (not root, a program missing: which Debian package), or undefined. */
export function libvirtHostsUnavailable(): string | undefined {
  if (process.platform !== "linux") return "the libvirt hosts need Linux";
  if (process.getuid?.() !== 0) return "the libvirt hosts need root (network namespaces, libvirtd)";
  const missing = TOOLS.filter(([program]) => !onPath(program));
  if (missing.length)
    return `missing ${missing.map(([p]) => p).join(", ")}: apt-get install ${[...new Set(missing.map(([, pkg]) => pkg))].join(" ")}`;
  return undefined;
}

/**
 * Why real guests cannot run here: no libvirt hosts, or a guest image that cannot be built (its
 * Debian packages named); undefined when they can.
 */
export function realGuestsUnavailable(): string | undefined {
  const tools = missingBuildTools();
  return (
    libvirtHostsUnavailable() ??
    (tools.missing.length
      ? `the guest image cannot be built: missing ${tools.missing.join(", ")} (Debian's ${tools.packages.join(" ")})`
      : undefined)
  );
}

/** Runs a command with a deadline; its error names the command, what it was for, and its output. */
export function runCommand(argv: string[], purpose: string, timeoutMs = COMMAND_MS): Promise<string> {
  return hostCommand(argv, { host: "this machine", purpose, timeoutMs });
}

/** The directories each daemon has of its own, bound over the system's. */
const BOUND = {
  etc: "/etc/libvirt",
  run: "/run/libvirt",
  lib: "/var/lib/libvirt",
  log: "/var/log/libvirt",
  cache: "/var/cache/libvirt",
} as const;

interface HostDirs {
  dir: string;
  sock: string;
  instances: string;
  images: string;
}

function libvirtdConf(dirs: HostDirs, ip: string, hostUuid: string): string {
  return `listen_tls = 0
listen_tcp = 1
listen_addr = "${ip}"
auth_tcp = "none"
unix_sock_dir = "${dirs.sock}"
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
host_uuid = "${hostUuid}"
log_outputs = "3:file:${join(dirs.dir, "libvirtd.log")}"
`;
}

function qemuConf(ip: string): string {
  return `user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
stdio_handler = "file"
namespaces = []
cgroup_controllers = []
migration_address = "${ip}"
migration_host = "${ip}"
`;
}

/** The daemon's start: its mount namespace's binds, then libvirtd itself. */
function daemonScript(own: HostDirs, others: HostDirs[]): string {
  const binds = Object.entries(BOUND).map(([k, path]) => `mount --bind '${join(own.dir, k)}' '${path}'`);
  for (const o of others) {
    binds.push(
      `mount --bind '${own.instances}' '${o.instances}'`,
      `mount --bind '${own.images}' '${o.images}'`,
    );
  }
  return `set -e; ${binds.join("; ")}; exec libvirtd -f /etc/libvirt/libvirtd.conf --listen --pid-file '${join(own.dir, "libvirtd.pid")}'`;
}

export async function startLibvirtHosts(opts: LibvirtHostsOptions): Promise<LibvirtHosts> {
  const unavailable = libvirtHostsUnavailable();
  if (unavailable) throw new Error(`cannot start libvirt hosts: ${unavailable}`);
  if (!existsSync(BOUND.etc))
    throw new Error(
      `cannot start libvirt hosts: ${BOUND.etc} is missing (apt-get install libvirt-daemon-system)`,
    );
  // mount points only (libvirtd makes them when it runs on the machine itself)
  for (const path of Object.values(BOUND)) mkdirSync(path, { recursive: true });
  await sweepDeadHarnesses();
  const root = opts.root ?? mkdtempSync(join(tmpdir(), "novaless-libvirt-hosts-"));
  // short: interface names are at most 15 characters
  const tag = `nl${randomBytes(2).toString("hex")}`;
  const lease = join(LEASES, `${tag}.json`);
  mkdirSync(LEASES, { recursive: true });
  writeFileSync(lease, JSON.stringify({ tag, pid: process.pid, root, ownRoot: !opts.root } satisfies Lease));
  const daemons: ChildProcess[] = [];
  const namespaces: string[] = [];
  const rootLinks: string[] = [];
  const hosts: LibvirtHost[] = [];

  const stop = async () => {
    const errors: string[] = [];
    const attempt = (p: Promise<unknown>) => p.catch((e: Error) => void errors.push(e.message));
    for (const h of hosts) await attempt(destroyDomains(h));
    for (const d of daemons) await attempt(stopDaemon(d));
    // whatever still runs in a host's namespace (a QEMU its daemon left) is ours: killed
    for (const ns of namespaces) await attempt(killNamespace(ns));
    for (const ns of namespaces) await attempt(runCommand(["ip", "netns", "del", ns], "remove a host"));
    for (const link of rootLinks)
      await attempt(runCommand(["ip", "link", "del", link], "remove a link").catch(() => undefined));
    if (!opts.root) rmSync(root, { recursive: true, force: true });
    // a stop that could not remove everything leaves its lease, for the next harness to sweep
    if (errors.length) throw new Error(`stopping the libvirt hosts: ${errors.join("; ")}`);
    rmSync(lease, { force: true });
  };

  try {
    const ip = (cmd: string[], what: string) => runCommand(["ip", ...cmd], what);
    const mgmt = `${tag}-mgmt`;
    await ip(["link", "add", mgmt, "type", "bridge"], "the hosts' management bridge");
    rootLinks.push(mgmt);
    await ip(["link", "set", mgmt, "up"], "the hosts' management bridge");
    const netBridges = opts.networks.map((_, j) => `${tag}-net${j}`);
    for (const br of netBridges) {
      await ip(["link", "add", br, "type", "bridge"], "a network's bridge between the hosts");
      rootLinks.push(br);
      await ip(["link", "set", br, "up"], "a network's bridge between the hosts");
    }

    const dirs: HostDirs[] = opts.hosts.map((name) => {
      const dir = join(root, name);
      return { dir, sock: join(dir, "sock"), instances: join(dir, "instances"), images: join(dir, "_base") };
    });
    for (const d of dirs) {
      for (const sub of [...Object.keys(BOUND), "sock", "instances", "_base"])
        mkdirSync(join(d.dir, sub), { recursive: true });
    }

    const starting: Promise<void>[] = [];
    const ready: LibvirtHost[] = [];
    for (const [i, name] of opts.hosts.entries()) {
      const ns = `${tag}-${name}`;
      const d = dirs[i]!;
      const addr = `10.254.0.${i + 1}`;
      await ip(["netns", "add", ns], `host ${name}'s network namespace`);
      namespaces.push(ns);
      const inNs = (cmd: string[], what: string) => ip(["-n", ns, ...cmd], `host ${name}: ${what}`);
      await inNs(["link", "set", "lo", "up"], "loopback");
      const mgmtLink = `${tag}-h${i}m`;
      await ip(
        ["link", "add", mgmtLink, "type", "veth", "peer", "name", "mgmt", "netns", ns],
        `host ${name}'s link`,
      );
      rootLinks.push(mgmtLink);
      await ip(["link", "set", mgmtLink, "master", mgmt, "up"], `host ${name}'s link`);
      await inNs(["addr", "add", `${addr}/24`, "dev", "mgmt"], "management address");
      await inNs(["link", "set", "mgmt", "up"], "management link");
      const bridgeMappings: Record<string, string> = {};
      for (const [j, net] of opts.networks.entries()) {
        await inNs(["link", "add", net.bridge, "type", "bridge"], `bridge ${net.bridge}`);
        const uplink = `${tag}-h${i}n${j}`;
        await ip(
          ["link", "add", uplink, "type", "veth", "peer", "name", `up${j}`, "netns", ns],
          `host ${name}'s uplink`,
        );
        rootLinks.push(uplink);
        await ip(["link", "set", uplink, "master", netBridges[j]!, "up"], `host ${name}'s uplink`);
        await inNs(["link", "set", `up${j}`, "master", net.bridge, "up"], `uplink of ${net.bridge}`);
        await inNs(["link", "set", net.bridge, "up"], `bridge ${net.bridge}`);
        const own = net.addresses[i];
        if (own) await inNs(["addr", "add", own, "dev", net.bridge], `address on ${net.bridge}`);
        bridgeMappings[net.physnet] = net.bridge;
      }

      const hostUuid = randomUUID();
      writeFileSync(join(d.dir, "etc", "libvirtd.conf"), libvirtdConf(d, addr, hostUuid));
      writeFileSync(join(d.dir, "etc", "qemu.conf"), qemuConf(addr));
      const logFile = join(d.dir, "libvirtd.out");
      const out = openSync(logFile, "a");
      const others = dirs.filter((_, k) => k !== i);
      const daemon = spawn("ip", ["netns", "exec", ns, "sh", "-c", daemonScript(d, others)], {
        stdio: ["ignore", out, out],
        detached: true,
      });
      daemons.push(daemon);
      const uri = `qemu+unix:///system?socket=${join(d.sock, "libvirt-sock")}`;
      starting.push(untilAnswers(uri, daemon, name, logFile));
      ready.push({
        name,
        netns: ns,
        uri,
        ip: addr,
        hostUuid,
        instancesPath: d.instances,
        imagesPath: d.images,
        bridgeMappings,
        logFile: join(d.dir, "libvirtd.log"),
        exec: async (argv, timeoutMs) =>
          await runCommand(["ip", "netns", "exec", ns, ...argv], `in host ${name}`, timeoutMs),
      });
    }
    // the daemons start side by side: each probes QEMU's capabilities into its own cache first
    await Promise.all(starting);
    hosts.push(...ready);
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
  return { hosts, root, stop };
}

/** Waits for the daemon to answer on its socket; its own output when it does not. */
async function untilAnswers(uri: string, daemon: ChildProcess, host: string, logFile: string): Promise<void> {
  const deadline = Date.now() + DAEMON_READY_MS;
  let last = "";
  while (Date.now() < deadline) {
    if (daemon.exitCode !== null)
      throw new Error(
        `libvirtd of host ${host} exited (${daemon.exitCode}): ${readFileSync(logFile, "utf8").trim()}`,
      );
    try {
      await runCommand(["virsh", "-q", "-c", uri, "version"], `host ${host}'s libvirtd`, 5000);
      return;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(200);
  }
  throw new Error(`libvirtd of host ${host} did not answer within ${DAEMON_READY_MS} ms: ${last}`);
}

/** Every domain of the host destroyed and undefined (with its managed save). */
async function destroyDomains(h: LibvirtHost): Promise<void> {
  const virsh = (args: string[]) => runCommand(["virsh", "-q", "-c", h.uri, ...args], `host ${h.name}`);
  const names = (await virsh(["list", "--all", "--name"])).split("\n").filter(Boolean);
  for (const n of names) {
    await virsh(["destroy", n]).catch(() => undefined);
    await virsh(["undefine", "--managed-save", n]).catch(() => undefined);
  }
}

async function stopDaemon(d: ChildProcess): Promise<void> {
  if (d.exitCode !== null || d.signalCode !== null || d.pid === undefined) return;
  const exited = new Promise((resolve) => d.once("exit", resolve));
  process.kill(d.pid, "SIGTERM");
  const timer = setTimeout(() => d.pid && process.kill(d.pid, "SIGKILL"), DAEMON_STOP_MS);
  await exited;
  clearTimeout(timer);
}

async function killNamespace(ns: string): Promise<void> {
  const pids = (await runCommand(["ip", "netns", "pids", ns], `processes of ${ns}`))
    .split("\n")
    .filter(Boolean)
    .map(Number);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
}
