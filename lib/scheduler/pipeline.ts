// One scheduling decision for one instance: Nova's HostManager.get_filtered_hosts +
// get_weighed_hosts, with Placement's resource check in between. Pure and synchronous.
import type { SchedulerConfig } from "../config.js";
import { enabledFilters } from "./filters/index.js";
import { fitSummary, resourceFit } from "./resource-fit.js";
import { resourcesFromFlavor } from "./resources.js";
import type {
  DecisionExplanation,
  FilterContext,
  HostFilter,
  HostState,
  RequestSpec,
  ResourceAmounts,
  ResourceFitFailure,
  StageExplanation,
  WeighedHost,
} from "./types.js";
import { weighHosts } from "./weigh.js";
import { enabledWeighers } from "./weighers/index.js";

export interface PipelineContext {
  /** the instance's index in a multi-create: 0, 1, … */
  index: number;
  config: SchedulerConfig;
  /** host names already tried (retry) or selected for this request */
  excludeHosts?: Set<string>;
}

/**
 * Requested/forced/ignored hosts → resource fit → enabled filters in order → weighers.
 *
 * For index > 0, pass the hosts that survived index 0 (`weighed.map((w) => w.host)`, after
 * consume()): run-once-per-request filters are skipped then, exactly because Nova feeds each
 * instance the previous instance's filtered list.
 */
export function filterAndWeigh(
  hosts: readonly HostState[],
  spec: RequestSpec,
  ctx: PipelineContext,
): { weighed: WeighedHost[]; explanation: DecisionExplanation } {
  // Resolved first, so a misconfigured filter fails even when there are no hosts.
  const filters = enabledFilters(ctx.config.enabled_filters);
  const weighers = enabledWeighers(ctx.config.weight_classes);
  const requested = resourcesFromFlavor(spec.flavor);
  const filterCtx: FilterContext = { index: ctx.index, config: ctx.config };

  const stages: Stage[] = [
    ...hostListStages(spec, ctx.excludeHosts),
    resourceFitStage(requested),
    ...filters.map((f) => filterStage(f, spec, filterCtx)),
  ];
  const explained: StageExplanation[] = [];
  let candidates = hosts;
  for (const stage of stages) candidates = runStage(stage, candidates, explained);

  const { weighed, explanations } = weighHosts(candidates, spec, weighers, ctx.config);
  const order = weighed.map((w) => ({ host: w.host.host, nodename: w.host.nodename, weight: w.weight }));
  return {
    weighed,
    explanation: { index: ctx.index, requested, stages: explained, weighers: explanations, order },
  };
}

// ── Stages: every step is a per-host check, so one loop runs and explains them all. ──

type Verdict =
  | { pass: true }
  | { pass: false; reason: string; summary: string; fit?: ResourceFitFailure | undefined };

interface Stage {
  name: string;
  /** why the stage does not run this time */
  skipped?: string;
  check(host: HostState): Verdict;
}

function runStage(stage: Stage, hosts: readonly HostState[], out: StageExplanation[]): readonly HostState[] {
  // Nova's filter handler stops once no host is left: there is nothing more to explain.
  if (hosts.length === 0) return hosts;
  if (stage.skipped) {
    out.push({
      stage: stage.name,
      hosts_in: hosts.length,
      hosts_passed: hosts.length,
      rejected: [],
      skipped: stage.skipped,
    });
    return hosts;
  }
  const passed: HostState[] = [];
  const rejected: StageExplanation["rejected"] = [];
  for (const host of hosts) {
    const v = stage.check(host);
    if (v.pass) passed.push(host);
    else {
      const { reason, summary, fit } = v;
      rejected.push({ host: host.host, nodename: host.nodename, reason, summary, ...(fit ? { fit } : {}) });
    }
  }
  out.push({ stage: stage.name, hosts_in: hosts.length, hosts_passed: passed.length, rejected });
  return passed;
}

const pass: Verdict = { pass: true };
const reject = (reason: string, summary: string): Verdict => ({ pass: false, reason, summary });

/**
 * Nova's get_filtered_hosts preamble, in its order: requested_destination, ignore_hosts,
 * force_hosts, force_nodes; then the hosts this request already tried or selected. Host names
 * compare case-insensitively for ignore/force_hosts, as in Nova; node names exactly.
 */
function hostListStages(spec: RequestSpec, exclude: Set<string> | undefined): Stage[] {
  const stages: Stage[] = [];
  const dest = spec.requested_destination;
  if (dest?.host || dest?.node) {
    const wanted = [dest.host, dest.node].filter(Boolean).join("/");
    stages.push({
      name: "requested_destination",
      check: (h) =>
        (!dest.host || h.host === dest.host) && (!dest.node || h.nodename === dest.node)
          ? pass
          : reject(`not the requested destination ${wanted}`, `are not the requested destination ${wanted}`),
    });
  }
  const ignore = lowered(spec.ignore_hosts);
  if (ignore.size > 0) {
    stages.push({
      name: "ignore_hosts",
      check: (h) =>
        ignore.has(h.host.toLowerCase()) ? reject("in ignore_hosts", "are in ignore_hosts") : pass,
    });
  }
  const force = lowered(spec.force_hosts);
  if (force.size > 0) {
    stages.push({
      name: "force_hosts",
      check: (h) =>
        force.has(h.host.toLowerCase()) ? pass : reject("not in force_hosts", "are not in force_hosts"),
    });
  }
  const forceNodes = new Set(spec.force_nodes ?? []);
  if (forceNodes.size > 0) {
    stages.push({
      name: "force_nodes",
      check: (h) =>
        forceNodes.has(h.nodename) ? pass : reject("not in force_nodes", "are not in force_nodes"),
    });
  }
  if (exclude && exclude.size > 0) {
    stages.push({
      name: "exclude_hosts",
      check: (h) =>
        exclude.has(h.host)
          ? reject("already tried or selected for this request", "were already tried or selected")
          : pass,
    });
  }
  return stages;
}

/**
 * Placement's allocation candidates. Forced hosts still go through it: Nova asks Placement
 * for them too (in_tree), only the filters are skipped.
 */
function resourceFitStage(requested: ResourceAmounts): Stage {
  return {
    name: "resource_fit",
    check: (h) => {
      const r = resourceFit(h, requested);
      return r.fit ? pass : { pass: false, reason: r.reason, summary: fitSummary(r.failure), fit: r.failure };
    },
  };
}

function filterStage(filter: HostFilter, spec: RequestSpec, ctx: FilterContext): Stage {
  const stage: Stage = {
    name: filter.name,
    check: (h) => {
      const r = filter.hostPasses(h, spec, ctx);
      return r.pass ? pass : reject(r.reason, r.summary ?? `were rejected by ${filter.name}`);
    },
  };
  if (forcesHosts(spec)) stage.skipped = "forced host";
  else if (filter.runOncePerRequest && ctx.index > 0) stage.skipped = "run_filter_once_per_request";
  return stage;
}

/**
 * An admin's force_hosts/force_nodes bypass the filters, unless Nova marked the request as a
 * move that must be checked (scheduler_hints._nova_check_type, e.g. evacuate, live migration).
 */
function forcesHosts(spec: RequestSpec): boolean {
  const forced = (spec.force_hosts?.length ?? 0) > 0 || (spec.force_nodes?.length ?? 0) > 0;
  return forced && !spec.scheduler_hints._nova_check_type;
}

function lowered(names: readonly string[] | undefined): Set<string> {
  return new Set((names ?? []).map((n) => n.toLowerCase()));
}
