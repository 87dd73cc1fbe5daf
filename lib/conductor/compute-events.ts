// compute-events → the database: the conductor as nova-compute's database proxy (Nova's
// conductor.rst). Hosts only report; this applies each report with the fenced conditional writes
// the host used to make itself, releases claims, loops failed builds back, and answers on the
// host's own queue (the guest to spawn, a guest to destroy). Every report is idempotent: a
// duplicated, late or reordered one changes nothing. Who sent a report is the session that signed
// the POST to compute-events' function URL (aws:userid, which IAM forces to name the host's
// session), never the body. A registration is applied in compute-register.ts, a build's reports
// in build-events.ts, a move's in move-events.ts, a shelve's in shelve-events.ts, an interface
// attach's or detach's in lib/instances/interfaces.ts.
import { sendToDeadLetter } from "../aws/send.js";
import { hostSessionName } from "../compute/queue-name.js";
import { resources } from "../config.js";
import { crashDumpDone } from "../instances/crash-dump.js";
import { storeHostAnswer } from "../instances/host-answers.js";
import { attachDone, detachDone } from "../instances/interfaces.js";
import { actionStarted, finishPowerAction, storeConsoleOutput, syncPowerState } from "../instances/power.js";
import { shelveProgress } from "../instances/shelve.js";
import { finishSnapshot, imageSaving, snapshotProgress } from "../instances/snapshot.js";
import { finishDeferredDelete } from "../instances/soft-delete.js";
import { type Logger, log as rootLog } from "../log.js";
import { parseJsonMessage } from "../messages/build-request.js";
import { type ComputeReport, computeReport, sessionOfSender } from "../messages/reports.js";
import { metrics } from "../metrics.js";
import { release } from "../placement/claims.js";
import { recordInFlight } from "../placement/hosts.js";
import { heartbeat } from "../placement/liveness.js";
import { applyBuildReport } from "./build-events.js";
import { evacuationCleaned, register } from "./compute-register.js";
import { castToHost, stopGuest } from "./host-casts.js";
import { applyLiveProgress } from "./live-migrate.js";
import { applyMoveReport } from "./move-events.js";
import { applyShelveReport, applyUnshelveReport } from "./shelve-events.js";

export interface ReportRecord {
  /** the function URL request's id, for the logs */
  messageId: string;
  body: string;
  /** the signer's aws:userid: `<role id>:<session name>` for a role session */
  senderId?: string;
}

/**
 * What a report's POST is answered: applied (a registration with the host's queue, so the host
 * need not ask SQS for it), or dead-lettered with its reason (a retry would not help).
 */
export type ReportOutcome = { applied: true; queue_url?: string } | { applied: false; reason: string };

/**
 * One report as a host posted it. A failure throws (the function answers 5xx and the host sends
 * it again, as SQS redelivered it): applying a report twice changes nothing.
 */
export async function applyReportRequest(r: ReportRecord): Promise<ReportOutcome> {
  try {
    const outcome = await applyRecord(r);
    return typeof outcome === "string" ? { applied: false, reason: outcome } : { applied: true, ...outcome };
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

/** what the host is told when applied; the reason when dead-lettered */
async function applyRecord(r: ReportRecord): Promise<{ queue_url?: string } | string> {
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
  const log = rootLog.child({ host: report.host, report: report.kind });
  if (report.kind === "register") return { queue_url: (await register(report, log)).queueUrl };
  await applyReport(report, log);
  return {};
}

/** One report, its sender already checked. */
export async function applyReport(report: ComputeReport, log: Logger): Promise<void> {
  switch (report.kind) {
    case "register":
      await register(report, log);
      return;
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
      // a soft delete's and a restore's end move the server out of (or back out of) its quota
      const outcome =
        report.action === "soft_delete" || report.action === "restore"
          ? await finishDeferredDelete({ ...report, action: report.action })
          : await finishPowerAction(report);
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
    case "attach_interface_done":
    case "detach_interface_done": {
      const outcome = await (report.kind === "attach_interface_done" ? attachDone : detachDone)(report);
      log.info(`compute_events.${report.kind}`, {
        instance_uuid: report.instance_uuid,
        request_id: report.request_id,
        port_id: report.port_id,
        ok: report.ok,
        outcome,
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
