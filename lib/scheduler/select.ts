// Nova's FilterScheduler._schedule: for each instance, filter and weigh, order the hosts (a random
// one of the best host_subset_size first), claim down that order, consume the claimed host, and
// hand the hosts that passed to the next instance; then alternates for every instance. Written
// as a generator that yields each claim, so one algorithm serves the scheduler Lambda (claims are
// DynamoDB writes), the dry run and the plan CLI (claims always succeed).
import type { SchedulerConfig } from "../config.js";
import type { Decision } from "./decision.js";
import type { Fleet } from "./fleet.js";
import { filterAndWeigh } from "./pipeline.js";
import type {
  HostState,
  InstanceGroup,
  InstanceLocator,
  RequestSpec,
  ResourceAmounts,
  Selection,
} from "./types.js";
import type { ExplanationKind } from "./weigh.js";

export interface ScheduleInput {
  fleet: Fleet;
  spec: RequestSpec;
  /** the instances to place, in order */
  instanceUuids: readonly string[];
  config: SchedulerConfig;
  random?: () => number;
  /** host names this request already tried (retry.hosts) */
  excludeHosts?: Iterable<string>;
  /**
   * Where the instances the request names run (uuid → host): its same_host/different_host hints'
   * and its group's members', read by the caller from their records. Instances placed by this run
   * are seen as placed (the caller's locator is not changed).
   */
  instanceHosts?: InstanceLocator;
  /**
   * The explanation the decisions will be asked for: "compact" keeps the weighers' raw values of
   * the hosts it names only (the best and the chosen); "detailed" (the default) every candidate's.
   */
  explanation?: ExplanationKind;
}

export interface ClaimRequest {
  host: HostState;
  instance_uuid: string;
  resources: ResourceAmounts;
}

export type ClaimAnswer = { claimed: true } | { claimed: false; reason: string };

export interface Placement {
  instance_uuid: string;
  /** the host's position in the fleet */
  position: number;
  selected: Selection;
  decision: Decision;
  /** claims lost to races on hosts ranked before it (a server group's late check among them) */
  conflicts?: string[];
}

export type ScheduleResult =
  | { ok: true; placements: Placement[]; alternates: Selection[][] }
  | {
      ok: false;
      /** the instance no host could take, and its decision */
      instance_uuid: string;
      decision: Decision;
      /** instances placed (claimed) before it: release them, a multi-create is all-or-nothing */
      placements: Placement[];
      /** claims lost to races on this instance's hosts */
      conflicts: string[];
    };

export function* schedule(input: ScheduleInput): Generator<ClaimRequest, ScheduleResult, ClaimAnswer> {
  const { fleet, config } = input;
  const random = input.random ?? Math.random;
  const excludeHosts = new Set(input.excludeHosts ?? []);
  // The group's hosts grow as instances are placed: work on a copy of it.
  const group: InstanceGroup | undefined = input.spec.instance_group && {
    ...input.spec.instance_group,
    hosts: [...input.spec.instance_group.hosts],
  };
  const spec: RequestSpec = { ...input.spec, ...(group ? { instance_group: group } : {}) };
  // The caller's locator, with the instances this run places over it (not copied: it may be big).
  const placed = new Map<string, string>();
  const known = input.instanceHosts;
  const instances: InstanceLocator = { get: (uuid) => placed.get(uuid) ?? known?.get(uuid) };
  const placements: Placement[] = [];
  let decision: Decision | undefined;
  let order: Generator<number> | undefined;
  let tried: number[] = [];

  for (const [index, uuid] of input.instanceUuids.entries()) {
    spec.instance_uuid = uuid;
    decision = filterAndWeigh(fleet, spec, {
      index,
      config,
      excludeHosts,
      previous: decision,
      instances,
      ...(input.explanation ? { explanation: input.explanation } : {}),
    });
    // What the compact explanation names, as weighed: the best before the claims, the chosen after;
    // every candidate's if the hosts change before the chosen is known (a lost claim's host learnt).
    decision.keepExplained();
    const weighed = decision;
    if (input.explanation === "compact") fleet.beforeChange(() => weighed.keepAll());
    order = claimOrder(decision, config, random);
    tried = [];
    const conflicts: string[] = [];
    let claimed: number | undefined;
    for (let next = order.next(); !next.done; next = order.next()) {
      tried.push(next.value);
      const answer = yield {
        host: fleet.hosts[next.value]!,
        instance_uuid: uuid,
        resources: decision.requested,
      };
      if (answer.claimed) {
        claimed = next.value;
        break;
      }
      // Nova's claim loop: a lost race is not an error, try the next host.
      conflicts.push(answer.reason);
    }
    decision.keepExplained(claimed);
    fleet.beforeChange(undefined);
    if (claimed === undefined) return { ok: false, instance_uuid: uuid, decision, placements, conflicts };
    const host = fleet.hosts[claimed]!;
    fleet.consume(claimed, decision.requested);
    placed.set(uuid, host.host);
    group?.hosts.push(host.host);
    placements.push({
      instance_uuid: uuid,
      position: claimed,
      selected: selectionOf(host, decision.requested),
      decision,
      ...(conflicts.length ? { conflicts } : {}),
    });
  }

  const sorted = order ? chain(tried, order) : [];
  return {
    ok: true,
    placements,
    alternates: alternatesFor(input, spec, instances, placements, decision, sorted, random),
  };
}

function* chain(first: readonly number[], rest: Iterator<number>): Generator<number> {
  yield* first;
  for (let next = rest.next(); !next.done; next = rest.next()) yield next.value;
}

/**
 * Nova's _get_sorted_hosts tail, lazily: with shuffle_best_same_weighed_hosts the hosts tied for
 * the best weight are shuffled; then one of the best host_subset_size is chosen at random to go
 * first (to spread concurrent schedulers that see the same weights), the rest follow in order.
 */
export function* claimOrder(
  decision: Decision,
  config: SchedulerConfig,
  random: () => number,
): Generator<number> {
  const n = decision.size;
  if (n === 0) return;
  const head: number[] = [];
  let headLength = Math.min(n, Math.max(1, Math.floor(config.host_subset_size)));
  if (config.shuffle_best_same_weighed_hosts) {
    const ties = decision.bestTies();
    for (let k = 0; k < ties; k++) head.push(decision.slotAt(k)!);
    shuffle(head, random);
  }
  headLength = Math.max(headLength, head.length);
  for (let k = head.length; k < headLength; k++) head.push(decision.slotAt(k)!);
  // Python's random.choice over the subset: min() keeps a random() of 1 inside it.
  const size = Math.min(n, Math.max(1, Math.floor(config.host_subset_size)));
  const chosen = Math.min(size - 1, Math.floor(random() * size));
  yield decision.position(head[chosen]!);
  for (let k = 0; k < head.length; k++) if (k !== chosen) yield decision.position(head[k]!);
  for (let k = head.length; k < n; k++) yield decision.position(decision.slotAt(k)!);
}

/** Python's random.shuffle (Fisher–Yates from the end) with `random`. */
export function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.min(i, Math.floor(random() * (i + 1)));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}

/**
 * Nova's _get_alternate_hosts: up to max_attempts − 1 hosts per instance, never one selected for
 * this request (consumed, so poor bets). After a multi-create the hosts are filtered and weighed
 * again, consumption included; a single instance reuses its own sorted list.
 */
function alternatesFor(
  input: ScheduleInput,
  spec: RequestSpec,
  instances: InstanceLocator,
  placements: readonly Placement[],
  last: Decision | undefined,
  sorted: Iterable<number>,
  random: () => number,
): Selection[][] {
  const count = input.config.max_attempts - 1;
  if (count <= 0 || !last) return placements.map(() => []);
  const index = placements.length - 1;
  let order = sorted;
  if (index > 0) {
    const again = filterAndWeigh(input.fleet, spec, {
      index,
      config: input.config,
      excludeHosts: new Set(input.excludeHosts ?? []),
      previous: last,
      instances,
      ...(input.explanation ? { explanation: input.explanation } : {}),
    });
    order = claimOrder(again, input.config, random);
  }
  const selected = new Set(placements.map((p) => p.position));
  const alternates: Selection[] = [];
  for (const position of order) {
    if (alternates.length >= count) break;
    if (selected.has(position)) continue;
    alternates.push(selectionOf(input.fleet.hosts[position]!, last.requested));
  }
  return placements.map(() => alternates);
}

export function selectionOf(host: HostState, resources: ResourceAmounts): Selection {
  return { host: host.host, nodename: host.nodename, availability_zone: host.availability_zone, resources };
}

/** Run a schedule whose claims answer at once (the dry run, the plan CLI, the benchmark). */
export function runSchedule(
  gen: Generator<ClaimRequest, ScheduleResult, ClaimAnswer>,
  claim: (req: ClaimRequest) => ClaimAnswer = () => ({ claimed: true }),
): ScheduleResult {
  let step = gen.next();
  while (!step.done) step = gen.next(claim(step.value));
  return step.value;
}

/** Run a schedule whose claims are I/O (the scheduler Lambda). */
export async function runScheduleAsync(
  gen: Generator<ClaimRequest, ScheduleResult, ClaimAnswer>,
  claim: (req: ClaimRequest) => Promise<ClaimAnswer>,
): Promise<ScheduleResult> {
  let step = gen.next();
  while (!step.done) step = gen.next(await claim(step.value));
  return step.value;
}
