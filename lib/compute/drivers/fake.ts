import { setTimeout as sleep } from "node:timers/promises";
import { optionValue } from "../../config.js";
import type { PortFilter } from "../../messages/port-filter.js";
import type { InstanceDiagnostics } from "../../messages/reports.js";
import type { SnapshotData, SnapshotStage } from "../image-store.js";
import {
  BuildFailure,
  type Driver,
  type GuestInfo,
  GuestNotFound,
  type GuestPort,
  type GuestSpec,
  type LifecycleListener,
  LiveMigrationAborted,
  type LiveMigrationDriver,
  type LiveMigrationJob,
  POWER_STATE,
  type PowerState,
  type RebootType,
} from "./driver.js";

/** Images with this property fail every build, on any host (the seeded `broken` image). */
export const FAKE_FAIL_PROPERTY = "novaless:fake_build_fails";

const FAKE_CONSOLE_LINES = 300;

export interface FakeDriverOptions {
  host: string;
  /** how long a spawn takes */
  buildMs: number;
  /** this host fails every build (a "black hole" host) */
  failAll: boolean;
  /** how long a live migration from this host takes ([fake] live_migration_ms when absent) */
  liveMigrationMs?: number;
}

/** [fake] live_migration_ms, read through the option table as every option is. */
const liveMigrationMsOption = (): number => optionValue<number>("compute_fake_live_migration_ms");

/** Progress reports a fake live migration sends (one per tenth of its time). */
const FAKE_LIVE_MIGRATION_STEPS = 10;

/** Nova's fake virt driver: guests are entries in a map; spawning takes buildMs. */
export class FakeDriver implements Driver {
  readonly hypervisorType = "fake";
  readonly hypervisorVersion = 1000;
  private readonly guests = new Map<
    string,
    { spec: GuestSpec; power: PowerState; boots: number; console: string[]; bootedAt?: number }
  >();
  private readonly listeners: LifecycleListener[] = [];
  /** spawns started per instance: tests use it to prove nothing was built twice */
  readonly spawns = new Map<string, number>();
  /** how long a live migration from here takes (tests change it per host) */
  liveMigrationMs: number;
  /** fails every pre_live_migration here (tests: a destination that cannot prepare) */
  failLiveMigrationPrepare = false;
  /** how long a pre_live_migration here takes (tests: a migration held in `preparing`) */
  liveMigrationPrepareMs = 0;
  /** live migrations copied out of this host, per instance: tests prove none ran twice */
  readonly liveMigrations = new Map<string, number>();
  /**
   * The filters enforced per guest, by port (a spawn's, then each applyPortFilters'): tests read
   * what a host was told to let through. `filterApplies` counts the refreshes.
   */
  readonly portFilters = new Map<string, Map<string, PortFilter | undefined>>();
  readonly filterApplies = new Map<string, number>();

  constructor(private readonly opts: FakeDriverOptions) {
    this.liveMigrationMs = opts.liveMigrationMs ?? liveMigrationMsOption();
  }

  facts(): Record<string, unknown> {
    return { limits_enforced: false, why: "the fake driver runs nothing", live_migration: true };
  }

  /**
   * Nova's fake driver's live migration: the copy takes liveMigrationMs, with progress every
   * tenth; the guest then leaves this host's map and the destination's post step adds it to its own.
   */
  readonly live: LiveMigrationDriver = {
    preLiveMigration: async (guest) => {
      if (this.liveMigrationPrepareMs > 0) await sleep(this.liveMigrationPrepareMs);
      if (this.failLiveMigrationPrepare || this.opts.failAll)
        throw new Error(
          `fake driver on ${this.opts.host} cannot prepare for instance ${guest.instance_uuid}`,
        );
    },
    liveMigrate: async (id, dest, job) => this.liveMigrate(id, dest.host, job),
    postLiveMigrationAtDestination: async (guest) => {
      if (!this.guests.has(guest.instance_uuid)) this.adopt(guest);
    },
  };

  private async liveMigrate(id: string, dest: string, job: LiveMigrationJob): Promise<void> {
    const g = this.guest(id);
    this.liveMigrations.set(id, (this.liveMigrations.get(id) ?? 0) + 1);
    const total = g.spec.flavor.memory_mb * 1024 * 1024;
    const tick = this.liveMigrationMs / FAKE_LIVE_MIGRATION_STEPS;
    for (let i = 1; i <= FAKE_LIVE_MIGRATION_STEPS; i++) {
      if (job.abort.aborted) throw new LiveMigrationAborted(`live migration of ${id} to ${dest} aborted`);
      if (job.forceComplete.aborted) break;
      await sleep(tick, undefined, { signal: AbortSignal.any([job.abort, job.forceComplete]) }).catch(
        () => {},
      );
      if (job.abort.aborted) throw new LiveMigrationAborted(`live migration of ${id} to ${dest} aborted`);
      // destroyed meanwhile (the server deleted): the migration fails, as a domain's would
      if (this.guests.get(id) !== g) throw new GuestNotFound(id, this.opts.host);
      const processed = Math.round((total * i) / FAKE_LIVE_MIGRATION_STEPS);
      job.onProgress({
        memory_total_bytes: total,
        memory_processed_bytes: processed,
        memory_remaining_bytes: total - processed,
      });
    }
    this.guests.delete(id);
  }

  async init(): Promise<void> {}

  async close(): Promise<void> {}

  async spawn(guest: GuestSpec, signal?: AbortSignal): Promise<void> {
    this.spawns.set(guest.instance_uuid, (this.spawns.get(guest.instance_uuid) ?? 0) + 1);
    if (this.opts.buildMs > 0) {
      try {
        await sleep(this.opts.buildMs, undefined, { signal });
      } catch {
        throw new BuildFailure(`spawn on ${this.opts.host} interrupted: the host is stopping`);
      }
    }
    if (this.opts.failAll) {
      throw new BuildFailure(`fake driver on ${this.opts.host} is set to fail every build`);
    }
    if (guest.image.properties[FAKE_FAIL_PROPERTY] === "true") {
      throw new BuildFailure(
        `image ${guest.image.name} (${guest.image.id}) cannot be booted by the fake driver`,
      );
    }
    const g = { spec: guest, power: POWER_STATE.RUNNING, boots: 0, console: [] as string[] };
    this.guests.set(guest.instance_uuid, g);
    this.enforce(guest.instance_uuid, guest.ports ?? []);
    this.boot(guest.instance_uuid);
  }

  async destroy(instanceUuid: string): Promise<void> {
    this.guests.delete(instanceUuid);
    this.portFilters.delete(instanceUuid);
  }

  /** Nova's refresh_instance_security_rules, simulated: the ports' filters recorded as enforced, port by port. */
  async applyPortFilters(instanceUuid: string, ports: readonly GuestPort[]): Promise<void> {
    this.guest(instanceUuid);
    // each port given replaces its own filter; the guest's other ports keep theirs (libvirt's nft)
    const enforced = new Map(this.portFilters.get(instanceUuid) ?? []);
    for (const p of ports) enforced.set(p.port_id, p.filter);
    this.portFilters.set(instanceUuid, enforced);
    this.filterApplies.set(instanceUuid, (this.filterApplies.get(instanceUuid) ?? 0) + 1);
  }

  private enforce(instanceUuid: string, ports: readonly GuestPort[]): void {
    this.portFilters.set(instanceUuid, new Map(ports.map((p) => [p.port_id, p.filter])));
  }

  async powerOff(instanceUuid: string): Promise<void> {
    this.guest(instanceUuid).power = POWER_STATE.SHUTDOWN;
  }

  async powerOn(instanceUuid: string): Promise<void> {
    const g = this.guest(instanceUuid);
    g.power = POWER_STATE.RUNNING;
    this.boot(instanceUuid);
  }

  async reboot(instanceUuid: string, _type: RebootType): Promise<void> {
    this.guest(instanceUuid).power = POWER_STATE.RUNNING;
    this.boot(instanceUuid);
  }

  /** fails every snapshot here (tests: a snapshot the host cannot take) */
  failSnapshots = false;
  /** how long a snapshot's capture takes here (tests: a server held in its image_* task states) */
  snapshotMs = 0;
  /** image ids snapshotted here, per instance: tests prove none was taken twice */
  readonly snapshots = new Map<string, string[]>();

  /** Nova's fake driver's snapshot: no data; the image is its metadata. */
  async snapshot(instanceUuid: string, imageId: string, stage: SnapshotStage): Promise<SnapshotData> {
    this.guest(instanceUuid);
    this.snapshots.set(instanceUuid, [...(this.snapshots.get(instanceUuid) ?? []), imageId]);
    if (this.snapshotMs > 0) await sleep(this.snapshotMs);
    await stage("image_pending_upload");
    if (this.failSnapshots)
      throw new Error(
        `fake driver on ${this.opts.host} is set to fail every snapshot (instance ${instanceUuid})`,
      );
    await stage("image_uploading");
    return { disk_format: "raw", container_format: "bare", size: 0 };
  }

  /** An NMI, simulated: the console says so, and the guest runs on (no kdump configured). */
  async triggerCrashDump(instanceUuid: string): Promise<void> {
    const g = this.guest(instanceUuid);
    if (g.power !== POWER_STATE.RUNNING && g.power !== POWER_STATE.PAUSED)
      throw new Error(
        `instance ${instanceUuid} is not running on host ${this.opts.host}: no NMI can reach it`,
      );
    g.console.push(
      "Uhhuh. NMI received for unknown reason 3d on CPU 0.",
      "Do you have a strange power saving mode enabled?",
    );
  }

  /** fails every interface attach here (tests: a host whose hypervisor refuses the NIC) */
  failInterfaceAttach = false;
  /** how long an attach or detach takes here (tests: an attachment still under way) */
  interfaceMs = 0;

  /**
   * A hot-plug, simulated: the port joins the guest's ports (what a move or a restart of it
   * carries), and a running guest's console says so as a kernel would. Safe to repeat.
   */
  async attachInterface(instanceUuid: string, port: GuestPort): Promise<void> {
    const g = this.guest(instanceUuid);
    if (this.interfaceMs > 0) await sleep(this.interfaceMs);
    if (this.failInterfaceAttach)
      throw new Error(
        `fake driver on ${this.opts.host} is set to fail every interface attach (port ${port.port_id}, instance ${instanceUuid})`,
      );
    const ports = g.spec.ports ?? [];
    if (ports.some((p) => p.mac_address === port.mac_address)) return;
    g.spec = { ...g.spec, ports: [...ports, port] };
    if (g.power === POWER_STATE.RUNNING)
      g.console.push(`virtio_net: NIC ${port.mac_address} (port ${port.port_id}) plugged in`);
  }

  /** An unplug, simulated: the port leaves the guest's ports. Safe to repeat. */
  async detachInterface(instanceUuid: string, port: GuestPort): Promise<void> {
    const g = this.guest(instanceUuid);
    if (this.interfaceMs > 0) await sleep(this.interfaceMs);
    const ports = g.spec.ports ?? [];
    if (!ports.some((p) => p.mac_address === port.mac_address)) return;
    g.spec = { ...g.spec, ports: ports.filter((p) => p.mac_address !== port.mac_address) };
    if (g.power === POWER_STATE.RUNNING)
      g.console.push(`virtio_net: NIC ${port.mac_address} (port ${port.port_id}) unplugged`);
  }

  async pause(instanceUuid: string): Promise<void> {
    this.hold(instanceUuid, POWER_STATE.PAUSED, "paused");
  }

  async unpause(instanceUuid: string): Promise<void> {
    this.runOn(instanceUuid, POWER_STATE.PAUSED, "unpaused");
  }

  async suspend(instanceUuid: string): Promise<void> {
    this.hold(instanceUuid, POWER_STATE.SUSPENDED, "suspended");
  }

  async resume(instanceUuid: string): Promise<void> {
    this.runOn(instanceUuid, POWER_STATE.SUSPENDED, "resumed");
  }

  /** pause and suspend, simulated: a running (or already held) guest takes the held state. */
  private hold(instanceUuid: string, power: PowerState, what: string): void {
    const g = this.guest(instanceUuid);
    if (g.power === power) return;
    if (g.power !== POWER_STATE.RUNNING)
      throw new Error(
        `instance ${instanceUuid} is not running on host ${this.opts.host}: it cannot be ${what}`,
      );
    g.power = power;
  }

  /** unpause and resume: a guest held so (or already running) runs. */
  private runOn(instanceUuid: string, from: PowerState, what: string): void {
    const g = this.guest(instanceUuid);
    if (g.power === POWER_STATE.RUNNING) return;
    if (g.power !== from)
      throw new Error(
        `instance ${instanceUuid} on host ${this.opts.host} is in power state ${g.power}: it cannot be ${what}`,
      );
    g.power = POWER_STATE.RUNNING;
  }

  /** Each boot logs a few lines, as a guest's serial console would (tempest reads at least 3). */
  private boot(instanceUuid: string): void {
    const g = this.guest(instanceUuid);
    g.boots++;
    g.bootedAt = Date.now();
    g.console.push(
      `fake console of ${g.spec.name} (${instanceUuid}): boot ${g.boots}`,
      "Booting the fake kernel",
      `${g.spec.name} login:`,
    );
    // a serial log is bounded: keep its end
    if (g.console.length > FAKE_CONSOLE_LINES) g.console.splice(0, g.console.length - FAKE_CONSOLE_LINES);
  }

  async consoleOutput(instanceUuid: string): Promise<string> {
    return `${this.guest(instanceUuid).console.join("\n")}\n`;
  }

  /**
   * Synthetic figures, marked as such in hypervisor_os: uptime is the guest's, the rest follow
   * from it and the flavor. `driver` is "libvirt", as Nova's fake driver says: Nova's API only
   * knows its real drivers' names (HypervisorDriver).
   */
  async diagnostics(instanceUuid: string): Promise<InstanceDiagnostics> {
    const g = this.guest(instanceUuid);
    const uptime = Math.floor((Date.now() - (g.bootedAt ?? Date.now())) / 1000);
    const { vcpus, memory_mb } = g.spec.flavor;
    return {
      state: g.power === POWER_STATE.RUNNING ? "running" : "shutdown",
      driver: "libvirt",
      hypervisor: "fake",
      hypervisor_os: "novaless fake driver: synthetic figures",
      uptime,
      config_drive: g.spec.config_drive ?? false,
      memory_details: { maximum: memory_mb, used: Math.floor(memory_mb / 2) },
      cpu_details: Array.from({ length: vcpus }, (_, id) => ({
        id,
        time: uptime * 100_000_000,
        utilisation: 10,
      })),
      nic_details: [],
      disk_details: [
        {
          device: "vda",
          read_bytes: 512 * 1024 * g.boots,
          read_requests: 64 * g.boots,
          write_bytes: 4096 * uptime,
          write_requests: uptime,
          errors_count: 0,
        },
      ],
    };
  }

  /** What the guest was built from (tests: the ports and the guest a cast carried). */
  specOf(instanceUuid: string): GuestSpec | undefined {
    return this.guests.get(instanceUuid)?.spec;
  }

  has(instanceUuid: string): boolean {
    return this.guests.has(instanceUuid);
  }

  list(): GuestInfo[] {
    return [...this.guests].map(([instance_uuid, g]) => ({ instance_uuid, power_state: g.power }));
  }

  powerState(instanceUuid: string): PowerState {
    return this.guests.get(instanceUuid)?.power ?? POWER_STATE.NOSTATE;
  }

  onLifecycle(listener: LifecycleListener): void {
    this.listeners.push(listener);
  }

  /** Tests: the guest stops on its own (it crashed, or was shut down from inside). */
  crash(instanceUuid: string, power: PowerState = POWER_STATE.SHUTDOWN): void {
    this.guest(instanceUuid).power = power;
    for (const l of this.listeners) l(instanceUuid, power);
  }

  /** Tests: a guest the database does not know (left from a deleted server). */
  adopt(guest: GuestSpec): void {
    const g = { spec: guest, power: POWER_STATE.RUNNING, boots: 0, console: [] as string[] };
    this.guests.set(guest.instance_uuid, g);
    this.enforce(guest.instance_uuid, guest.ports ?? []);
    this.boot(guest.instance_uuid);
  }

  private guest(instanceUuid: string) {
    const g = this.guests.get(instanceUuid);
    if (!g) throw new GuestNotFound(instanceUuid, this.opts.host);
    return g;
  }
}
