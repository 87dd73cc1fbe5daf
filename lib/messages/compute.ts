import { z } from "zod";
import {
  type Destination,
  destination,
  destinationOf,
  flavorSpec,
  imageSpec,
  requestSpec,
  retry,
  selection,
  uuid,
} from "./common.js";
import { portFilter } from "./port-filter.js";

/**
 * What every cast to a host names after its version and kind: the request it serves, the server,
 * and the host it is for (a host dead-letters a cast that names another).
 */
const castTo = {
  request_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
};

/**
 * Conductor → compute: build this instance on your host, as attempt N. Ids, the host, the
 * attempt and the amounts claimed: what the guest is built from (flavor, image), who it belongs
 * to and where a reschedule goes next (the alternates, kept by BuildInstances with the
 * placement) are on the instance's record, which compute reads as it takes the build. Nothing
 * in it grows with the request, and the host's name is in it once: the Map state carries one
 * cast per instance, and Nova's host names run to 255 characters.
 */
export const buildAndRunInstanceV3 = z.object({
  version: z.literal(3),
  kind: z.literal("build_and_run_instance"),
  ...castTo,
  /** omitted when the node is named as the host */
  node: z.string().min(1).optional(),
  /** the fencing token: the instance's attempt this build is for */
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
});

/** v2 also carried the alternates; a record placed before v3 does not have them. */
const buildAndRunInstanceV2 = z.object({
  version: z.literal(2),
  kind: z.literal("build_and_run_instance"),
  ...castTo,
  node: z.string().min(1),
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
  alternates: z.array(destination),
});

/** v1 also carried the request spec, the owner and the retry; the record has all of it. */
const buildAndRunInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("build_and_run_instance"),
  request_id: z.string().min(1),
  reservation_id: z.string().min(1),
  project_id: z.string().min(1),
  user_id: z.string().min(1),
  instance_uuid: uuid,
  host: z.string().min(1),
  node: z.string().min(1),
  attempt: z.number().int().min(1),
  resources: z.record(z.string(), z.number()),
  request_spec: requestSpec,
  retry: retry,
  alternates: z.array(selection),
});

/** API → compute: tear down whatever you built for this instance. */
export const terminateInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("terminate_instance"),
  ...castTo,
  /** the attempt whose claim the host releases once the guest is destroyed */
  attempt: z.number().int().min(0).optional(),
  /** an evacuated guest on its returning source: the evacuation whose claim here goes once it is gone */
  migration_uuid: uuid.optional(),
});

/**
 * A port as the host is told of it (Nova's VIF in network_info): its MAC, its addresses with their
 * subnets' gateway, DNS and routes (network_data.json), and the segment the host bridges it to.
 */
export const guestPort = z.object({
  port_id: uuid,
  network_id: uuid,
  network_name: z.string(),
  mac_address: z.string().regex(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i),
  fixed_ips: z.array(
    z.object({
      subnet_id: uuid,
      ip_address: z.string().min(1),
      version: z.union([z.literal(4), z.literal(6)]),
      cidr: z.string().min(1),
      gateway_ip: z.string().min(1).nullable(),
      dns_nameservers: z.array(z.string().min(1)),
      host_routes: z.array(z.object({ destination: z.string().min(1), nexthop: z.string().min(1) })),
    }),
  ),
  network_type: z.enum(["flat", "vlan"]),
  physical_network: z.string().min(1).nullable(),
  segmentation_id: z.number().int().min(1).max(4094).nullable(),
  mtu: z.number().int().min(68),
  /** its security groups' rules (absent: a record from before security groups, nothing filtered) */
  filter: portFilter.optional(),
});

/** What a host builds or starts a guest from: the instance's record, with its key's public half. */
export const guestSpec = z.object({
  instance_uuid: uuid,
  name: z.string(),
  hostname: z.string(),
  project_id: z.string(),
  user_id: z.string(),
  flavor: flavorSpec,
  image: imageSpec,
  metadata: z.record(z.string(), z.string()),
  key_name: z.string().nullable().optional(),
  key_data: z.string().nullable().optional(),
  user_data: z.string().nullable().optional(),
  config_drive: z.boolean().optional(),
  /** absent (a record from before ports, or a server without any): a guest without a NIC */
  ports: z.array(guestPort).optional(),
});

/**
 * API or conductor → the host of a server whose ports' filters changed (Nova's compute RPC
 * refresh_instance_security_rules; Neutron's security group agent RPC in spirit): a rule was added
 * or deleted, a port joined or left a group, or a remote group's members changed. It carries the
 * server's ports with their fresh filters, so the host reads no database; enforcing them again
 * is idempotent. `computed_at` (epoch ms) orders them: a host ignores one older than what it
 * applied last (SQS may deliver two out of order). No report answers it.
 */
export const refreshInstanceSecurityRulesV1 = z.object({
  version: z.literal(1),
  kind: z.literal("refresh_instance_security_rules"),
  ...castTo,
  ports: z.array(guestPort),
  computed_at: z.number().int().min(0),
});

/**
 * Conductor or API → one host: the fresh filters of its guests' ports that a change touched
 * (Neutron's security_groups_member_updated and security_groups_rule_updated, which its agents
 * apply per host; the ports resolved here, so the host reads no database). One cast a host for a
 * whole change, however many of its servers it touches (a large one is sent in several, each
 * naming its servers). Each port is enforced again as given, the server's other ports left as
 * they are. `computed_at` (epoch ms) orders them per port: a host ignores a port's filter older
 * than the one it applied last. No report answers it.
 */
export const refreshPortFiltersV1 = z.object({
  version: z.literal(1),
  kind: z.literal("refresh_port_filters"),
  request_id: z.string().min(1),
  host: z.string().min(1),
  computed_at: z.number().int().min(0),
  instances: z.array(z.object({ instance_uuid: uuid, ports: z.array(guestPort).min(1) })).min(1),
});

/**
 * compute-events → compute: the build this host reported taking is fenced and recorded as
 * spawning; here is what to build. Hosts read no database, so the guest comes with it.
 */
export const spawnInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("spawn_instance"),
  ...castTo,
  attempt: z.number().int().min(1),
  guest: guestSpec,
});

/**
 * The power actions a host takes (Nova's compute manager's *_instance for each); soft_delete and
 * restore are Nova's soft_delete_instance (the guest powered off at once) and restore_instance.
 */
export const POWER_ACTIONS = [
  "stop",
  "start",
  "reboot",
  "pause",
  "unpause",
  "suspend",
  "resume",
  "soft_delete",
  "restore",
] as const;

/**
 * API → compute: os-stop, os-start, reboot, pause, unpause, suspend, resume, and a delete's or a
 * restore's (Nova's stop_instance, start_instance, reboot_instance, pause_instance…,
 * soft_delete_instance, restore_instance). start, reboot, resume and restore carry the guest, so
 * a host whose driver lost it (a guest gone with a host reboot) recreates it, as Nova's hard
 * reboot does from the database.
 */
export const powerActionV1 = z.object({
  version: z.literal(1),
  kind: z.literal("power_action"),
  action: z.enum(POWER_ACTIONS),
  reboot_type: z.enum(["SOFT", "HARD"]).optional(),
  ...castTo,
  guest: guestSpec.optional(),
});

/** API → compute: send the end of the guest's console log back (os-getConsoleOutput). */
export const getConsoleOutputV1 = z.object({
  version: z.literal(1),
  kind: z.literal("get_console_output"),
  ...castTo,
  /** lines from the end; absent: all (bounded by the report's size) */
  length: z.number().int().min(1).optional(),
});

/** API → compute: send the guest's diagnostics back (GET /servers/{id}/diagnostics). */
export const getDiagnosticsV1 = z.object({
  version: z.literal(1),
  kind: z.literal("get_diagnostics"),
  ...castTo,
});

/**
 * A step of a resize or cold migration, cast to one of its two hosts (Nova's resize_instance,
 * finish_resize, confirm_resize, revert_resize, finish_revert_resize). `attempt` is the move's
 * fencing token (its destination claim's attempt): a host's report of the step carries it back,
 * and compute-events applies the report only to that move at that attempt.
 */
const moveStep = {
  version: z.literal(1),
  ...castTo,
  migration_uuid: uuid,
  attempt: z.number().int().min(1),
  /** source and destination are one host (allow_resize_to_same_host): one guest, replaced in place */
  same_host: z.boolean(),
};

/**
 * To the source: shut the guest down and hand it over; it stays defined until confirm or revert.
 * `new_flavor` (Nova's migrate_disk_and_power_off's flavor): a driver that carries the disk refuses
 * to shrink it; absent in casts from before it was sent.
 */
export const resizeInstanceV1 = z.object({
  ...moveStep,
  kind: z.literal("resize_instance"),
  new_flavor: flavorSpec.optional(),
});

/** To the destination: create the guest with the new flavor (running if it ran before the move). */
export const finishResizeV1 = z.object({
  ...moveStep,
  kind: z.literal("finish_resize"),
  guest: guestSpec,
  power_on: z.boolean(),
});

/** To the source, after confirm: destroy the old guest (its claim is given back once it is gone). */
export const confirmResizeV1 = z.object({ ...moveStep, kind: z.literal("confirm_resize") });

/** To the destination, on revert: destroy the new guest. */
export const revertResizeV1 = z.object({ ...moveStep, kind: z.literal("revert_resize") });

/** To the source, after revert_resize: the old guest back, with the old flavor. */
export const finishRevertResizeV1 = z.object({
  ...moveStep,
  kind: z.literal("finish_revert_resize"),
  guest: guestSpec,
  power_on: z.boolean(),
});

/**
 * To an evacuation's destination: create the guest anew from its image (Nova's rebuild_instance
 * with evacuate), running unless the server ends SHUTOFF (2.95).
 */
export const rebuildInstanceV1 = z.object({
  ...moveStep,
  kind: z.literal("rebuild_instance"),
  guest: guestSpec,
  power_on: z.boolean(),
});

/**
 * API or compute-events → the host of a shelved or shelving server (Nova's shelve_instance,
 * shelve_offload_instance, and start_instance for an unshelve that needs no scheduler):
 * - shelve: power the guest off, snapshot it into `image_id` (when the driver keeps images),
 *   and destroy it too when `offload` (shelved_offload_time = 0);
 * - offload: destroy the guest (its claim is given back once it is gone);
 * - start: run the kept guest again (created anew from `guest` if the host lost it).
 * `attempt` is the instance's placement on this host: its claim, which an offload gives back.
 */
export const shelveInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("shelve_instance"),
  op: z.enum(["shelve", "offload", "start"]),
  ...castTo,
  attempt: z.number().int().min(0),
  offload: z.boolean(),
  /**
   * shelve: the snapshot image Nova's API created for it (null: nothing to snapshot); start: the
   * shelve's snapshot, which compute-events deletes once the server runs
   */
  image_id: uuid.nullable(),
  guest: guestSpec.optional(),
});

/**
 * API → compute: Nova's trigger_crash_dump (2.17), an NMI to the guest. No task state: the host's
 * report finishes its instance action's event (a fault when the driver cannot).
 */
export const triggerCrashDumpV1 = z.object({
  version: z.literal(1),
  kind: z.literal("trigger_crash_dump"),
  ...castTo,
});

/**
 * API → compute: Nova's attach_interface, a port hot-plugged into the guest (a stopped guest gets
 * it in its definition only). The port is made (or the user's bound) to this host already; the
 * host's report settles the attachment, and a failure's port is freed by compute-events.
 */
export const attachInterfaceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("attach_interface"),
  ...castTo,
  port: guestPort,
  /** the device tag asked for (2.49) */
  tag: z.string().min(1).optional(),
});

/**
 * API → compute: Nova's detach_interface, the port's NIC unplugged from the guest (and from its
 * definition). compute-events then deletes the port Nova made, or unbinds the user's.
 */
export const detachInterfaceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("detach_interface"),
  ...castTo,
  port: guestPort,
});

/**
 * The conductor → the host it chose for a shelved-offloaded server (Nova's unshelve_instance):
 * create the guest from its shelved image. `unshelve_uuid` and `attempt` fence it, as a move's
 * migration and attempt do; a redelivered cast of one done here is only reported again.
 */
export const unshelveInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("unshelve_instance"),
  ...castTo,
  unshelve_uuid: uuid,
  attempt: z.number().int().min(1),
  guest: guestSpec,
});

/**
 * API → compute: createImage or createBackup (Nova's snapshot_instance, backup_instance): capture
 * the guest's disk into the image the API recorded (`queued`) and upload its data to the images
 * bucket; the host reports each stage, compute-events moves the task state and the image on.
 */
export const snapshotInstanceV1 = z.object({
  version: z.literal(1),
  kind: z.literal("snapshot_instance"),
  ...castTo,
  image_id: uuid,
  image_type: z.enum(["snapshot", "backup"]),
});

/**
 * A live migration's steps (Nova's compute manager), each reported. To the destination first:
 * prepare for the guest (pre_live_migration).
 */
export const preLiveMigrationV1 = z.object({
  ...moveStep,
  kind: z.literal("pre_live_migration"),
  guest: guestSpec,
});

/** To the source: copy the running guest to the destination (Nova's live_migration). */
export const liveMigrationV1 = z.object({
  ...moveStep,
  kind: z.literal("live_migration"),
  dest: z.string().min(1),
  /** the destination's address (a libvirt source migrates to it) */
  dest_ip: z.string().min(1),
  /** null: "auto" (2.25), the driver decides */
  block_migration: z.boolean().nullable(),
});

/** To the destination, once the source is done: the guest is its own now. */
export const postLiveMigrationAtDestinationV1 = z.object({
  ...moveStep,
  kind: z.literal("post_live_migration_at_destination"),
  guest: guestSpec,
  /** the server is PAUSED: its guest stays paused on the destination (Nova migrates it as it is) */
  paused: z.boolean().optional(),
});

/**
 * API → the source of a running live migration: force it to complete (2.22) or abort it (2.24).
 * Not a step: the live_migration step's report says how it ended.
 */
export const liveMigrationControlV1 = z.object({
  ...moveStep,
  kind: z.literal("live_migration_control"),
  action: z.enum(["force_complete", "abort"]),
});

export const MOVE_STEPS = [
  "rebuild_instance",
  "resize_instance",
  "finish_resize",
  "confirm_resize",
  "revert_resize",
  "finish_revert_resize",
  "pre_live_migration",
  "live_migration",
  "post_live_migration_at_destination",
] as const;
export type MoveStepName = (typeof MOVE_STEPS)[number];

export type BuildAndRunInstance = z.infer<typeof buildAndRunInstanceV3>;
export type TerminateInstance = z.infer<typeof terminateInstanceV1>;
export type SpawnInstance = z.infer<typeof spawnInstanceV1>;
export type PowerAction = z.infer<typeof powerActionV1>;
export type GetConsoleOutput = z.infer<typeof getConsoleOutputV1>;
export type GetDiagnostics = z.infer<typeof getDiagnosticsV1>;
export type SnapshotInstance = z.infer<typeof snapshotInstanceV1>;
export type ShelveInstance = z.infer<typeof shelveInstanceV1>;
export type RefreshInstanceSecurityRules = z.infer<typeof refreshInstanceSecurityRulesV1>;
export type RefreshPortFilters = z.infer<typeof refreshPortFiltersV1>;
export type TriggerCrashDump = z.infer<typeof triggerCrashDumpV1>;
export type AttachInterface = z.infer<typeof attachInterfaceV1>;
export type DetachInterface = z.infer<typeof detachInterfaceV1>;
export type UnshelveInstance = z.infer<typeof unshelveInstanceV1>;
export type LiveMigrationStepMessage =
  | z.infer<typeof preLiveMigrationV1>
  | z.infer<typeof liveMigrationV1>
  | z.infer<typeof postLiveMigrationAtDestinationV1>;
export type LiveMigrationControl = z.infer<typeof liveMigrationControlV1>;
export type MoveStepMessage =
  | LiveMigrationStepMessage
  | z.infer<typeof rebuildInstanceV1>
  | z.infer<typeof resizeInstanceV1>
  | z.infer<typeof finishResizeV1>
  | z.infer<typeof confirmResizeV1>
  | z.infer<typeof revertResizeV1>
  | z.infer<typeof finishRevertResizeV1>;
export type ComputeMessage =
  | BuildAndRunInstance
  | TerminateInstance
  | SpawnInstance
  | PowerAction
  | GetConsoleOutput
  | GetDiagnostics
  | SnapshotInstance
  | ShelveInstance
  | UnshelveInstance
  | TriggerCrashDump
  | AttachInterface
  | DetachInterface
  | RefreshInstanceSecurityRules
  | LiveMigrationControl
  | MoveStepMessage;

const MOVE_MESSAGES = [
  rebuildInstanceV1,
  resizeInstanceV1,
  finishResizeV1,
  confirmResizeV1,
  revertResizeV1,
  finishRevertResizeV1,
  preLiveMigrationV1,
  liveMigrationV1,
  postLiveMigrationAtDestinationV1,
  liveMigrationControlV1,
] as const;

/**
 * A build cast as compute reads it: v3, or an older cast still in the host's queue with the
 * alternates it carried (its record, placed before v3, does not have them).
 */
export type ReceivedBuild = BuildAndRunInstance & { alternates?: Destination[] };
export type ReceivedComputeMessage =
  | ReceivedBuild
  | Exclude<ComputeMessage, BuildAndRunInstance>
  | RefreshPortFilters;

/** Every cast to a host's queue: one about a server (ComputeMessage), or a host's filters' refresh. */
export type HostCast = ComputeMessage | RefreshPortFilters;

/** Every cast but the build's, whose older versions only a host still reads. */
const OTHER_CASTS = [
  terminateInstanceV1,
  spawnInstanceV1,
  powerActionV1,
  getConsoleOutputV1,
  getDiagnosticsV1,
  snapshotInstanceV1,
  shelveInstanceV1,
  unshelveInstanceV1,
  triggerCrashDumpV1,
  attachInterfaceV1,
  detachInterfaceV1,
  refreshInstanceSecurityRulesV1,
  ...MOVE_MESSAGES,
] as const;

/** What the conductor, the API and compute-events send to a host's queue about a server. */
export const computeMessage = z.discriminatedUnion("kind", [buildAndRunInstanceV3, ...OTHER_CASTS]);

/** Every cast to a host's queue: one about a server, or a host's filters' refresh. */
export const hostCast = z.discriminatedUnion("kind", [
  buildAndRunInstanceV3,
  ...OTHER_CASTS,
  refreshPortFiltersV1,
]);

/**
 * What a compute agent accepts: the messages above, and a v1 or v2 build cast from before v3
 * and still in the host's queue, read as the v3 cast it would be now plus its alternates.
 */
export const receivedComputeMessage = z
  .discriminatedUnion("kind", [
    z.discriminatedUnion("version", [buildAndRunInstanceV3, buildAndRunInstanceV2, buildAndRunInstanceV1]),
    ...OTHER_CASTS,
    refreshPortFiltersV1,
  ])
  .transform((m): ReceivedComputeMessage => {
    if (m.kind !== "build_and_run_instance" || m.version === 3) return m;
    return {
      version: 3,
      kind: m.kind,
      request_id: m.request_id,
      instance_uuid: m.instance_uuid,
      host: m.host,
      ...(m.node === m.host ? {} : { node: m.node }),
      attempt: m.attempt,
      resources: m.resources,
      alternates: m.alternates.map(destinationOf),
    };
  });
