// Nova's libvirt driver, reduced: domains from the flavor and image (libvirt-xml.ts), disks from
// the image cache, a config drive, define/start/shutdown/destroy/undefine, Nova's power-state
// mapping, lifecycle events, live migration (libvirt-live.ts), and resize and cold migration with
// the disk carried (libvirt-cold.ts), and each port's security groups as nftables rules on its
// tap (libvirt-filters.ts). Over one persistent virsh connection (virsh.ts). `virsh event`
// would block that one connection, so lifecycle events come from polling the domains' states
// over it (every pollMs): a change the driver did not ask for is an event.
import { type ChildProcess, spawn as spawnProcess } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { log } from "../../log.js";
import type { InstanceDiagnostics } from "../../messages/reports.js";
import type { MachineFacts } from "../discover.js";
import {
  captureAndUpload,
  type ImageStore,
  MIGRATIONS_PREFIX,
  PARTIAL_SUFFIX,
  type SnapshotData,
  type SnapshotStage,
  s3ImageStore,
} from "../image-store.js";
import { makeConfigDrive } from "./config-drive.js";
import {
  BuildFailure,
  type ColdMigrationDriver,
  type Driver,
  type GuestInfo,
  GuestNotFound,
  type GuestPort,
  type GuestSpec,
  type LifecycleListener,
  type LiveMigrationDriver,
  POWER_STATE,
  type PowerState,
  type RebootType,
} from "./driver.js";
import { imageStoreOf, SERVER_IMAGE_TYPES, snapshotsDir, sparse, tailFile } from "./guest-files.js";
import { hostCommand, qcow2Overlay } from "./host-command.js";
import { coldMigrationOps, handedOver, keptDir } from "./libvirt-cold.js";
import { domainDiagnostics } from "./libvirt-diagnostics.js";
import { PortFilters } from "./libvirt-filters.js";
import { jobProgress, liveMigrationOps } from "./libvirt-live.js";
import { ourDomains, powerStateOf } from "./libvirt-states.js";
import { domainName, domainXml, interfaceMacs, interfaceXml } from "./libvirt-xml.js";
import { type BridgeMappings, bindPorts, checkBridgeKinds, type HostBridges } from "./vif.js";
import { VirshConnectionLost, VirshShell } from "./virsh.js";

// What the driver's tests and the conductor's read of virsh's words.
export { jobProgress, powerStateOf };

export interface LibvirtDriverOptions {
  host: string;
  /** Nova's [libvirt] connection_uri, e.g. qemu:///system; tests: test:///default */
  uri: string;
  /** Nova's [libvirt] virt_type → <domain type>: kvm, qemu, test */
  virtType?: string;
  /** Nova's [DEFAULT] instances_path */
  instancesPath: string;
  /** the image cache: <imagesPath>/<image id> is the image's file (Nova's instances_path/_base) */
  imagesPath: string;
  /** Nova's shutdown_timeout */
  shutdownTimeoutSeconds?: number;
  pollMs?: number;
  /** where snapshots go and images missing from the cache come from (default: the images bucket) */
  imageStore?: ImageStore;
  /**
   * where a resize's or cold migration's disk goes from its source to its destination (default:
   * the images bucket's migrations/)
   */
  migrationStore?: ImageStore;
  /** physical network → Open vSwitch bridge ([ovs] bridge_mappings, vif.ts) */
  bridgeMappings?: BridgeMappings;
  /** physical network → Linux bridge ([linux_bridge] bridge_mappings, vif.ts): flat networks only */
  linuxBridgeMappings?: BridgeMappings;
  /**
   * the network namespace where the libvirt daemon makes its taps, for nft (libvirt-filters.ts);
   * undefined: the agent's own (a real host). The local hosts' harness runs each daemon in one.
   */
  netns?: string;
  /** the virsh program (default: virsh on PATH; tests: a stand-in) */
  virshBinary?: string;
  /** how long a virsh command may go unanswered before the connection is made again (virsh.ts) */
  virshTimeoutMs?: number;
  /** the same for managedsave, save, dump and migrate, whose end virsh 9.0 can lose (virsh.ts) */
  virshJobTimeoutMs?: number;
  /**
   * Nova's image cache manager ([image_cache]): every `intervalSeconds` (-1: never), a cached
   * image no guest here uses and unused for `minimumAgeSeconds` is removed
   */
  imageCache?: { intervalSeconds: number; minimumAgeSeconds: number };
  /**
   * Nova's [libvirt] device_detach_attempts and device_detach_timeout: how many times a device is
   * asked off a running guest, each waiting that long for the guest to let it go (default 8 × 20 s)
   */
  deviceDetach?: { attempts: number; timeoutSeconds: number };
}

/** coreutils' stdbuf, where installed */
const STDBUF = ["/usr/bin/stdbuf", "/bin/stdbuf"].find((p) => existsSync(p));

/** libvirt's test driver without a transport: its domains live in the client's connection. */
const STATE_IN_CONNECTION = /^test:\/\//;

/**
 * Tries of an action whose virsh connection is lost. More than two: the retry's own managedsave
 * (or the test:/// restore's) can lose its end too, about one in a hundred on virsh 9.0.
 */
const ACT_ATTEMPTS = 3;

/** How often a detach looks whether the guest let its device go. */
const DETACH_POLL_MS = 250;

/** Nova's libvirt driver resends a clean shutdown this often until shutdown_timeout. */
const SHUTDOWN_RETRY_INTERVAL_MS = 10_000;

export class LibvirtDriver implements Driver {
  hypervisorType = "QEMU";
  hypervisorVersion = 0;
  private readonly virsh: VirshShell;
  private readonly liveOps: LiveMigrationDriver;
  /** Nova's libvirt resize and cold migration, the disk carried (libvirt-cold.ts) */
  readonly cold: ColdMigrationDriver;
  private readonly guests = new Map<string, PowerState>();
  /** guests the driver is acting on: their state changes are not lifecycle events */
  private readonly acting = new Set<string>();
  private readonly listeners: LifecycleListener[] = [];
  private poller: NodeJS.Timeout | undefined;
  private cacheManager: NodeJS.Timeout | undefined;
  private polling = false;
  /** a poll asked for while one ran (an event during a sweep): it runs again after */
  private pollAgain = false;
  private events: ChildProcess | undefined;
  private closed = false;
  private overlays: "qcow2" | "copy" = "copy";

  private readonly bridges: HostBridges;
  /** the ports' security groups on this host (Neutron's firewall, nftables) */
  private readonly filters: PortFilters;

  constructor(private readonly opts: LibvirtDriverOptions) {
    this.bridges = { ovs: opts.bridgeMappings ?? {}, linux: opts.linuxBridgeMappings ?? {} };
    checkBridgeKinds(this.bridges);
    this.filters = new PortFilters({
      host: opts.host,
      netns: opts.netns,
      unsupported: STATE_IN_CONNECTION.test(opts.uri) ? `connection ${opts.uri} makes no taps` : undefined,
      ovsBridges: [...new Set(Object.values(this.bridges.ovs))],
    });
    this.virsh = new VirshShell(opts.uri, {
      binary: opts.virshBinary,
      timeoutMs: opts.virshTimeoutMs,
      jobTimeoutMs: opts.virshJobTimeoutMs,
      restore: STATE_IN_CONNECTION.test(opts.uri) ? () => this.restoreCommands() : undefined,
      host: opts.host,
    });
    this.liveOps = liveMigrationOps({
      uri: opts.uri,
      virsh: (command) => this.virsh.run(command),
      dir: (id) => this.dir(id),
      domstate: (id) => this.domstate(id),
      known: (id) => this.known(id),
      act: (id, work) => this.act(id, work),
      guests: this.guests,
      host: opts.host,
      fetchImage: (image) => this.cacheImage(image),
      configDrive: (guest, out) => this.configDrive(guest, out),
      specOf: (id) => this.specOf(id),
      applyFilters: (guest) => this.filters.apply(guest.instance_uuid, this.bind(guest.ports ?? [])),
      removeFilters: (id) => this.removeFilters(id),
    });
    this.cold = coldMigrationOps({
      host: opts.host,
      instancesPath: opts.instancesPath,
      qemuImg: () => this.overlays === "qcow2",
      dir: (id) => this.dir(id),
      virsh: (command) => this.virsh.run(command),
      domstate: (id) => this.domstate(id),
      known: (id) => this.known(id),
      act: (id, work) => this.act(id, work),
      guests: this.guests,
      specOf: (id) => this.specOf(id),
      powerOff: (id) => this.powerOff(id),
      undefine: (id) => this.undefine(id),
      define: (guest, rootFormat, start) => this.define(guest, rootFormat, start),
      store: this.migrationStore,
    });
  }

  /**
   * What a new test:/// connection needs to hold what the lost one did (a real hypervisor's
   * daemon keeps its domains): each guest defined again from its libvirt.xml and brought to the
   * power state the driver recorded, a suspended one through managedsave again.
   */
  private restoreCommands(): string[] {
    const commands: string[] = [];
    for (const [id, power] of this.guests) {
      const xml = join(this.dir(id), "libvirt.xml");
      if (!existsSync(xml)) continue;
      const name = domainName(id);
      commands.push(`define "${xml}"`);
      if (power === POWER_STATE.RUNNING || power === POWER_STATE.PAUSED || power === POWER_STATE.SUSPENDED)
        commands.push(`start ${name}`);
      if (power === POWER_STATE.PAUSED) commands.push(`suspend ${name}`);
      if (power === POWER_STATE.SUSPENDED) commands.push(`managedsave ${name}`);
    }
    return commands;
  }

  /** For tests and operators: a virsh command over the driver's own connection. */
  virshForTests(command: string): Promise<string> {
    return this.virsh.run(command);
  }

  facts(): Record<string, unknown> {
    return {
      uri: this.opts.uri,
      virt_type: this.opts.virtType ?? "kvm",
      limits_enforced: true,
      why: "libvirt enforces the domain's vCPUs and memory",
      images_path: this.opts.imagesPath,
      disk_overlays: this.overlays,
      // `virsh migrate --live` needs a QEMU connection at both ends (test:/// has none)
      live_migration: this.liveCapable(),
      ...(this.liveCapable()
        ? {}
        : { live_migration_unsupported: `connection ${this.opts.uri} cannot migrate a domain live` }),
      ...this.filters.facts(),
    };
  }

  private liveCapable(): boolean {
    return this.opts.uri.startsWith("qemu");
  }

  /** Nova's libvirt live migration (libvirt-live.ts), where the connection can do one. */
  get live(): LiveMigrationDriver | undefined {
    return this.liveCapable() ? this.liveOps : undefined;
  }
  async init(): Promise<void> {
    mkdirSync(this.opts.instancesPath, { recursive: true });
    const version = await this.virsh.run("version");
    const m = /Running hypervisor:\s*(\S+)\s+(\d+)\.(\d+)\.(\d+)/.exec(version);
    if (m) {
      this.hypervisorType = m[1]!.toUpperCase();
      this.hypervisorVersion = Number(m[2]) * 1_000_000 + Number(m[3]) * 1000 + Number(m[4]);
    }
    this.overlays = await hostCommand(["qemu-img", "--version"], {
      host: this.opts.host,
      timeoutMs: 10_000,
    }).then(
      () => "qcow2" as const,
      () => "copy" as const,
    );
    for (const [id, power] of await this.domains()) this.guests.set(id, power);
    // the guests' filters as their specs say, and none of a guest gone from here (the sweep)
    await this.filters.start(
      [...this.guests.keys()].map((id) => {
        const ports = this.specOf(id)?.ports ?? [];
        try {
          return { instanceUuid: id, ports: this.bind(ports) };
        } catch {
          return { instanceUuid: id, ports: [] };
        }
      }),
    );
    this.poller = setInterval(() => void this.poll(), this.opts.pollMs ?? 2000);
    this.poller.unref();
    const cache = this.opts.imageCache;
    if (cache && cache.intervalSeconds > 0) {
      this.cacheManager = setInterval(() => this.ageCachedImages(), cache.intervalSeconds * 1000);
      this.cacheManager.unref();
    }
    if (!STATE_IN_CONNECTION.test(this.opts.uri)) this.watchEvents();
  }

  /**
   * Nova's image cache manager (_age_and_verify_cached_images): a cached image that no guest of
   * this host stands on and that none has used for [image_cache]
   * remove_unused_original_minimum_age_seconds goes (a later guest fetches it from the images
   * bucket again); the file's mtime is when a guest last used it (cacheImage touches it). Nothing
   * goes while a guest's image is unknown here. The ids removed.
   */
  ageCachedImages(now = Date.now()): string[] {
    const minimumAge = (this.opts.imageCache?.minimumAgeSeconds ?? 86_400) * 1000;
    if (!existsSync(this.opts.imagesPath)) return [];
    const inUse = new Set<string>();
    for (const id of this.guests.keys()) {
      const image = this.specOf(id)?.image.id;
      if (image === undefined) return [];
      inUse.add(image);
    }
    const removed: string[] = [];
    for (const name of readdirSync(this.opts.imagesPath)) {
      // a fetch under way (image-store.ts)
      if (name.includes(PARTIAL_SUFFIX) || inUse.has(name)) continue;
      const file = join(this.opts.imagesPath, name);
      const stat = statSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile() || now - stat.mtimeMs < minimumAge) continue;
      rmSync(file, { force: true });
      removed.push(name);
    }
    if (removed.length) log.info("libvirt.image_cache_aged", { host: this.opts.host, removed });
    return removed;
  }

  /**
   * libvirt's lifecycle events (Nova's virDomainEventRegisterAny): `virsh event --loop` on a
   * connection of its own (it would hold the driver's), each event a prompt to read the domain's
   * state at once; the poll stays as the sweep behind it. Made again when it ends, unless closed.
   * Not on test:///, whose state lives in the driver's own connection.
   */
  private watchEvents(): void {
    if (this.closed) return;
    // virsh's stdout into a pipe is block-buffered: line-buffered through stdbuf where it is
    const argv = [
      this.opts.virshBinary ?? "virsh",
      "-q",
      "-c",
      this.opts.uri,
      "event",
      "--loop",
      "--event",
      "lifecycle",
    ];
    const proc = STDBUF
      ? spawnProcess(STDBUF, ["-oL", ...argv], { stdio: ["ignore", "pipe", "pipe"] })
      : spawnProcess(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
    this.events = proc;
    let buffer = "";
    proc.stdout.setEncoding("utf8");
    proc.stdout.on("data", (chunk: string) => {
      buffer += chunk;
      const lines = buffer.split("\n");
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        const id = /for domain '?instance-([0-9a-f-]{36})'?/.exec(line)?.[1];
        if (id && this.guests.has(id)) void this.poll();
      }
    });
    proc.stderr.resume();
    proc.on("error", () => undefined);
    proc.on("exit", () => {
      if (this.events === proc) this.events = undefined;
      if (!this.closed) setTimeout(() => this.watchEvents(), 1000).unref();
    });
  }

  /** novaless's domains (instance-<uuid>) and their power states; others are not ours. */
  private async domains(): Promise<Map<string, PowerState>> {
    return ourDomains(await this.virsh.run("list --all --managed-save"));
  }

  private async poll(): Promise<void> {
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    this.pollAgain = false;
    try {
      const now = await this.domains();
      for (const [id, was] of this.guests) {
        if (this.acting.has(id)) continue;
        const power = now.get(id) ?? POWER_STATE.NOSTATE;
        if (power === was) continue;
        this.guests.set(id, power);
        for (const l of this.listeners) l(id, power);
      }
    } catch {
      // the connection is being re-made; the next poll sees the states
    } finally {
      this.polling = false;
      if (this.pollAgain) void this.poll();
    }
  }

  private dir(id: string): string {
    return join(this.opts.instancesPath, id);
  }

  /**
   * Acting on a guest: its state changes meanwhile are the driver's, not events. An action whose
   * connection was lost (virsh's lost end of job, virsh.ts) runs again on the new one: each
   * action reads the domain's state first, so a managedsave that did complete leaves it at that.
   */
  private async act<T>(id: string, work: () => Promise<T>): Promise<T> {
    this.acting.add(id);
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await work();
        } catch (e) {
          if (!(e instanceof VirshConnectionLost) || attempt === ACT_ATTEMPTS) throw e;
        }
      }
    } finally {
      this.acting.delete(id);
    }
  }

  async spawn(guest: GuestSpec, signal?: AbortSignal): Promise<void> {
    const id = guest.instance_uuid;
    const dir = this.dir(id);
    // before anything is made: a port this host cannot plug fails the build as it is
    const ports = bindPorts(guest.ports ?? [], this.bridges, this.opts.host);
    const base = await this.cacheImage(guest.image);
    await this.act(id, async () => {
      try {
        mkdirSync(dir, { recursive: true });
        const format = guest.image.properties.disk_format === "qcow2" ? "qcow2" : "raw";
        let rootFormat: "qcow2" | "raw" = format;
        if (this.overlays === "qcow2") {
          await qcow2Overlay(base, format, join(dir, "disk"), guest.flavor.root_gb, {
            host: this.opts.host,
            instance: id,
          });
          rootFormat = "qcow2";
        } else copyFileSync(base, join(dir, "disk"));
        if (guest.flavor.ephemeral_gb > 0)
          sparse(join(dir, "disk.eph0"), guest.flavor.ephemeral_gb * 2 ** 30);
        if (guest.flavor.swap > 0) sparse(join(dir, "disk.swap"), guest.flavor.swap * 2 ** 20);
        if (signal?.aborted) throw new Error("aborted: the host is stopping");
        await this.define(guest, rootFormat, true, ports);
        if (signal?.aborted) throw new Error("aborted: the host is stopping");
      } catch (e) {
        await this.destroy(id).catch(() => undefined);
        throw new BuildFailure(`libvirt on ${this.opts.host} could not boot ${id}: ${(e as Error).message}`);
      }
    });
  }

  /**
   * The guest's config drive, XML and spec written in its directory, its domain defined (again:
   * a resize on its own host), and started when `start` (Nova's _create_guest_with_network).
   */
  private async define(
    guest: GuestSpec,
    rootFormat: "qcow2" | "raw",
    start: boolean,
    ports = bindPorts(guest.ports ?? [], this.bridges, this.opts.host),
  ): Promise<void> {
    const id = guest.instance_uuid;
    const dir = this.dir(id);
    if (guest.config_drive) await this.configDrive(guest, join(dir, "disk.config"));
    const xml = domainXml(guest, { dir, rootFormat }, this.opts.virtType ?? "kvm", ports);
    writeFileSync(join(dir, "libvirt.xml"), xml);
    writeFileSync(join(dir, "spec.json"), JSON.stringify(guest));
    // before the guest runs: its first packet meets its ports' filters
    await this.filters.apply(id, ports);
    await this.virsh.run(`define "${join(dir, "libvirt.xml")}"`);
    this.guests.set(id, POWER_STATE.SHUTDOWN);
    if (start) await this.virsh.run(`start ${domainName(id)}`);
    this.guests.set(id, await this.domstate(id));
  }

  /**
   * The image in this host's cache (Nova's _base), fetched once from the images bucket, where an
   * image's data is (a snapshot's, a backup's, one the operator stored). An image already in the
   * cache is used as it is, as an operator may place one there by hand. BuildFailure, naming the
   * image, the host and why, when it is in neither.
   */
  private async cacheImage(image: GuestSpec["image"]): Promise<string> {
    const base = join(this.opts.imagesPath, image.id);
    if (existsSync(base)) {
      // used now: the cache manager's age of it starts again
      const now = new Date();
      utimesSync(base, now, now);
      return base;
    }
    mkdirSync(this.opts.imagesPath, { recursive: true });
    await this.store.fetch(image.id, base).catch((e: Error) => {
      throw new BuildFailure(
        `image ${image.name} (${image.id}) is not in the image cache ${this.opts.imagesPath} on host ${this.opts.host}, and could not be fetched from the images bucket: ${e.message}`,
      );
    });
    return base;
  }

  /**
   * The guest's config drive, its links typed as Nova's VIF types: "ovs" when a port is on Open
   * vSwitch, else "bridge" (Linux bridges).
   */
  private configDrive(guest: GuestSpec, out: string): Promise<void> {
    const ports = bindPorts(guest.ports ?? [], this.bridges, this.opts.host);
    const linuxOnly = ports.some((p) => p.kind === "linux") && !ports.some((p) => p.kind === "openvswitch");
    return makeConfigDrive(guest, out, linuxOnly ? "bridge" : "ovs", this.opts.host);
  }

  /** The ports bound to this host's bridges (PortBindingFailed for one it cannot plug). */
  private bind(ports: readonly GuestPort[]) {
    return bindPorts(ports, this.bridges, this.opts.host);
  }

  /**
   * Nova's refresh_instance_security_rules: the ports' filters enforced now, replacing what was
   * (one nft transaction: no gap), and kept in the guest's spec for the agent's next start.
   */
  async applyPortFilters(instanceUuid: string, ports: readonly GuestPort[]): Promise<void> {
    this.known(instanceUuid);
    const spec = this.specOf(instanceUuid);
    if (spec?.ports) {
      const byId = new Map(ports.map((p) => [p.port_id, p]));
      const updated = spec.ports.map((p) => {
        const now = byId.get(p.port_id);
        return now ? { ...p, filter: now.filter } : p;
      });
      writeFileSync(join(this.dir(instanceUuid), "spec.json"), JSON.stringify({ ...spec, ports: updated }));
    }
    await this.filters.apply(instanceUuid, this.bind(ports));
  }

  /**
   * The guest's ports' chains gone (it is destroyed or has moved away); what cannot be removed now
   * the agent's next start sweeps.
   */
  private async removeFilters(instanceUuid: string): Promise<void> {
    await this.filters.remove(instanceUuid, this.specOf(instanceUuid)?.ports ?? []).catch((e: unknown) =>
      log.warn("libvirt.port_filter_not_removed", {
        host: this.opts.host,
        instance_uuid: instanceUuid,
        error: e,
      }),
    );
  }

  private get store(): ImageStore {
    return imageStoreOf(this.opts.imageStore);
  }

  private get migrationStore(): ImageStore {
    return this.opts.migrationStore ?? s3ImageStore(undefined, { prefix: MIGRATIONS_PREFIX });
  }

  /**
   * Nova's libvirt snapshot, cold: a running domain is suspended while its root disk is copied
   * (Nova's live snapshot needs QEMU's blockcopy), then resumed. The copy is a standalone qcow2,
   * its backing image flattened in (`qemu-img convert`), where qemu-img is installed; else the
   * disk file as it is, in its own format.
   */
  async snapshot(instanceUuid: string, imageId: string, stage: SnapshotStage): Promise<SnapshotData> {
    this.known(instanceUuid);
    const spec = this.specOf(instanceUuid);
    const work = snapshotsDir(this.opts.instancesPath);
    const name = domainName(instanceUuid);
    return this.act(instanceUuid, () =>
      captureAndUpload(
        this.store,
        imageId,
        join(work, imageId),
        async (file) => {
          const running = (await this.domstate(instanceUuid)) === POWER_STATE.RUNNING;
          if (running) await this.virsh.run(`suspend ${name}`);
          try {
            const disk = join(this.dir(instanceUuid), "disk");
            if (this.overlays === "qcow2") {
              await hostCommand(["qemu-img", "convert", "-U", "-O", "qcow2", disk, file], {
                host: this.opts.host,
                instance: instanceUuid,
                timeoutMs: 30 * 60_000,
              });
              return { disk_format: "qcow2", container_format: "bare" };
            }
            copyFileSync(disk, file);
            const format = spec?.image.properties.disk_format === "qcow2" ? "qcow2" : "raw";
            return { disk_format: format, container_format: "bare" };
          } finally {
            if (running) await this.virsh.run(`resume ${name}`);
          }
        },
        stage,
      ),
    );
  }

  private async domstate(id: string): Promise<PowerState> {
    const name = domainName(id);
    const power = powerStateOf(await this.virsh.run(`domstate ${name}`));
    // shut off with a managed save image is suspended (the reason "saved" outlives the image)
    if (
      power === POWER_STATE.SHUTDOWN &&
      /^Managed save:\s*yes/m.test(await this.virsh.run(`dominfo ${name}`))
    )
      return POWER_STATE.SUSPENDED;
    return power;
  }

  private known(id: string): void {
    if (!this.guests.has(id)) throw new GuestNotFound(id, this.opts.host);
  }

  async destroy(instanceUuid: string): Promise<void> {
    const migration = handedOver(this.dir(instanceUuid));
    await this.undefine(instanceUuid);
    // a server deleted in the middle of a move: the disk it handed over goes too (at best: the
    // bucket's lifecycle rule expires what stays)
    if (migration) await this.migrationStore.remove(migration).catch(() => undefined);
  }

  /** The guest's domain and files gone from this host, what a move kept of it too. */
  private async undefine(instanceUuid: string): Promise<void> {
    await this.act(instanceUuid, async () => {
      const name = domainName(instanceUuid);
      await this.virsh.run(`destroy ${name}`).catch(() => undefined); // not running: fine
      // with its managed save image, if suspended; not defined: fine
      await this.virsh.run(`undefine --managed-save ${name}`).catch(() => undefined);
      await this.removeFilters(instanceUuid);
      const image = this.specOf(instanceUuid)?.image;
      rmSync(this.dir(instanceUuid), { recursive: true, force: true });
      rmSync(keptDir(this.dir(instanceUuid)), { recursive: true, force: true });
      this.guests.delete(instanceUuid);
      if (image) this.dropFetchedImage(image);
    });
  }

  /**
   * A server's image (a snapshot or backup) this host fetched from the images bucket leaves the
   * cache with its last guest here: the bucket keeps it, and a later guest fetches it again. The
   * catalog's images stay (the operator put them there).
   */
  private dropFetchedImage(image: GuestSpec["image"]): void {
    if (!SERVER_IMAGE_TYPES.has(image.properties.image_type ?? "")) return;
    for (const id of this.guests.keys()) if (this.specOf(id)?.image.id === image.id) return;
    rmSync(join(this.opts.imagesPath, image.id), { force: true });
  }

  async powerOff(
    instanceUuid: string,
    timeoutSeconds = this.opts.shutdownTimeoutSeconds ?? 60,
  ): Promise<void> {
    this.known(instanceUuid);
    await this.act(instanceUuid, async () => {
      const name = domainName(instanceUuid);
      const state = await this.domstate(instanceUuid);
      // a paused domain cannot shut down cleanly: it is destroyed (Nova's power_off); a suspended
      // one is off already, its saved state dropped so that start boots it afresh
      if (state === POWER_STATE.PAUSED) await this.virsh.run(`destroy ${name}`);
      if (state === POWER_STATE.SUSPENDED) await this.virsh.run(`managedsave-remove ${name}`);
      if (state === POWER_STATE.RUNNING) {
        // Nova's _clean_shutdown: the request again every SHUTDOWN_RETRY_INTERVAL, as a guest may
        // not have been listening yet (one still booting, its ACPI handler not started)
        const start = Date.now();
        const deadline = start + timeoutSeconds * 1000;
        let sent = 0;
        while ((await this.domstate(instanceUuid)) !== POWER_STATE.SHUTDOWN && Date.now() < deadline) {
          if (Date.now() >= start + sent * SHUTDOWN_RETRY_INTERVAL_MS) {
            await this.virsh.run(`shutdown ${name}`).catch((e: unknown) => {
              // a domain that went off meanwhile refuses a shutdown: the loop's next look sees it
              if (sent === 0) throw e;
            });
            sent++;
          }
          await sleep(200);
        }
        // Nova's clean shutdown gives up after shutdown_timeout and destroys
        if ((await this.domstate(instanceUuid)) !== POWER_STATE.SHUTDOWN)
          await this.virsh.run(`destroy ${name}`);
      }
      this.guests.set(instanceUuid, await this.domstate(instanceUuid));
    });
  }

  async powerOn(instanceUuid: string): Promise<void> {
    this.known(instanceUuid);
    await this.act(instanceUuid, async () => {
      if ((await this.domstate(instanceUuid)) !== POWER_STATE.RUNNING)
        await this.virsh.run(`start ${domainName(instanceUuid)}`);
      this.guests.set(instanceUuid, await this.domstate(instanceUuid));
    });
  }

  async reboot(instanceUuid: string, type: RebootType): Promise<void> {
    this.known(instanceUuid);
    await this.act(instanceUuid, async () => {
      const name = domainName(instanceUuid);
      if (type === "SOFT" && (await this.domstate(instanceUuid)) === POWER_STATE.RUNNING) {
        await this.virsh.run(`reboot ${name}`);
      } else {
        // Nova's hard reboot: destroy, define again from the instance's XML, start (a fresh boot,
        // a suspended guest's saved state discarded)
        await this.virsh.run(`destroy ${name}`).catch(() => undefined);
        const xml = join(this.dir(instanceUuid), "libvirt.xml");
        if (existsSync(xml)) await this.virsh.run(`define "${xml}"`);
        await this.virsh.run(`start --force-boot ${name}`);
      }
      this.guests.set(instanceUuid, await this.domstate(instanceUuid));
    });
  }

  /** Nova's libvirt trigger_crash_dump: `virsh inject-nmi` (a hypervisor without it says so). */
  async triggerCrashDump(instanceUuid: string): Promise<void> {
    this.known(instanceUuid);
    await this.act(instanceUuid, async () => {
      await this.virsh.run(`inject-nmi ${domainName(instanceUuid)}`);
    });
  }

  /**
   * Nova's libvirt attach_interface: the port's <interface> (the one the domain's XML has for a
   * port, libvirt-xml.ts) attached with `virsh attach-device`, to the running (or paused) domain
   * and its persistent definition, or to the definition only when the domain is shut off; what is
   * there already (a redelivered cast, a host that died half-way) is not attached again. The
   * instance's libvirt.xml and spec follow, so a hard reboot, a move or a restarted agent keeps it.
   */
  async attachInterface(instanceUuid: string, port: GuestPort): Promise<void> {
    this.known(instanceUuid);
    // a port whose physical network this host does not map is refused before anything is done
    const [bound] = bindPorts([port], this.bridges, this.opts.host);
    const mac = port.mac_address.toLowerCase();
    await this.act(instanceUuid, async () => {
      const { name, live, inConfig, inLive } = await this.interfaceState(instanceUuid, mac);
      const flags = [...(inConfig ? [] : ["--config"]), ...(live && !inLive ? ["--live"] : [])];
      if (flags.length) {
        const file = join(this.dir(instanceUuid), `interface-${port.port_id}.xml`);
        writeFileSync(file, `${interfaceXml(bound!)}\n`);
        try {
          await this.virsh.run(`attach-device ${name} "${file}" ${flags.join(" ")}`);
        } catch (e) {
          throw new Error(
            `libvirt on ${this.opts.host} could not attach port ${port.port_id} (${port.mac_address}) to instance ${instanceUuid}: ${(e as Error).message}`,
          );
        } finally {
          rmSync(file, { force: true });
        }
      }
      await this.keepDefinition(instanceUuid, (ports) =>
        ports.some((p) => p.mac_address.toLowerCase() === mac) ? ports : [...ports, port],
      );
    });
  }

  /**
   * Nova's libvirt detach_interface (_detach_with_retry): the NIC gone from the persistent
   * definition, then asked off the running domain with `virsh detach-device --live` and waited
   * for (the guest must let a PCI device go), asked again up to device_detach_attempts times
   * (Nova's DeviceDetachFailed after the last). A NIC that is not there is detached already.
   */
  async detachInterface(instanceUuid: string, port: GuestPort): Promise<void> {
    this.known(instanceUuid);
    const mac = port.mac_address.toLowerCase();
    const attempts = this.opts.deviceDetach?.attempts ?? 8;
    const timeoutMs = (this.opts.deviceDetach?.timeoutSeconds ?? 20) * 1000;
    await this.act(instanceUuid, async () => {
      const { name, live, inConfig, inLive } = await this.interfaceState(instanceUuid, mac);
      // libvirt finds the device by its MAC: the port's own <interface>, or its MAC alone where
      // this host no longer maps its network
      let device: string;
      try {
        device = interfaceXml(bindPorts([port], this.bridges, this.opts.host)[0]!);
      } catch {
        device = `<interface type='bridge'>\n  <mac address='${mac}'/>\n</interface>`;
      }
      const file = join(this.dir(instanceUuid), `interface-${port.port_id}.xml`);
      writeFileSync(file, `${device}\n`);
      try {
        if (inConfig) await this.virsh.run(`detach-device ${name} "${file}" --config`);
        if (live && inLive) {
          for (let attempt = 1; ; attempt++) {
            await this.virsh.run(`detach-device ${name} "${file}" --live`).catch((e: Error) => {
              // gone meanwhile (the guest let it go as the last attempt timed out): detached
              if (!/not found|no device|no matching/i.test(e.message)) throw e;
            });
            const deadline = Date.now() + timeoutMs;
            while (Date.now() < deadline) {
              if (!interfaceMacs(await this.virsh.run(`dumpxml ${name}`)).has(mac)) return;
              await sleep(DETACH_POLL_MS);
            }
            if (attempt >= attempts)
              throw new Error(
                `Device detach failed for ${port.mac_address}: Run out of retry while detaching device ${port.mac_address} with device alias of port ${port.port_id} from instance ${instanceUuid} from the live domain config on host ${this.opts.host}. Device is still attached to the guest.`,
              );
          }
        }
      } finally {
        rmSync(file, { force: true });
        await this.keepDefinition(instanceUuid, (ports) =>
          ports.filter((p) => p.mac_address.toLowerCase() !== mac),
        );
      }
    });
  }

  /** Whether the domain runs (or is paused), and whether its definition and live XML have the MAC. */
  private async interfaceState(id: string, mac: string) {
    const name = domainName(id);
    const power = await this.domstate(id);
    const live = power === POWER_STATE.RUNNING || power === POWER_STATE.PAUSED;
    const inConfig = interfaceMacs(await this.virsh.run(`dumpxml --inactive ${name}`)).has(mac);
    const inLive = live && interfaceMacs(await this.virsh.run(`dumpxml ${name}`)).has(mac);
    return { name, live, inConfig, inLive };
  }

  /**
   * The instance's libvirt.xml as libvirt now defines the domain (a hard reboot defines it again
   * from it), and its spec's ports as `change` makes them (a move, the config drive, the image
   * cache read the spec).
   */
  private async keepDefinition(id: string, change: (ports: GuestPort[]) => GuestPort[]): Promise<void> {
    const dir = this.dir(id);
    writeFileSync(join(dir, "libvirt.xml"), await this.virsh.run(`dumpxml --inactive ${domainName(id)}`));
    const spec = this.specOf(id);
    if (!spec) return;
    const ports = change(spec.ports ?? []);
    writeFileSync(join(dir, "spec.json"), JSON.stringify({ ...spec, ports }));
  }

  /** Nova's pause: `virsh suspend` (the domain's vCPUs stop, its memory stays). */
  async pause(instanceUuid: string): Promise<void> {
    await this.transit(instanceUuid, POWER_STATE.PAUSED, POWER_STATE.RUNNING, "suspend", "paused");
  }

  async unpause(instanceUuid: string): Promise<void> {
    await this.transit(instanceUuid, POWER_STATE.RUNNING, POWER_STATE.PAUSED, "resume", "unpaused");
  }

  /** Nova's suspend: `virsh managedsave` (memory saved to disk, the domain shut off). */
  async suspend(instanceUuid: string): Promise<void> {
    await this.transit(instanceUuid, POWER_STATE.SUSPENDED, POWER_STATE.RUNNING, "managedsave", "suspended");
  }

  /** Nova's resume: `virsh start` restores the managed save (a domain without one boots afresh). */
  async resume(instanceUuid: string): Promise<void> {
    await this.transit(instanceUuid, POWER_STATE.RUNNING, POWER_STATE.SUSPENDED, "start", "resumed");
  }

  /**
   * One virsh command taking the domain from `from` to `to`; nothing when it is there already (a
   * redelivered cast). Any other state is refused, naming the host and the instance.
   */
  private async transit(id: string, to: PowerState, from: PowerState, command: string, what: string) {
    this.known(id);
    await this.act(id, async () => {
      const now = await this.domstate(id);
      if (now !== to) {
        // resume may also start a domain that lost its saved state (shut off): it boots afresh
        const startable = command === "start" && now === POWER_STATE.SHUTDOWN;
        if (now !== from && !startable)
          throw new Error(
            `instance ${id} on host ${this.opts.host} is in power state ${now}: libvirt cannot have it ${what}`,
          );
        await this.virsh.run(`${command} ${domainName(id)}`);
      }
      this.guests.set(id, await this.domstate(id));
    });
  }

  /** Nova's get_instance_diagnostics: `virsh domstats` and its fallbacks (libvirt-diagnostics.ts). */
  async diagnostics(instanceUuid: string): Promise<InstanceDiagnostics> {
    this.known(instanceUuid);
    return domainDiagnostics((c) => this.virsh.run(c), domainName(instanceUuid), {
      virtType: this.opts.virtType ?? "kvm",
      configDrive: existsSync(join(this.dir(instanceUuid), "disk.config")),
    });
  }

  /** The host as libvirt sees it (`virsh nodeinfo`), and the instances path's filesystem. */
  async machineFacts(): Promise<MachineFacts> {
    const info = await this.virsh.run("nodeinfo");
    const cpus = Number(/^CPU\(s\):\s*(\d+)/m.exec(info)?.[1]);
    const kib = Number(/^Memory size:\s*(\d+)\s*KiB/m.exec(info)?.[1]);
    if (!cpus || !kib)
      throw new Error(`virsh nodeinfo on host ${this.opts.host}: no CPU(s) or Memory size in ${info}`);
    mkdirSync(this.opts.instancesPath, { recursive: true });
    const fs = statfsSync(this.opts.instancesPath);
    return { cpus, memoryBytes: kib * 1024, diskBytes: fs.blocks * fs.bsize };
  }

  /** The end of the serial console's log (Nova's get_console_output of a file-logged console). */
  async consoleOutput(instanceUuid: string, maxBytes = 64 * 1024): Promise<string> {
    this.known(instanceUuid);
    return tailFile(join(this.dir(instanceUuid), "console.log"), maxBytes);
  }

  list(): GuestInfo[] {
    return [...this.guests].map(([instance_uuid, power_state]) => ({ instance_uuid, power_state }));
  }

  has(instanceUuid: string): boolean {
    return this.guests.has(instanceUuid);
  }

  powerState(instanceUuid: string): PowerState {
    return this.guests.get(instanceUuid) ?? POWER_STATE.NOSTATE;
  }

  onLifecycle(listener: LifecycleListener): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    if (this.cacheManager) clearInterval(this.cacheManager);
    this.events?.kill("SIGKILL");
    await this.virsh.close();
  }

  /** The domain XML of a guest as libvirt has it (tests). */
  dumpxml(instanceUuid: string): Promise<string> {
    return this.virsh.run(`dumpxml ${domainName(instanceUuid)}`);
  }

  /** The spec a guest was defined from, from its directory. */
  specOf(instanceUuid: string): GuestSpec | undefined {
    try {
      return JSON.parse(readFileSync(join(this.dir(instanceUuid), "spec.json"), "utf8")) as GuestSpec;
    } catch {
      return undefined;
    }
  }
}
