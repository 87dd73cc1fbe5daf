// compute → compute-events: everything a host says. Hosts never touch the database (Nova's
// nova-compute and its conductor database proxy); the compute-events consumer applies each
// report with fenced conditional writes, so a duplicated, late or reordered report changes
// nothing. Who sent a report is the session that signed it (aws:userid, as compute-events'
// function URL hands it over), never a field of the body: `host` is checked against it.
import { z } from "zod";
import { inventorySchema } from "../placement-rules.js";
import { uuid } from "./common.js";
import { MOVE_STEPS, POWER_ACTIONS } from "./compute.js";
import { POWER_STATE } from "./power-state.js";

const powerState = z.union(
  Object.values(POWER_STATE).map((n) => z.literal(n)) as [z.ZodLiteral<0>, ...z.ZodLiteral<number>[]],
);

const base = {
  version: z.literal(1),
  host: z.string().min(1).max(255),
  /** the sender's clock, ISO 8601: orders power-state reports of one host */
  sent_at: z.string().datetime(),
};

export const guestInfo = z.object({ instance_uuid: uuid, power_state: powerState });

/** Nova's compute service start: who the host is, its inventory, and the guests it runs. */
export const registerReport = z.object({
  ...base,
  kind: z.literal("register"),
  availability_zone: z.string().min(1),
  host_ip: z.string().min(1),
  inventories: z.record(z.string(), inventorySchema),
  hypervisor_type: z.string().min(1),
  hypervisor_version: z.number().int().min(0),
  /** the driver's facts (limits enforced, URI…), shown in os-hypervisors */
  facts: z.record(z.string(), z.unknown()),
  /** every guest the driver has now: the consumer reconciles them (Nova's _init_instance) */
  guests: z.array(guestInfo),
});

export const heartbeatReport = z.object({
  ...base,
  kind: z.literal("heartbeat"),
  /**
   * Messages in the host's dead-letter queue as the agent last counted them, sent while not 0.
   * Per-host DLQs are created at run time, so no stack alarm can name them, and CloudWatch's
   * Metrics Insights has no LIKE to match their names: the count reaches the alarm as a metric.
   */
  dead_letters: z.number().int().min(1).optional(),
  /**
   * Builds in flight here (Nova's num_io_ops), sent when a build ended since the last heartbeat
   * and its report did not set them: each claim counted one more, and this corrects them once per
   * report_interval, as Nova's resource tracker does periodically, not once per build.
   */
  in_flight: z.number().int().min(0).optional(),
  /**
   * Reports waiting in the host's spool (lib/compute/spool.ts) and how long the oldest has
   * waited (seconds), sent while any waits: compute-events records them on the host's service
   * and as metrics, and an alarm says when reports wait for minutes. Absent: none waits (or an
   * older agent).
   */
  spooled_reports: z.number().int().min(1).optional(),
  spooled_oldest_seconds: z.number().int().min(0).optional(),
});

const build = {
  ...base,
  request_id: z.string().min(1),
  instance_uuid: uuid,
  attempt: z.number().int().min(1),
  started_at: z.string().datetime(),
};

/** The host took a build cast; the consumer fences it and answers with spawn_instance. */
export const buildStartedReport = z.object({ ...build, kind: z.literal("build_started") });

export const buildSucceededReport = z.object({
  ...build,
  kind: z.literal("build_succeeded"),
  /** other builds still in flight on the host (Nova's num_io_ops) */
  in_flight: z.number().int().min(0),
  /**
   * This host reported a failed build since its last success (or may have: the agent started
   * since): the consumer resets failed_builds and sets num_io_ops now. When false, it writes
   * nothing to the host unless `settles_io_ops`, and the next heartbeat carries `in_flight`.
   * Absent (an older agent): true.
   */
  after_failures: z.boolean().optional(),
  /**
   * Nothing is left in flight here, and no report set num_io_ops since the host's last
   * heartbeat check: the consumer sets num_io_ops now (fenced or not, since the agent counts on
   * it), and the heartbeat owes nothing for the builds ended so far. At most one a
   * report_interval, so a busy host's builds still share one heartbeat's write.
   */
  settles_io_ops: z.boolean().optional(),
});

export const buildFailedReport = z.object({
  ...build,
  kind: z.literal("build_failed"),
  reason: z.string(),
  in_flight: z.number().int().min(0),
});

/** A guest's power state as the host sees it: a lifecycle event or the periodic sync. */
export const powerStateReport = z.object({
  ...base,
  kind: z.literal("power_state"),
  instance_uuid: uuid,
  power_state: powerState,
  cause: z.enum(["lifecycle", "sync"]),
});

/** The host began a power action (reboot's task state moves on, as Nova's reboot_started). */
export const actionStartedReport = z.object({
  ...base,
  kind: z.literal("action_started"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  action: z.enum(POWER_ACTIONS),
  reboot_type: z.enum(["SOFT", "HARD"]).optional(),
});

export const actionDoneReport = z.object({
  ...base,
  kind: z.literal("action_done"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  action: z.enum(POWER_ACTIONS),
  reboot_type: z.enum(["SOFT", "HARD"]).optional(),
  started_at: z.string().datetime(),
  ok: z.boolean(),
  /** the driver's error when not ok */
  details: z.string().nullable(),
  power_state: powerState,
});

/** The guest is gone from the host (terminate, or an unknown guest destroyed at start). */
export const guestDestroyedReport = z.object({
  ...base,
  kind: z.literal("guest_destroyed"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  /** the attempt whose claim is released now (a terminate's); absent: no claim to give back */
  attempt: z.number().int().min(0).optional(),
  /** the evacuation whose claim on this host is released now (Nova's _destroy_evacuated_instances) */
  migration_uuid: uuid.optional(),
});

/** The answer to get_console_output. SQS's 256 KiB bounds it; the host sends the log's end. */
export const consoleOutputReport = z.object({
  ...base,
  kind: z.literal("console_output"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  output: z.string().max(200_000),
  /** the host could not read it (no such guest) */
  error: z.string().nullable(),
});

const figure = z.number().int().nullable();

/**
 * A guest's diagnostics as its driver reads them: Nova's Diagnostics object (2.48's standard
 * shape) without the counts, which the API derives from the lists as Nova's add_cpu and friends do.
 */
export const instanceDiagnostics = z.object({
  state: z.enum(["pending", "running", "paused", "shutdown", "crashed", "suspended"]),
  /** Nova's HypervisorDriver name, or the novaless driver's own where none fits (exec) */
  driver: z.string().min(1),
  hypervisor: z.string().nullable(),
  hypervisor_os: z.string().nullable(),
  /** seconds since the guest started */
  uptime: figure,
  config_drive: z.boolean(),
  /** MiB */
  memory_details: z.object({ maximum: figure, used: figure }),
  /** time in ns, utilisation in % */
  cpu_details: z.array(z.object({ id: figure, time: figure, utilisation: figure })).max(1024),
  nic_details: z
    .array(
      z.object({
        mac_address: z.string().nullable(),
        rx_octets: figure,
        rx_errors: figure,
        rx_drop: figure,
        rx_packets: figure,
        rx_rate: figure,
        tx_octets: figure,
        tx_errors: figure,
        tx_drop: figure,
        tx_packets: figure,
        tx_rate: figure,
      }),
    )
    .max(64),
  disk_details: z
    .array(
      z.object({
        /** the device's name in the guest (vda): Nova's pre-2.48 keys are named after it */
        device: z.string().optional(),
        read_bytes: figure,
        read_requests: figure,
        write_bytes: figure,
        write_requests: figure,
        errors_count: figure,
      }),
    )
    .max(64),
});

/**
 * The answer to get_diagnostics: the figures, or why not: the guest is not running (its power
 * state, Nova's InstanceInvalidState) or the driver could not read them (`error`).
 */
export const diagnosticsReport = z.object({
  ...base,
  kind: z.literal("diagnostics"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  diagnostics: instanceDiagnostics.nullable(),
  /** the guest's power state when it is not running (no figures then) */
  power_state: powerState.optional(),
  error: z.string().nullable(),
});

/**
 * A step of a move done on this host (or not): the step and the move's token as the cast named
 * them; compute-events moves the instance and the migration on, fenced by both.
 */
export const moveStepReport = z.object({
  ...base,
  kind: z.literal("move_step"),
  step: z.enum(MOVE_STEPS),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  migration_uuid: uuid,
  attempt: z.number().int().min(1),
  started_at: z.string().datetime(),
  ok: z.boolean(),
  /** the driver's error when not ok */
  details: z.string().nullable(),
  power_state: powerState,
});

/**
 * A shelve_instance done (or not): its op and the placement's attempt as the cast named them;
 * `offloaded` when the guest is gone from the host (its claim is given back now).
 */
export const shelveDoneReport = z.object({
  ...base,
  kind: z.literal("shelve_done"),
  op: z.enum(["shelve", "offload", "start"]),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  attempt: z.number().int().min(0),
  started_at: z.string().datetime(),
  ok: z.boolean(),
  offloaded: z.boolean(),
  /** the shelve's snapshot image, as the cast named it */
  image_id: uuid.nullable(),
  /** the snapshot's data as the driver stored it (Glance's fields; size 0: metadata only) */
  image: z
    .object({
      disk_format: z.string(),
      container_format: z.string(),
      size: z.number().int().min(0),
      checksum: z.string().optional(),
      os_hash_value: z.string().optional(),
    })
    .optional(),
  /** the driver's error when not ok (or, ok, why an offload did not happen) */
  details: z.string().nullable(),
  power_state: powerState,
});

/** A trigger_crash_dump done (or not): the driver's error when it cannot. */
export const crashDumpDoneReport = z.object({
  ...base,
  kind: z.literal("crash_dump_done"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  started_at: z.string().datetime(),
  ok: z.boolean(),
  details: z.string().nullable(),
});

/**
 * An attach_interface or detach_interface done (or not) on this host, for the request that asked
 * it. `not_supported`: the driver has no hot-plug (Nova's AttachInterfaceNotSupported).
 */
const interfaceDone = {
  ...base,
  request_id: z.string().min(1),
  instance_uuid: uuid,
  port_id: uuid,
  started_at: z.string().datetime(),
  ok: z.boolean(),
  not_supported: z.boolean().optional(),
  details: z.string().nullable(),
};
export const attachInterfaceDoneReport = z.object({
  ...interfaceDone,
  kind: z.literal("attach_interface_done"),
});
export const detachInterfaceDoneReport = z.object({
  ...interfaceDone,
  kind: z.literal("detach_interface_done"),
});

/** A shelve's snapshot moved on (Nova's shelving_image_pending_upload, then _uploading). */
export const shelveProgressReport = z.object({
  ...base,
  kind: z.literal("shelve_progress"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  attempt: z.number().int().min(0),
  image_id: uuid,
  stage: z.enum(["image_pending_upload", "image_uploading"]),
});

/** An unshelve_instance done (or not) on this host, fenced by the unshelve and its attempt. */
export const unshelveDoneReport = z.object({
  ...base,
  kind: z.literal("unshelve_done"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  unshelve_uuid: uuid,
  attempt: z.number().int().min(1),
  started_at: z.string().datetime(),
  ok: z.boolean(),
  details: z.string().nullable(),
  power_state: powerState,
});

/** A running live migration's progress, from its source (Nova's driver's migration stats). */
export const liveMigrationProgressReport = z.object({
  ...base,
  kind: z.literal("live_migration_progress"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  migration_uuid: uuid,
  attempt: z.number().int().min(1),
  memory_total_bytes: z.number().int().min(0),
  memory_processed_bytes: z.number().int().min(0),
  memory_remaining_bytes: z.number().int().min(0),
});

/**
 * A snapshot's (createImage, createBackup) stage on its host, Nova's task states: the host took it
 * (image_snapshot), captured the disk (image_pending_upload), is uploading (image_uploading).
 */
export const snapshotProgressReport = z.object({
  ...base,
  kind: z.literal("snapshot_progress"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  image_id: uuid,
  task_state: z.enum(["image_snapshot", "image_pending_upload", "image_uploading"]),
});

/** A snapshot's end: the image's data as stored (ok), or the driver's error. */
export const snapshotDoneReport = z.object({
  ...base,
  kind: z.literal("snapshot_done"),
  request_id: z.string().min(1),
  instance_uuid: uuid,
  image_id: uuid,
  image_type: z.enum(["snapshot", "backup"]),
  started_at: z.string().datetime(),
  ok: z.boolean(),
  details: z.string().nullable(),
  /** Glance's fields of the data; size 0 and no checksum: the driver keeps no data (fake) */
  disk_format: z.string().optional(),
  container_format: z.string().optional(),
  size: z.number().int().min(0).optional(),
  checksum: z.string().optional(),
  os_hash_value: z.string().optional(),
  power_state: powerState,
});

export const computeReport = z.discriminatedUnion("kind", [
  registerReport,
  heartbeatReport,
  buildStartedReport,
  buildSucceededReport,
  buildFailedReport,
  powerStateReport,
  actionStartedReport,
  actionDoneReport,
  guestDestroyedReport,
  consoleOutputReport,
  diagnosticsReport,
  moveStepReport,
  liveMigrationProgressReport,
  snapshotProgressReport,
  snapshotDoneReport,
  shelveDoneReport,
  shelveProgressReport,
  unshelveDoneReport,
  crashDumpDoneReport,
  attachInterfaceDoneReport,
  detachInterfaceDoneReport,
]);

export type ComputeReport = z.infer<typeof computeReport>;
export type InstanceDiagnostics = z.infer<typeof instanceDiagnostics>;
export type DiagnosticsReport = z.infer<typeof diagnosticsReport>;
export type RegisterReport = z.infer<typeof registerReport>;
export type PowerStateReport = z.infer<typeof powerStateReport>;
export type ActionDoneReport = z.infer<typeof actionDoneReport>;
export type ActionStartedReport = z.infer<typeof actionStartedReport>;
export type MoveStepReport = z.infer<typeof moveStepReport>;
export type ShelveDoneReport = z.infer<typeof shelveDoneReport>;
export type UnshelveDoneReport = z.infer<typeof unshelveDoneReport>;
export type ShelveProgressReport = z.infer<typeof shelveProgressReport>;
export type CrashDumpDoneReport = z.infer<typeof crashDumpDoneReport>;
export type InterfaceDoneReport =
  | z.infer<typeof attachInterfaceDoneReport>
  | z.infer<typeof detachInterfaceDoneReport>;
export type LiveMigrationProgressReport = z.infer<typeof liveMigrationProgressReport>;
export type SnapshotProgressReport = z.infer<typeof snapshotProgressReport>;
export type SnapshotDoneReport = z.infer<typeof snapshotDoneReport>;
export type BuildReport =
  | z.infer<typeof buildStartedReport>
  | z.infer<typeof buildSucceededReport>
  | z.infer<typeof buildFailedReport>;
/** What a report is, without the envelope the sender adds. */
export type ReportBody<K extends ComputeReport["kind"]> = Omit<
  Extract<ComputeReport, { kind: K }>,
  "version" | "host" | "sent_at"
>;

/**
 * The session an aws:userid (`<role id>:<session>`) names, or undefined when it is not a role
 * session. A host's credentials must be a session named hostSessionName(host) (the compute
 * role's policy and trust require it), so this names the host.
 */
export function sessionOfSender(senderId: string | undefined): string | undefined {
  if (!senderId) return undefined;
  const i = senderId.indexOf(":");
  return i > 0 ? senderId.slice(i + 1) : undefined;
}
