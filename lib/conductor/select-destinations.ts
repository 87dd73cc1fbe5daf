// The scheduler Lambda's select_destinations, which the conductor state machine invokes
// synchronously, as load → decide → record. Loading reads the instances' records (the request
// spec, claims an earlier run of this step made) and what the request's hints and server group
// name; deciding runs lib/scheduler/manager.ts over the warm HostManager's host states, one
// decision at a time, answering its claims with Placement's conditional writes; recording keeps
// each decision on its instance. A multi-create is all-or-nothing: its claims are released before
// the NoValidHost answer (an answer, not a thrown error: the invocation succeeds).
import { randomUUID } from "node:crypto";
import { perIdentity } from "../aws/identity.js";
import { listAggregates } from "../catalog/aggregates.js";
import { getServerGroup } from "../catalog/server-groups.js";
import { type SchedulerConfig, schedulerConfig } from "../config.js";
import { getInstance, getSettledInstance } from "../instances/queries.js";
import { requestSpecOf } from "../instances/request-spec.js";
import { recordSchedulingDecision } from "../instances/scheduling-decisions.js";
import type { InstanceRecord } from "../instances/types.js";
import { log as baseLog, type Logger } from "../log.js";
import { requestedZone } from "../messages/availability-zone.js";
import {
  type BuildRequest,
  isMove,
  isRebuild,
  isUnshelve,
  type MoveRequest,
  moveAttempt,
  type RebuildRequest,
  type UnshelveRequest,
  unshelveAttempt,
} from "../messages/build-request.js";
import {
  type ConductorInput,
  NOTHING_SCHEDULED,
  type Scheduled,
  scheduledOf,
} from "../messages/scheduled.js";
import { metrics } from "../metrics.js";
import { readChanges } from "../placement/change-log.js";
import { claim, findClaim, moveAllocation, release } from "../placement/claims.js";
import { FEED_RETENTION_S } from "../placement/feed.js";
import { claimGroupOf } from "../placement/group-claims.js";
import { readAllHosts, readHosts } from "../placement/hosts.js";
import type { Fleet } from "../scheduler/fleet.js";
import { schedulerHint } from "../scheduler/hints.js";
import { HostManager } from "../scheduler/host-manager.js";
import {
  type DecisionRecord,
  decide,
  type HeldHost,
  type Outcome,
  type PlanResult,
  plan,
  type SchedulingRequest,
} from "../scheduler/manager.js";
import type { ClaimAnswer } from "../scheduler/select.js";
import type { InstanceGroup, RequestSpec } from "../scheduler/types.js";
import { countedRefresh, keepFleetSnapshot, snapshotForColdStart } from "./fleet-snapshots.js";
import { LiveMigrationRefused, liveMigrationChecks } from "./live-migrate.js";
import { type MoveRefusedAnswer, type NoValidHostAnswer, noValidHostAnswer } from "./types.js";

/**
 * The warm schedulers: one HostManager per warm container, and one decision at a time in each, as
 * Lambda runs one invocation at a time in a container and starts another container for a
 * concurrent one. Per identity locally (the API's dry run and the scheduler are separate
 * Lambdas), where every container shares one process: a decision takes a free container's host
 * states (the last one freed: the warmest), or starts cold with a container of its own. The claim
 * loop consumes in its container's host states as it claims; other containers learn of those
 * claims from the feed, or from a claim conflict (a claim is a conditional write).
 */
// The scheduler reads no table itself: its host states come from Placement's records, read here.
// A cold container starts from the fleet snapshot (lib/conductor/fleet-snapshots.ts).
const HOST_READS = {
  all: () => readAllHosts(),
  changes: readChanges,
  hosts: readHosts,
  snapshot: snapshotForColdStart,
  retentionMs: FEED_RETENTION_S * 1000,
};
const containers = perIdentity(() => ({ idle: [] as HostManager[] }));
/** a container's snapshot write, started after its refresh, done before it takes another decision */
const snapshotWrites = new WeakMap<HostManager, Promise<void>>();

async function exclusively<T>(fn: (hosts: HostManager) => Promise<T>): Promise<T> {
  const pool = containers.get();
  const hosts = pool.idle.pop() ?? new HostManager(HOST_READS);
  try {
    return await fn(hosts);
  } finally {
    await snapshotWrites.get(hosts);
    snapshotWrites.delete(hosts);
    pool.idle.push(hosts);
  }
}

/** Forget every warm scheduler's host states (the local runtime switching tables; tests). */
export function resetHostManagers(): void {
  containers.reset();
}

/** The warm HostManager the next decision of the current identity takes (tests and benches read its last refresh). */
export function hostManager(): HostManager {
  const pool = containers.get();
  const warmest = pool.idle.at(-1);
  if (warmest) return warmest;
  const hosts = new HostManager(HOST_READS);
  pool.idle.push(hosts);
  return hosts;
}

/** A request loaded for its decision. */
export interface Loaded {
  request: SchedulingRequest;
  log: Logger;
  /** when the decision started (the scheduler's decision time includes the loading) */
  started: number;
}

/** A decision made, and the claims it made (released again if it came to NoValidHost). */
export interface Decided {
  outcome: Outcome;
  claimed: { instance_uuid: string; host: string }[];
}

/** What select_destinations answers: the hosts claimed, NoValidHost, or a live migration refused. */
export type SchedulerAnswer = Scheduled | NoValidHostAnswer | MoveRefusedAnswer;

/** select_destinations: load → decide → record. */
export async function selectDestinations(
  req: ConductorInput,
  config: SchedulerConfig = schedulerConfig(),
  random: () => number = Math.random,
): Promise<SchedulerAnswer> {
  if (isRebuild(req)) return checkRebuild(req, config);
  let loaded: Loaded | undefined;
  try {
    loaded = await loadRequest(req);
  } catch (e) {
    // a live migration's checks refused it: an answer, as NoValidHost is
    if (e instanceof LiveMigrationRefused) return e.answer();
    throw e;
  }
  if (!loaded) return NOTHING_SCHEDULED;
  return recordOutcome(loaded, await decideDestinations(loaded, config, random));
}

/**
 * Everything the decision needs that does not touch the host states, read before the one-at-a-time
 * section: the request spec, from the instances' records (one copy per instance, written by the
 * API before the request was sent: read as settled, a miss read again consistently), the
 * instances its hints name, and what an earlier run of this step placed or claimed (a record read
 * before that placement finds the claim, by a consistent Query). Undefined when none of the
 * instances exists. The claim is the authority: a record read stale (deleted since) costs a claim
 * that the conductor's fenced placement gives back.
 */
export async function loadRequest(req: ConductorInput): Promise<Loaded | undefined> {
  if (isMove(req)) return loadMoveRequest(req);
  if (isUnshelve(req)) return loadUnshelveRequest(req);
  const started = performance.now();
  const n = req.retry.num_attempts;
  const log = baseLog.child({ request_id: req.request_id, attempt: n });
  const records = await Promise.all(req.instance_uuids.map((id) => getSettledInstance(id)));
  const first = records.find((r) => r !== undefined);
  if (!first) {
    log.warn("scheduler.instances_not_found", { instance_uuids: req.instance_uuids });
    return undefined;
  }
  const { spec, instanceHosts } = await withInstances(
    requestSpecOf(first, req.instance_uuids.length),
    req.instance_uuids,
  );
  // A re-run of this step (the state machine retries it) keeps what an earlier run placed: the
  // placement it recorded, or a claim it made for this attempt whose answer was lost.
  const building = (rec: InstanceRecord | undefined): rec is InstanceRecord =>
    !!rec && !rec.deleted && rec.vm_state === "building" && rec.attempt <= n;
  const held = new Map<string, HeldHost>();
  await Promise.all(
    req.instance_uuids.map(async (id, i) => {
      const rec = records[i];
      if (!building(rec)) return;
      const host = rec.attempt === n && rec.host ? rec.host : await findClaim(id, n);
      if (host) held.set(id, { host, node: rec.node, availability_zone: rec.availability_zone });
    }),
  );
  const toPlace = req.instance_uuids.filter((id, i) => building(records[i]) && !held.has(id));
  return {
    request: {
      instance_uuids: req.instance_uuids,
      attempt: n,
      excludeHosts: req.retry.hosts,
      spec,
      instanceHosts,
      held,
      toPlace,
    },
    log,
    started,
  };
}

/**
 * A resize or cold migration's request (Nova's MigrationTask._execute): the instance's spec with
 * the new flavor, the source ignored unless it may stay there, a cold migration's requested host
 * as the requested destination, and no forced host. Before the first decision the source's
 * allocation becomes the migration's (Nova's replace_allocation_with_migration), so the
 * instance's own claim is free for the destination and the source stays counted.
 */
async function loadMoveRequest(req: MoveRequest): Promise<Loaded | undefined> {
  const one = await loadOneInstance(req);
  if (!one) return undefined;
  const { n, id, log, rec } = one;
  const move = rec.migration!;
  const own = requestSpecOf(rec, 1);
  // a live migration's checks come before anything is claimed (lib/conductor/live-migrate.ts)
  const live =
    move.type === "live-migration" && move.attempt === null
      ? await liveMigrationChecks(rec, move, own, n, log)
      : {};
  if (rec.task_state === "resize_prep" || rec.task_state === "rebuilding" || rec.task_state === "migrating") {
    await moveAllocation(move.source_host, id, move.uuid, { fromAttempt: move.source_attempt });
    // A delete between the read above and that write released what it found: the instance's claim
    // (or left it to the host's terminate, which finds it the migration's now) and the
    // migration's (none yet). The migration's claim would be no one's: it goes here.
    const after = await getInstance(id);
    if (!after || after.deleted) {
      await release(move.source_host, move.uuid);
      log.warn("scheduler.move_deleted", { instance_uuid: id, host: move.source_host });
      return undefined;
    }
  }
  const zone = requestedZone(own.availability_zone);
  const { ignore_hosts: _ignored, ...rest } = resetForcedDestinations(own);
  const { spec, instanceHosts } = await withInstances(
    {
      ...rest,
      // a zone asked for as `az:host` forced the create's host, never a move's
      ...(zone ? { availability_zone: zone } : {}),
      flavor: move.new_flavor,
      ...(move.same_host_allowed ? {} : { ignore_hosts: [move.source_host] }),
      ...(move.requested_host && !move.force ? { requested_destination: { host: move.requested_host } } : {}),
      ...live,
    },
    [id],
  );
  const heldHost = move.attempt === n && move.dest_host ? move.dest_host : await findClaim(id, n);
  return oneInstanceLoaded(one, spec, instanceHosts, heldHost, {
    node: move.dest_node,
    availability_zone: move.dest_az,
  });
}

/**
 * An unshelve's request (Nova's conductor unshelve_instance): the instance's own spec with its
 * forced destinations reset (reset_forced_destinations), the zone the API saved in it, and the
 * host an admin asked for (2.91) as the requested destination. An offloaded server holds no
 * claim: the unshelve's attempt claims as a build's does.
 */
async function loadUnshelveRequest(req: UnshelveRequest): Promise<Loaded | undefined> {
  const one = await loadOneInstance(req);
  if (!one) return undefined;
  const { n, id, rec } = one;
  const ctx = rec.unshelve!;
  const rest = resetForcedDestinations(requestSpecOf(rec, 1));
  const zone = requestedZone(rest.availability_zone);
  const { availability_zone: _zone, ...unzoned } = rest;
  const { spec, instanceHosts } = await withInstances(
    {
      ...unzoned,
      // a zone asked for as `az:host` forced the create's host, never an unshelve's
      ...(zone ? { availability_zone: zone } : {}),
      ...(ctx.requested_host ? { requested_destination: { host: ctx.requested_host } } : {}),
    },
    [id],
  );
  const heldHost = rec.attempt === n && rec.host ? rec.host : await findClaim(id, n);
  return oneInstanceLoaded(one, spec, instanceHosts, heldHost, {
    node: rec.node,
    availability_zone: rec.availability_zone,
  });
}

/** The spec with no destination forced or requested (Nova's RequestSpec.reset_forced_destinations). */
function resetForcedDestinations({
  force_hosts: _forced,
  force_nodes: _forcedNodes,
  requested_destination: _dest,
  ...rest
}: RequestSpec): Omit<RequestSpec, "force_hosts" | "force_nodes" | "requested_destination"> {
  return rest;
}

/** A move's or an unshelve's load so far: its one instance at the workflow's attempt. */
interface OneInstance {
  req: BuildRequest;
  n: number;
  id: string;
  log: Logger;
  started: number;
}

/**
 * Whether the record is in the request's move or unshelve, in a state select_destinations may find
 * it in (its first decision, or a reschedule's).
 */
function inWorkflow(req: MoveRequest | UnshelveRequest, rec: InstanceRecord): boolean {
  if (isMove(req)) {
    return (
      rec.migration?.uuid === req.move.migration_uuid &&
      ["resize_prep", "resize_migrated", "rebuilding", "rebuild_spawning", "migrating"].includes(
        rec.task_state ?? "",
      )
    );
  }
  return (
    rec.unshelve?.uuid === req.unshelve.unshelve_uuid &&
    rec.vm_state === "shelved_offloaded" &&
    ["unshelving", "spawning"].includes(rec.task_state ?? "")
  );
}

/**
 * The start of a move's or an unshelve's load: its clock, its log (under the workflow's token) and
 * its record at the workflow's attempt; undefined (and a warning) when the record was deleted or
 * the workflow is over.
 */
async function loadOneInstance(
  req: MoveRequest | UnshelveRequest,
): Promise<(OneInstance & { rec: InstanceRecord }) | undefined> {
  const started = performance.now();
  const move = isMove(req);
  const n = move ? moveAttempt(req) : unshelveAttempt(req as UnshelveRequest);
  const token = move
    ? { migration_uuid: req.move.migration_uuid }
    : { unshelve_uuid: req.unshelve!.unshelve_uuid };
  const id = req.instance_uuids[0]!;
  const log = baseLog.child({ request_id: req.request_id, attempt: n, ...token });
  const rec = await getInstance(id);
  if (!rec || rec.deleted || !inWorkflow(req, rec)) {
    log.warn(`scheduler.${move ? "move" : "unshelve"}_not_found`, {
      instance_uuid: id,
      task_state: rec?.task_state,
    });
    return undefined;
  }
  return { req, n, id, log, started, rec };
}

/**
 * A move's or an unshelve's request for its decision: a re-run of this step keeps the host an
 * earlier run placed or claimed at this attempt (`heldHost`); else the instance is to place.
 */
function oneInstanceLoaded(
  { req, n, id, log, started }: OneInstance,
  spec: RequestSpec,
  instanceHosts: Map<string, string>,
  heldHost: string | undefined,
  where: Omit<HeldHost, "host">,
): Loaded {
  const held = new Map<string, HeldHost>();
  if (heldHost) held.set(id, { host: heldHost, ...where });
  return {
    request: {
      instance_uuids: [id],
      attempt: n,
      excludeHosts: req.retry.hosts,
      spec,
      instanceHosts,
      held,
      toPlace: held.has(id) ? [] : [id],
    },
    log,
    started,
  };
}

/**
 * A rebuild's check (Nova's conductor rebuild_instance with a new image): the server's own host,
 * forced, under scheduler_hints._nova_check_type = ["rebuild"], so only the filters that judge the
 * image run and Placement is not asked; nothing is claimed, and what the decision consumed in the
 * warm host states is given back (the instance keeps its allocation). The same image is not
 * checked at all (Nova's API passes the host and the conductor skips the scheduler). The decision
 * is recorded and explained as any other; NoValidHost when the host refuses the image.
 */
async function checkRebuild(req: RebuildRequest, config: SchedulerConfig): Promise<SchedulerAnswer> {
  const started = performance.now();
  const id = req.instance_uuids[0]!;
  const log = baseLog.child({ request_id: req.request_id, instance_uuid: id });
  const rec = await getInstance(id);
  const rebuild = rec?.rebuild;
  if (!rec?.host || rec.deleted || rebuild?.uuid !== req.rebuild.rebuild_uuid) {
    log.warn("scheduler.rebuild_not_found", { task_state: rec?.task_state });
    return NOTHING_SCHEDULED;
  }
  const here = {
    host: rec.host,
    nodename: rec.node ?? rec.host,
    availability_zone: rec.availability_zone ?? "",
  };
  const stay = () => scheduledOf([{ instance_uuid: id, selected: here, alternates: [] }]);
  if (!rebuild.image_changed) return stay();
  const { ignore_hosts: _ignored, ...rest } = resetForcedDestinations(requestSpecOf(rec, 1));
  const { spec, instanceHosts } = await withInstances(
    {
      ...rest,
      scheduler_hints: { ...rest.scheduler_hints, _nova_check_type: ["rebuild"] },
      force_hosts: [here.host],
      force_nodes: [here.nodename],
    },
    [id],
  );
  const result = await exclusively(async (hosts) =>
    plan(await refreshed(hosts, config, { keepSnapshot: true }), spec, [id], instanceHosts, config),
  );
  metrics.schedulerDecisionTime(performance.now() - started);
  const explanation = result.explanations.at(-1)!;
  await recordDecisions(log, [
    {
      id,
      attempt: rec.attempt,
      host: result.no_valid_host ? null : here.host,
      summary: result.summary,
      explanation,
    },
  ]);
  if (result.no_valid_host) {
    log.warn("scheduler.no_valid_host", { instance_uuid: id, details: result.summary, rebuild: true });
    return noValidHostAnswer(result.summary);
  }
  log.info("scheduler.rebuild_checked", { host: here.host });
  return stay();
}

/** The decision, over the warm host states, its claims answered by Placement. */
export async function decideDestinations(
  loaded: Loaded,
  config: SchedulerConfig = schedulerConfig(),
  random: () => number = Math.random,
): Promise<Decided> {
  const { request, log } = loaded;
  const n = request.attempt;
  const claimed: Decided["claimed"] = [];
  // the group's late check, in each claim's transaction (the in-process queue spans one container)
  const group = claimGroupOf(request.spec.instance_group);
  const outcome = await exclusively(async (hosts) =>
    decide(
      await refreshed(hosts, config, { keepSnapshot: true }),
      request,
      config,
      random,
      async (c): Promise<ClaimAnswer> => {
        const r = await claim(c.host.host, c.instance_uuid, c.resources, n, { group }).catch(
          async (e: unknown) => {
            // Placement unreachable: give back what this run claimed, so the retried step starts clean.
            await releaseAll(claimed, n, log);
            throw e;
          },
        );
        if (!r.claimed) {
          // The cache was stale about this host: take its current state (the claim read it to
          // say why), so the next decision does not bet on it again.
          if (r.current) hosts.learn(r.current, config);
          return { claimed: false, reason: r.reason };
        }
        claimed.push({ instance_uuid: c.instance_uuid, host: c.host.host });
        return { claimed: true };
      },
    ),
  );
  metrics.schedulerDecisionTime(performance.now() - loaded.started);
  return { outcome, claimed };
}

/** Keep each decision on its instance; NoValidHost gives back the claims first. */
export async function recordOutcome(
  { request, log }: Loaded,
  { outcome, claimed }: Decided,
): Promise<SchedulerAnswer> {
  if (!outcome.ok) {
    await releaseAll(claimed, request.attempt, log);
    const { details, explanation } = outcome;
    log.warn("scheduler.no_valid_host", { instance_uuid: outcome.instance_uuid, details, explanation });
    await recordDecisions(
      log,
      request.instance_uuids.map((id) => ({
        id,
        attempt: request.attempt,
        host: null,
        summary: details,
        explanation,
      })),
    );
    return noValidHostAnswer(details);
  }
  for (const d of outcome.decisions)
    log.info("scheduler.selected", { instance_uuid: d.id, host: d.host, summary: d.summary });
  await recordDecisions(log, outcome.decisions);
  return scheduledOf(outcome.selections);
}

/**
 * The dry run: the same reads and the same decisions as selectDestinations for a create of
 * `spec.num_instances` instances, as if every claim succeeded. Claims nothing, writes nothing.
 */
export async function planDestinations(spec: RequestSpec): Promise<PlanResult> {
  const config = schedulerConfig();
  const uuids = Array.from({ length: Math.max(1, spec.num_instances) }, () => randomUUID());
  return exclusively(async (hosts) => {
    const [fleet, request] = await Promise.all([refreshed(hosts, config), withInstances(spec, uuids)]);
    return plan(fleet, request.spec, uuids, request.instanceHosts, config);
  });
}

/**
 * The warm host states, refreshed with what changed, over the catalog's aggregates. With
 * `keepSnapshot` (the scheduler's decisions; not the API's dry run, which only reads it) the
 * snapshot is rewritten from this view when due, while the decision goes on.
 */
async function refreshed(
  hosts: HostManager,
  config: SchedulerConfig,
  opts: { keepSnapshot?: boolean } = {},
): Promise<Fleet> {
  const started = performance.now();
  const aggregates = await listAggregates();
  const fleet = await countedRefresh(hosts, () => hosts.hostStates(aggregates, config));
  metrics.schedulerFleetReadTime(performance.now() - started);
  if (opts.keepSnapshot) snapshotWrites.set(hosts, keepFleetSnapshot(hosts));
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
