// The exec driver (Nomad's exec/raw_exec for Nova): an image names a command
// (`novaless:exec_command`); each server is that command as a supervised process group, limited
// by its flavor through cgroup v2 where the host allows it, its stdout and stderr the console log.
// Guests outlive the agent, as domains outlive nova-compute: each lives in
// `<instances_path>/<uuid>/` (spec.json, pid, state, console.log, config/), which a restarted
// agent reads back (init).
import { type ChildProcess, execFile, spawn as spawnProcess } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { inheritedPath } from "../../config.js";
import type { InstanceDiagnostics } from "../../messages/reports.js";
import { captureAndUpload, type ImageStore, type SnapshotData, type SnapshotStage } from "../image-store.js";
import { type CgroupSupport, cgroupSupport, confine, release } from "./cgroups.js";
import {
  BuildFailure,
  type Driver,
  type GuestInfo,
  GuestNotFound,
  type GuestSpec,
  type LifecycleListener,
  POWER_STATE,
  type PowerState,
  type RebootType,
} from "./driver.js";
import { EXEC_COMMAND_PROPERTY, parseCommandLine } from "./exec-command.js";
import { execDiagnostics } from "./exec-diagnostics.js";
import { alive, guestProcesses, processState, signalGroup, startTimeOf, UUID_DIR } from "./exec-proc.js";
import { imageStoreOf, SERVER_IMAGE_TYPES, snapshotsDir, tailFile } from "./guest-files.js";
import { fixedIps, networkData } from "./network-data.js";

// What importers of the driver read of its images' command property.
export { EXEC_COMMAND_PROPERTY, parseCommandLine };

export interface ExecDriverOptions {
  host: string;
  /** Nova's [DEFAULT] instances_path: one directory per instance */
  instancesPath: string;
  /** seconds a clean shutdown (SIGTERM) may take before SIGKILL (Nova's shutdown_timeout, 60) */
  shutdownTimeoutSeconds?: number;
  /** the cgroup v2 root (default /sys/fs/cgroup); null: never limit */
  cgroupRoot?: string | null;
  /** how often adopted guests (not children of this agent) are checked, ms */
  pollMs?: number;
  /** where snapshots go and snapshot images come from (default: the images bucket) */
  imageStore?: ImageStore;
}

/**
 * What an exec snapshot leaves out of the instance's directory: the host's own files about the
 * guest (process, state, log, the config drive), which a guest booted from it gets anew.
 */
const NOT_SNAPSHOTTED = ["pid", "state", "boots", "console.log", "spec.json", "config"];
const runFile = promisify(execFile);

/** The power states of a guest whose process lives (running, or held by pause or suspend). */
const LIVE_POWER = new Set<PowerState>([POWER_STATE.RUNNING, POWER_STATE.PAUSED, POWER_STATE.SUSPENDED]);
/** How long a pause or suspend waits to see the group leader stopped. */
const HOLD_WAIT_MS = 2000;

/**
 * A live guest found by a restarted agent: held (stopped by SIGSTOP) is paused or suspended, as
 * its `state` file says; anything else runs.
 */
function heldPowerOf(dir: string, pid: number): PowerState {
  if (processState(pid) !== "T") return POWER_STATE.RUNNING;
  const state = existsSync(join(dir, "state")) ? readFileSync(join(dir, "state"), "utf8").trim() : "";
  return state === "suspended" ? POWER_STATE.SUSPENDED : POWER_STATE.PAUSED;
}

/** A process that exits within this long of its start failed to boot. */
const BOOT_CHECK_MS = 300;
interface Guest {
  spec?: GuestSpec;
  pid?: number;
  /** the process's start time (/proc/<pid>/stat field 22): a recycled pid is not the guest */
  started?: string;
  power: PowerState;
  boots: number;
  /** a child of this incarnation (its exit is an event), else polled */
  child?: ChildProcess;
  /** the driver is stopping it: its exit is no lifecycle event */
  stopping?: boolean;
}

export class ExecDriver implements Driver {
  readonly hypervisorType = "exec";
  readonly hypervisorVersion = 1000;
  private readonly guests = new Map<string, Guest>();
  private readonly listeners: LifecycleListener[] = [];
  private readonly cgroups: CgroupSupport;
  private poller: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ExecDriverOptions) {
    this.cgroups =
      opts.cgroupRoot === null
        ? { enforced: false, why: "limits disabled by configuration", root: "" }
        : cgroupSupport(opts.cgroupRoot ?? "/sys/fs/cgroup");
  }

  facts(): Record<string, unknown> {
    return {
      limits_enforced: this.cgroups.enforced,
      why: this.cgroups.why,
      instances_path: this.opts.instancesPath,
      // the conductor refuses a live migration from here with Nova's MigrationPreCheckError
      live_migration: false,
      live_migration_unsupported: "a process cannot move live",
      // no applyPortFilters: the API keeps a server's security groups, this host cannot apply them
      security_groups_enforced: false,
      security_groups_unenforced:
        "a guest is a process in the host's own network namespace: its traffic cannot be told from the host's, so its ports' security groups are not enforced",
      // the API refuses an interface attach to its servers with Nova's AttachInterfaceNotSupported
      attach_interface: false,
      attach_interface_unsupported: "a process shares the host's network: it has no NIC to plug",
    };
  }

  private dir(id: string): string {
    return join(this.opts.instancesPath, id);
  }

  /** Find the guests a previous agent left: their directories, and stray processes of this host. */
  async init(): Promise<void> {
    mkdirSync(this.opts.instancesPath, { recursive: true });
    for (const id of readdirSync(this.opts.instancesPath)) {
      if (!UUID_DIR.test(id) || this.guests.has(id)) continue;
      const dir = this.dir(id);
      let spec: GuestSpec | undefined;
      try {
        spec = JSON.parse(readFileSync(join(dir, "spec.json"), "utf8")) as GuestSpec;
      } catch {
        spec = undefined;
      }
      const [pidText, started] = (
        existsSync(join(dir, "pid")) ? readFileSync(join(dir, "pid"), "utf8") : ""
      ).split(" ");
      const pid = Number(pidText) || undefined;
      const running = alive(pid, started?.trim());
      const boots =
        Number(existsSync(join(dir, "boots")) ? readFileSync(join(dir, "boots"), "utf8") : "1") || 1;
      this.guests.set(id, {
        spec,
        ...(running ? { pid, started: started?.trim() } : {}),
        power: running ? heldPowerOf(dir, pid!) : POWER_STATE.SHUTDOWN,
        boots,
      });
    }
    // Processes of this host whose directory is gone (an agent that died mid-destroy): guests
    // nobody owns, which the registration's reconciliation will have destroyed.
    for (const [id, pid] of guestProcesses(this.opts.host, (id) => join(this.dir(id), "config"))) {
      if (!this.guests.has(id))
        this.guests.set(id, { pid, started: startTimeOf(pid), power: POWER_STATE.RUNNING, boots: 1 });
    }
    this.poller = setInterval(() => this.poll(), this.opts.pollMs ?? 1000);
    this.poller.unref();
  }

  /** Adopted guests have no exit event: look whether they still run. */
  private poll(): void {
    for (const [id, g] of this.guests) {
      if (g.child || g.stopping || !LIVE_POWER.has(g.power)) continue;
      if (!alive(g.pid, g.started)) this.stoppedOnItsOwn(id, g, POWER_STATE.SHUTDOWN);
    }
  }

  private stoppedOnItsOwn(id: string, g: Guest, power: PowerState): void {
    g.power = power;
    g.child = undefined;
    this.writeState(id, "stopped");
    for (const l of this.listeners) l(id, power);
  }

  async close(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    // no more events from this incarnation: a successor adopts the guests
    for (const g of this.guests.values()) g.child = undefined;
    this.listeners.length = 0;
  }

  async spawn(guest: GuestSpec, signal?: AbortSignal): Promise<void> {
    const id = guest.instance_uuid;
    const command = guest.image.properties[EXEC_COMMAND_PROPERTY];
    if (!command) {
      throw new BuildFailure(
        `image ${guest.image.name} (${guest.image.id}) has no ${EXEC_COMMAND_PROPERTY} property: the exec driver on ${this.opts.host} cannot boot it`,
      );
    }
    let argv: string[];
    try {
      argv = parseCommandLine(command);
    } catch (e) {
      throw new BuildFailure(`image ${guest.image.name} (${guest.image.id}): ${(e as Error).message}`);
    }
    const dir = this.dir(id);
    if (SERVER_IMAGE_TYPES.has(guest.image.properties.image_type ?? "")) await this.unpack(guest);
    mkdirSync(join(dir, "config", "openstack", "latest"), { recursive: true });
    writeFileSync(join(dir, "spec.json"), JSON.stringify(guest));
    this.writeConfig(guest);
    const g: Guest = { spec: guest, power: POWER_STATE.NOSTATE, boots: 0 };
    this.guests.set(id, g);
    try {
      if (signal?.aborted) throw new Error("aborted");
      await this.boot(id, g, argv);
      if (signal?.aborted) throw new Error("aborted");
    } catch (e) {
      await this.destroy(id);
      if (e instanceof BuildFailure) throw e;
      throw new BuildFailure(`spawn of ${id} on ${this.opts.host} interrupted: ${(e as Error).message}`);
    }
  }

  private get store(): ImageStore {
    return imageStoreOf(this.opts.imageStore);
  }

  /**
   * A guest booted from a snapshot starts in the snapshotted guest's files: its archive, fetched
   * from the images bucket, unpacked as the new instance's directory.
   */
  private async unpack(guest: GuestSpec): Promise<void> {
    const { image, instance_uuid: id } = guest;
    const archive = join(snapshotsDir(this.opts.instancesPath), `${image.id}.${id}.tar`);
    const dir = this.dir(id);
    try {
      if (!(await this.store.fetch(image.id, archive)))
        throw new Error(`its data is not in the images bucket`);
      mkdirSync(dir, { recursive: true });
      await runFile("tar", ["-C", dir, "-xf", archive]);
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw new BuildFailure(
        `image ${image.name} (${image.id}) could not be unpacked for ${id} on ${this.opts.host}: ${(e as Error).message}`,
      );
    } finally {
      rmSync(archive, { force: true });
    }
  }

  /**
   * Nova's snapshot, for a process: an archive (tar) of the instance's directory, the guest's own
   * files. A running guest is held (SIGSTOP) while it is archived, so the copy is consistent, as
   * Nova quiesces a guest; a paused one stays paused.
   */
  async snapshot(instanceUuid: string, imageId: string, stage: SnapshotStage): Promise<SnapshotData> {
    const g = this.guest(instanceUuid);
    const file = join(snapshotsDir(this.opts.instancesPath), `${imageId}.tar`);
    return captureAndUpload(
      this.store,
      imageId,
      file,
      async (out) => {
        const hold = g.power === POWER_STATE.RUNNING && alive(g.pid, g.started);
        const signal = (s: NodeJS.Signals) => signalGroup(g.pid!, s);
        if (hold) signal("SIGSTOP");
        try {
          await runFile("tar", [
            "-C",
            this.dir(instanceUuid),
            "-cf",
            out,
            ...NOT_SNAPSHOTTED.map((f) => `--exclude=./${f}`),
            ".",
          ]);
        } finally {
          if (hold) signal("SIGCONT");
        }
        return { disk_format: "raw", container_format: "compressed" };
      },
      stage,
    );
  }

  /** Nova's config drive contents, as files the guest reads from NOVALESS_CONFIG_DIR. */
  private writeConfig(guest: GuestSpec): void {
    const latest = join(this.dir(guest.instance_uuid), "config", "openstack", "latest");
    const meta = {
      uuid: guest.instance_uuid,
      name: guest.name,
      hostname: guest.hostname,
      launch_index: 0,
      project_id: guest.project_id,
      meta: guest.metadata,
      public_keys: guest.key_name && guest.key_data ? { [guest.key_name]: guest.key_data } : {},
    };
    writeFileSync(join(latest, "meta_data.json"), JSON.stringify(meta));
    writeFileSync(join(latest, "network_data.json"), JSON.stringify(networkData(guest.ports ?? [])));
    if (guest.user_data) writeFileSync(join(latest, "user_data"), Buffer.from(guest.user_data, "base64"));
  }

  /** Start the guest's process (again), supervised; BuildFailure if it dies at once. */
  private async boot(id: string, g: Guest, argv: string[] = this.argvOf(id, g)): Promise<void> {
    const dir = this.dir(id);
    g.boots++;
    writeFileSync(join(dir, "boots"), String(g.boots));
    const log = openSync(join(dir, "console.log"), "a");
    if (g.boots > 1) writeFileSync(log, `--- boot ${g.boots} ---\n`);
    let child: ChildProcess;
    try {
      child = spawnProcess(argv[0]!, argv.slice(1), {
        cwd: dir,
        detached: true,
        stdio: ["ignore", log, log],
        env: {
          PATH: inheritedPath(),
          HOME: dir,
          NOVALESS_HOST: this.opts.host,
          NOVALESS_INSTANCE_UUID: id,
          NOVALESS_INSTANCE_NAME: g.spec?.name ?? id,
          NOVALESS_HOSTNAME: g.spec?.hostname ?? id,
          NOVALESS_CONFIG_DIR: join(dir, "config"),
          // the guest's addresses, for a process that binds them (it shares the host's network)
          NOVALESS_FIXED_IPS: fixedIps(g.spec?.ports ?? []),
          NOVALESS_NETWORK_DATA: JSON.stringify(networkData(g.spec?.ports ?? [])),
        },
      });
    } finally {
      closeSync(log);
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | Error>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
      child.once("error", (e) => resolve(e));
    });
    child.unref();
    const early = await Promise.race([exited, sleep(BOOT_CHECK_MS).then(() => undefined)]);
    if (early instanceof Error)
      throw new BuildFailure(`cannot run ${argv[0]} for ${id} on ${this.opts.host}: ${early.message}`);
    if (early && early.code !== 0) {
      throw new BuildFailure(
        `${argv.join(" ")} exited at once with ${early.signal ? `signal ${early.signal}` : `status ${early.code}`} on ${this.opts.host}; console: ${this.tail(id, 400).trim()}`,
      );
    }
    g.pid = child.pid;
    g.started = child.pid ? startTimeOf(child.pid) : undefined;
    g.child = child;
    g.stopping = false;
    writeFileSync(join(dir, "pid"), `${g.pid} ${g.started ?? ""}`);
    if (this.cgroups.enforced && g.pid && g.spec) {
      try {
        confine(this.cgroups.root, id, g.pid, g.spec.flavor.memory_mb, g.spec.flavor.vcpus);
      } catch {
        // the host said it allowed limits; a guest without them still runs
      }
    }
    if (early) {
      // exited 0 at once: booted and shut down
      g.power = POWER_STATE.SHUTDOWN;
      g.child = undefined;
      this.writeState(id, "stopped");
      return;
    }
    g.power = POWER_STATE.RUNNING;
    this.writeState(id, "running");
    void exited.then((end) => {
      if (g.child !== child) return;
      g.child = undefined;
      if (g.stopping) return;
      const clean = !(end instanceof Error) && !end.signal && end.code === 0;
      this.stoppedOnItsOwn(id, g, clean ? POWER_STATE.SHUTDOWN : POWER_STATE.CRASHED);
    });
  }

  private argvOf(id: string, g: Guest): string[] {
    const command = g.spec?.image.properties[EXEC_COMMAND_PROPERTY];
    if (!command) throw new GuestNotFound(id, this.opts.host);
    return parseCommandLine(command);
  }

  private writeState(id: string, state: "running" | "stopped" | "paused" | "suspended"): void {
    try {
      writeFileSync(join(this.dir(id), "state"), state);
    } catch {
      // destroyed meanwhile
    }
  }

  /** SIGTERM the group, SIGKILL after `timeoutMs`; resolves once it is gone. */
  private async terminate(g: Guest, timeoutMs: number): Promise<void> {
    if (!g.pid || !alive(g.pid, g.started)) return;
    g.stopping = true;
    const signal = (s: NodeJS.Signals) => signalGroup(g.pid!, s);
    signal(timeoutMs > 0 ? "SIGTERM" : "SIGKILL");
    // a held (paused, suspended) group gets its SIGTERM only once it runs again
    if (timeoutMs > 0 && g.power !== POWER_STATE.RUNNING) signal("SIGCONT");
    const deadline = Date.now() + timeoutMs;
    while (alive(g.pid, g.started) && Date.now() < deadline) await sleep(50);
    if (alive(g.pid, g.started)) {
      signal("SIGKILL");
      while (alive(g.pid, g.started)) await sleep(20);
    }
  }

  private guest(id: string): Guest {
    const g = this.guests.get(id);
    if (!g) throw new GuestNotFound(id, this.opts.host);
    return g;
  }

  async destroy(instanceUuid: string): Promise<void> {
    const g = this.guests.get(instanceUuid);
    if (g) await this.terminate(g, 0);
    release(this.cgroups.root, instanceUuid);
    rmSync(this.dir(instanceUuid), { recursive: true, force: true });
    this.guests.delete(instanceUuid);
  }

  async powerOff(
    instanceUuid: string,
    timeoutSeconds = this.opts.shutdownTimeoutSeconds ?? 60,
  ): Promise<void> {
    const g = this.guest(instanceUuid);
    await this.terminate(g, timeoutSeconds * 1000);
    g.child = undefined;
    g.power = POWER_STATE.SHUTDOWN;
    this.writeState(instanceUuid, "stopped");
  }

  async powerOn(instanceUuid: string): Promise<void> {
    const g = this.guest(instanceUuid);
    if (g.power === POWER_STATE.RUNNING && alive(g.pid, g.started)) return;
    await this.boot(instanceUuid, g);
  }

  async reboot(instanceUuid: string, type: RebootType): Promise<void> {
    const g = this.guest(instanceUuid);
    await this.terminate(g, type === "HARD" ? 0 : (this.opts.shutdownTimeoutSeconds ?? 60) * 1000);
    g.child = undefined;
    await this.boot(instanceUuid, g);
  }

  /** Nova's pause: SIGSTOP to the guest's process group; the kernel keeps its memory. */
  async pause(instanceUuid: string): Promise<void> {
    await this.hold(instanceUuid, POWER_STATE.PAUSED);
  }

  async unpause(instanceUuid: string): Promise<void> {
    await this.runOn(instanceUuid, POWER_STATE.PAUSED);
  }

  /**
   * Nova's suspend, for a process: stop-and-hold. A process's state cannot be saved to disk, so
   * the group is held stopped (SIGSTOP) as a pause is, and reported SUSPENDED; the `state` file
   * says so, and a restarted agent finds it still suspended. It does not survive the machine's
   * reboot: the process is then gone (SHUTDOWN), and resume boots the guest afresh.
   */
  async suspend(instanceUuid: string): Promise<void> {
    await this.hold(instanceUuid, POWER_STATE.SUSPENDED);
  }

  async resume(instanceUuid: string): Promise<void> {
    await this.runOn(instanceUuid, POWER_STATE.SUSPENDED);
  }

  private async hold(
    id: string,
    power: typeof POWER_STATE.PAUSED | typeof POWER_STATE.SUSPENDED,
  ): Promise<void> {
    const g = this.guest(id);
    const what = power === POWER_STATE.PAUSED ? "paused" : "suspended";
    if (!LIVE_POWER.has(g.power) || !alive(g.pid, g.started))
      throw new Error(`instance ${id} is not running on host ${this.opts.host}: it cannot be ${what}`);
    signalGroup(g.pid!, "SIGSTOP");
    // SIGSTOP is delivered asynchronously: report the state once the group leader is held
    const deadline = Date.now() + HOLD_WAIT_MS;
    while (processState(g.pid!) !== "T" && alive(g.pid, g.started) && Date.now() < deadline) await sleep(10);
    g.power = power;
    this.writeState(id, what);
  }

  private async runOn(id: string, from: PowerState): Promise<void> {
    const g = this.guest(id);
    if (alive(g.pid, g.started)) {
      signalGroup(g.pid!, "SIGCONT");
      g.power = POWER_STATE.RUNNING;
      this.writeState(id, "running");
      return;
    }
    // the held process is gone (the machine rebooted): its memory with it, so it boots afresh
    if (from === POWER_STATE.SUSPENDED) {
      g.child = undefined;
      await this.boot(id, g);
      return;
    }
    throw new Error(`instance ${id} is not paused on host ${this.opts.host}: its process is gone`);
  }

  async consoleOutput(instanceUuid: string, maxBytes = 64 * 1024): Promise<string> {
    this.guest(instanceUuid);
    return this.tail(instanceUuid, maxBytes);
  }

  /** The last `maxBytes` of the console log, read from its end. */
  private tail(id: string, maxBytes: number): string {
    return tailFile(join(this.dir(id), "console.log"), maxBytes);
  }

  list(): GuestInfo[] {
    return [...this.guests].map(([instance_uuid, g]) => ({ instance_uuid, power_state: g.power }));
  }

  /** Nova's get_instance_diagnostics: the guest's process group as the kernel counts it (exec-diagnostics.ts). */
  async diagnostics(instanceUuid: string): Promise<InstanceDiagnostics> {
    return execDiagnostics(instanceUuid, this.guest(instanceUuid), this.cgroups);
  }

  has(instanceUuid: string): boolean {
    return this.guests.has(instanceUuid);
  }

  powerState(instanceUuid: string): PowerState {
    return this.guests.get(instanceUuid)?.power ?? POWER_STATE.NOSTATE;
  }

  onLifecycle(listener: LifecycleListener): void {
    this.listeners.push(listener);
  }

  /** the pid of a running guest's process group (tests, operators) */
  pidOf(instanceUuid: string): number | undefined {
    const g = this.guests.get(instanceUuid);
    return g && alive(g.pid, g.started) ? g.pid : undefined;
  }
}
