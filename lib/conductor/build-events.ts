// compute-events' build reports (Nova's build_and_run_instance, applied from the host's reports):
// a build taken, spawned, finished, or failed and sent back to the conductor for its next
// attempt. Every write is fenced by the attempt: a duplicated or late report changes nothing.
import { sendBuildRequest } from "../aws/send.js";
import { markActive, recordBuildFailure, startSpawn } from "../instances/build.js";
import { EVENT_BUILD } from "../instances/codec.js";
import { rescheduledText, withoutHosts } from "../instances/faults.js";
import { guestSpecFor } from "../instances/guest.js";
import { conductorRequest } from "../instances/request-spec.js";
import { event } from "../instances/transition.js";
import type { InstanceRecord } from "../instances/types.js";
import type { Logger } from "../log.js";
import type { BuildReport } from "../messages/reports.js";
import { metrics } from "../metrics.js";
import { release } from "../placement/claims.js";
import { recordBuildResult, recordInFlight } from "../placement/hosts.js";
import { castToHost } from "./host-casts.js";

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
export async function applyBuildReport(r: BuildReport, log: Logger): Promise<void> {
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
