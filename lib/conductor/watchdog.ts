// The build watchdog (a scheduled Lambda; a timer locally): nothing stays in BUILD (nor in a
// move: lib/conductor/move-watch.ts) because a
// host died, a message was lost or a build hung. It first sweeps host liveness (marking down, on
// their provider items, hosts that stopped heartbeating), then reads only instances in BUILD (a
// sparse, sharded index), fences dead attempts exactly as a failing compute would, and sends the
// build request down the failure path again, so the attempt counts and max_attempts still bounds
// it. Its reasons end up in the owner's fault (MaxRetriesExceeded's "Last exception"), so they do
// not name the host: the event records which host it was, for admins. Heartbeats travel the path
// reports do, so the sweep judges that path first (lib/placement/report-path.ts): while it is
// suspect, no host's silence is acted on (no mark-down, fencing, evacuation or reschedule), and a
// host's silence counts again only from when the path recovered. It also reclaims SOFT_DELETED
// servers whose reclaim_instance_interval has passed (lib/conductor/reclaim-watch.ts).

import { sendBuildRequest } from "../aws/send.js";
import {
  instanceBuildTimeout,
  reportPathSuspectFraction,
  type SchedulerConfig,
  schedulerConfig,
} from "../config.js";
import { EVENT_BUILD } from "../instances/codec.js";
import { rescheduledText } from "../instances/faults.js";
import { conductorRequest } from "../instances/request-spec.js";
import { event } from "../instances/transition.js";
import type { WatchedBuild } from "../instances/types.js";
import { extendDeadline, fenceAttempt, listBuilding } from "../instances/watch.js";
import { log } from "../log.js";
import { metrics } from "../metrics.js";
import { release } from "../placement/claims.js";
import { sweepLiveness } from "../placement/liveness.js";
import {
  deadlinePassed,
  isHostAlive,
  type ReportPathVerdict,
  reportsWaiting,
} from "../placement/report-path.js";
import { autoEvacuate } from "./auto-evacuate.js";
import { type MoveWatchAction, watchMoves } from "./move-watch.js";
import { reclaimSoftDeleted } from "./reclaim-watch.js";
import { offloadShelved, watchUnshelves } from "./shelve-watch.js";

export interface WatchdogAction {
  instance_uuid: string;
  attempt: number;
  host: string | null;
  /**
   * fenced and resent: builds; held: a silent host (`host`, no instance) spared because the
   * report path is suspect; the others: moves (lib/conductor/move-watch.ts)
   */
  action: "fenced" | "resent" | "evacuated" | "offloaded" | "reclaimed" | "held" | MoveWatchAction["action"];
  reason: string;
}

export async function runWatchdog(
  now = new Date(),
  config: SchedulerConfig = schedulerConfig(),
): Promise<WatchdogAction[]> {
  const [{ services, markedDown, reportPath }, building] = await Promise.all([
    sweepLiveness(config.service_down_time, now, {
      reportInterval: config.report_interval,
      suspectFraction: reportPathSuspectFraction(),
    }),
    listBuilding(),
  ]);
  if (markedDown.length) log.warn("watchdog.hosts_down", { hosts: markedDown });
  const up = new Map(
    services.map((s) => [s.host, isHostAlive(s, reportPath, config.service_down_time, now.getTime())]),
  );
  // hosts whose reports may still be on their way: no deadline is held against them yet
  const waiting = new Set(services.filter(reportsWaiting).map((s) => s.host));
  const delayed = (host: string | null) => reportPath.reportsDelayed || (host !== null && waiting.has(host));
  const actions: WatchdogAction[] = reportPath.suspect ? held(reportPath, config) : [];
  for (const m of await watchMoves(now, up, delayed)) {
    actions.push({
      instance_uuid: m.instance_uuid,
      attempt: 0,
      host: null,
      action: m.action,
      reason: m.reason,
    });
  }
  for (const e of await autoEvacuate(services, config.service_down_time, now, reportPath)) {
    for (const id of e.evacuated) {
      actions.push({
        instance_uuid: id,
        attempt: 0,
        host: e.host,
        action: "evacuated",
        reason: `host ${e.host} is down and opted in to automatic evacuation`,
      });
    }
  }
  for (const id of await watchUnshelves(now, up)) {
    actions.push({
      instance_uuid: id,
      attempt: 0,
      host: null,
      action: "fenced",
      reason: "its unshelve's host is down",
    });
  }
  for (const id of await offloadShelved(now)) {
    actions.push({
      instance_uuid: id,
      attempt: 0,
      host: null,
      action: "offloaded",
      reason: "shelved_offload_time passed",
    });
  }
  for (const id of await reclaimSoftDeleted(now)) {
    actions.push({
      instance_uuid: id,
      attempt: 0,
      host: null,
      action: "reclaimed",
      reason: "reclaim_instance_interval passed",
    });
  }
  for (const rec of building) {
    if (rec.deleted || rec.vm_state !== "building") continue;
    const action = await watch(rec, up, now, config, reportPath, rec.host !== null && waiting.has(rec.host));
    if (action) {
      actions.push(action);
      log.warn(`watchdog.${action.action}`, { request_id: rec.request_id, ...action });
    }
  }
  return actions;
}

/**
 * The suspect path's log line, metric and actions: one `held` action per silent host the watchdog
 * would otherwise have judged, so that what it spared is seen.
 */
function held(v: ReportPathVerdict, config: SchedulerConfig): WatchdogAction[] {
  const reason =
    v.suspect === "path_quiet"
      ? `the report path is suspect: no host heard for ${v.quietSeconds?.toFixed(0)}s`
      : `the report path is suspect: ${v.silent.length} of ${v.counted} hosts silent at once`;
  log.warn("watchdog.report_path_suspect", {
    why: v.suspect,
    silent: v.silent.length,
    counted: v.counted,
    quiet_seconds: v.quietSeconds,
    since: v.hold?.since,
    service_down_time: config.service_down_time,
  });
  metrics.reportPathSuspect(v.silent.length);
  return v.silent.map((host) => ({ instance_uuid: "", attempt: 0, host, action: "held", reason }));
}

async function watch(
  rec: WatchedBuild,
  up: Map<string, boolean>,
  now: Date,
  config: SchedulerConfig,
  reportPath: ReportPathVerdict,
  hostReportsWaiting: boolean,
): Promise<WatchdogAction | undefined> {
  const n = rec.attempt;
  const overdue = Boolean(rec.build_deadline && rec.build_deadline < now.toISOString());
  const base = { instance_uuid: rec.id, attempt: n, host: rec.host };
  // The current attempt is live on its host: taken (spawning) or cast but not yet taken.
  const live = rec.host !== null && (rec.task_state === "spawning" || rec.spawn_attempt < n);
  if (live && rec.host) {
    const hostUp = up.get(rec.host) ?? false;
    // A build past its deadline while reports could not get through, or while its host's spool
    // still holds reports, may have ended there unheard: its report comes once they are through.
    if (hostUp && (hostReportsWaiting || !deadlinePassed(rec.build_deadline, reportPath, now.getTime())))
      return undefined;
    const reason = hostUp
      ? `attempt ${n} passed its build deadline (instance_build_timeout ${instanceBuildTimeout()}s)`
      : `its host is down (no heartbeat within service_down_time ${config.service_down_time}s, or forced down)`;
    const fenced = await fenceAttempt(
      rec,
      rec.host,
      n,
      event(EVENT_BUILD, n, "Error", rec.host, reason, now),
    );
    if (!fenced) return undefined; // it moved on meanwhile: nothing to do
    await release(rec.host, rec.id, n);
    await resend(fenced, n + 1, reason, up);
    return { ...base, action: "fenced", reason };
  }
  if (!overdue) return undefined;
  // Waiting for the conductor (never placed, or rescheduling) for longer than a whole build may
  // take: its build request was lost or parked. Sending it again is safe, the conductor dedupes
  // by attempt.
  if (!(await extendDeadline(rec))) return undefined;
  const reason = rec.host
    ? `the reschedule of attempt ${n} did not reach the conductor in time`
    : "its build request did not reach the conductor in time";
  await resend(rec, n + 1, reason, up);
  return { ...base, action: "resent", reason };
}

/**
 * The build request again, as compute's reschedule would send it: the hosts tried, and the
 * alternates kept with the attempt's placement that were not tried yet and whose host is up
 * (claimed without running the filters again, as Nova's conductor does; the scheduler is asked
 * when none is left). A host the watchdog found down is not worth an attempt.
 */
async function resend(
  rec: WatchedBuild,
  numAttempts: number,
  reason: string,
  up: Map<string, boolean>,
): Promise<void> {
  const tried = new Set(rec.retry_hosts);
  const alternates = (rec.alternates ?? []).filter(
    (a) => !tried.has(a.host) && a.host !== rec.host && up.get(a.host) === true,
  );
  await sendBuildRequest({
    ...conductorRequest(rec, rec.request_id, {
      num_attempts: numAttempts,
      hosts: [...new Set(rec.retry_hosts)],
      last_fault: rescheduledText(rec.id, reason),
    }),
    ...(alternates.length ? { alternates } : {}),
  });
  metrics.reschedule();
}
