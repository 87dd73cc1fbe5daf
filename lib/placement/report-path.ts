// Whether the hosts are silent or the path they report on is. Heartbeats travel the same path as
// reports (compute-events' function URL), so while compute-events refuses them (an outage, a long
// storm of 429s) every host looks silent, and a watchdog reading that as a dead fleet would mark
// it down, fence its builds and evacuate it (Masakari's users know false host-down alarms). As
// Kubernetes' node-lifecycle controller stops evicting when most of a zone is NotReady at once, the
// watchdog judges the fleet before it judges a host, and holds while the path is suspect. Pure: the
// sweep (liveness.ts) reads the Services table and persists the hold this rule decides.
import { idleHeartbeatSeconds } from "../compute/heartbeat.js";

/** The watchdog's record of the report path being suspect: when it began and when it ended. */
export interface ReportPathHold {
  /**
   * ISO: when the path was last known to carry a report, as the sweep that first found it suspect
   * saw it (the freshest counted heartbeat then). Not that sweep's own time: a path is found
   * quiet only service_down_time or so after it stopped, and reports were lost from the stop.
   */
  since: string;
  /** ISO: the sweep that found it sound again; absent while the hold lasts */
  recovered_at?: string | undefined;
}

/** What the rule reads of a compute service (its Services item). */
export interface HeardService {
  host: string;
  last_heartbeat: string;
  forced_down?: boolean | undefined;
  /** marked down by an earlier sweep, while the path was sound */
  down_since?: string | undefined;
  /** reports waiting in the host's spool, as its last heartbeat said (absent: none waited) */
  report_spool?: { reports: number } | undefined;
}

export interface ReportPathInput {
  services: readonly HeardService[];
  /** the hold as persisted by the last sweep that changed it */
  hold: ReportPathHold | undefined;
  /** ms */
  now: number;
  /** [DEFAULT] service_down_time, seconds */
  serviceDownTime: number;
  /** [DEFAULT] report_interval, seconds (the control plane's; hosts may beat more often, never less) */
  reportInterval: number;
  /** report_path_suspect_fraction: more than this share of the counted hosts silent at once is suspect */
  suspectFraction: number;
}

/**
 * Why the path is suspect: `path_quiet`, no counted host has been heard for longer than a sound
 * fleet ever goes quiet; `most_silent`, more than the fraction of them are silent at once.
 */
export type SuspectReason = "path_quiet" | "most_silent";

export interface ReportPathVerdict {
  /** false: the path is sound, silent hosts are judged one by one */
  suspect: false | SuspectReason;
  /** hosts counted: neither forced down nor marked down while the path was sound */
  counted: number;
  /** counted hosts silent for longer than service_down_time (against their effective heartbeat) */
  silent: string[];
  /** seconds since the freshest counted heartbeat; null when none is counted */
  quietSeconds: number | null;
  /** the hold to persist (changed says whether it must be written) */
  hold: ReportPathHold | undefined;
  changed: boolean;
  /**
   * Reports may still be on their way: suspect, or recovered less than service_down_time ago.
   * No deadline is held against a host meanwhile (it may have finished and been unable to say so).
   */
  reportsDelayed: boolean;
}

/**
 * Kubernetes' node-lifecycle controller calls a zone partially disrupted only with more than two
 * NotReady nodes: two hosts of a small fleet dying together are two deaths, not an outage.
 */
const MIN_SILENT = 3;

/**
 * A host's heartbeat as liveness counts it: its last, or the end of the last hold if later. Hosts
 * come back staggered by their report backoff, so a host's silence counts only from when the path
 * was sound again; one still silent service_down_time after that is dead.
 */
export function effectiveHeartbeat(
  s: Pick<HeardService, "last_heartbeat">,
  hold: ReportPathHold | undefined,
): string {
  const r = hold?.recovered_at;
  return r !== undefined && r > s.last_heartbeat ? r : s.last_heartbeat;
}

/**
 * How long a sound fleet's freshest heartbeat can be old when one of its hosts first looks
 * silent because of the path: every host beats at least every idleHeartbeatSeconds, so when the
 * path stops at T the first host is silent at T + service_down_time − that cadence. Half an
 * interval is kept in hand for reports in flight. When the cadence leaves nothing (a control
 * plane whose report_interval is not its hosts'), only a whole service_down_time without any
 * heartbeat counts: every host silent at once.
 */
export function quietAfterSeconds(serviceDownTime: number, reportInterval: number): number {
  const q = serviceDownTime - idleHeartbeatSeconds(reportInterval, serviceDownTime) - reportInterval / 2;
  return q > 0 ? q : serviceDownTime;
}

/**
 * The fleet's verdict, before any host's: the path is suspect when some host is silent and either
 * no counted host was heard for quietAfterSeconds (a whole outage, caught at the first sweep that
 * finds a host silent, before that host is marked down), or more than suspectFraction of the
 * counted hosts, and more than two, are silent at once (a storm some reports get through). A hold
 * is recorded by the first suspect sweep, dated from the freshest heartbeat it saw, and ends with
 * the first sound one.
 */
export function judgeReportPath(i: ReportPathInput): ReportPathVerdict {
  const counted = i.services.filter((s) => !s.forced_down && s.down_since === undefined);
  const limit = i.serviceDownTime * 1000;
  const ages = counted.map((s) => i.now - Date.parse(effectiveHeartbeat(s, i.hold)));
  const silent = counted.filter((_, k) => ages[k]! > limit).map((s) => s.host);
  const quietSeconds = counted.length ? Math.min(...ages) / 1000 : null;
  let suspect: ReportPathVerdict["suspect"] = false;
  if (silent.length && quietSeconds !== null) {
    if (quietSeconds > quietAfterSeconds(i.serviceDownTime, i.reportInterval)) suspect = "path_quiet";
    else if (silent.length >= MIN_SILENT && silent.length / counted.length > i.suspectFraction)
      suspect = "most_silent";
  }
  const at = new Date(i.now).toISOString();
  const held = i.hold !== undefined && i.hold.recovered_at === undefined;
  let hold = i.hold;
  if (suspect && !held) hold = { since: new Date(i.now - (quietSeconds ?? 0) * 1000).toISOString() };
  else if (!suspect && held) hold = { since: i.hold!.since, recovered_at: at };
  const recovered = hold?.recovered_at;
  return {
    suspect,
    counted: counted.length,
    // a hold ending now gives every host its grace from now: none is silent yet
    silent: hold !== i.hold && recovered !== undefined ? [] : silent,
    quietSeconds,
    hold,
    changed: hold !== i.hold,
    reportsDelayed: Boolean(suspect) || (recovered !== undefined && i.now - Date.parse(recovered) <= limit),
  };
}

/**
 * Whether a host's last heartbeat said its spool held reports, so that no deadline is held against
 * it yet. After an outage each host's spool resends on its own backoff (up to 10 s, jittered)
 * while its heartbeats already get through, so the fleet-wide grace (reportsDelayed) can end
 * before a host's last report is: resending its build elsewhere then would run it twice. A host
 * not heard at all is judged by liveness instead; one whose spool never drains shows it in
 * os-hypervisors and in the spool's own warning.
 */
export function reportsWaiting(s: Pick<HeardService, "report_spool">): boolean {
  return (s.report_spool?.reports ?? 0) > 0;
}

/**
 * Whether an attempt's deadline has passed, as the watchdog holds it against the attempt's host:
 * never while reports are delayed, and a deadline that fell after the path went quiet is pushed
 * back by the hold's length, from the last report it carried to its recovery (the time no report
 * could get through does not count).
 */
export function deadlinePassed(
  deadline: string | null | undefined,
  verdict: Pick<ReportPathVerdict, "reportsDelayed" | "hold">,
  now: number,
): boolean {
  if (!deadline || verdict.reportsDelayed) return false;
  const d = Date.parse(deadline);
  const h = verdict.hold;
  const lost =
    h?.recovered_at !== undefined && d > Date.parse(h.since)
      ? Date.parse(h.recovered_at) - Date.parse(h.since)
      : 0;
  return now > d + lost;
}

/**
 * Whether the watchdog may act on this host as up (Nova's servicegroup check, given the verdict):
 * not forced down, and heard within service_down_time of its effective heartbeat. While the path
 * is suspect a silent host is not judged, so it counts as up, unless a sweep had marked it down
 * before (while the path was sound).
 */
export function isHostAlive(
  s: HeardService,
  verdict: Pick<ReportPathVerdict, "suspect" | "hold">,
  serviceDownTime: number,
  now: number,
): boolean {
  if (s.forced_down) return false;
  if (now - Date.parse(effectiveHeartbeat(s, verdict.hold)) <= serviceDownTime * 1000) return true;
  return Boolean(verdict.suspect) && s.down_since === undefined;
}
