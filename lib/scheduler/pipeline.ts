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
import { type ExplanationKind, weighCandidates } from "./weigh.js";
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
  /**
   * The explanation the decision will be asked for: "compact" (what the scheduler Lambda keeps)
   * keeps the weighers' raw values of the hosts it names only; "detailed" (the default) every one.
   */
  explanation?: ExplanationKind;
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

  const weighing = weighCandidates(
    fleet,
    candidates,
    spec,
    weighers,
    {
      config: ctx.config,
      fleet,
      instances,
    },
    ctx.explanation,
  );
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
 * exactly as if each stage filtered the list the previous one left — which is how it runs: check
 * after check over the surviving positions, each pass a tight loop. Checks reading only
 * aggregates are answered once per aggregate class before any pass: a class failing one before
 * any per-host check could reject its hosts is rejected whole, as a block, without visiting them
 * (a requested zone turns most of the fleet away so); otherwise its hosts leave at that check's
 * place in the order. Stages no host reaches are not traced (Nova stops at an empty list).
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

  // Per aggregate class: the first aggregate check (by its place in `ops`) rejecting it, if any.
  const classes = fleet.aggregateSetCount;
  const members = fleet.aggregateMembers;
  // (arrays by class kept with the fleet, as the scratch below: one decision at a time)
  const scratch = fleet.classScratch;
  const failAt = scratch.failAt.fill(ops.length, 0, classes);
  const failure: (Rejection | undefined)[] = new Array(classes);
  // A seed rejects hosts before any check: no class can be rejected whole then.
  const firstHostOp = seed ? 0 : ops.findIndex((op) => op.check.reads !== "aggregates");
  const aggregateOps: number[] = [];
  for (let at = 0; at < ops.length; at++) if (ops[at]!.check.reads === "aggregates") aggregateOps.push(at);
  const bulk = scratch.bulk.fill(0, 0, classes);
  // Per aggregate check, how many classes not rejected whole it turns away: none, no pass needed.
  const failing = new Int32Array(ops.length);
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
    } else if (failure[c]) failing[failAt[c]!]!++;
  }

  const n = fleet.size;
  const classOf = fleet.aggregateSetOf;
  // The fleet's two scratch arrays: runStages is not re-entrant, and its result is a copy.
  let [live, next] = fleet.scratch;
  let count = 0;
  if (seed) {
    live.set(seed.candidates);
    count = seed.candidates.length;
  } else for (let i = 0; i < n; i++) if (bulk[classOf[i]!] === 0) live[count++] = i;

  // Every check's rejections, one after the other in the fleet's scratch; per stage, the runs
  // [start, end) of its checks, to merge into fleet order at the end.
  const log = new RejectionLog(fleet.rejectionScratch);
  const runs: number[][] = stages.map(() => []);
  // Per aggregate class, its hosts an aggregate check turns away (reused from check to check).
  const leaving = scratch.leaving.fill(0, 0, classes);
  for (let at = 0; at < ops.length; at++) {
    if (count === 0) break;
    const op = ops[at]!;
    let kept = 0;
    if (op.check.reads === "aggregates") {
      // No class left to turn away here: nothing to pass over.
      if (failing[at] === 0) continue;
      // This check's place in the order: the hosts of the classes it rejects leave here, as one
      // block per class (they share its rejection), not host by host.
      // The hosts leaving go to the rejection scratch past the log's end (in fleet order), so
      // their blocks are made from them alone, not from another two passes over the live hosts.
      const gone = log.positions.subarray(log.count);
      let leavingCount = 0;
      for (let j = 0; j < count; j++) {
        const i = live[j]!;
        const c = classOf[i]!;
        if (failAt[c] === at) {
          leaving[c]!++;
          gone[leavingCount++] = i;
        } else next[kept++] = i;
      }
      if (leavingCount > 0)
        blocks[op.stage]!.push(...classBlocks(gone, leavingCount, classOf, leaving, scratch.cursor, failure));
    } else {
      const start = log.count;
      const memo = keptVerdicts(fleet, stages[op.stage]!, op.check);
      kept = runCheck(fleet, op.check, live, count, next, log, memo);
      if (log.count > start) runs[op.stage]!.push(start, log.count);
    }
    [live, next] = [next, live];
    count = kept;
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
 * The `count` hosts of `gone` (in fleet order) as one block per class (`leaving` counts them by
 * class, and is zeroed again), in order of each class's first host, each block in fleet order,
 * over one array.
 */
function classBlocks(
  gone: Int32Array,
  count: number,
  classOf: Int32Array,
  leaving: Int32Array,
  /** per class, where its next host goes in `all` (set here before it is read) */
  cursor: Int32Array,
  failure: readonly (Rejection | undefined)[],
): RejectedBlock[] {
  const all = new Int32Array(count);
  const out: RejectedBlock[] = [];
  let offset = 0;
  for (let j = 0; j < count && offset < count; j++) {
    const c = classOf[gone[j]!]!;
    const size = leaving[c]!;
    if (size === 0) continue;
    cursor[c] = offset;
    out.push({ positions: all.subarray(offset, offset + size), rejection: failure[c]! });
    offset += size;
    leaving[c] = 0;
  }
  for (let j = 0; j < count; j++) {
    const i = gone[j]!;
    all[cursor[classOf[i]!]!++] = i;
  }
  return out;
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
  if (!check.reads || check.inputs === undefined) return undefined;
  return fleet.verdicts(check.reads, `${stage.name}\u0000${JSON.stringify(check.inputs)}`);
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
