// One scheduling decision for one instance: Nova's HostManager.get_filtered_hosts and
// get_weighed_hosts, with Placement's query (prefilters, traits, resources) in between.
// Pure and synchronous.
import type { SchedulerConfig } from "../config.js";
import { Decision, type RejectedBlock, type StageTrace } from "./decision.js";
import { enabledFilters } from "./filters/index.js";
import type { Fleet } from "./fleet.js";
import { placementChecks } from "./placement.js";
import { placementRequest } from "./prefilters.js";
import type {
  FilterContext,
  HostCheck,
  HostFacet,
  HostFilter,
  InstanceLocator,
  PositionsPass,
  Rejection,
  RejectionSink,
  RequestSpec,
  SpecField,
} from "./types.js";
import { weighCandidates } from "./weigh.js";
import { enabledWeighers } from "./weighers/index.js";

export interface PipelineContext {
  /** the instance's index in a multi-create: 0, 1, … */
  index: number;
  config: SchedulerConfig;
  /** host names already tried for this request (retry) */
  excludeHosts?: ReadonlySet<string>;
  /** for the 2nd+ instance: the previous one's decision (Nova hands its hosts on) */
  previous?: EarlierDecision;
  /** where the instances the request names run (hints, group members), placed ones included */
  instances?: InstanceLocator;
}

/**
 * Previous instance's hosts → requested/forced/ignored hosts → Placement → enabled filters in
 * order → weighers. Run-once-per-request filters are skipped from the 2nd instance on, which is
 * sound because that instance starts from the hosts that passed them for the first.
 */
export function filterAndWeigh(fleet: Fleet, spec: RequestSpec, ctx: PipelineContext): Decision {
  // Resolved first, so a misconfigured filter fails even when there are no hosts.
  const filters = enabledFilters(ctx.config.enabled_filters);
  const weighers = enabledWeighers(ctx.config.weight_classes);
  const placement = placementRequest(spec, fleet.aggregates, ctx.config);
  const instances = ctx.instances ?? NO_INSTANCES;
  const filterCtx: FilterContext = { index: ctx.index, config: ctx.config, fleet, instances };

  const stages: Stage[] = [
    ...previousInstanceStage(fleet, ctx.previous),
    ...hostListStages(fleet, spec, ctx.excludeHosts),
    requestIsRebuild(spec)
      ? { name: "placement", skipped: "rebuild: the instance keeps its allocation", checks: [] }
      : { name: "placement", checks: placementChecks(placement, fleet) },
    ...filters.map((f) => filterStage(f, spec, filterCtx)),
  ];
  const { candidates, trace } = runStages(fleet, stages);

  const weighing = weighCandidates(fleet, candidates, spec, weighers, {
    config: ctx.config,
    fleet,
    instances,
  });
  return new Decision(fleet, ctx.index, placement.resources, trace, weighing);
}

const NO_INSTANCES: InstanceLocator = { get: () => undefined };

// ── Stages: every step is a per-host check, so one loop runs and traces them all. ──

export interface StageCheck {
  check: HostCheck;
  /** the verdict reads only this facet of the host: computed once per class of hosts sharing it */
  reads?: HostFacet;
  /**
   * With `reads`: all else the verdicts depend on (plain data). The runner keys the verdicts it
   * keeps with the fleet by it, so later requests with the same inputs reuse them.
   */
  inputs?: unknown;
  /** `check` over many positions at once (HostCheck.pass), when it has one of its own */
  pass?: PositionsPass | undefined;
}

interface Stage {
  name: string;
  /** why the stage does not run this time */
  skipped?: string;
  /** applied in order, the first rejection wins; none means every host passes */
  checks: StageCheck[];
  /** the first stage only: the hosts start as these candidates, the others rejected as given */
  seed?: Seed;
}

/**
 * Every host through the stages in order; a host is rejected by the first check that rejects it,
 * exactly as if each stage filtered the list the previous one left. Checks reading one facet of
 * the host (its aggregates, traits, hypervisor, metrics, service) are answered once per class of
 * hosts sharing it, and before any pass: per combination of facet classes, the first of them that
 * rejects it. So:
 * - a class of aggregates rejected before any per-host check is rejected whole, as a block,
 *   without visiting its hosts (a requested zone turns most of the fleet away so);
 * - a host no facet check rejects is live: the per-host checks run over the live hosts in order,
 *   each pass a tight loop, and the facet checks need no pass at all;
 * - a host a facet check rejects after some per-host checks goes through those checks alone (the
 *   hosts of each such facet check together, in passes), and is rejected by the facet check if
 *   they all pass it.
 * Stages no host reaches are not traced (Nova stops at an empty list).
 */
function runStages(fleet: Fleet, stages: readonly Stage[]): { candidates: Int32Array; trace: StageTrace[] } {
  const ops: { stage: number; check: StageCheck }[] = [];
  for (const [k, stage] of stages.entries()) {
    if (!stage.skipped) for (const check of stage.checks) ops.push({ stage: k, check });
  }
  const rejected: number[][] = stages.map(() => []);
  const rejections: Rejection[][] = stages.map(() => []);
  const blocks: RejectedBlock[][] = stages.map(() => []);
  const seed = stages[0]?.seed;
  if (seed) {
    rejected[0] = seed.rejected;
    rejections[0] = seed.rejections;
    blocks[0] = seed.blocks;
  }
  // A check with a pass of its own runs as a pass, whatever it reads.
  const facet = ops.map((op) => op.check.reads !== undefined && !(op.check.pass ?? op.check.check.pass));

  // Per aggregate class: the first aggregate check (by its place in `ops`) rejecting it, if any.
  const classes = fleet.aggregateSetCount;
  const members = fleet.aggregateMembers;
  const failAt = new Int32Array(classes).fill(ops.length);
  const failure: (Rejection | undefined)[] = new Array(classes);
  // A seed rejects hosts before any check: no class can be rejected whole then.
  const firstHostOp = seed ? 0 : ops.findIndex((op) => op.check.reads !== "aggregates");
  const aggregateOps: number[] = [];
  for (let at = 0; at < ops.length; at++)
    if (ops[at]!.check.reads === "aggregates" && facet[at]) aggregateOps.push(at);
  const bulk = new Uint8Array(classes);
  const cached = aggregateOps.map((at) => keptVerdicts(fleet, stages[ops[at]!.stage]!, ops[at]!.check));
  for (let c = 0; c < classes; c++) {
    // A class whose hosts all moved to others (Fleet.update) has no host to ask.
    if (members[c]!.length === 0) continue;
    const first = members[c]![0]!;
    const host = fleet.hosts[first]!;
    for (let k = 0; k < aggregateOps.length; k++) {
      const at = aggregateOps[k]!;
      const known = cached[k];
      let r = known?.[c];
      if (r === undefined) {
        r = ops[at]!.check.check(host, first);
        if (known) known[c] = r;
      }
      if (r) {
        failAt[c] = at;
        failure[c] = r;
        break;
      }
    }
    if (failure[c] && (firstHostOp < 0 || failAt[c]! < firstHostOp)) {
      bulk[c] = 1;
      blocks[ops[failAt[c]!]!.stage]!.push({ positions: members[c]!, rejection: failure[c]! });
    }
  }

  // Per combination of facet classes (worked out from its first host met): the first facet check
  // rejecting it (ops.length: none) and its rejection.
  const otherFacetOps: number[] = [];
  for (let at = 0; at < ops.length; at++)
    if (facet[at] && ops[at]!.check.reads !== "aggregates") otherFacetOps.push(at);
  const memos = otherFacetOps.map((at) => {
    const check = ops[at]!.check;
    return (
      keptVerdicts(fleet, stages[ops[at]!.stage]!, check) ??
      new Array<Rejection | null | undefined>(fleet.classCount[check.reads!])
    );
  });
  const combinedOf = fleet.combinedOf;
  // What the facet checks say of each combination is the same for every request whose facet
  // checks (in the same places) have the same inputs: the fleet keeps it under them, so a
  // combination is worked out once, not once per request.
  let signature: string | undefined = "";
  for (let at = 0; at < ops.length && signature !== undefined; at++) {
    if (!facet[at]) signature += "\u0001";
    else {
      const key = verdictKey(stages[ops[at]!.stage]!, ops[at]!.check);
      signature = key === undefined ? undefined : `${signature}\u0001${ops[at]!.check.reads}\u0000${key}`;
    }
  }
  const kept = signature === undefined ? undefined : fleet.firstRejections(signature);
  const rejectedAt = kept?.at ?? new Int32Array(fleet.combinedCount).fill(-1);
  const rejectedBy: (Rejection | undefined)[] = kept?.by ?? new Array(fleet.combinedCount);
  const classOf = fleet.aggregateSetOf;
  const hosts = fleet.hosts;
  const resolve = (cc: number, i: number): number => {
    const c = classOf[i]!;
    let at = failAt[c]!;
    let why = failure[c];
    for (let k = 0; k < otherFacetOps.length && otherFacetOps[k]! < at; k++) {
      const op = ops[otherFacetOps[k]!]!;
      const fc = fleet.classOf[op.check.reads!][i]!;
      let r = memos[k]![fc];
      if (r === undefined) {
        r = op.check.check(hosts[i]!, i);
        memos[k]![fc] = r;
      }
      if (r) {
        at = otherFacetOps[k]!;
        why = r;
        break;
      }
    }
    rejectedAt[cc] = at;
    rejectedBy[cc] = why;
    return at;
  };

  // The fleet's scratch arrays: runStages is not re-entrant, and its result is a copy.
  const [first, second, liveFound, early] = fleet.scratch;
  const n = fleet.size;
  let live = first;
  let next = second;
  let count = 0;
  let earlyCount = 0;
  const from = seed ? seed.candidates : undefined;
  const m = from ? from.length : n;
  for (let j = 0; j < m; j++) {
    const i = from ? from[j]! : j;
    if (bulk[classOf[i]!] === 1) continue;
    const cc = combinedOf[i]!;
    let at = rejectedAt[cc]!;
    if (at < 0) at = resolve(cc, i);
    if (at === ops.length) liveFound[count++] = i;
    else early[earlyCount++] = i;
  }

  // Every check's rejections, one after the other in the fleet's scratch; per stage, the runs
  // [start, end) of its checks, each in fleet order, to merge into fleet order at the end.
  const log = new RejectionLog(fleet.rejectionScratch);
  const runs: number[][] = stages.map(() => []);
  const passOver = (at: number, over: Int32Array, size: number, into: Int32Array): number => {
    const op = ops[at]!;
    const start = log.count;
    const memo = keptVerdicts(fleet, stages[op.stage]!, op.check);
    const kept = runCheck(fleet, op.check, over, size, into, log, memo);
    if (log.count > start) runs[op.stage]!.push(start, log.count);
    return kept;
  };

  // The hosts a facet check rejects, grouped by that check (a counting sort: each group stays in
  // fleet order): the per-host checks before it, then it. Each group has its range of `first`,
  // and passes go from there to `second` and back.
  if (earlyCount > 0) {
    const offsets = new Int32Array(ops.length + 1);
    for (let j = 0; j < earlyCount; j++) offsets[rejectedAt[combinedOf[early[j]!]!]! + 1]!++;
    for (let at = 0; at < ops.length; at++) offsets[at + 1]! += offsets[at]!;
    const cursor = offsets.slice(0, ops.length);
    for (let j = 0; j < earlyCount; j++) {
      const i = early[j]!;
      first[cursor[rejectedAt[combinedOf[i]!]!]!++] = i;
    }
    for (let at = 0; at < ops.length; at++) {
      let size = offsets[at + 1]! - offsets[at]!;
      if (size === 0) continue;
      const own = first.subarray(offsets[at]!);
      let over = own;
      for (let k = 0; k < at && size > 0; k++) {
        if (facet[k]) continue;
        const into = over === own ? second : own;
        size = passOver(k, over, size, into);
        over = into;
      }
      const start = log.count;
      for (let j = 0; j < size; j++) log.reject(over[j]!, rejectedBy[combinedOf[over[j]!]!]!);
      if (log.count > start) runs[ops[at]!.stage]!.push(start, log.count);
    }
  }

  // The live hosts through the per-host checks.
  live.set(liveFound.subarray(0, count));
  for (let at = 0; at < ops.length; at++) {
    if (count === 0) break;
    if (facet[at]) continue;
    count = passOver(at, live, count, next);
    [live, next] = [next, live];
  }

  for (const [s, bounds] of runs.entries()) {
    if (bounds.length > 0) [rejected[s], rejections[s]] = mergeRuns(log.positions, log.reasons, bounds);
  }
  log.clear();
  const trace: StageTrace[] = [];
  let reaching = n;
  for (const [s, stage] of stages.entries()) {
    if (reaching === 0) break;
    let gone = rejected[s]!.length;
    for (const b of blocks[s]!) gone += b.positions.length;
    trace.push({
      stage: stage.name,
      hosts_in: reaching,
      hosts_passed: reaching - gone,
      rejected: rejected[s]!,
      rejections: rejections[s]!,
      blocks: blocks[s]!,
      skipped: stage.skipped,
    });
    reaching -= gone;
  }
  return { candidates: live.slice(0, count), trace };
}

/**
 * The verdicts the fleet keeps for a check reading one facet and declaring its inputs, keyed by
 * the stage and the inputs' values; none for a check that does not declare them.
 */
function keptVerdicts(
  fleet: Fleet,
  stage: Stage,
  check: StageCheck,
): (Rejection | null | undefined)[] | undefined {
  const key = verdictKey(stage, check);
  return key === undefined ? undefined : fleet.verdicts(check.reads!, key);
}

/** What a check's verdicts are kept under: its stage and its inputs' values (none without inputs). */
function verdictKey(stage: Stage, check: StageCheck): string | undefined {
  if (!check.reads || check.inputs === undefined) return undefined;
  return `${stage.name}\u0000${JSON.stringify(check.inputs)}`;
}

/**
 * Rejections made check after check (the runs [start, end) of `bounds`, each in fleet order),
 * merged into fleet order, in arrays of their exact size.
 */
function mergeRuns(
  positions: ArrayLike<number>,
  why: ArrayLike<Rejection | undefined>,
  bounds: readonly number[],
): [number[], Rejection[]] {
  let total = 0;
  for (let r = 0; r < bounds.length; r += 2) total += bounds[r + 1]! - bounds[r]!;
  const outPositions = new Array<number>(total);
  const outWhy = new Array<Rejection>(total);
  const at = bounds.filter((_, k) => k % 2 === 0);
  const ends = bounds.filter((_, k) => k % 2 === 1);
  for (let k = 0; k < total; k++) {
    let best = -1;
    for (let r = 0; r < at.length; r++) {
      if (at[r]! < ends[r]! && (best < 0 || positions[at[r]!]! < positions[at[best]!]!)) best = r;
    }
    outPositions[k] = positions[at[best]!]!;
    outWhy[k] = why[at[best]!]!;
    at[best]!++;
  }
  return [outPositions, outWhy];
}

/** Stages' one-by-one rejections (each in fleet order) merged into fleet order, without copying them first. */
function mergeLists(lists: readonly StageTrace[]): [number[], Rejection[]] {
  let total = 0;
  for (const s of lists) total += s.rejected.length;
  const outPositions = new Array<number>(total);
  const outWhy = new Array<Rejection>(total);
  const at = new Int32Array(lists.length);
  for (let k = 0; k < total; k++) {
    let best = -1;
    let lowest = 0;
    for (let r = 0; r < lists.length; r++) {
      const list = lists[r]!.rejected;
      if (at[r]! < list.length && (best < 0 || list[at[r]!]! < lowest)) {
        best = r;
        lowest = list[at[r]!]!;
      }
    }
    outPositions[k] = lowest;
    outWhy[k] = lists[best]!.rejections[at[best]!]!;
    at[best]!++;
  }
  return [outPositions, outWhy];
}

/**
 * The rejections of one runStages, appended in the fleet's scratch (no array grown host by host);
 * clear() drops its references to them, so they die young once the trace has its copies.
 */
class RejectionLog implements RejectionSink {
  count = 0;
  readonly positions: Int32Array;
  readonly reasons: (Rejection | undefined)[];

  constructor(scratch: { positions: Int32Array; reasons: (Rejection | undefined)[] }) {
    this.positions = scratch.positions;
    this.reasons = scratch.reasons;
  }

  reject(i: number, why: Rejection): void {
    this.positions[this.count] = i;
    this.reasons[this.count++] = why;
  }

  clear(): void {
    this.reasons.fill(undefined, 0, this.count);
    this.count = 0;
  }
}

/**
 * One check over the live positions: those passing go to `next` (in order), the others to
 * `out`. A check reading one facet is answered once per class of hosts sharing it; a check
 * with a pass of its own over positions runs that.
 */
function runCheck(
  fleet: Fleet,
  check: StageCheck,
  live: Int32Array,
  count: number,
  next: Int32Array,
  out: RejectionSink,
  /** verdicts kept with the fleet for this check, if it has a key */
  memo?: (Rejection | null | undefined)[],
): number {
  let kept = 0;
  const pass = check.pass ?? check.check.pass;
  if (pass) return pass(live, count, next, out);
  const hosts = fleet.hosts;
  const fn = check.check;
  if (check.reads) {
    const classOf = fleet.classOf[check.reads];
    const verdicts = memo ?? new Array<Rejection | null | undefined>(fleet.classCount[check.reads]);
    for (let j = 0; j < count; j++) {
      const i = live[j]!;
      const c = classOf[i]!;
      let r = verdicts[c];
      if (r === undefined) {
        r = fn(hosts[i]!, i);
        verdicts[c] = r;
      }
      if (r === null) next[kept++] = i;
      else out.reject(i, r);
    }
    return kept;
  }
  for (let j = 0; j < count; j++) {
    const i = live[j]!;
    const r = fn(hosts[i]!, i);
    if (r === null) next[kept++] = i;
    else out.reject(i, r);
  }
  return kept;
}

/** What the 2nd+ instance of a multi-create takes from the previous one's decision. */
export interface EarlierDecision {
  /** positions that passed every stage */
  candidates: Int32Array;
  /** why each other position was rejected */
  trace: readonly StageTrace[];
}

/**
 * The 2nd+ instance of a multi-create starts where the previous one left off. A host left out
 * keeps the reason it was left out for (not in the zone, short of memory, running a member of the
 * group…), carried from instance to instance, so a NoValidHost names what excluded each host.
 * The stage is the previous decision's rejections, taken whole (runStages seeds with them).
 */
function previousInstanceStage(fleet: Fleet, previous: EarlierDecision | undefined): Stage[] {
  if (!previous) return [];
  const carried = carriedRejections(fleet, previous);
  if (!carried) return [{ name: "previous_instance", checks: [previousInstanceCheck(fleet, previous)] }];
  return [{ name: "previous_instance", checks: [], seed: carried }];
}

/** Where a decision starts from: its candidates, and the other hosts' rejections. */
interface Seed {
  candidates: Int32Array;
  rejected: number[];
  rejections: Rejection[];
  blocks: RejectedBlock[];
}

/**
 * Every rejection of an earlier decision, as one stage's: its hosts rejected one by one, merged
 * into fleet order (each stage's list already is), and its blocks. Undefined when they do not
 * account for every host that is not a candidate (a stage left untraced), so the caller checks
 * host by host instead.
 */
function carriedRejections(fleet: Fleet, previous: EarlierDecision): Seed | undefined {
  const lists = previous.trace.filter((s) => s.rejected.length > 0);
  const blocks = previous.trace.flatMap((s) => s.blocks);
  let total = previous.candidates.length;
  for (const s of lists) total += s.rejected.length;
  for (const b of blocks) total += b.positions.length;
  if (total !== fleet.size) return undefined;
  // (Shared with the earlier decision's trace: traces are read only.)
  if (lists.length <= 1) {
    const only = lists[0];
    return {
      candidates: previous.candidates,
      rejected: only?.rejected ?? [],
      rejections: only?.rejections ?? [],
      blocks,
    };
  }
  const [rejected, rejections] = mergeLists(lists);
  return { candidates: previous.candidates, rejected, rejections, blocks };
}

const PREVIOUS: Rejection = { summary: "were rejected for an earlier instance of this request" };

/** The previous_instance stage host by host: what carriedRejections does when it cannot. */
function previousInstanceCheck(fleet: Fleet, previous: EarlierDecision): StageCheck {
  const passed = new Uint8Array(fleet.size);
  for (const i of previous.candidates) passed[i] = 1;
  const why = new Array<Rejection | undefined>(fleet.size);
  for (const s of previous.trace) {
    for (const [k, position] of s.rejected.entries()) why[position] = s.rejections[k];
    for (const b of s.blocks) for (const position of b.positions) why[position] = b.rejection;
  }
  return { check: (_h, i) => (passed[i] === 1 ? null : (why[i] ?? PREVIOUS)) };
}

/**
 * Nova's get_filtered_hosts preamble, in its order: requested_destination, ignore_hosts,
 * force_hosts, force_nodes; then the hosts this request already tried. Host names compare
 * case-insensitively for ignore/force_hosts, as in Nova; node names exactly.
 */
function hostListStages(fleet: Fleet, spec: RequestSpec, exclude: ReadonlySet<string> | undefined): Stage[] {
  const stages: Stage[] = [];
  const dest = spec.requested_destination;
  if (dest?.host || dest?.node) {
    const wanted = [dest.host, dest.node].filter(Boolean).join("/");
    const no: Rejection = { summary: `are not the requested destination ${wanted}` };
    stages.push({
      name: "requested_destination",
      checks: [
        {
          check: (h) =>
            (!dest.host || h.host === dest.host) && (!dest.node || h.nodename === dest.node) ? null : no,
        },
      ],
    });
  }
  const byName = (
    names: Iterable<string>,
    caseInsensitive: boolean,
    rejected: boolean,
    no: Rejection,
  ): StageCheck[] => {
    const mask = fleet.named(names, caseInsensitive);
    return [{ check: (_h, i) => ((mask[i] === 1) === rejected ? no : null) }];
  };
  if (spec.ignore_hosts?.length) {
    stages.push({
      name: "ignore_hosts",
      checks: byName(spec.ignore_hosts, true, true, { summary: "are in ignore_hosts" }),
    });
  }
  if (spec.force_hosts?.length) {
    stages.push({
      name: "force_hosts",
      checks: byName(spec.force_hosts, true, false, { summary: "are not in force_hosts" }),
    });
  }
  const forceNodes = new Set(spec.force_nodes ?? []);
  if (forceNodes.size > 0) {
    const no: Rejection = { summary: "are not in force_nodes" };
    stages.push({
      name: "force_nodes",
      checks: [{ check: (h) => (forceNodes.has(h.nodename) ? null : no) }],
    });
  }
  if (exclude && exclude.size > 0) {
    stages.push({
      name: "exclude_hosts",
      checks: byName(exclude, false, true, { summary: "were already tried for this request" }),
    });
  }
  return stages;
}

function filterStage(filter: HostFilter, spec: RequestSpec, ctx: FilterContext): Stage {
  if (forcesHosts(spec)) return { name: filter.name, skipped: "forced host", checks: [] };
  if (!filter.runOnRebuild && requestIsRebuild(spec)) {
    return { name: filter.name, skipped: "rebuild (RUN_ON_REBUILD is False)", checks: [] };
  }
  if (filter.runOncePerRequest && ctx.index > 0) {
    return { name: filter.name, skipped: "run_filter_once_per_request", checks: [] };
  }
  const check = filter.prepare(spec, ctx);
  if (!check) return { name: filter.name, checks: [] };
  if (!filter.reads) return { name: filter.name, checks: [{ check }] };
  const { host, spec: fields = [], config: options = [] } = filter.reads;
  const inputs = [fields.map((f) => specField(spec, f)), options.map((o) => ctx.config[o])];
  return { name: filter.name, checks: [{ check, reads: host, inputs }] };
}

/** The value at a RequestSpec field's path ("flavor.name"). */
function specField(spec: RequestSpec, field: SpecField): unknown {
  let v: unknown = spec;
  for (const k of field.split(".")) v = (v as Record<string, unknown> | undefined)?.[k];
  return v;
}

/**
 * Nova's request_is_rebuild: the conductor asks whether a rebuild's new image suits the server's
 * own host. Only the filters that judge the image run (RUN_ON_REBUILD), and Placement is not
 * asked: the instance keeps the allocation it has there (Nova claims nothing for it either).
 */
export function requestIsRebuild(spec: RequestSpec): boolean {
  const t = spec.scheduler_hints._nova_check_type;
  return Array.isArray(t) && t.length === 1 && t[0] === "rebuild";
}

/**
 * An admin's force_hosts/force_nodes bypass the filters, unless Nova marked the request as a
 * move that must be checked (scheduler_hints._nova_check_type, e.g. evacuate, live migration).
 */
export function forcesHosts(spec: RequestSpec): boolean {
  const forced = (spec.force_hosts?.length ?? 0) > 0 || (spec.force_nodes?.length ?? 0) > 0;
  return forced && !spec.scheduler_hints._nova_check_type;
}
