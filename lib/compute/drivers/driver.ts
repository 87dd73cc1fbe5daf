import type { FlavorSpec, ImageSpec } from "../../messages/common.js";
import type { PortFilter } from "../../messages/port-filter.js";
import { POWER_STATE, type PowerState } from "../../messages/power-state.js";
import type { InstanceDiagnostics } from "../../messages/reports.js";
import type { MachineFacts } from "../discover.js";
import type { SnapshotData, SnapshotStage } from "../image-store.js";

/** A port as the host is told of it (Nova's VIF): what the guest's NIC needs. */
export interface GuestPort {
  port_id: string;
  network_id: string;
  network_name: string;
  mac_address: string;
  fixed_ips: {
    subnet_id: string;
    ip_address: string;
    version: 4 | 6;
    cidr: string;
    gateway_ip: string | null;
    dns_nameservers: string[];
    host_routes: { destination: string; nexthop: string }[];
  }[];
  network_type: "flat" | "vlan";
  physical_network: string | null;
  segmentation_id: number | null;
  mtu: number;
  /** its security groups' rules (lib/messages/port-filter.ts); absent: nothing filtered */
  filter?: PortFilter;
}

/** What a guest is built from: the instance's record, as the build cast carries it. */
export interface GuestSpec {
  instance_uuid: string;
  /** the server's display name */
  name: string;
  /** the guest hostname (Nova's sanitized display name unless asked for) */
  hostname: string;
  project_id: string;
  user_id: string;
  flavor: FlavorSpec;
  image: ImageSpec;
  /** server metadata (config drive's meta_data.json "meta") */
  metadata: Record<string, string>;
  /** the key pair's name and public key, if one was named at create */
  key_name?: string | null;
  key_data?: string | null;
  /** base64, as given at create */
  user_data?: string | null;
  /** a config drive was asked for (libvirt attaches one; exec writes its files) */
  config_drive?: boolean;
  /** the guest's NICs, in order (Nova's network_info); absent or empty: a guest without a NIC */
  ports?: GuestPort[];
}

/** Nova's power_state values, which the messages hosts send carry (re-exported for the drivers' callers). */
export { POWER_STATE, type PowerState };

export interface GuestInfo {
  instance_uuid: string;
  power_state: PowerState;
}

/** A guest changed power state on its own (exited, crashed, was shut down from inside). */
export type LifecycleListener = (instanceUuid: string, powerState: PowerState) => void;

export type RebootType = "SOFT" | "HARD";

/** What the compute agent needs of a hypervisor (Nova's virt driver, reduced). */
export interface Driver {
  readonly hypervisorType: string;
  readonly hypervisorVersion: number;
  /**
   * Facts for os-hypervisors (cpu_info and the like): e.g. `{ limits_enforced: false, why: … }`.
   * Plain JSON.
   */
  facts(): Record<string, unknown>;
  /**
   * Connect and find the guests a previous agent left (a restarted nova-compute finds its
   * domains still running). Called once before anything else.
   */
  init(): Promise<void>;
  /**
   * Resolves when the guest runs; rejects with BuildFailure when it cannot be built. An aborted
   * `signal` stops the spawn and leaves no guest behind.
   */
  spawn(guest: GuestSpec, signal?: AbortSignal): Promise<void>;
  /** Idempotent: destroying what is not there is a no-op. Removes everything of the guest. */
  destroy(instanceUuid: string): Promise<void>;
  /** os-stop: a clean shutdown, forced after `timeoutSeconds`; the guest stays defined. */
  powerOff(instanceUuid: string, timeoutSeconds?: number): Promise<void>;
  /** os-start: run a defined, stopped guest again. */
  powerOn(instanceUuid: string): Promise<void>;
  /** SOFT: clean shutdown then start (HARD after a timeout); HARD: destroy the process/domain and start. */
  reboot(instanceUuid: string, type: RebootType): Promise<void>;
  /**
   * Nova's pause and unpause: the guest's CPUs held, its memory kept where it is (PAUSED), then
   * run on. Each is safe to repeat; a guest that is not running cannot be paused (an error naming
   * the host and the instance).
   */
  pause(instanceUuid: string): Promise<void>;
  /**
   * Nova's trigger_crash_dump (2.17): an NMI to the guest, whose kernel may dump and reboot (its
   * own configuration decides). Absent for a driver that cannot (exec: a process has no NMI);
   * the host then answers as Nova's TriggerCrashDumpNotSupported.
   */
  triggerCrashDump?(instanceUuid: string): Promise<void>;
  unpause(instanceUuid: string): Promise<void>;
  /**
   * Nova's suspend and resume: the guest's state saved and the guest stopped (SUSPENDED), then run
   * again from that state (libvirt: managed save; exec: stop-and-hold; fake: simulated). A resume
   * whose saved state is lost boots the guest afresh.
   */
  suspend(instanceUuid: string): Promise<void>;
  resume(instanceUuid: string): Promise<void>;
  /** the guest's console log, at most `maxBytes` of its end */
  consoleOutput(instanceUuid: string, maxBytes?: number): Promise<string>;
  /**
   * A running guest's figures (Nova's get_instance_diagnostics): what the hypervisor measures,
   * null where it measures nothing. GuestNotFound when the guest is not here.
   */
  diagnostics(instanceUuid: string): Promise<InstanceDiagnostics>;
  /**
   * Nova's snapshot: capture the guest's disk as image `imageId` and upload it to the images
   * bucket (libvirt: a qcow2 copy of the disk; exec: an archive of the instance's directory; fake:
   * nothing, the image is its metadata), calling `stage` as Nova's update_task_state. A host that
   * lacks an image's data fetches it from the bucket when it spawns a guest of it.
   */
  snapshot(instanceUuid: string, imageId: string, stage: SnapshotStage): Promise<SnapshotData>;
  /** defined guests and their power state (Nova's list_instances + get_info) */
  list(): GuestInfo[];
  has(instanceUuid: string): boolean;
  /** NOSTATE when the guest is not defined here */
  powerState(instanceUuid: string): PowerState;
  /** called for every power-state change the agent did not ask for */
  onLifecycle(listener: LifecycleListener): void;
  /**
   * The host's CPUs, memory and instances disk as the hypervisor sees them (Nova's libvirt
   * driver: virConnectGetInfo and the instances path's filesystem); absent where the agent reads
   * the machine itself (discover.ts machineFacts).
   */
  machineFacts?(): Promise<MachineFacts>;
  /**
   * Nova's refresh_instance_security_rules (Neutron's agent on the host): enforce each port's
   * filter now, replacing what was enforced for it. Absent: the driver cannot isolate a guest's
   * traffic (exec: a process shares the host's network), and says so in its facts. GuestNotFound
   * when the guest is not on this host (its rules went with it).
   */
  applyPortFilters?(instanceUuid: string, ports: readonly GuestPort[]): Promise<void>;
  /**
   * Nova's attach_interface: the port's NIC hot-plugged into a running or paused guest and kept in
   * its definition (a stopped guest: its definition only), so the guest keeps it across a reboot.
   * Safe to repeat: a NIC of the port's MAC already there is left as it is. Absent: the driver
   * cannot hot-plug (exec: a process has no NIC), and says so in its facts
   * (`attach_interface: false`); the host then answers as Nova's AttachInterfaceNotSupported.
   */
  attachInterface?(instanceUuid: string, port: GuestPort): Promise<void>;
  /**
   * Nova's detach_interface: the port's NIC unplugged (waiting for the guest to let it go) and gone
   * from the definition. Safe to repeat: a NIC that is not there is detached already.
   */
  detachInterface?(instanceUuid: string, port: GuestPort): Promise<void>;
  /** release connections and supervisors; guests keep running (as nova-compute's stop). */
  close(): Promise<void>;
  /**
   * Live migration, for drivers that can move a running guest; absent for those that cannot
   * (exec: a process cannot move live). Its facts() then say so (`live_migration: false`), and the
   * conductor refuses before anything is claimed.
   */
  readonly live?: LiveMigrationDriver;
  /**
   * Resize and cold migration with the guest's disk, for drivers that carry it (libvirt); absent
   * for those whose destination creates the guest anew from its image (fake, exec), as the host's
   * move steps then do (move-steps.ts).
   */
  readonly cold?: ColdMigrationDriver;
}

/** The move a cold migration step belongs to: its uuid, and whether it stays on its host. */
export interface ColdMigration {
  uuid: string;
  sameHost: boolean;
}

/**
 * Nova's virt driver calls for a resize or cold migration. Each is safe to repeat (SQS delivers a
 * step at least once), and a destination that fails leaves nothing of the guest behind (on its
 * own host: the guest as the source left it).
 */
export interface ColdMigrationDriver {
  /**
   * The source (Nova's migrate_disk_and_power_off): the guest powered off and its disk handed to
   * the destination; it stays defined here until confirm or revert. A `flavor` whose root or
   * ephemeral disk is smaller than the guest's is refused first, the guest left as it is (Nova's
   * "Unable to resize disk down.").
   */
  migrateDiskAndPowerOff(instanceUuid: string, migration: ColdMigration, flavor?: FlavorSpec): Promise<void>;
  /**
   * The destination (Nova's finish_migration): the guest from the handed-over disk, grown to the
   * new flavor's root_gb (never shrunk), running when `powerOn`.
   */
  finishMigration(guest: GuestSpec, migration: ColdMigration, powerOn: boolean): Promise<void>;
  /**
   * The source after a revert (Nova's finish_revert_migration): the old guest as it was before the
   * move, running when `powerOn`; the handed-over disk removed.
   */
  finishRevertMigration(guest: GuestSpec, migration: ColdMigration, powerOn: boolean): Promise<void>;
  /**
   * The source after a confirm (Nova's confirm_migration): what the move kept of the old guest
   * removed (another host's: the guest itself), and the handed-over disk.
   */
  confirmMigration(instanceUuid: string, migration: ColdMigration): Promise<void>;
}

/** A live migration's memory figures, as Nova's driver reports them (server_migrations' fields). */
export interface LiveMigrationProgress {
  memory_total_bytes: number;
  memory_processed_bytes: number;
  memory_remaining_bytes: number;
}

/** What the source's copy is told while it runs. */
export interface LiveMigrationJob {
  /** aborted: stop and leave the guest running on the source (Nova's live_migration_abort) */
  readonly abort: AbortSignal;
  /** aborted: complete now (Nova's live_migration_force_complete pauses the guest to converge) */
  readonly forceComplete: AbortSignal;
  onProgress(p: LiveMigrationProgress): void;
}

/** Nova's virt driver calls for a live migration. Each is safe to repeat. */
export interface LiveMigrationDriver {
  /** the destination: get ready for the guest (Nova's pre_live_migration) */
  preLiveMigration(guest: GuestSpec): Promise<void>;
  /**
   * the source: copy the running guest to `dest`; resolves once it runs there and is gone from
   * here; rejects with LiveMigrationAborted when aborted (the guest still runs here)
   */
  liveMigrate(
    instanceUuid: string,
    dest: { host: string; ip: string; blockMigration: boolean | null },
    job: LiveMigrationJob,
  ): Promise<void>;
  /**
   * the destination: the guest is its own now (Nova's post_live_migration_at_destination); a
   * `paused` server's guest is left paused (a force_complete's pause is undone otherwise)
   */
  postLiveMigrationAtDestination(guest: GuestSpec, opts?: { paused?: boolean }): Promise<void>;
}

/** The live migration was aborted; the guest still runs on its source. */
export class LiveMigrationAborted extends Error {
  override name = "LiveMigrationAborted";
}

/** Nova's RescheduledException: this host could not build it; another one may. */
export class BuildFailure extends Error {
  override name = "BuildFailure";
}

/** Nova's InstanceNotFound from the driver: the host has no such guest. */
export class GuestNotFound extends Error {
  override name = "GuestNotFound";
  constructor(
    readonly instanceUuid: string,
    host: string,
  ) {
    super(`instance ${instanceUuid} is not defined on host ${host}`);
  }
}
