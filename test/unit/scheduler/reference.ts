// A straightforward scheduler, written to read like Nova's FilterScheduler and nothing else: every
// host through every stage (filters without the fleet's indexes, no memo per aggregate list),
// every weigher over every candidate, a full sort, Nova's _get_sorted_hosts and
// _get_alternate_hosts literally. The optimized path (lib/scheduler) must decide exactly as this
// does; reference.test.ts checks it on random fleets and requests.
import type { SchedulerConfig } from "../../../lib/config.js";
import { reasonFromSummary } from "../../../lib/scheduler/explain.js";
import { enabledFilters } from "../../../lib/scheduler/filters/index.js";
import { consumeHost, Fleet } from "../../../lib/scheduler/fleet.js";
import { forcesHosts } from "../../../lib/scheduler/pipeline.js";
import { placementChecks } from "../../../lib/scheduler/placement.js";
import { placementRequest } from "../../../lib/scheduler/prefilters.js";
import { describeFitFailure } from "../../../lib/scheduler/resource-fit.js";
import { shuffle } from "../../../lib/scheduler/select.js";
import type {
  DetailedExplanation,
  DetailedStage,
  HostAggregate,
  HostCheck,
  HostState,
  Rejection,
  RequestSpec,
  WeigherValues,
} from "../../../lib/scheduler/types.js";
import { clamp, hostMultiplier, normalize } from "../../../lib/scheduler/weigh.js";
import { enabledWeighers } from "../../../lib/scheduler/weighers/index.js";

export interface ReferenceResult {
  ok: boolean;
  placements: { instance_uuid: string; host: string; nodename: string }[];
  alternates: { host: string; nodename: string }[][];
  /** one per decision made (the failing one last) */
  explanations: DetailedExplanation[];
}

interface Weighed {
  host: HostState;
  weight: number;
  values: WeigherValues[];
}

export function referenceSchedule(
  hosts: HostState[],
  aggregates: readonly HostAggregate[],
  request: RequestSpec,
  uuids: readonly string[],
  config: SchedulerConfig,
  random: () => number,
  opts: {
    exclude?: string[];
    claim?: (host: HostState, instanceUuid: string) => boolean;
    /** where the instances the request names run; the placed ones are added to it */
    instances?: Map<string, string>;
  } = {},
): ReferenceResult {
  const instances = opts.instances ?? new Map<string, string>();
  const claim = opts.claim ?? (() => true);
  const group = request.instance_group && {
    ...request.instance_group,
    hosts: [...request.instance_group.hosts],
  };
  const spec: RequestSpec = { ...request, ...(group ? { instance_group: group } : {}) };
  const explanations: DetailedExplanation[] = [];
  const selected: HostState[] = [];
  const placements: ReferenceResult["placements"] = [];
  let candidates: HostState[] = hosts;
  let sorted: HostState[] = [];
  let why = new Map<HostState, Rejection>();

  for (const [index, uuid] of uuids.entries()) {
    spec.instance_uuid = uuid;
    const previous = index > 0 ? { passed: new Set(candidates), why } : undefined;
    const { weighed, explanation, rejections } = decide(
      hosts,
      aggregates,
      spec,
      index,
      config,
      opts.exclude ?? [],
      previous,
      instances,
    );
    explanations.push(explanation);
    sorted = sortedHosts(weighed, config, random);
    const chosen = sorted.find((h) => claim(h, uuid));
    if (!chosen) return { ok: false, placements, alternates: [], explanations };
    consumeHost(chosen, explanation.requested);
    instances.set(uuid, chosen.host);
    group?.hosts.push(chosen.host);
    selected.push(chosen);
    placements.push({ instance_uuid: uuid, host: chosen.host, nodename: chosen.nodename });
    candidates = weighed.map((w) => w.host);
    why = rejections;
  }

  const numAlts = config.max_attempts - 1;
  let alternates: ReferenceResult["alternates"] = placements.map(() => []);
  if (numAlts > 0 && placements.length > 0) {
    const last = placements.length - 1;
    if (last > 0) {
      const previous = { passed: new Set(candidates), why };
      const { weighed } = decide(
        hosts,
        aggregates,
        spec,
        last,
        config,
        opts.exclude ?? [],
        previous,
        instances,
      );
      sorted = sortedHosts(weighed, config, random);
    }
    const alts = sorted
      .filter((h) => !selected.includes(h))
      .slice(0, numAlts)
      .map((h) => ({ host: h.host, nodename: h.nodename }));
    alternates = placements.map(() => alts);
  }
  return { ok: true, placements, alternates, explanations };
}

/** Nova's _get_sorted_hosts tail: shuffle the best ties, choose one of the best subset to go first. */
function sortedHosts(weighed: Weighed[], config: SchedulerConfig, random: () => number): HostState[] {
  let list = [...weighed];
  if (list.length === 0) return [];
  if (config.shuffle_best_same_weighed_hosts) {
    const best = list.filter((w) => w.weight === list[0]!.weight);
    shuffle(best, random);
    list = [...best, ...list.slice(best.length)];
  }
  const size = Math.max(1, Math.floor(config.host_subset_size));
  const subset = size < list.length ? list.slice(0, size) : list;
  const chosen = subset[Math.min(subset.length - 1, Math.floor(random() * subset.length))]!;
  return [chosen.host, ...list.filter((w) => w !== chosen).map((w) => w.host)];
}

function decide(
  all: HostState[],
  aggregates: readonly HostAggregate[],
  spec: RequestSpec,
  index: number,
  config: SchedulerConfig,
  exclude: string[],
  /** the previous instance's candidates, and why each other host was rejected for it */
  previous: { passed: Set<HostState>; why: ReadonlyMap<HostState, Rejection> } | undefined,
  instances: ReadonlyMap<string, string>,
): { weighed: Weighed[]; explanation: DetailedExplanation; rejections: Map<HostState, Rejection> } {
  // The hosts as they are now, for the filters' and weighers' lookups by position.
  const fleet = new Fleet(all, aggregates);
  const filters = enabledFilters(config.enabled_filters);
  const weighers = enabledWeighers(config.weight_classes);
  const placement = placementRequest(spec, aggregates, config);
  const stages: {
    name: string;
    skipped?: string;
    check?: (h: HostState, i: number) => ReturnType<HostCheck>;
  }[] = [];

  if (previous) {
    // a host left out keeps the reason it was left out for
    stages.push({
      name: "previous_instance",
      check: (h) => (previous.passed.has(h) ? null : previous.why.get(h)!),
    });
  }
  const dest = spec.requested_destination;
  if (dest?.host || dest?.node) {
    const summary = `are not the requested destination ${[dest.host, dest.node].filter(Boolean).join("/")}`;
    stages.push({
      name: "requested_destination",
      check: (h) =>
        (!dest.host || h.host === dest.host) && (!dest.node || h.nodename === dest.node) ? null : { summary },
    });
  }
  const lower = (l?: string[]) => (l ?? []).map((s) => s.toLowerCase());
  if (spec.ignore_hosts?.length) {
    stages.push({
      name: "ignore_hosts",
      check: (h) =>
        lower(spec.ignore_hosts).includes(h.host.toLowerCase()) ? { summary: "are in ignore_hosts" } : null,
    });
  }
  if (spec.force_hosts?.length) {
    stages.push({
      name: "force_hosts",
      check: (h) =>
        lower(spec.force_hosts).includes(h.host.toLowerCase()) ? null : { summary: "are not in force_hosts" },
    });
  }
  if (spec.force_nodes?.length) {
    stages.push({
      name: "force_nodes",
      check: (h) => (spec.force_nodes!.includes(h.nodename) ? null : { summary: "are not in force_nodes" }),
    });
  }
  if (exclude.length > 0) {
    stages.push({
      name: "exclude_hosts",
      check: (h) => (exclude.includes(h.host) ? { summary: "were already tried for this request" } : null),
    });
  }
  const placementParts = placementChecks(placement, fleet).map((c) => c.check);
  stages.push({
    name: "placement",
    check: (h, i) => {
      for (const part of placementParts) {
        const r = part(h, i);
        if (r) return r;
      }
      return null;
    },
  });
  for (const f of filters) {
    if (forcesHosts(spec)) stages.push({ name: f.name, skipped: "forced host" });
    else if (f.runOncePerRequest && index > 0)
      stages.push({ name: f.name, skipped: "run_filter_once_per_request" });
    else {
      const check = f.prepare(spec, { index, config, fleet, instances });
      stages.push({ name: f.name, ...(check ? { check } : {}) });
    }
  }

  const position = new Map(all.map((h, i) => [h, i]));
  const explained: DetailedStage[] = [];
  const rejections = new Map<HostState, Rejection>();
  let hosts = all;
  for (const stage of stages) {
    if (hosts.length === 0) break;
    const passed: HostState[] = [];
    const rejected: DetailedStage["rejected"] = [];
    for (const h of hosts) {
      const r = stage.skipped || !stage.check ? null : stage.check(h, position.get(h)!);
      if (!r) passed.push(h);
      else {
        rejections.set(h, r);
        const reason = r.reason ?? (r.fit ? describeFitFailure(r.fit) : reasonFromSummary(r.summary));
        rejected.push({
          host: h.host,
          nodename: h.nodename,
          reason,
          summary: r.summary,
          ...(r.fit ? { fit: r.fit } : {}),
        });
      }
    }
    explained.push({
      stage: stage.name,
      hosts_in: hosts.length,
      hosts_passed: passed.length,
      rejected,
      ...(stage.skipped ? { skipped: stage.skipped } : {}),
    });
    hosts = passed;
  }

  // BaseWeightHandler.get_weighed_objects
  const weighed: Weighed[] = hosts.map((host) => ({ host, weight: 0, values: [] }));
  if (weighed.length > 1) {
    for (const weigher of weighers) {
      const value = weigher.prepare(spec, { config, fleet, instances });
      const raw = hosts.map((h) => (value ? value(h, position.get(h)!) : 0));
      const normalized = normalize(
        raw.map((v) => clamp(v, weigher.minval, weigher.maxval)),
        weigher.minval,
        weigher.maxval,
      );
      for (const [k, w] of weighed.entries()) {
        const m =
          (weigher.negated ? -1 : 1) * hostMultiplier(w.host, weigher, config[weigher.multiplierOption]);
        w.weight = w.weight + m * normalized[k]!;
        w.values.push({
          host: w.host.host,
          nodename: w.host.nodename,
          raw: raw[k]!,
          normalized: normalized[k]!,
          multiplier: m,
        });
      }
    }
  }
  weighed.sort(
    (a, b) => b.weight - a.weight || cmp(a.host.host, b.host.host) || cmp(a.host.nodename, b.host.nodename),
  );
  const explanation: DetailedExplanation = {
    index,
    requested: placement.resources,
    hosts: all.length,
    stages: explained,
    weighers:
      weighed.length > 1
        ? weighers.map((w, k) => ({ weigher: w.name, hosts: weighed.map((x) => x.values[k]!) }))
        : [],
    order: weighed.map((w) => ({ host: w.host.host, nodename: w.host.nodename, weight: w.weight })),
  };
  return { weighed, explanation, rejections };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
