// One scheduling decision for one instance: Nova's HostManager.get_filtered_hosts and
// get_weighed_hosts, with Placement's query (prefilters, traits, resources) in between.
// Pure and synchronous.
import type { SchedulerConfig } from "../config.js";
import { Decision, type RejectedBlock, type StageTrace } from "./decision.js";
import { enabledFilters } from "./filters/index.js";
import type { Fleet } from "./fleet.js";
import { placementChecks } from "./placement.js";
import { placementRequest } from "./prefilters.js";
import type { FilterContext, HostCheck, HostFacet, HostFilter, Rejection, RequestSpec } from "./types.js";
import { weighCandidates } from "./weigh.js";
import { enabledWeighers } from "./weighers/index.js";

export interface PipelineContext {
  /** the instance's index in a multi-create: 0, 1, … */
  index: number;
  config: SchedulerConfig;
  /** host names already tried for this request (retry) */
  excludeHosts?: ReadonlySet<string>;
  /** for the 2nd+ instance: the positions that passed for the previous one (Nova hands them on) */
  previous?: Int32Array;
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
  const filterCtx: FilterContext = { index: ctx.index, config: ctx.config, fleet };

  const stages: Stage[] = [
    ...previousInstanceStage(fleet, ctx.previous),
    ...hostListStages(fleet, spec, ctx.excludeHosts),
    { name: "placement", checks: placementChecks(placement, fleet) },
    ...filters.map((f) => filterStage(f, spec, filterCtx)),
  ];
  const { candidates, trace } = runStages(fleet, stages);

  const weighing = weighCandidates(fleet, candidates, spec, weighers, ctx.config);
  return new Decision(fleet, ctx.index, placement.resources, trace, weighing);
}

// ── Stages: every step is a per-host check, so one loop runs and traces them all. ──

export interface StageCheck {
  check: HostCheck;
  /** the verdict reads only this facet of the host: computed once per class of hosts sharing it */
  reads?: HostFacet;
}

interface Stage {
  name: string;
  /** why the stage does not run this time */
  skipped?: string;
  /** applied in order, the first rejection wins; none means every host passes */
  checks: StageCheck[];
}

/**
 * Every host through the stages in order; a host is rejected by the first check that rejects it,
 * exactly as if each stage filtered the list the previous one left. Checks reading only
 * aggregates are answered once per aggregate class, before any host is visited: a class failing
 * one before any per-host check could reject its hosts is rejected whole, as a block, without
 * visiting them (a requested zone turns most of the fleet away that way). Other hosts run the
 * per-host checks that come before their class's rejection, if any. Stages no host reaches are
 * not traced (Nova stops at an empty list).
 */
function runStages(fleet: Fleet, stages: readonly Stage[]): { candidates: Int32Array; trace: StageTrace[] } {
  const setOps: { at: number; stage: number; check: HostCheck }[] = [];
  const hostOps: { at: number; stage: number; check: HostCheck }[] = [];
  for (const [k, stage] of stages.entries()) {
    if (stage.skipped) continue;
    for (const c of stage.checks) {
      const at = setOps.length + hostOps.length;
      if (c.reads === "aggregates") setOps.push({ at, stage: k, check: c.check });
      else hostOps.push({ at, stage: k, check: c.reads ? memoized(fleet, c.reads, c.check) : c.check });
    }
  }
  const hostChecks = hostOps.map((op) => op.check);
  const hostStage = Int32Array.from(hostOps, (op) => op.stage);
  const rejected: number[][] = stages.map(() => []);
  const rejections: Rejection[][] = stages.map(() => []);
  const blocks: RejectedBlock[][] = stages.map(() => []);

  // Per aggregate class: how many host checks come before its first rejection (all, if none),
  // and that rejection with its stage (-1: none). A class rejected before any host check is a block.
  const classes = fleet.aggregateSetCount;
  const members = fleet.aggregateMembers;
  const limit = new Int32Array(classes);
  const failStage = new Int32Array(classes).fill(-1);
  const failure: (Rejection | undefined)[] = new Array(classes);
  const bulk = new Uint8Array(classes);
  for (let c = 0; c < classes; c++) {
    const first = members[c]![0]!;
    let failAt = setOps.length + hostOps.length;
    for (const op of setOps) {
      const r = op.check(fleet.hosts[first]!, first);
      if (r) {
        failAt = op.at;
        failStage[c] = op.stage;
        failure[c] = r;
        break;
      }
    }
    let n = 0;
    while (n < hostOps.length && hostOps[n]!.at < failAt) n++;
    limit[c] = n;
    if (n === 0 && failure[c]) {
      bulk[c] = 1;
      blocks[failStage[c]!]!.push({ positions: members[c]!, rejection: failure[c]! });
    }
  }

  const n = fleet.size;
  const kept = new Int32Array(n);
  let k = 0;
  const hosts = fleet.hosts;
  const classOf = fleet.aggregateSetOf;
  for (let i = 0; i < n; i++) {
    const c = classOf[i]!;
    if (bulk[c] === 1) continue;
    const host = hosts[i]!;
    const until = limit[c]!;
    let stage = -1;
    let r: Rejection | null = null;
    for (let h = 0; h < until; h++) {
      r = hostChecks[h]!(host, i);
      if (r !== null) {
        stage = hostStage[h]!;
        break;
      }
    }
    if (r === null && failStage[c]! >= 0) {
      stage = failStage[c]!;
      r = failure[c]!;
    }
    if (r === null) kept[k++] = i;
    else {
      rejected[stage]!.push(i);
      rejections[stage]!.push(r);
    }
  }

  const trace: StageTrace[] = [];
  let reaching = n;
  for (const [s, stage] of stages.entries()) {
    if (reaching === 0) break;
    let out = rejected[s]!.length;
    for (const b of blocks[s]!) out += b.positions.length;
    trace.push({
      stage: stage.name,
      hosts_in: reaching,
      hosts_passed: reaching - out,
      rejected: rejected[s]!,
      rejections: rejections[s]!,
      blocks: blocks[s]!,
      skipped: stage.skipped,
    });
    reaching -= out;
  }
  return { candidates: kept.subarray(0, k), trace };
}

/** A check reading one facet, answered once per class of hosts sharing it. */
function memoized(fleet: Fleet, facet: HostFacet, check: HostCheck): HostCheck {
  const classOf = fleet.classOf[facet];
  const verdicts: (Rejection | null | undefined)[] = new Array(fleet.classCount[facet]);
  return (host, i) => {
    const c = classOf[i]!;
    let v = verdicts[c];
    if (v === undefined) {
      v = check(host, i);
      verdicts[c] = v;
    }
    return v;
  };
}

const PREVIOUS: Rejection = { summary: "were rejected for an earlier instance of this request" };

/** The 2nd+ instance of a multi-create starts where the previous one left off. */
function previousInstanceStage(fleet: Fleet, previous: Int32Array | undefined): Stage[] {
  if (!previous) return [];
  const passed = new Uint8Array(fleet.size);
  for (const i of previous) passed[i] = 1;
  return [{ name: "previous_instance", checks: [{ check: (_h, i) => (passed[i] ? null : PREVIOUS) }] }];
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
  if (filter.runOncePerRequest && ctx.index > 0) {
    return { name: filter.name, skipped: "run_filter_once_per_request", checks: [] };
  }
  const check = filter.prepare(spec, ctx);
  return {
    name: filter.name,
    checks: check ? [{ check, ...(filter.reads ? { reads: filter.reads } : {}) }] : [],
  };
}

/**
 * An admin's force_hosts/force_nodes bypass the filters, unless Nova marked the request as a
 * move that must be checked (scheduler_hints._nova_check_type, e.g. evacuate, live migration).
 */
export function forcesHosts(spec: RequestSpec): boolean {
  const forced = (spec.force_hosts?.length ?? 0) > 0 || (spec.force_nodes?.length ?? 0) > 0;
  return forced && !spec.scheduler_hints._nova_check_type;
}
