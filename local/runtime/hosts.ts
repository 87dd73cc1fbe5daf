// The runtime's compute hosts: their names, places and drivers, their agents (the event-driven
// fleet simulator's, or one long-polling ComputeAgent each), their start, stop and restart, and
// the heartbeat rate one process can carry.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAs } from "../../lib/aws/identity.js";
import { ComputeAgent, type HostAgent } from "../../lib/compute/agent.js";
import type { HostIdentity } from "../../lib/compute/build-path.js";
import { machineSize } from "../../lib/compute/discover.js";
import type { Driver } from "../../lib/compute/drivers/driver.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { DiskSpoolStore, MemorySpoolStore, type SpoolStore } from "../../lib/compute/spool.js";
import { schedulerConfig } from "../../lib/config.js";
import { log } from "../../lib/log.js";
import type { Emulators } from "../emulators.js";
import { hostIdentityOf } from "../iam/identities.js";
import { type LibvirtHosts, libvirtHostsUnavailable, startLibvirtHosts } from "../libvirt-hosts.js";
import { Fleet, startAll } from "../simulator.js";
import type { HostHandle, RuntimeOptions } from "./options.js";

/** Runs `fn` as the host's own session. */
export const asHost =
  (name: string) =>
  <T>(fn: () => T): T =>
    runAs(hostIdentityOf(name), fn);

/** `count` hosts named host-1 … host-N, or the names given (duplicates refused). */
export function hostNames(hosts: number | string[]): string[] {
  if (typeof hosts === "number") return Array.from({ length: hosts }, (_, i) => `host-${i + 1}`);
  const dup = hosts.find((h, i) => hosts.indexOf(h) !== i);
  if (dup !== undefined) throw new Error(`host ${dup} is listed twice`);
  if (hosts.length === 0) throw new Error("at least one host is needed");
  return hosts;
}

/**
 * Heartbeats a one-process fleet can carry. Each is a report through SQS, the compute-events
 * consumer and a write, all on this process's one thread (about 10 ms of CPU here); in AWS the
 * consumer scales out. Past this rate the local runtime stretches report_interval, and
 * service_down_time with it (Nova's three missed beats), unless the caller set either.
 */
const LOCAL_HEARTBEATS_PER_SECOND = 50;

export function localLiveness(hosts: number, opts: RuntimeOptions): Record<string, string> {
  const set = (name: string) => process.env[name] !== undefined || opts.env?.[name] !== undefined;
  const configured = schedulerConfig().report_interval;
  if (
    opts.heartbeatSeconds !== undefined ||
    set("NOVALESS_REPORT_INTERVAL") ||
    set("NOVALESS_SERVICE_DOWN_TIME")
  )
    return {};
  const interval = Math.ceil(hosts / LOCAL_HEARTBEATS_PER_SECOND);
  if (interval <= configured) return {};
  log.info("runtime.heartbeats_stretched", {
    hosts,
    report_interval: interval,
    service_down_time: 3 * interval,
    why: `${hosts} hosts at report_interval ${configured} s would be more heartbeats than one process carries`,
  });
  return { NOVALESS_REPORT_INTERVAL: String(interval), NOVALESS_SERVICE_DOWN_TIME: String(3 * interval) };
}

/** Where the hosts report and which queues are theirs. */
interface HostWiring {
  eventsUrl: string;
  computeQueuePrefix: string;
}

/** What the hosts' start is paced by: the invocations compute-events can run at once. */
interface RegistrationPace {
  /** compute-events' reserved concurrency; undefined: it draws on the unreserved pool */
  computeEventsConcurrency: number | undefined;
}

/** The hosts, their agents started (registered), and how each is stopped, killed or restarted. */
export interface Hosts {
  hosts: Map<string, HostHandle>;
  killHost(name: string): Promise<void>;
  /** a fresh agent for the host, once it has registered */
  restartHost(name: string): Promise<void>;
  /** a fresh agent for the host, answered once the old one is gone (the HTTP route) */
  restartHostRoute(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startHosts(
  opts: RuntimeOptions,
  names: string[],
  emulators: Emulators,
  wiring: HostWiring,
  pace: RegistrationPace,
): Promise<Hosts> {
  const fleet =
    (opts.transport ?? "simulated") === "simulated"
      ? new Fleet({
          heartbeatSeconds: opts.heartbeatSeconds ?? schedulerConfig().report_interval,
          sweepSeconds: opts.sweepSeconds,
          ...wiring,
        })
      : undefined;
  if (fleet) {
    emulators.gateway?.onMessageSent((sent) => fleet.messageSent(sent));
    emulators.gateway?.onQueueCreated((name) => fleet.queueCreated(name));
  }
  const newAgent = (h: Omit<HostHandle, "agent">, i: number): HostAgent => {
    const identity = hostIdentity(opts, h, i);
    return fleet
      ? fleet.agent(identity, h.spool)
      : new ComputeAgent({
          ...identity,
          spool: h.spool,
          asHost: (fn) => runAs(hostIdentityOf(h.name), fn),
          ...wiring,
          // short locally: a stop aborts the poll, and the emulator, as SQS may, can still hand
          // the aborted poll a message (hidden for the visibility timeout)
          waitTimeSeconds: 1,
          heartbeatSeconds: opts.heartbeatSeconds ?? schedulerConfig().report_interval,
          syncPowerStateSeconds: 5,
        });
  };
  const started = Date.now();
  const spoolsPath = mkdtempSync(join(tmpdir(), "novaless-spools-"));
  const removeSpools = () => rmSync(spoolsPath, { recursive: true, force: true });
  let hosts: Map<string, HostHandle>;
  // libvirt: each host a namespace and a daemon of its own, made before its driver connects
  const libvirt = opts.driver === "libvirt" ? await startLocalLibvirtHosts(names) : undefined;
  try {
    hosts = await createHosts(opts, names, newAgent, spoolsPath, registrationConcurrency(pace), libvirt);
  } catch (e) {
    removeSpools();
    fleet?.stop();
    await libvirt?.stop();
    throw e;
  }
  const stop = async () => {
    await Promise.all([...hosts.values()].map((h) => asHost(h.name)(() => h.agent.stop())));
    // A real host's guests outlive its agent; the local runtime's leave with it (an exec
    // guest is a process of this machine, a libvirt guest a QEMU of its daemon).
    if (opts.driver === "exec" || opts.driver === "libvirt")
      for (const h of hosts.values())
        for (const g of h.driver.list())
          await h.driver.destroy(g.instance_uuid).catch((e) =>
            log.warn("runtime.guest_destroy_failed", {
              host: h.name,
              instance_uuid: g.instance_uuid,
              error: e,
            }),
          );
    await Promise.all([...hosts.values()].map((h) => h.driver.close()));
    // then the daemons, namespaces, bridges and directories (what a guest left, too)
    await libvirt?.stop();
    removeSpools();
    fleet?.stop();
  };
  log.info("runtime.hosts_ready", {
    hosts: hosts.size,
    transport: fleet ? "simulated" : "long-poll",
    ms: Date.now() - started,
  });

  const killHost = (name: string) => asHost(name)(() => handle(hosts, name).agent.kill());
  /** A new agent for the host; `started` resolves once it has registered (the old one stopped first). */
  const replaceAgent = (name: string) =>
    asHost(name)(async () => {
      const h = handle(hosts, name);
      await h.agent.stop();
      h.agent = newAgent(h, [...hosts.keys()].indexOf(name));
      return { started: asHost(name)(() => h.agent.start()) };
    });
  return {
    hosts,
    killHost,
    restartHost: async (name) => {
      await (await replaceAgent(name)).started;
    },
    // The route answers once the old agent is gone: the new one registers when compute-events
    // answers, which during an outage may be minutes away (a real host's restart does not wait
    // for it either).
    restartHostRoute: async (name) => {
      const { started } = await replaceAgent(name);
      // a stop of the runtime (or of the host) while the new agent waits to register ends it
      started.catch((e) => {
        if ((e as Error).name !== "AbortError")
          log.error("runtime.host_restart_failed", { host: name, error: e });
      });
    },
    stop,
  };
}

function handle(hosts: Map<string, HostHandle>, name: string): HostHandle {
  const h = hosts.get(name);
  if (!h) throw new Error(`no host ${name} in this runtime`);
  return h;
}

/** The i-th host of the runtime: its place, size and address. */
function hostIdentity(opts: RuntimeOptions, h: Omit<HostHandle, "agent">, i: number): HostIdentity {
  const azs = opts.availabilityZones ?? ["az1", "az2"];
  const { name: host, driver, libvirt } = h;
  const size = h.size ?? { vcpus: 16, memory_mb: 65536, local_gb: 1000 };
  return {
    host,
    availability_zone: azs[i % azs.length]!,
    inventories: inventoriesFor(size),
    host_ip: libvirt?.ip ?? `10.${Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`,
    driver,
  };
}

/** Hosts registering at once: enough to keep the emulators busy, few enough not to time out. */
const REGISTRATION_CONCURRENCY = 32;

/**
 * The runtime starts its fleet in waves no wider than compute-events can take: a registration
 * past its reserved concurrency is throttled (429, as Lambda answers) and sent again after a
 * backoff, so a wider wave only adds refused requests (each signed and judged by the gateway) and
 * leaves slots idle while the refused hosts wait out their backoffs. Lambda still refuses the
 * reservation's excess: a heartbeat or a restart beside the start is throttled as before.
 */
function registrationConcurrency(pace: RegistrationPace): number {
  return Math.max(
    1,
    Math.min(REGISTRATION_CONCURRENCY, pace.computeEventsConcurrency ?? REGISTRATION_CONCURRENCY),
  );
}

/**
 * The seeded network `public` (physnet1, flat, 10.20.0.0/16) as a Linux bridge on every libvirt
 * host, joined across them. Each host's own address on it comes from the top of the subnet, far
 * from where Networking allocates ports (from the bottom), so that its namespace reaches its
 * guests (ping) and a moved guest answers on the same address at the destination.
 */
async function startLocalLibvirtHosts(names: string[]): Promise<LibvirtHosts> {
  const why = libvirtHostsUnavailable();
  if (why) throw new Error(`--driver libvirt cannot run here: ${why}`);
  return startLibvirtHosts({
    hosts: names,
    networks: [
      {
        physnet: "physnet1",
        bridge: "br-physnet1",
        addresses: names.map((_, i) => `10.20.255.${250 - i}/16`),
      },
    ],
  });
}

/**
 * Nova's [libvirt] virt_type for the local hosts: qemu (TCG) unless NOVALESS_LIBVIRT_VIRT_TYPE
 * says kvm. /dev/kvm opening is not enough: a nested or partial KVM (as on this project's build
 * machines) opens and then fails inside the guest's BIOS.
 */
function localVirtType(): "kvm" | "qemu" {
  return process.env.NOVALESS_LIBVIRT_VIRT_TYPE === "kvm" ? "kvm" : "qemu";
}

async function createHosts(
  opts: RuntimeOptions,
  names: string[],
  newAgent: (h: Omit<HostHandle, "agent">, i: number) => HostAgent,
  spoolsPath: string,
  concurrency: number,
  libvirt?: LibvirtHosts,
): Promise<Map<string, HostHandle>> {
  const failing = new Set(opts.failHosts ?? []);
  const slow = opts.slowHosts ?? {};
  const hosts = new Map<string, HostHandle>();
  const instancesPath = opts.instancesPath ?? join(tmpdir(), `novaless-instances-${process.pid}`);
  // Each host's report spool: a simulated host's in memory (10,000 of them stay cheap); a
  // long-polling agent's on disk, as `novaless-compute` keeps it, so the runtime runs that code.
  const spoolOf = (name: string): SpoolStore =>
    opts.transport === "long-poll" ? new DiskSpoolStore(join(spoolsPath, name)) : new MemorySpoolStore();
  // loaded only when asked for: the fake fleet never needs it
  const { ExecDriver } =
    opts.driver === "exec" ? await import("../../lib/compute/drivers/exec.js") : { ExecDriver: undefined };
  for (const unknown of [...failing, ...Object.keys(slow)].filter((h) => !names.includes(h)))
    throw new Error(`host ${unknown} has a failure mode but is not one of the runtime's hosts`);
  const virtType = libvirt ? localVirtType() : undefined;
  for (const [i, name] of names.entries()) {
    const lv = libvirt?.hosts[i];
    const driver: Driver = lv
      ? new LibvirtDriver({
          host: name,
          uri: lv.uri,
          virtType,
          instancesPath: lv.instancesPath,
          imagesPath: lv.imagesPath,
          linuxBridgeMappings: lv.bridgeMappings,
          // its taps, and so their nftables rules, are in the host's namespace
          netns: lv.netns,
          shutdownTimeoutSeconds: 10,
        })
      : ExecDriver
        ? new ExecDriver({ host: name, instancesPath: join(instancesPath, name), shutdownTimeoutSeconds: 5 })
        : new FakeDriver({
            host: name,
            buildMs: slow[name] ?? opts.buildMs ?? 1000,
            failAll: failing.has(name),
          });
    const handle: Omit<HostHandle, "agent"> = {
      name,
      driver,
      spool: spoolOf(name),
      // a libvirt host reports what its hypervisor sees, as novaless-compute does
      ...(lv && driver.machineFacts ? { libvirt: lv, size: machineSize(await driver.machineFacts()) } : {}),
    };
    hosts.set(name, { ...handle, agent: newAgent(handle, i) });
  }
  await startAll(
    [...hosts.values()].map((h) => ({ start: () => asHost(h.name)(() => h.agent.start()) })),
    concurrency,
  );
  return hosts;
}
