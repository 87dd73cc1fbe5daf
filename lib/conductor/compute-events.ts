// compute-events → the database: the conductor as nova-compute's database proxy (Nova's
// conductor.rst). Hosts only report; this applies each report with the fenced conditional writes
// the host used to make itself, releases claims, loops failed builds back, and answers on the
// host's own queue (the guest to spawn, a guest to destroy). Every report is idempotent: a
// duplicated, late or reordered one changes nothing. Who sent a report is the session that signed
// the POST to compute-events' function URL (aws:userid, which IAM forces to name the host's
// session), never the body.
import { ensureQueueWithDlq } from "../aws/queues.js";
import { castToCompute, sendBuildRequest, sendToDeadLetter } from "../aws/send.js";
import { computeQueueName, hostSessionName } from "../compute/queue-name.js";
import { resources } from "../config.js";
import { markActive, recordBuildFailure, startSpawn } from "../instances/build.js";
import { EVENT_BUILD } from "../instances/codec.js";
import { crashDumpDone } from "../instances/crash-dump.js";
import { rescheduledText, withoutHosts } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { storeHostAnswer } from "../instances/host-answers.js";
import { listDoneEvacuationsFrom, updateMigration } from "../instances/migrations.js";
import {
  actionOfTask,
  actionStarted,
  finishPowerAction,
  storeConsoleOutput,
  syncPowerState,
} from "../instances/power.js";
import { getInstance, listInstancesOnHost } from "../instances/queries.js";
import { conductorRequest } from "../instances/request-spec.js";
import { shelveProgress } from "../instances/shelve.js";
import {
  finishSnapshot,
  imageSaving,
  SNAPSHOT_TASK_STATES,
  snapshotProgress,
} from "../instances/snapshot.js";
import { event } from "../instances/transition.js";
import type { InstanceRecord } from "../instances/types.js";
import { type Logger, log as rootLog } from "../log.js";
import { parseJsonMessage } from "../messages/build-request.js";
import type { ComputeMessage } from "../messages/compute.js";
import {
  type BuildReport,
  type ComputeReport,
  computeReport,
  type RegisterReport,
  sessionOfSender,
} from "../messages/reports.js";
import { metrics } from "../metrics.js";
import { PlacementConflict } from "../placement/capacity.js";
import { release } from "../placement/claims.js";
import { recordBuildResult, recordInFlight, registerHost } from "../placement/hosts.js";
import { heartbeat } from "../placement/liveness.js";
import type { Inventory, ResourceClass } from "../placement/types.js";
import { COMPUTE_QUEUE, DLQ_SUFFIX, HOST_TAG } from "../resources.js";
import { hostQueueUrl, rememberQueueUrl } from "./host-queues.js";
import { applyLiveProgress } from "./live-migrate.js";
import { applyMoveReport, evacuatedGuestTerminate } from "./move-events.js";
import { applyShelveReport, applyUnshelveReport } from "./shelve-events.js";

export interface ReportRecord {
  /** the function URL request's id, for the logs */
  messageId: string;
  body: string;
  /** the signer's aws:userid: `<role id>:<session name>` for a role session */
  senderId?: string;
}

/** What a report's POST is answered: applied, or dead-lettered with its reason (a retry would not help). */
export type ReportOutcome = { applied: true } | { applied: false; reason: string };

/** A shelve's, an offload's or an unshelve's task states: their casts, not power actions. */
const SHELVE_TASKS = new Set<string>([
  "shelving",
  "shelving_image_pending_upload",
  "shelving_image_uploading",
  "shelving_offloading",
  "unshelving",
]);

/** Nova's power_state values the sync treats as "not running". */
const POWER_RUNNING = 1;

/** The vm_states whose guests a registering host's list is synced against (Nova's _init_instance). */
const SYNCED_AT_REGISTER = new Set(["active", "stopped", "paused", "suspended"]);

async function castToHost(host: string, msg: ComputeMessage, log: Logger): Promise<void> {
  const url = await hostQueueUrl(host);
  if (!url) {
    log.warn("compute_events.host_unknown", { host, kind: msg.kind });
    return;
  }
  await castToCompute(url, msg);
}

/** Power off a guest that is not off while its instance is stopped (the power-state sync's one cast). */
function stopGuest(host: string, instance_uuid: string, log: Logger): Promise<void> {
  const request_id = `req-sync-${instance_uuid}`;
  return castToHost(
    host,
    { version: 1, kind: "power_action", action: "stop", request_id, instance_uuid, host },
    log,
  );
}

/**
 * One report as a host posted it. A failure throws (the function answers 5xx and the host sends
 * it again, as SQS redelivered it): applying a report twice changes nothing.
 */
export async function applyReportRequest(r: ReportRecord): Promise<ReportOutcome> {
  try {
    const reason = await applyRecord(r);
    return reason === undefined ? { applied: true } : { applied: false, reason };
  } catch (error) {
    rootLog.error("compute_events.report_failed", { message_id: r.messageId, error });
    throw error;
  }
}

async function deadLetter(r: ReportRecord, reason: string): Promise<string> {
  await sendToDeadLetter(resources().computeEventsDlqUrl, r.body, reason, "compute-events");
  rootLog.warn("compute_events.dead_lettered", { message_id: r.messageId, reason, sender_id: r.senderId });
  return reason;
}

/** undefined when applied; the reason when dead-lettered */
async function applyRecord(r: ReportRecord): Promise<string | undefined> {
  const parsed = parseJsonMessage(computeReport, r.body);
  if (!parsed.ok) return deadLetter(r, parsed.reason);
  const report = parsed.value;
  // IAM lets a host send only as a session named after its principal tag: the session is the
  // host. A report speaking for another host is refused whatever it says.
  const session = sessionOfSender(r.senderId);
  if (session !== hostSessionName(report.host)) {
    return deadLetter(
      r,
      `report for host ${report.host} sent by ${r.senderId ?? "an unknown sender"}: a host may report only for itself`,
    );
  }
  await applyReport(report, rootLog.child({ host: report.host, report: report.kind }));
  return undefined;
}

/** One report, its sender already checked. */
export async function applyReport(report: ComputeReport, log: Logger): Promise<void> {
  switch (report.kind) {
    case "register":
      return register(report, log);
    case "heartbeat":
      if (report.dead_letters) {
        metrics.computeDeadLetters(report.dead_letters);
        log.warn("compute_events.dead_letters", { host: report.host, dead_letters: report.dead_letters });
      }
      if (report.spooled_reports) {
        // reports the host could not deliver for a while (an outage, sustained throttling, a
        // report compute-events keeps failing on); delivered now in order, or the alarm says so
        const oldest = report.spooled_oldest_seconds ?? 0;
        metrics.reportSpool(report.spooled_reports, oldest);
        log.warn("compute_events.reports_spooled", {
          host: report.host,
          spooled_reports: report.spooled_reports,
          oldest_seconds: oldest,
        });
      }
      // builds ended since the last heartbeat without setting num_io_ops: set once for them all
      if (report.in_flight !== undefined) await recordInFlight(report.host, report.in_flight);
      return heartbeat(
        report.host,
        undefined,
        report.spooled_reports
          ? { reports: report.spooled_reports, oldest_seconds: report.spooled_oldest_seconds ?? 0 }
          : undefined,
      );
    case "build_started":
    case "build_succeeded":
    case "build_failed":
      return applyBuildReport(report, log);
    case "power_state": {
      const outcome = await syncPowerState(
        report.instance_uuid,
        report.host,
        report.power_state,
        report.sent_at,
      );
      if (outcome === "stop-guest") {
        // Nova's _sync_instance_power_state: a stopped instance whose guest is not off is stopped
        // again; an active one whose guest is suspended is stopped, its guest too.
        await stopGuest(report.host, report.instance_uuid, log);
      }
      log.info("compute_events.power_state", {
        instance_uuid: report.instance_uuid,
        power_state: report.power_state,
        cause: report.cause,
        outcome,
      });
      return;
    }
    case "action_started":
      await actionStarted(report);
      return;
    case "action_done": {
      const outcome = await finishPowerAction(report);
      log.info("compute_events.action_done", {
        instance_uuid: report.instance_uuid,
        request_id: report.request_id,
        action: report.action,
        ok: report.ok,
        outcome,
      });
      return;
    }
    case "guest_destroyed":
      // Destroyed first, then the claim given back (Nova's order): the space is free only now.
      if (report.attempt !== undefined) await release(report.host, report.instance_uuid, report.attempt);
      // an evacuated guest on its returning source: the evacuation's claim there goes too
      if (report.migration_uuid) await evacuationCleaned(report.host, report.migration_uuid);
      log.info("compute_events.guest_destroyed", {
        instance_uuid: report.instance_uuid,
        request_id: report.request_id,
      });
      return;
    case "console_output":
      await storeConsoleOutput(report.instance_uuid, report.request_id, report.output, report.error);
      return;
    case "diagnostics":
      // kept under the request's id, which only the host the API asked knows
      await storeHostAnswer("diagnostics", report.instance_uuid, report.request_id, {
        diagnostics: report.diagnostics,
        power_state: report.power_state ?? null,
        error: report.error,
      });
      return;
    case "move_step":
      return applyMoveReport(report, log, castToHost);
    case "live_migration_progress":
      return applyLiveProgress(report, log);
    case "shelve_done":
      return applyShelveReport(report, log);
    case "unshelve_done":
      return applyUnshelveReport(report, log, castToHost);
    case "shelve_progress":
      // the image is being uploaded: Glance's `saving`
      if ((await shelveProgress(report)) && report.stage === "image_uploading")
        await imageSaving(report.image_id, report.sent_at);
      return;
    case "crash_dump_done": {
      const done = await crashDumpDone(report);
      log.info("compute_events.crash_dump_done", {
        instance_uuid: report.instance_uuid,
        request_id: report.request_id,
        ok: report.ok,
        applied: Boolean(done),
      });
      return;
    }
    case "snapshot_progress":
      await snapshotProgress(report);
      return;
    case "snapshot_done": {
      const { outcome, rotated } = await finishSnapshot(report);
      log.info("compute_events.snapshot_done", {
        instance_uuid: report.instance_uuid,
        image_id: report.image_id,
        ok: report.ok,
        outcome,
        ...(rotated.length ? { rotated_out: rotated } : {}),
      });
      return;
    }
  }
}

/**
 * Nova's compute service start: the host's queues (created here, never by the host, tagged with
 * its name for the compute role's policy), its provider and service records, then
 * _init_instance for every guest the host runs and every instance the database puts there.
 */
async function register(r: RegisterReport, log: Logger): Promise<void> {
  const q = await ensureQueueWithDlq(
    computeQueueName(resources().computeQueuePrefix, r.host, DLQ_SUFFIX),
    COMPUTE_QUEUE,
    undefined,
    { [HOST_TAG]: hostSessionName(r.host) },
  );
  rememberQueueUrl(r.host, q.queueUrl);
  let fresh = false;
  try {
    const rec = await registerHost({
      host: r.host,
      availability_zone: r.availability_zone,
      inventories: r.inventories as Partial<Record<ResourceClass, Inventory>>,
      hypervisor_type: r.hypervisor_type,
      hypervisor_version: r.hypervisor_version,
      host_ip: r.host_ip,
      supported_instances: [["x86_64", r.hypervisor_type, "hvm"]],
      queue_url: q.queueUrl,
      hypervisor_facts: r.facts,
    });
    // generation 1: created now, or never claimed on since (a claim bumps it): no instance can be
    // placed here, so there is nothing in the database to reconcile with
    fresh = rec.generation === 1;
  } catch (e) {
    // Less than is allocated (Placement's InventoryInUse): as Nova's resource tracker, say so
    // and keep serving on the inventory Placement has, rather than refuse to start.
    if (!(e instanceof PlacementConflict)) throw e;
    log.error("compute_events.inventory_conflict", { error: e, inventories: r.inventories });
  }
  await heartbeat(r.host);
  const actions = await reconcile(r, log, fresh);
  log.info("compute_events.registered", { queue_url: q.queueUrl, guests: r.guests.length, ...actions });
}

/**
 * Nova's _init_instance and _destroy_evacuated/unknown guests, from the database's side: a guest
 * no live instance of this host owns is destroyed (a server deleted while its host was away);
 * an instance whose guest is not running is synced as a stopped one (Nova's power-state sync);
 * an interrupted build goes through the failure path; an interrupted power action is sent again.
 */
async function reconcile(r: RegisterReport, log: Logger, fresh: boolean) {
  const expected = fresh ? [] : await listInstancesOnHost(r.host);
  const byId = new Map(expected.map((i) => [i.id, i]));
  const guests = new Map(r.guests.map((g) => [g.instance_uuid, g.power_state]));
  let destroyed = 0;
  // Nova's _destroy_evacuated_instances: what was evacuated away while this host was down goes
  // (the guest if it is still here, then the evacuation's claim on this host).
  const evacuatedAway = new Set<string>();
  // (a fresh host never ran anything, so nothing was evacuated away from it: no read at start-up)
  for (const m of fresh ? [] : await listDoneEvacuationsFrom(r.host)) {
    evacuatedAway.add(m.instance_uuid);
    if (guests.has(m.instance_uuid)) {
      await castToHost(r.host, evacuatedGuestTerminate(r.host, m.instance_uuid, m.uuid), log);
      destroyed++;
    } else await evacuationCleaned(r.host, m.uuid);
  }
  let synced = 0;
  let failed = 0;
  let resent = 0;
  for (const g of r.guests) {
    if (byId.has(g.instance_uuid) || evacuatedAway.has(g.instance_uuid)) continue;
    // A move's other copy (the source's guest until confirm or revert): the record points at one
    // host, the migration at both.
    const moving = (await getInstance(g.instance_uuid))?.migration;
    if (moving && (moving.source_host === r.host || moving.dest_host === r.host)) continue;
    // Deleted (or moved) while the host was away: its claim went with the delete (Nova's local
    // delete); only the guest remains.
    await castToHost(
      r.host,
      {
        version: 1,
        kind: "terminate_instance",
        request_id: `req-init-${g.instance_uuid}`,
        instance_uuid: g.instance_uuid,
        host: r.host,
      },
      log,
    );
    destroyed++;
  }
  for (const inst of expected) {
    const power = guests.get(inst.id) ?? 0;
    if (inst.vm_state === "building") {
      if (inst.task_state !== "spawning" || inst.spawn_attempt !== inst.attempt) continue;
      // The build was spawning here when the host went away.
      const report = {
        version: 1,
        host: r.host,
        sent_at: r.sent_at,
        request_id: inst.request_id,
        instance_uuid: inst.id,
        attempt: inst.attempt,
        started_at: r.sent_at,
        in_flight: 0,
      } as const;
      if (power === POWER_RUNNING) {
        await applyBuildReport({ ...report, kind: "build_succeeded" }, log);
      } else {
        const reason = `the compute service on ${r.host} restarted while the build was spawning`;
        await applyBuildReport({ ...report, kind: "build_failed", reason }, log);
        failed++;
      }
      continue;
    }
    if (inst.unshelve && inst.task_state === "spawning") {
      // An unshelve was spawning here when the host went away: running is done, else it failed.
      await applyUnshelveReport(
        {
          version: 1,
          kind: "unshelve_done",
          host: r.host,
          sent_at: r.sent_at,
          request_id: inst.unshelve.request_id,
          instance_uuid: inst.id,
          unshelve_uuid: inst.unshelve.uuid,
          attempt: inst.attempt,
          started_at: r.sent_at,
          ok: power === POWER_RUNNING,
          details:
            power === POWER_RUNNING
              ? null
              : `the compute service on ${r.host} restarted while the unshelve was spawning`,
          power_state: power as 0,
        },
        log,
        castToHost,
      );
      continue;
    }
    // (a move's or a rebuild's steps, and a shelve's or a snapshot's, are casts still queued for
    // the host, not lost actions: SQS delivers them again)
    if (
      inst.task_state &&
      inst.task_state !== "deleting" &&
      !inst.migration &&
      !inst.rebuild &&
      !SHELVE_TASKS.has(inst.task_state) &&
      !SNAPSHOT_TASK_STATES.has(inst.task_state)
    ) {
      // A power action the host took and lost: send it again (Nova retries it at init).
      const action = actionOfTask(inst.task_state);
      const pending = Object.values(inst.actions)
        .filter((a) => a.action === action)
        .sort((a, b) => b.start_time.localeCompare(a.start_time))[0];
      await castToHost(
        r.host,
        {
          version: 1,
          kind: "power_action",
          action,
          ...(action === "reboot"
            ? { reboot_type: inst.task_state.includes("hard") ? ("HARD" as const) : ("SOFT" as const) }
            : {}),
          request_id: pending?.request_id ?? `req-init-${inst.id}`,
          instance_uuid: inst.id,
          host: r.host,
          ...(action === "start" || action === "reboot" || action === "resume"
            ? { guest: await guestSpecFor(inst) }
            : {}),
        },
        log,
      );
      resent++;
      continue;
    }
    if (SYNCED_AT_REGISTER.has(inst.vm_state)) {
      const outcome = await syncPowerState(inst.id, r.host, power, r.sent_at);
      if (outcome === "stop-guest") {
        await stopGuest(r.host, inst.id, log);
      }
      if (outcome !== "ignored") synced++;
    }
  }
  return {
    guests_destroyed: destroyed,
    instances_synced: synced,
    builds_failed: failed,
    actions_resent: resent,
  };
}

/** The source's copy of an evacuated server is gone: its claim there goes, the evacuation is completed. */
async function evacuationCleaned(host: string, migrationUuid: string): Promise<void> {
  await release(host, migrationUuid);
  await updateMigration(migrationUuid, ["done"], "completed");
}

/** What a host built for an attempt that is over goes: its terminate names that attempt. */
function terminateAttempt(r: BuildReport, log: Logger): Promise<void> {
  const { host, instance_uuid, attempt, request_id } = r;
  return castToHost(
    host,
    { version: 1, kind: "terminate_instance", request_id, instance_uuid, host, attempt },
    log,
  );
}

/**
 * Nova's build_and_run_instance, applied from the host's reports. The end of a build is tried
 * first as the one conditional write it usually is; only when that is refused (a duplicate, a
 * report that overtook its "started", a delete) is the build taken again (startSpawn is
 * idempotent) to find out which.
 */
async function applyBuildReport(r: BuildReport, log: Logger): Promise<void> {
  const blog = log.child({ request_id: r.request_id, instance_uuid: r.instance_uuid, attempt: r.attempt });
  if (r.kind !== "build_started" && (await finishBuild(r, blog))) return;
  const { instance_uuid: id, attempt: n, host } = r;
  const started = new Date(r.started_at);
  const taken = await startSpawn(
    { id, request_id: r.request_id },
    host,
    n,
    event(EVENT_BUILD, n, null, host, null, started, null),
  );
  switch (taken.outcome) {
    case "finished":
      // The guest and its claim are the instance's now.
      blog.info("compute_events.build_already_finished", { vm_state: taken.record.vm_state });
      return;
    case "fenced":
      // Deleted, or moved to a newer attempt: the host must not keep what it built for it.
      await release(host, id, n);
      await terminateAttempt(r, blog);
      await settleInFlight(r);
      blog.info("compute_events.build_fenced", {
        current_host: taken.record?.host,
        current_attempt: taken.record?.attempt,
      });
      return;
    case "failure-recorded":
      if (r.kind === "build_succeeded") {
        // Built after all, after its failure was recorded (the host's restart reported no guest
        // while the spawn was still finishing): the attempt stays failed, and what it built goes.
        await terminateAttempt(r, blog);
        await settleInFlight(r);
      }
      // This attempt failed before and the reschedule may not have gone out: finish it.
      await reschedule(
        r,
        taken.record,
        taken.record.actions[r.request_id]?.events[`${EVENT_BUILD}#${n}`]?.details ?? "build failed",
        blog,
      );
      return;
    case "started":
    case "in-progress":
      break;
  }
  if (r.kind !== "build_started") {
    // Taken just now (its "started" is late): the end applies now.
    if (!(await finishBuild(r, blog))) {
      await release(host, id, n);
      await terminateAttempt(r, blog);
      await settleInFlight(r);
    }
    return;
  }
  // Taken and fenced: now the host may spawn. What to build is the record's, not the cast's.
  await castToHost(
    host,
    {
      version: 1,
      kind: "spawn_instance",
      request_id: r.request_id,
      instance_uuid: id,
      host,
      attempt: n,
      guest: await guestSpecFor(taken.record),
    },
    blog,
  );
}

/**
 * A success that settles num_io_ops, fenced: it is written all the same (the host's fact, whatever
 * became of the attempt), since its agent counts on this report for it.
 */
async function settleInFlight(r: BuildReport): Promise<void> {
  if (r.kind === "build_succeeded" && r.settles_io_ops) await recordInFlight(r.host, r.in_flight);
}

/** The end of a spawning build, fenced; false when the record was not spawning this attempt here. */
async function finishBuild(
  r: Exclude<BuildReport, { kind: "build_started" }>,
  log: Logger,
): Promise<boolean> {
  const { instance_uuid: id, attempt: n, host } = r;
  const rec = { id, request_id: r.request_id };
  const started = new Date(r.started_at);
  const finished = new Date(r.sent_at);
  if (r.kind === "build_succeeded") {
    const active = await markActive(
      rec,
      host,
      n,
      event(EVENT_BUILD, n, "Success", host, null, started, finished),
    );
    if (!active) return false;
    // Nova's failed_builds reset, when failures came before; num_io_ops set when the report
    // settles it (the agent then owes no heartbeat for it), else it comes with the next heartbeat,
    // once for the builds that end meanwhile (a host write and its change-feed entry: 2 units)
    if (r.after_failures !== false || r.settles_io_ops) await recordBuildResult(host, true, r.in_flight);
    metrics.buildActive();
    log.info("compute_events.build_succeeded", {});
    return true;
  }
  const failed = await recordBuildFailure(
    rec,
    host,
    n,
    event(EVENT_BUILD, n, "Error", host, r.reason, started, finished),
  );
  if (!failed) return false;
  await recordBuildResult(host, false, r.in_flight);
  await reschedule(r, failed, r.reason, log);
  return true;
}

/**
 * The failure path (Nova's reschedule): give the claim back, then send the same build request
 * to the conductor again with the retry count, the hosts tried (the record's, this host last)
 * and the remaining alternates. The reason goes to the instance's owner if this was the last
 * attempt, so it leaves out host names a driver's error may contain; the build event keeps it
 * whole, for admins.
 */
async function reschedule(r: BuildReport, rec: InstanceRecord, reason: string, log: Logger): Promise<void> {
  const { host, instance_uuid: id, attempt } = r;
  const tried = [...rec.retry_hosts.filter((h) => h !== host), host];
  const alternates = (rec.alternates ?? []).filter((a) => a.host !== host);
  await release(host, id, attempt);
  await sendBuildRequest({
    ...conductorRequest(rec, r.request_id, {
      num_attempts: attempt + 1,
      hosts: [...new Set(tried)],
      last_fault: rescheduledText(id, withoutHosts(reason, [...tried, ...alternates.map((a) => a.host)])),
    }),
    alternates,
  });
  metrics.reschedule();
  log.info("compute_events.rescheduled", {
    next_attempt: attempt + 1,
    alternates: alternates.map((a) => a.host),
  });
}
