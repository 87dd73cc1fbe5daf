// Host liveness (Nova's servicegroup API, DB driver) without rewriting the provider item: the
// agent's heartbeat is a tiny write to its own item in the Services table, and the provider item
// (what the scheduler caches) changes only when a host goes down or comes back, through
// `service.down_since`. The sweep (run by the build watchdog, every minute) finds hosts that
// stopped heartbeating; a host's next heartbeat sees it was marked down and clears the mark itself.
// The writes of a transition are ordered so that a heartbeat racing the sweep, or a sweep cut
// short, still ends with the provider telling the truth (no transaction needed).
import { GetCommand, ScanCommand, type ScanCommandInput, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { reportPathSuspectFraction, resources, schedulerConfig } from "../config.js";
import { heardWithin } from "../placement-rules.js";
import { logChange } from "./change-log.js";
import { stamp } from "./feed.js";
import {
  effectiveHeartbeat,
  judgeReportPath,
  type ReportPathHold,
  type ReportPathVerdict,
} from "./report-path.js";

// Whether a service is up is one of Placement's pure rules, shared with the scheduler.
export { isHeartbeatAlive, isServiceUp } from "../placement-rules.js";

/** A compute service's item in the Services table. */
export interface ServiceHeartbeat {
  host: string;
  /** ISO timestamp of the agent's last heartbeat */
  last_heartbeat: string;
  /** set with the provider's `service.down_since` by the sweep, removed by the next heartbeat */
  down_since?: string;
  /** the provider carries down_since too (the sweep's last step: a sweep cut short is finished by the next) */
  provider_marked?: boolean;
  /** the operator's forced_down, mirrored from the provider so the watchdog reads one table */
  forced_down?: boolean;
  /** reports waiting in the host's spool as its last heartbeat said (absent: none waited) */
  report_spool?: ReportSpoolState;
}

/** What a heartbeat says of the host's report spool (lib/compute/spool.ts). */
export interface ReportSpoolState {
  reports: number;
  oldest_seconds: number;
}

/**
 * The report path's hold (report-path.ts) is an item of the Services table under a key no host can
 * have (a host name has no colon): the sweep's Scan reads it with the hosts, for nothing more.
 */
export const REPORT_PATH_KEY = "novaless:report-path";

/** Parallel Scan segments of the sweep: the Services items are tiny, a segment reads ~40k per MB. */
const SWEEP_SEGMENTS = 4;

function servicesTable(): string {
  return resources().servicesTable;
}

/**
 * A host's Services item as its first heartbeat leaves it, for a host whose provider item is
 * created in the same write (lib/placement/registration.ts): nothing marked down, no spool.
 */
export function firstHeartbeat(host: string, now = new Date()): ServiceHeartbeat {
  return { host, last_heartbeat: now.toISOString() };
}

/**
 * The agent's heartbeat: one small write to its Services item. When the sweep had marked the host
 * down, the old item says so, and the mark is cleared on the provider at once, then on the
 * Services item (should this stop in between, the next heartbeat finishes it).
 */
export async function heartbeat(host: string, now = new Date(), spool?: ReportSpoolState): Promise<void> {
  const r = await dynamo().send(
    new UpdateCommand({
      TableName: servicesTable(),
      Key: { host },
      // the spool's state rides the same write (no write of its own on the hot path); a heartbeat
      // without one says that none waits
      UpdateExpression: spool
        ? "SET last_heartbeat = :now, report_spool = :spool"
        : "SET last_heartbeat = :now REMOVE report_spool",
      ExpressionAttributeValues: { ":now": now.toISOString(), ...(spool ? { ":spool": spool } : {}) },
      ReturnValues: "ALL_OLD",
    }),
  );
  const old = r.Attributes as ServiceHeartbeat | undefined;
  if (old?.down_since !== undefined) await markUp(host, old);
}

async function markUp(host: string, old: ServiceHeartbeat): Promise<void> {
  const clearProvider = () => updateProvider(host, "REMOVE service.down_since", {});
  await clearProvider();
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: servicesTable(),
        Key: { host },
        UpdateExpression: "REMOVE down_since, provider_marked",
        ConditionExpression: "down_since = :was",
        ExpressionAttributeValues: { ":was": old.down_since },
        ReturnValues: "ALL_OLD",
      }),
    ),
  );
  if (!r) return;
  const cleared = r.Attributes as ServiceHeartbeat;
  // A sweep finished marking the provider between the two writes: clear it again.
  if (!old.provider_marked && cleared.provider_marked) await clearProvider();
}

/** Every compute service's Services item, read in parallel segments. */
export async function listServiceHeartbeats(): Promise<ServiceHeartbeat[]> {
  return (await scanServices()).services;
}

async function scanServices(): Promise<{ services: ServiceHeartbeat[]; hold: ReportPathHold | undefined }> {
  const pages = await Promise.all(
    Array.from({ length: SWEEP_SEGMENTS }, (_, segment) =>
      scanSegment({ TableName: servicesTable(), Segment: segment, TotalSegments: SWEEP_SEGMENTS }),
    ),
  );
  const items = pages.flat();
  const held = items.find((s) => s.host === REPORT_PATH_KEY) as unknown as ReportPathHold | undefined;
  return {
    services: items.filter((s) => s.host !== REPORT_PATH_KEY),
    hold: held ? { since: held.since, recovered_at: held.recovered_at } : undefined,
  };
}

async function scanSegment(input: ScanCommandInput): Promise<ServiceHeartbeat[]> {
  const out: ServiceHeartbeat[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const r = await dynamo().send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
    out.push(...((r.Items ?? []) as ServiceHeartbeat[]));
    start = r.LastEvaluatedKey;
  } while (start);
  return out;
}

export async function getServiceHeartbeat(host: string): Promise<ServiceHeartbeat | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: servicesTable(), Key: { host }, ConsistentRead: true }),
  );
  return r.Item as ServiceHeartbeat | undefined;
}

export interface LivenessSweep {
  /** every compute service as the sweep left it */
  services: ServiceHeartbeat[];
  /** hosts this sweep marked down on their provider item */
  markedDown: string[];
  /** the fleet's verdict on the report path (report-path.ts), with the hold as now persisted */
  reportPath: ReportPathVerdict;
}

export interface SweepOptions {
  /** [DEFAULT] report_interval (seconds) */
  reportInterval: number;
  /** report_path_suspect_fraction */
  suspectFraction: number;
}

/**
 * Judges the report path first (report-path.ts), persisting its hold when it starts or ends. Then,
 * unless the path is suspect, marks down, on the provider item, every host whose effective
 * heartbeat is older than service_down_time and that is not marked yet. Only transitions write: a
 * host already marked, or alive, costs its share of the Scan and nothing else.
 */
export async function sweepLiveness(
  serviceDownTime: number,
  now = new Date(),
  opts: SweepOptions = {
    reportInterval: schedulerConfig().report_interval,
    suspectFraction: reportPathSuspectFraction(),
  },
): Promise<LivenessSweep> {
  const { services, hold } = await scanServices();
  const reportPath = judgeReportPath({
    services,
    hold,
    now: now.getTime(),
    serviceDownTime,
    reportInterval: opts.reportInterval,
    suspectFraction: opts.suspectFraction,
  });
  if (reportPath.changed && reportPath.hold) await saveHold(reportPath.hold);
  const markedDown: string[] = [];
  for (const s of services) {
    if (s.provider_marked) continue;
    // Marked on Services by a sweep that stopped before the provider: finish it.
    const since = s.down_since ?? now.toISOString();
    if (s.down_since === undefined) {
      // silence is not judged while the path that carries heartbeats is suspect
      if (reportPath.suspect) continue;
      if (heardWithin(effectiveHeartbeat(s, reportPath.hold), serviceDownTime, now.getTime())) continue;
      if (!(await markServiceDown(s, since))) continue;
    }
    if (await markProviderDown(s.host, since)) {
      Object.assign(s, { down_since: since, provider_marked: true });
      markedDown.push(s.host);
    }
  }
  return { services, markedDown, reportPath };
}

/** The hold, as the sweep decided it: written only when it starts or ends (overlapping sweeps decide alike). */
async function saveHold(hold: ReportPathHold): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: servicesTable(),
      Key: { host: REPORT_PATH_KEY },
      UpdateExpression: hold.recovered_at
        ? "SET since = :since, recovered_at = :recovered"
        : "SET since = :since REMOVE recovered_at",
      ExpressionAttributeValues: {
        ":since": hold.since,
        ...(hold.recovered_at ? { ":recovered": hold.recovered_at } : {}),
      },
    }),
  );
}

/** The Services item first, conditioned on the heartbeat the sweep read: a heartbeat since wins. */
async function markServiceDown(s: ServiceHeartbeat, since: string): Promise<boolean> {
  return conditional(
    new UpdateCommand({
      TableName: servicesTable(),
      Key: { host: s.host },
      UpdateExpression: "SET down_since = :since",
      ConditionExpression: "last_heartbeat = :seen AND attribute_not_exists(down_since)",
      ExpressionAttributeValues: { ":since": since, ":seen": s.last_heartbeat },
    }),
  );
}

/**
 * Then the provider, then `provider_marked` on the Services item, conditioned on its mark still
 * being there. A heartbeat landing in between may have cleared the provider before it was set:
 * the condition fails, and the provider's mark is taken back.
 */
async function markProviderDown(host: string, since: string): Promise<boolean> {
  await updateProvider(host, "SET service.down_since = :since", { ":since": since });
  const kept = await conditional(
    new UpdateCommand({
      TableName: servicesTable(),
      Key: { host },
      UpdateExpression: "SET provider_marked = :true",
      ConditionExpression: "down_since = :since",
      ExpressionAttributeValues: { ":since": since, ":true": true },
    }),
  );
  if (kept) return true;
  await updateProvider(host, "REMOVE service.down_since", { ":since": since }, "service.down_since = :since");
  return false;
}

/**
 * One write to the provider item, stamped with `changed_at` for the scheduler's change feed. A host
 * whose provider is gone (deleted) has nothing to mark.
 */
async function updateProvider(
  host: string,
  update: string,
  values: Record<string, unknown>,
  condition?: string,
): Promise<boolean> {
  const written = await conditional(
    new UpdateCommand({
      TableName: resources().hostsTable,
      Key: { host },
      // the writer's clock, never the heartbeat's time: the feed is read by when items were written
      UpdateExpression: update.startsWith("SET ")
        ? `${update}, ${stamp(values)}`
        : `${update} SET ${stamp(values)}`,
      ConditionExpression: condition ? `attribute_exists(host) AND ${condition}` : "attribute_exists(host)",
      ExpressionAttributeValues: values,
    }),
  );
  if (written) await logChange(host, values);
  return written;
}

/** The operator's forced_down, mirrored onto the Services item (the watchdog's one read). */
export async function mirrorForcedDown(host: string, forcedDown: boolean): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: servicesTable(),
      Key: { host },
      UpdateExpression: "SET forced_down = :f, last_heartbeat = if_not_exists(last_heartbeat, :never)",
      ExpressionAttributeValues: { ":f": forcedDown, ":never": new Date(0).toISOString() },
    }),
  );
}

function conditional(cmd: UpdateCommand): Promise<boolean> {
  return conditionHeld(dynamo().send(cmd));
}
