import type { Destination } from "../messages/common.js";
import type { FlavorSpec, ImageSpec, RequestSpec } from "../scheduler/types.js";

/** Nova's vm_states this system sets; `resized` is a finished resize or migration awaiting confirm/revert (VERIFY_RESIZE). */
export type VmState =
  | "building"
  | "active"
  | "stopped"
  | "resized"
  | "error"
  | "deleted"
  // pause (the guest's CPUs held, memory kept) and suspend (its state saved, Nova's managed save)
  | "paused"
  | "suspended"
  // shelved: stopped and snapshotted on its host; offloaded: gone from any host, its claim freed
  | "shelved"
  | "shelved_offloaded"
  // deleted, but restorable until reclaim_instance_interval passes: its guest powered off on its
  // host, its claim and ports held (Nova's SOFT_DELETED)
  | "soft-delete";
/** Nova's task states this system sets (nova/compute/task_states.py). */
export type TaskState =
  | "scheduling"
  | "spawning"
  | "deleting"
  | "powering-off"
  | "powering-on"
  | "rebooting"
  | "reboot_started"
  | "rebooting_hard"
  | "reboot_started_hard"
  // pause, unpause, suspend, resume (Nova's task_states.py): from the API's accept to the host's report
  | "pausing"
  | "unpausing"
  | "suspending"
  | "resuming"
  // a resize or cold migration (Nova's task_states.py): accepted, source powering off, source
  // done (the destination finishing); then a revert in progress
  | "resize_prep"
  | "resize_migrating"
  | "resize_migrated"
  | "resize_reverting"
  // a rebuild, or an evacuation (Nova's rebuild on another host): accepted, the host creating the guest
  | "rebuilding"
  | "rebuild_spawning"
  // a live migration (Nova's task_states.MIGRATING), from the API's accept to its end
  | "migrating"
  // createImage and createBackup (Nova's task_states.py): accepted, the host taking the snapshot,
  // the image captured and waiting to upload, uploading
  | "image_snapshot_pending"
  | "image_snapshot"
  | "image_backup"
  | "image_pending_upload"
  | "image_uploading"
  // shelve (Nova's task_states): accepted, the snapshot's upload, the guest leaving its host;
  // unshelve: accepted (and scheduling), then spawning on the chosen host
  | "shelving"
  | "shelving_image_pending_upload"
  | "shelving_image_uploading"
  | "shelving_offloading"
  | "unshelving"
  // a soft delete (the host powering the guest off) and a restore (powering it on again)
  | "soft-deleting"
  | "restoring"
  | null;

export interface Fault {
  code: number;
  message: string;
  /** operator detail (host, filter, attempt); shown to admins only */
  details: string;
  created: string;
}

/** One of Nova's os-instance-actions events. */
export interface ActionEvent {
  event: string;
  attempt: number;
  start_time: string;
  finish_time: string | null;
  result: "Success" | "Error" | null;
  host: string | null;
  details: string | null;
}

/** Nova's instance_actions names this system records. */
export type ActionName =
  | "create"
  // a delete, a soft delete and a forceDelete alike (Nova's instance_actions.DELETE)
  | "delete"
  // Nova's instance_actions.RESTORE
  | "restore"
  | "lock"
  | "unlock"
  | "stop"
  | "start"
  | "reboot"
  // Nova's instance_actions.PAUSE, UNPAUSE, SUSPEND, RESUME
  | "pause"
  | "unpause"
  | "suspend"
  | "resume"
  | "resize"
  | "migrate"
  | "confirmResize"
  | "revertResize"
  | "evacuate"
  | "rebuild"
  // Nova's instance_actions.LIVE_MIGRATION, LIVE_MIGRATION_FORCE_COMPLETE, LIVE_MIGRATION_CANCEL
  | "live-migration"
  | "live_migration_force_complete"
  | "live_migration_cancel"
  // Nova's instance_actions.TRIGGER_CRASH_DUMP
  | "trigger_crash_dump"
  // Nova's instance_actions.SHELVE, SHELVE_OFFLOAD, UNSHELVE
  | "shelve"
  | "shelveOffload"
  | "unshelve"
  // Nova's instance_actions.RESET_STATE (os-resetState)
  | "resetState"
  // Nova's instance_actions.CREATE_IMAGE and BACKUP
  | "createImage"
  | "createBackup"
  // Nova's instance_actions.ATTACH_INTERFACE and DETACH_INTERFACE
  | "attach_interface"
  | "detach_interface";

/** Nova's Migration.migration_type. */
export type MigrationType = "migration" | "resize" | "live-migration" | "evacuation";

/**
 * Nova's Migration.status values for cold moves: pre-migrating (accepted), migrating (the
 * destination is claimed and the source is powering off), post-migrating (the source is done),
 * finished (VERIFY_RESIZE), confirming/confirmed, reverting/reverted, error.
 */
export type MigrationStatus =
  | "pre-migrating"
  | "migrating"
  | "post-migrating"
  | "finished"
  | "confirming"
  | "confirmed"
  | "reverting"
  | "reverted"
  // an evacuation: rebuilt on the destination (done), then the source came back and destroyed
  // its copy (completed)
  | "done"
  | "completed"
  // a live migration (Nova's compute manager): accepted by the API, queued (placed), preparing
  // (the destination's pre_live_migration), running (the source copies it), then completed;
  // error when it failed, cancelled when aborted
  | "accepted"
  | "queued"
  | "preparing"
  | "running"
  | "failed"
  | "cancelled"
  | "error";

/**
 * A move, as the Migrations table keeps it (Nova's Migration object, what os-migrations lists).
 * The record of one move; the instance carries the one in progress as its MoveContext.
 */
export interface MigrationRecord {
  uuid: string;
  /** Nova's integer id (an atomic counter, as Nova's autoincrement) */
  id: number;
  instance_uuid: string;
  project_id: string;
  user_id: string;
  migration_type: MigrationType;
  status: MigrationStatus;
  source_compute: string;
  source_node: string;
  dest_compute: string | null;
  dest_node: string | null;
  /** Nova's dest_host (the destination's IP in Nova); the host's name here, null until claimed */
  dest_host: string | null;
  /** the flavors' ids (Nova's old/new_instance_type_id) */
  old_instance_type_id: string;
  new_instance_type_id: string;
  created_at: string;
  updated_at: string;
  /** a live migration's progress as its source's driver reports it (server_migrations' fields) */
  memory_total_bytes?: number | null;
  memory_processed_bytes?: number | null;
  memory_remaining_bytes?: number | null;
  disk_total_bytes?: number | null;
  disk_processed_bytes?: number | null;
  disk_remaining_bytes?: number | null;
}

/**
 * The move in progress, or awaiting confirm/revert, on the instance's record (Nova's
 * migration_context with the flavors and the old vm_state). Every write of a move is
 * conditioned on its uuid and, for the hosts' reports, on its attempt.
 */
export interface MoveContext {
  uuid: string;
  /** the request that began it: its instance action holds the move's events */
  request_id?: string;

  id: number;
  type: "resize" | "migration" | "evacuation" | "live-migration";
  status: MigrationStatus;
  source_host: string;
  source_node: string;
  source_az: string | null;
  /**
   * the instance's attempt when the move began: the source's allocation, which the migration's
   * consumer (its uuid) holds while the move lasts, keeps it
   */
  source_attempt: number;
  dest_host: string | null;
  dest_node: string | null;
  dest_az: string | null;
  /** the destination claim's attempt: the fencing token of the move's casts and reports */
  attempt: number | null;
  old_flavor: FlavorSpec;
  new_flavor: FlavorSpec;
  /** where confirm and revert return it: a stopped server stays stopped */
  old_vm_state: "active" | "stopped";
  /** the host a cold migration asked for (2.56), checked by the scheduler; null: any */
  requested_host: string | null;
  /** the source may be the destination (a resize with allow_resize_to_same_host) */
  same_host_allowed: boolean;
  /** destinations that failed to finish it, oldest first (the reschedule's retry hosts) */
  tried: string[];
  /** an evacuation: whether the destination starts the server (false from 2.95: SHUTOFF) */
  power_on?: boolean;
  /** a live migration forced to its requested host (2.30 to 2.67): no scheduler filters */
  force?: boolean;
  /** a live migration's block_migration (null: "auto", 2.25) */
  block_migration?: boolean | null;
  /** an abort was asked for (DELETE /servers/{id}/migrations/{mid}): no further step starts */
  abort_requested?: boolean;
}

/**
 * A rebuild on the instance's own host in progress (Nova's rebuild without evacuate: no migration
 * record, no new claim, the instance keeps its allocation). Its uuid is the rebuild's fencing
 * token: the conductor's and the host's writes are conditioned on it, as a move's are on its
 * migration's.
 */
export interface RebuildContext {
  uuid: string;
  /** the rebuild action's request id: its events go under it */
  request_id: string;
  /** the image the server had (Nova's orig_image_ref): NoValidHost puts it back */
  orig_image: ImageSpec;
  /** the image changed: the scheduler checks the host against it (Nova's _nova_check_type rebuild) */
  image_changed: boolean;
  /** where the server ends: a stopped server is stopped again, an active or errored one runs */
  old_vm_state: "active" | "stopped" | "error";
}

/** Nova's shelved_at, shelved_image_id and shelved_host system metadata. */
export interface ShelveContext {
  at: string;
  /** the snapshot the server comes back from (null: the driver keeps no image; its own image is used) */
  image_id: string | null;
  /** the host it was shelved on */
  host: string;
}

/**
 * An unshelve through the conductor (Nova's conductor unshelve_instance): its uuid and attempts
 * fence the conductor's and the chosen host's writes, as a move's migration and attempt do.
 * Attempt n claims with the token base_attempt + n.
 */
export interface UnshelveContext {
  uuid: string;
  /** the unshelve action's request id: its events go under it */
  request_id: string;
  /** the instance's attempt when the unshelve was accepted */
  base_attempt: number;
  /** the host asked for (2.91, admins), checked by the scheduler; null: any */
  requested_host: string | null;
  /** hosts that failed to spawn it, oldest first */
  tried: string[];
}

export interface InstanceAction {
  action: ActionName;
  request_id: string;
  user_id: string;
  project_id: string;
  start_time: string;
  message: string | null;
  /** keyed `${event}#${attempt}` so a repeated write of the same event is idempotent */
  events: Record<string, ActionEvent>;
  /** an attach_interface's port, from its accept until its host's report settles it (never shown) */
  interface?: InterfaceAttachment;
}

/**
 * The port an interface attach is about (lib/instances/interfaces.ts), kept on its action: written
 * before the port is made or bound, so that a delete, a failed report or a timed-out API finds it
 * whatever the attach came to.
 */
export interface InterfaceAttachment {
  port_id: string;
  network_id: string;
  /** false: Nova made the port (deleted when the attach fails); true: the user's (unbound) */
  preexisting: boolean;
  tag?: string;
  /** pending until the host's report: attached (in the network info) or failed (the port freed) */
  state: "pending" | "attached" | "failed";
  /** why it failed: the driver has no hot-plug (Nova's 400), or the host could not (500) */
  error?: "not_supported" | "failed";
}

export interface InstanceRecord {
  id: string;
  name: string;
  project_id: string;
  user_id: string;
  reservation_id: string;
  /** the create action's request id */
  request_id: string;
  flavor: FlavorSpec;
  image: ImageSpec;
  /** what the user asked for, if anything */
  requested_availability_zone: string | null;
  /** where it landed */
  availability_zone: string | null;
  metadata: Record<string, string>;
  /** Nova's server description (2.19); absent on records from before it was kept */
  description?: string | null;
  /** Nova's server tags (2.26), in the order they were added; absent means none */
  tags?: string[];
  /** the key pair named at create (Nova keeps its name) */
  key_name?: string | null;
  /** the create's `networks`, resolved by the API (lib/instances/networking.ts); absent: none */
  requested_networks?: NetworkRequest[];
  /**
   * The create's security_groups, resolved by the API to the project's groups' ids (`default`
   * kept as the name: the conductor makes the project's default group if it is not there);
   * absent: Nova's default, the project's default group
   */
  requested_security_groups?: string[];
  /** the ports the server is bound to (Nova's network info cache): the views' `addresses` */
  network_info?: Vif[];
  /** Nova's accessIPv4/accessIPv6: addresses the user records for the server (create, PUT) */
  access_ip_v4?: string | null;
  access_ip_v6?: string | null;
  /** base64 user data given at create (admins see it from 2.3) */
  user_data?: string | null;
  /** a config drive asked for at create (shown as Nova's "True") */
  config_drive?: boolean;
  /** the guest hostname asked for (2.90); else Nova's sanitized display name */
  hostname?: string | null;
  /** its index in a multi-create (Nova's launch_index) */
  launch_index?: number;
  /** who locked it (Nova's locked_by: the owner or an admin); absent or null when unlocked */
  locked_by?: "owner" | "admin" | null;
  /** why (2.73) */
  locked_reason?: string | null;
  vm_state: VmState;
  task_state: TaskState;
  /**
   * Nova's power_state as the host last reported it (POWER_STATE in lib/compute/drivers/
   * driver.ts); absent on records from before hosts reported it: derived from vm_state then
   */
  power_state?: number;
  /** the host's clock of that report: an older one is ignored (reports may arrive out of order) */
  power_state_at?: string;
  host: string | null;
  node: string | null;
  /** the fencing token: bumped by the conductor for every build it sends */
  attempt: number;
  /** the attempt compute last took up (spawned); a duplicate build message finds it equal */
  spawn_attempt: number;
  /**
   * where a reschedule of the current attempt goes first, in order (its unclaimed alternates,
   * written with the placement, removed when the build ends); absent on records placed before the
   * casts stopped carrying them
   */
  alternates?: Destination[];
  /** hosts already tried, oldest first */
  retry_hosts: string[];
  fault: Fault | null;
  created_at: string;
  updated_at: string;
  launched_at: string | null;
  deleted: boolean;
  deleted_at: string | null;
  /** keyed by request id */
  actions: Record<string, InstanceAction>;
  /**
   * what the user asked for, for one instance: a stuck build is sent again from it. Stored without
   * what the record holds already (flavor, image, project and user), the instance count (one) and
   * empty hints; requestSpecOf puts them back.
   */
  request_spec?: StoredRequestSpec;
  /** when the current attempt must have finished (instance_build_timeout from its placement) */
  build_deadline?: string;
  /** the move in progress or awaiting confirm/revert; absent otherwise */
  migration?: MoveContext;
  /** the rebuild in progress on its own host; absent otherwise */
  rebuild?: RebuildContext;
  /** while SHELVED or SHELVED_OFFLOADED (Nova's shelved_* system metadata); absent otherwise */
  shelve?: ShelveContext;
  /** the unshelve of a SHELVED_OFFLOADED server in progress; absent otherwise */
  unshelve?: UnshelveContext;
}

/** The fields of a request spec that the stored one may leave out (requestSpecOf restores them). */
export type SpecDefaults =
  | "flavor"
  | "image"
  | "project_id"
  | "user_id"
  | "num_instances"
  | "scheduler_hints";

export type StoredRequestSpec = Omit<RequestSpec, SpecDefaults> & Partial<Pick<RequestSpec, SpecDefaults>>;

/** What the watchdog reads of a build in flight (lib/instances/watch.ts). */
export type WatchedBuild = Pick<
  InstanceRecord,
  | "id"
  | "request_id"
  | "reservation_id"
  | "project_id"
  | "user_id"
  | "vm_state"
  | "task_state"
  | "deleted"
  | "host"
  | "attempt"
  | "spawn_attempt"
  | "alternates"
  | "retry_hosts"
  | "build_deadline"
>;

/**
 * A scheduling decision, kept in the Scheduling table (one item per instance, its last decision).
 * `explanation` is the scheduler's DecisionExplanation, compacted by the scheduler.
 */
export interface SchedulingRecord {
  attempt: number;
  decided_at: string;
  /** the chosen host, or null for NoValidHost */
  host: string | null;
  /** the human summary (the NoValidHost summary, or why this host) */
  summary: string;
  explanation: unknown;
}

/** One of a create's `networks` (Nova's NetworkRequest), resolved: the network is always named. */
export interface NetworkRequest {
  network_id: string;
  /** a port the user made, to be bound (Nova does not delete it) */
  port_id?: string;
  fixed_ip?: string;
  tag?: string;
}

/** A server's port as Nova's network info cache keeps it (a VIF): what the views and the host read. */
export interface Vif {
  port_id: string;
  network_id: string;
  network_name: string;
  mac_address: string;
  fixed_ips: { subnet_id: string; ip_address: string; version: 4 | 6 }[];
  /** the port's security groups' ids, as the views show them (absent: none, or from before them) */
  security_groups?: string[];
  /** false: Nova made it and deletes it; true: the user's, only unbound */
  preexisting: boolean;
  tag?: string;
  /** a detach_interface of it is under way: that request's id (its host's report ends it) */
  detaching?: string;
}
