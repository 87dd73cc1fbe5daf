// Nova's SchedulerManager: select_destinations, which the conductor state machine invokes
// synchronously. The pure scheduler (filters, weighers, select.ts) decides; this module feeds it
// the host states the warm HostManager keeps (refreshed from the change feed), the catalog's
// aggregates, the request's server group and the hosts of the instances its hints name, and
// answers its claims with Placement's conditional writes. A multi-create is all-or-nothing: its
// claims are released before NoValidHost. Every decision is explained (os-scheduling).
import { randomUUID } from "node:crypto";
import { perIdentity } from "../aws/identity.js";
import { listAggregates } from "../catalog/aggregates.js";
import { getServerGroup } from "../catalog/server-groups.js";
import { NOTHING_SCHEDULED, type Scheduled, scheduledOf } from "../conductor/scheduled.js";
import type { ConductorInput } from "../conductor/types.js";
import { type SchedulerConfig, schedulerConfig } from "../config.js";
import { getInstance, recordSchedulingDecision } from "../instances/repo.js";
import { requestSpecOf } from "../instances/request-spec.js";
import type { InstanceRecord } from "../instances/types.js";
import { log as baseLog, type Logger } from "../log.js";
import { type Destination, destinationOf } from "../messages/common.js";
import { metrics } from "../metrics.js";
import { claim, findClaim, release } from "../placement/claims.js";
import { NoValidHost } from "./errors.js";
import { summarizeNoValidHost, summarizeSelection } from "./explain.js";
import type { Fleet } from "./fleet.js";
import { schedulerHint } from "./hints.js";
import { HostManager } from "./host-manager.js";
import { resourcesFromFlavor } from "./resources.js";
import {
  type ClaimAnswer,
  runSchedule,
  runScheduleAsync,
  type ScheduleResult,
  schedule,
  selectionOf,
} from "./select.js";
import type { DecisionExplanation, InstanceGroup, RequestSpec, Selection } from "./types.js";

/**
 * One HostManager per warm function (per identity locally: the API's dry run and the scheduler are
 * separate Lambdas), and one decision at a time over it, as a Lambda container serves one
 * invocation at a time: the claim loop consumes in the shared host states as it claims.
 */
const managers = perIdentity(() => ({ hosts: new HostManager(), queue: Promise.resolve() }));

async function exclusively<T>(fn: (hosts: HostManager) => Promise<T>): Promise<T> {
  const m = managers.get();
  const turn = m.queue.then(() => fn(m.hosts));
  m.queue = turn.then(
    () => undefined,
    () => undefined,
  );
  return turn;
}

/** Forget every warm scheduler's host states (the local runtime switching tables; tests). */
export function resetHostManagers(): void {
  managers.reset();
}

/** The warm HostManager of the current identity (tests and benches read its last refresh). */
export function hostManager(): HostManager {
  return managers.get().hosts;
}

export async function selectDestinations(
  req: ConductorInput,
  config: SchedulerConfig = schedulerConfig(),
  random: () => number = Math.random,
): Promise<Scheduled> {
  const decisionStarted = performance.now();
  const n = req.retry.num_attempts;
  const log = baseLog.child({ request_id: req.request_id, attempt: n });
  // What does not touch the host states is read before this function's one-at-a-time section:
  // the request spec, from the instances' records (one copy per instance, written by the API; a
  // consistent read, so a retried step sees them too), and the instances its hints name.
  const records = await Promise.all(req.instance_uuids.map((id) => getInstance(id)));
  const first = records.find((r) => r !== undefined);
  if (!first) {
    log.warn("scheduler.instances_not_found", { instance_uuids: req.instance_uuids });
    return NOTHING_SCHEDULED;
  }
  const { spec, instanceHosts } = await withInstances(
    requestSpecOf(first, req.instance_uuids.length),
    req.instance_uuids,
  );
  const requested = resourcesFromFlavor(spec.flavor);

  // A re-run of this step (the state machine retries it) keeps what an earlier run placed: the
  // placement it recorded, or a claim it made for this attempt whose answer was lost.
  const held = new Map<string, string>();
  await Promise.all(
    req.instance_uuids.map(async (id, i) => {
      const rec = records[i];
      if (!rec || rec.deleted || rec.vm_state !== "building" || rec.attempt > n) return;
      const host = rec.attempt === n && rec.host ? rec.host : await findClaim(id, n);
      if (host) held.set(id, host);
    }),
  );
  const toPlace = req.instance_uuids.filter((id, i) => {
    const rec = records[i];
    return rec && !rec.deleted && rec.vm_state === "building" && rec.attempt <= n && !held.has(id);
  });

  const claimed: { instance_uuid: string; host: string }[] = [];
  const outcome = await exclusively(async (hosts): Promise<Outcome> => {
    const fleet = await refreshed(hosts, config);
    const kept = new Map(
      [...held].map(([id, host]) => {
        const rec = records[req.instance_uuids.indexOf(id)]!;
        return [id, keptSelection(fleet, host, rec, requested)] as const;
      }),
    );
    const result = await runScheduleAsync(
      schedule({
        fleet,
        spec,
        instanceUuids: toPlace,
        config,
        random,
        excludeHosts: req.retry.hosts,
        instanceHosts,
      }),
      async (c): Promise<ClaimAnswer> => {
        const r = await claim(c.host.host, c.instance_uuid, c.resources, n).catch(async (e: unknown) => {
          // Placement unreachable: give back what this run claimed, so the retried step starts clean.
          await releaseAll(claimed, n, log);
          throw e;
        });
        if (!r.claimed) {
          // The cache was stale about this host: take its current state (the claim read it to
          // say why), so the next decision does not bet on it again.
          if (r.current) hosts.learn(r.current, config);
          return { claimed: false, reason: r.reason };
        }
        claimed.push({ instance_uuid: c.instance_uuid, host: c.host.host });
        return { claimed: true };
      },
    );
    // Explanations name hosts by their place in the warm fleet: made before another decision
    // may move it on.
    if (!result.ok) {
      return {
        ok: false,
        instance_uuid: result.instance_uuid,
        details: noValidHostDetails(result, toPlace.length),
        explanation: result.decision.compact(),
      };
    }
    const placed = new Map(
      result.placements.map((p, k) => [p.instance_uuid, { p, alternates: result.alternates[k]! }]),
    );
    const selections: Outcome & { ok: true } = { ok: true, selections: [], decisions: [] };
    for (const id of req.instance_uuids) {
      const keptSel = kept.get(id);
      if (keptSel)
        selections.selections.push({ instance_uuid: id, selected: destinationOf(keptSel), alternates: [] });
      const got = placed.get(id);
      if (!got) continue;
      selections.selections.push({
        instance_uuid: id,
        selected: destinationOf(got.p.selected),
        alternates: got.alternates.map(destinationOf),
      });
      const explanation = got.p.decision.compact({ chosen: got.p.selected });
      const summary = summarizeSelection(explanation);
      selections.decisions.push({ id, attempt: n, host: got.p.selected.host, summary, explanation });
    }
    return selections;
  });
  metrics.schedulerDecisionTime(performance.now() - decisionStarted);
  if (!outcome.ok) {
    await releaseAll(claimed, n, log);
    const { details, explanation } = outcome;
    log.warn("scheduler.no_valid_host", { instance_uuid: outcome.instance_uuid, details, explanation });
    await recordDecisions(
      log,
      req.instance_uuids.map((id) => ({ id, attempt: n, host: null, summary: details, explanation })),
    );
    throw new NoValidHost(details);
  }
  for (const d of outcome.decisions)
    log.info("scheduler.selected", { instance_uuid: d.id, host: d.host, summary: d.summary });
  await recordDecisions(log, outcome.decisions);
  return scheduledOf(outcome.selections);
}

/** What one decision came to, in plain data (no reference into the warm fleet). */
type Outcome =
  | {
      ok: true;
      selections: { instance_uuid: string; selected: Destination; alternates: Destination[] }[];
      decisions: DecisionRecord[];
    }
  | { ok: false; instance_uuid: string; details: string; explanation: DecisionExplanation };

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
 * `spec.num_instances` instances, as if every claim succeeded. Claims nothing, writes nothing:
 * what it consumed in the warm host states is given back before it answers.
 */
export async function planDestinations(spec: RequestSpec): Promise<PlanResult> {
  const config = schedulerConfig();
  const uuids = Array.from({ length: Math.max(1, spec.num_instances) }, () => randomUUID());
  return exclusively(async (hosts) => {
    const [fleet, request] = await Promise.all([refreshed(hosts, config), withInstances(spec, uuids)]);
    const result = runSchedule(
      schedule({
        fleet,
        spec: request.spec,
        instanceUuids: uuids,
        config,
        instanceHosts: request.instanceHosts,
      }),
    );
    for (const p of result.placements) fleet.unconsume(p.position, p.decision.requested);
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
  });
}

/** The warm host states, refreshed with what changed, over the catalog's aggregates. */
async function refreshed(hosts: HostManager, config: SchedulerConfig): Promise<Fleet> {
  const started = performance.now();
  const fleet = await hosts.hostStates(await listAggregates(), config);
  metrics.schedulerFleetReadTime(performance.now() - started);
  return fleet;
}

/**
 * The request spec with its server group resolved, and where the instances it names run: its
 * same_host/different_host hints and its group's members (Nova reads them as HostState.instances;
 * here they are read by id, so the read grows with the request, not with the fleet).
 */
async function withInstances(
  request: RequestSpec,
  scheduling: readonly string[],
): Promise<{ spec: RequestSpec; instanceHosts: Map<string, string> }> {
  const now = new Set(scheduling);
  const hinted = ["same_host", "different_host"].flatMap((name) => {
    const v = schedulerHint(request, name);
    return (Array.isArray(v) ? v : [v]).filter((u): u is string => typeof u === "string" && u.length > 0);
  });
  const groupId = schedulerHint(request, "group");
  const group = typeof groupId === "string" && groupId ? await getServerGroup(groupId) : undefined;
  const wanted = [...new Set([...hinted, ...(group?.members ?? [])])].filter((id) => !now.has(id));
  const located = await Promise.all(wanted.map((id) => getInstance(id)));
  const instanceHosts = new Map<string, string>();
  for (const m of located) if (m && !m.deleted && m.host) instanceHosts.set(m.id, m.host);
  if (!group) return { spec: request, instanceHosts };
  // Nova's setup_instance_group: the group's hosts are those of its members already placed (not
  // deleted, not the instances being scheduled now).
  const instance_group: InstanceGroup = {
    uuid: group.id,
    policy: group.policy,
    rules: { ...group.rules },
    // the instances being scheduled are members (a create adds them first; a dry run does not)
    members: [...new Set([...group.members, ...scheduling])],
    hosts: [...new Set(group.members.flatMap((m) => instanceHosts.get(m) ?? []))],
  };
  return { spec: { ...request, instance_group }, instanceHosts };
}
function noValidHostDetails(result: Extract<ScheduleResult, { ok: false }>, count: number): string {
  const which = count > 1 ? `for instance ${result.placements.length + 1} of ${count}` : undefined;
  const summary = summarizeNoValidHost(result.decision.compact(), which);
  return result.conflicts.length
    ? `${summary} Claims lost to races: ${result.conflicts.join("; ")}.`
    : summary;
}

/** This attempt's claim for `consumer`, made by an earlier run of this step. */
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
