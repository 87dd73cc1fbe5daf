// The scheduler Lambda: Nova's select_destinations. The pure scheduler (lib/scheduler) decides;
// this module feeds it the fleet (Placement's host records, the catalog's aggregates, the
// instances building, the request's server group) and answers its claims with Placement's
// conditional writes. A multi-create is all-or-nothing: its claims are released before
// NoValidHost. Every decision is explained on its instance (os-scheduling).
import { randomUUID } from "node:crypto";
import { listAggregates } from "../catalog/aggregates.js";
import { getServerGroup } from "../catalog/server-groups.js";
import { type SchedulerConfig, schedulerConfig } from "../config.js";
import { getInstance, listBuilding, recordSchedulingDecision } from "../instances/repo.js";
import { requestSpecOf } from "../instances/request-spec.js";
import type { InstanceRecord } from "../instances/types.js";
import { log as baseLog, type Logger } from "../log.js";
import { type Destination, destinationOf } from "../messages/common.js";
import { metrics } from "../metrics.js";
import { claim, release } from "../placement/claims.js";
import { listHosts } from "../placement/hosts.js";
import type { HostRecord } from "../placement/types.js";
import { NoValidHost } from "../scheduler/errors.js";
import { summarizeNoValidHost, summarizeSelection } from "../scheduler/explain.js";
import type { Fleet } from "../scheduler/fleet.js";
import { schedulerHint } from "../scheduler/hints.js";
import { resourcesFromFlavor } from "../scheduler/resources.js";
import {
  type ClaimAnswer,
  runSchedule,
  runScheduleAsync,
  type ScheduleResult,
  schedule,
  selectionOf,
} from "../scheduler/select.js";
import type { DecisionExplanation, InstanceGroup, RequestSpec, Selection } from "../scheduler/types.js";
import { buildFleet, instanceHostsOf } from "./host-states.js";
import { NOTHING_SCHEDULED, type Scheduled, scheduledOf } from "./scheduled.js";
import type { ConductorInput } from "./types.js";

export async function selectDestinations(
  req: ConductorInput,
  config: SchedulerConfig = schedulerConfig(),
  random: () => number = Math.random,
): Promise<Scheduled> {
  const decisionStarted = performance.now();
  const n = req.retry.num_attempts;
  const log = baseLog.child({ request_id: req.request_id, attempt: n });
  // The request spec is read from the instances' records (one copy per instance, written by
  // the API), not carried by the execution: a consistent read, so a retried step sees them too.
  const [records, sources] = await Promise.all([
    Promise.all(req.instance_uuids.map((id) => getInstance(id))),
    readFleetSources(),
  ]);
  const first = records.find((r) => r !== undefined);
  if (!first) {
    log.warn("scheduler.instances_not_found", { instance_uuids: req.instance_uuids });
    return NOTHING_SCHEDULED;
  }
  const { fleet, hostRecords, spec } = await withInstanceGroup(
    sources,
    requestSpecOf(first, req.instance_uuids.length),
    req.instance_uuids,
    config,
  );
  const requested = resourcesFromFlavor(spec.flavor);

  // A re-run of this step (the state machine retries it) keeps what an earlier run placed: the
  // placement it recorded, or a claim it made for this attempt whose answer was lost.
  const kept = new Map<string, Selection>();
  const toPlace: string[] = [];
  for (const [i, id] of req.instance_uuids.entries()) {
    const rec = records[i];
    if (!rec || rec.deleted || rec.vm_state !== "building" || rec.attempt > n) continue;
    const held = heldClaim(hostRecords, id, n) ?? (rec.attempt === n ? rec.host : null);
    if (held) kept.set(id, keptSelection(fleet, held, rec, requested));
    else toPlace.push(id);
  }

  const claimed: { instance_uuid: string; host: string }[] = [];
  const result = await runScheduleAsync(
    schedule({
      fleet,
      spec,
      instanceUuids: toPlace,
      config,
      random,
      excludeHosts: req.retry.hosts,
      instanceHosts: instanceHostsOf(hostRecords),
    }),
    async (c): Promise<ClaimAnswer> => {
      const r = await claim(c.host.host, c.instance_uuid, c.resources, n).catch(async (e: unknown) => {
        // Placement unreachable: give back what this run claimed, so the retried step starts clean.
        await releaseAll(claimed, n, log);
        throw e;
      });
      if (!r.claimed) return { claimed: false, reason: r.reason };
      claimed.push({ instance_uuid: c.instance_uuid, host: c.host.host });
      return { claimed: true };
    },
  );
  metrics.schedulerDecisionTime(performance.now() - decisionStarted);

  if (!result.ok) {
    await releaseAll(claimed, n, log);
    const details = noValidHostDetails(result, toPlace.length);
    const explanation = result.decision.compact();
    log.warn("scheduler.no_valid_host", { instance_uuid: result.instance_uuid, details, explanation });
    await recordDecisions(
      log,
      req.instance_uuids.map((id) => ({ id, attempt: n, host: null, summary: details, explanation })),
    );
    throw new NoValidHost(details);
  }

  const placed = new Map(
    result.placements.map((p, k) => [p.instance_uuid, { p, alternates: result.alternates[k]! }]),
  );
  const selections: { instance_uuid: string; selected: Destination; alternates: Destination[] }[] = [];
  const decisions: DecisionRecord[] = [];
  for (const id of req.instance_uuids) {
    const keptSel = kept.get(id);
    if (keptSel) selections.push({ instance_uuid: id, selected: destinationOf(keptSel), alternates: [] });
    const got = placed.get(id);
    if (!got) continue;
    selections.push({
      instance_uuid: id,
      selected: destinationOf(got.p.selected),
      alternates: got.alternates.map(destinationOf),
    });
    const explanation = got.p.decision.compact({ chosen: got.p.selected });
    const summary = summarizeSelection(explanation);
    decisions.push({ id, attempt: n, host: got.p.selected.host, summary, explanation });
    log.info("scheduler.selected", { instance_uuid: id, host: got.p.selected.host, summary });
  }
  await recordDecisions(log, decisions);
  return scheduledOf(selections);
}

/** PlanResult: what the dry run (POST /os-scheduler/plan) answers. */
export interface PlanResult {
  selections: { host: string; nodename: string; alternates: { host: string; nodename: string }[] }[];
  /** one per decision made, the failing one last */
  explanations: DecisionExplanation[];
  summary: string;
  no_valid_host: boolean;
}

/**
 * The dry run: the same reads and the same decisions as selectDestinations for a create of
 * `spec.num_instances` instances, as if every claim succeeded. Claims nothing, writes nothing.
 */
export async function planDestinations(spec: RequestSpec, opts: { now?: number } = {}): Promise<PlanResult> {
  const config = schedulerConfig();
  const uuids = Array.from({ length: Math.max(1, spec.num_instances) }, () => randomUUID());
  const read = await readFleet(spec, uuids, config, opts.now);
  const result = runSchedule(
    schedule({
      fleet: read.fleet,
      spec: read.spec,
      instanceUuids: uuids,
      config,
      instanceHosts: instanceHostsOf(read.hostRecords),
    }),
  );
  const explanations = result.placements.map((p) => p.decision.compact({ chosen: p.selected }));
  if (!result.ok) {
    explanations.push(result.decision.compact());
    return {
      selections: [],
      explanations,
      summary: noValidHostDetails(result, uuids.length),
      no_valid_host: true,
    };
  }
  return {
    selections: result.placements.map((p, k) => ({
      host: p.selected.host,
      nodename: p.selected.nodename,
      alternates: result.alternates[k]!.map((a) => ({ host: a.host, nodename: a.nodename })),
    })),
    explanations,
    summary: explanations.map((e) => summarizeSelection(e)).join(" "),
    no_valid_host: false,
  };
}

interface FleetRead {
  fleet: Fleet;
  hostRecords: HostRecord[];
  spec: RequestSpec;
}

type FleetSources = Pick<Parameters<typeof buildFleet>[0], "aggregates" | "building"> & {
  hostRecords: HostRecord[];
};

/** Hosts, aggregates and building instances, read together. */
async function readFleetSources(): Promise<FleetSources> {
  const started = performance.now();
  const [hostRecords, aggregates, building] = await Promise.all([
    listHosts(),
    listAggregates(),
    listBuilding(),
  ]);
  metrics.schedulerFleetReadTime(performance.now() - started);
  return { hostRecords, aggregates, building };
}

/** The fleet, and the request spec with its server group resolved. */
async function withInstanceGroup(
  sources: FleetSources,
  request: RequestSpec,
  scheduling: readonly string[],
  config: SchedulerConfig,
  now = Date.now(),
): Promise<FleetRead> {
  const { hostRecords, aggregates, building } = sources;
  const group = await instanceGroup(request, scheduling);
  const fleet = buildFleet({ hosts: hostRecords, aggregates, building, scheduling }, config, now);
  return { fleet, hostRecords, spec: group ? { ...request, instance_group: group } : request };
}

/** Everything one decision reads (the dry run's). */
async function readFleet(
  request: RequestSpec,
  scheduling: readonly string[],
  config: SchedulerConfig,
  now = Date.now(),
): Promise<FleetRead> {
  return withInstanceGroup(await readFleetSources(), request, scheduling, config, now);
}

/**
 * Nova's setup_instance_group: scheduler hint `group` names the server group; its hosts are
 * those of its members already placed (not deleted, not the instances being scheduled now).
 */
async function instanceGroup(
  spec: RequestSpec,
  scheduling: readonly string[],
): Promise<InstanceGroup | undefined> {
  const id = schedulerHint(spec, "group");
  if (typeof id !== "string" || !id) return undefined;
  const group = await getServerGroup(id);
  if (!group) return undefined;
  const now = new Set(scheduling);
  const members = await Promise.all(group.members.filter((m) => !now.has(m)).map((m) => getInstance(m)));
  const hosts = new Set<string>();
  for (const m of members) if (m && !m.deleted && m.host) hosts.add(m.host);
  return {
    uuid: group.id,
    policy: group.policy,
    rules: { ...group.rules },
    members: [...group.members],
    hosts: [...hosts],
  };
}

/** The NoValidHost detail, for the operator: why no host took the instance, which one it was. */
function noValidHostDetails(result: Extract<ScheduleResult, { ok: false }>, count: number): string {
  const which = count > 1 ? `for instance ${result.placements.length + 1} of ${count}` : undefined;
  const summary = summarizeNoValidHost(result.decision.compact(), which);
  return result.conflicts.length
    ? `${summary} Claims lost to races: ${result.conflicts.join("; ")}.`
    : summary;
}

/** This attempt's claim for `consumer`, made by an earlier run of this step. */
function heldClaim(hosts: readonly HostRecord[], consumer: string, attempt: number): string | undefined {
  return hosts.find((h) => h.allocations[consumer]?.attempt === attempt)?.host;
}

function keptSelection(
  fleet: Fleet,
  host: string,
  rec: InstanceRecord,
  resources: Selection["resources"],
): Selection {
  const h = fleet.hosts.find((s) => s.host === host);
  if (h) return selectionOf(h, resources);
  return { host, nodename: rec.node ?? host, availability_zone: rec.availability_zone ?? "", resources };
}

async function releaseAll(
  claimed: { instance_uuid: string; host: string }[],
  attempt: number,
  log: Logger,
): Promise<void> {
  for (const c of claimed.splice(0)) {
    await release(c.host, c.instance_uuid, attempt);
    log.info("scheduler.claim_released", { instance_uuid: c.instance_uuid, host: c.host });
  }
}

interface DecisionRecord {
  id: string;
  attempt: number;
  host: string | null;
  summary: string;
  explanation: DecisionExplanation;
}

/** Keep each decision on its instance; an explanation that cannot be written fails no build. */
async function recordDecisions(log: Logger, decisions: DecisionRecord[]): Promise<void> {
  const decided_at = new Date().toISOString();
  await Promise.all(
    decisions.map(({ id, attempt, host, summary, explanation }) =>
      recordSchedulingDecision(id, { attempt, decided_at, host, summary, explanation }).catch((e: unknown) =>
        log.warn("scheduler.explanation_not_recorded", { instance_uuid: id, error: e }),
      ),
    ),
  );
}
