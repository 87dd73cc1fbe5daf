// novaless-plan's scenarios: a fleet and requests in Nova's vocabulary (nova.conf groups and
// option names, HostState's fields, RequestSpec's), validated, converted to the scheduler's
// types, and run in order — each request consuming what it placed, as the scheduler does.
// Pure: no I/O, and randomness (host_subset_size, shuffle) from a seed.
import { z } from "zod";
import {
  parseSchedulerOption,
  SCHEDULER_DEFAULTS,
  SCHEDULER_OPTIONS,
  type SchedulerConfig,
} from "../config.js";
import { parseAvailabilityZone, zoneRequest } from "../messages/availability-zone.js";
import { computeNodeInventories, type Inventory } from "../placement-rules.js";
import type { Decision } from "./decision.js";
import { summarizeNoValidHost, summarizeSelection } from "./explain.js";
import { Fleet } from "./fleet.js";
import { hostAggregates as hostAggregatesOf, hostStateOf, type ProviderView } from "./host-state.js";
import { runSchedule, schedule } from "./select.js";
import type {
  DecisionExplanation,
  DetailedStage,
  DetailedWeigher,
  HostAggregate,
  HostState,
  InstanceGroup,
  RankedHost,
  RequestSpec,
} from "./types.js";

const str = z.string();
const num = z.number().finite();
const count = z.number().int().min(0);
const optionValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string()), z.null()]);

const inventory = z.object({
  total: count,
  reserved: count.optional(),
  allocation_ratio: num.positive().optional(),
  used: count.optional(),
  min_unit: count.optional(),
  max_unit: count.optional(),
  step_size: count.optional(),
});

const hostSchema = z.object({
  host: str.min(1),
  nodename: str.optional(),
  availability_zone: str.optional(),
  /** aggregate names, besides the aggregates listing the host */
  aggregates: z.array(str).optional(),
  vcpus: count,
  vcpus_used: count.optional(),
  memory_mb: count,
  memory_mb_used: count.optional(),
  local_gb: count,
  local_gb_used: count.optional(),
  cpu_allocation_ratio: num.positive().optional(),
  ram_allocation_ratio: num.positive().optional(),
  disk_allocation_ratio: num.positive().optional(),
  reserved_host_memory_mb: count.optional(),
  reserved_host_disk_mb: count.optional(),
  reserved_host_cpus: count.optional(),
  /** further resource classes, e.g. CUSTOM_GPU */
  inventories: z.record(str, inventory).optional(),
  num_instances: count.optional(),
  num_io_ops: count.optional(),
  failed_builds: count.optional(),
  instances: z.array(str).optional(),
  hypervisor_type: str.optional(),
  hypervisor_version: count.optional(),
  supported_instances: z.array(z.tuple([str, str, str])).optional(),
  host_ip: str.optional(),
  metrics: z.union([z.record(str, num), z.array(z.object({ name: str, value: num }))]).optional(),
  traits: z.array(str).optional(),
  stats: z.record(str, z.union([str, num, z.boolean()])).optional(),
  service: z
    .object({
      disabled: z.boolean().optional(),
      disabled_reason: str.nullable().optional(),
      forced_down: z.boolean().optional(),
      up: z.boolean().optional(),
    })
    .optional(),
});

const aggregateSchema = z.object({
  id: str.optional(),
  name: str.min(1),
  availability_zone: str.nullable().optional(),
  hosts: z.array(str).optional(),
  metadata: z.record(str, str).optional(),
});

const requestSchema = z.object({
  flavor: z.object({
    id: str.optional(),
    name: str.min(1),
    vcpus: count,
    memory_mb: count,
    root_gb: count.optional(),
    ephemeral_gb: count.optional(),
    swap: count.optional(),
    extra_specs: z.record(str, str).optional(),
  }),
  image: z
    .object({ id: str.optional(), name: str.optional(), properties: z.record(str, str).optional() })
    .optional(),
  availability_zone: str.optional(),
  scheduler_hints: z.record(str, z.unknown()).optional(),
  ignore_hosts: z.array(str).optional(),
  force_hosts: z.array(str).optional(),
  force_nodes: z.array(str).optional(),
  requested_destination: z.object({ host: str.optional(), node: str.optional() }).optional(),
  retry: z
    .object({
      num_attempts: count.optional(),
      /** hosts tried: names, or Nova's [host, node] pairs */
      hosts: z.array(z.union([str, z.array(str)])).optional(),
    })
    .optional(),
  instance_group: z
    .object({
      uuid: str.optional(),
      policy: z.enum(["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"]),
      rules: z.object({ max_server_per_host: z.number().int().min(1).optional() }).optional(),
      members: z.array(str).optional(),
      hosts: z.array(str).optional(),
    })
    .optional(),
  project_id: str.optional(),
  user_id: str.optional(),
  num_instances: z.number().int().min(1).optional(),
  instance_uuids: z.array(str).min(1).optional(),
});

const scenarioSchema = z
  .object({
    /** seeds host_subset_size's and shuffle_best_same_weighed_hosts' random choices */
    seed: z.number().int().optional(),
    config: z.record(str, z.record(str, optionValue)).optional(),
    aggregates: z.array(aggregateSchema).optional(),
    hosts: z.array(hostSchema),
    request: requestSchema.optional(),
    requests: z.array(requestSchema).optional(),
  })
  .refine((s) => s.request || s.requests?.length, { message: "a scenario needs `request` or `requests`" });

export type Scenario = z.infer<typeof scenarioSchema>;
type ScenarioHost = z.infer<typeof hostSchema>;
type ScenarioRequest = z.infer<typeof requestSchema>;

/** A scenario ready to run: the scheduler's own types. */
export interface PreparedScenario {
  config: SchedulerConfig;
  hosts: HostState[];
  aggregates: HostAggregate[];
  /** where the instances the hosts list run (uuid → host): what hints and groups look up */
  instanceHosts: Map<string, string>;
  requests: { spec: RequestSpec; instance_uuids: string[]; exclude_hosts: string[] }[];
  seed: number;
  /** what was not understood and left out */
  warnings: string[];
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; errors: string[] };

/** Validate and convert. Unknown keys are ignored; errors name the JSON path. */
export function prepareScenario(input: unknown): Parsed<PreparedScenario> {
  const r = scenarioSchema.safeParse(input);
  if (!r.success) {
    return {
      ok: false,
      errors: r.error.issues.map((i) => `${i.path.length ? i.path.join(".") : "(scenario)"}: ${i.message}`),
    };
  }
  const s = r.data;
  const warnings: string[] = [];
  const errors: string[] = [];
  const config = scenarioConfig(s.config ?? {}, warnings, errors);
  const names = new Set(s.hosts.map((h) => h.host));
  const aggregates = (s.aggregates ?? []).map((a) => ({
    id: a.id ?? a.name,
    name: a.name,
    metadata: {
      ...(a.availability_zone ? { availability_zone: a.availability_zone } : {}),
      ...(a.metadata ?? {}),
    },
    hosts: new Set(a.hosts ?? []),
  }));
  const byName = new Map(aggregates.map((a) => [a.name, a]));
  for (const [i, h] of s.hosts.entries()) {
    for (const name of h.aggregates ?? []) {
      const a = byName.get(name);
      if (a) a.hosts.add(h.host);
      else errors.push(`hosts.${i}.aggregates: no aggregate named ${name}`);
    }
  }
  for (const [k, a] of aggregates.entries()) {
    for (const h of a.hosts) if (!names.has(h)) errors.push(`aggregates.${k}.hosts: no host named ${h}`);
  }
  if (errors.length > 0) return { ok: false, errors };

  const hostAggregates: HostAggregate[] = aggregates.map(({ id, name, metadata }) => ({
    id,
    name,
    metadata,
  }));
  const zones = new Map<string, HostAggregate>();
  const instanceHosts = new Map<string, string>();
  const hosts = s.hosts.map((h) => {
    const mine = hostAggregates.filter((_, k) => aggregates[k]!.hosts.has(h.host));
    for (const uuid of h.instances ?? []) instanceHosts.set(uuid, h.host);
    // A zone a host registers with counts as an aggregate of that zone, as in the scheduler Lambda.
    const list = hostAggregatesOf(mine, h.availability_zone, zones);
    return scenarioHost(h, list, config);
  });
  const requests = [...(s.request ? [s.request] : []), ...(s.requests ?? [])].map((q, k) =>
    scenarioRequest(q, k),
  );
  return {
    ok: true,
    value: {
      config,
      hosts,
      aggregates: [...hostAggregates, ...zones.values()],
      instanceHosts,
      requests,
      seed: s.seed ?? 0,
      warnings,
    },
  };
}

/** nova.conf groups → options; values as JSON or as nova.conf text. */
function scenarioConfig(
  groups: Record<string, Record<string, unknown>>,
  warnings: string[],
  errors: string[],
): SchedulerConfig {
  const config = structuredClone(SCHEDULER_DEFAULTS) as SchedulerConfig;
  const out = config as unknown as Record<string, unknown>;
  for (const [group, options] of Object.entries(groups)) {
    for (const [name, value] of Object.entries(options)) {
      const o = SCHEDULER_OPTIONS.find((x) => x.group === group && x.name === name);
      if (!o) {
        warnings.push(`config.${group}.${name}: not an option this scheduler reads; ignored`);
        continue;
      }
      const text = Array.isArray(value) ? value.join(",") : value === null ? "" : String(value);
      try {
        out[o.key] = parseSchedulerOption(o, text);
      } catch (e) {
        errors.push(`config.${group}.${name}: ${(e as Error).message.replace(/^configuration \S+ /, "")}`);
      }
    }
  }
  return config;
}

/** Nova's compute node fields → the provider it reports, the *_used fields being instances' use. */
function scenarioProvider(h: ScenarioHost, config: SchedulerConfig): ProviderView {
  const inventories: Record<string, Inventory> = { ...computeNodeInventories(h, config) };

  const usage: Record<string, number> = {
    VCPU: h.vcpus_used ?? 0,
    MEMORY_MB: h.memory_mb_used ?? 0,
    DISK_GB: h.local_gb_used ?? 0,
  };
  for (const [rc, inv] of Object.entries(h.inventories ?? {})) {
    inventories[rc] = {
      total: inv.total,
      reserved: inv.reserved ?? 0,
      allocation_ratio: inv.allocation_ratio ?? 1,
      min_unit: inv.min_unit ?? 1,
      max_unit: inv.max_unit ?? inv.total,
      step_size: inv.step_size ?? 1,
    };
    usage[rc] = inv.used ?? 0;
  }
  const metrics = Array.isArray(h.metrics)
    ? Object.fromEntries(h.metrics.map((m) => [m.name, m.value]))
    : { ...(h.metrics ?? {}) };
  return {
    host: h.host,
    node: h.nodename ?? h.host,
    inventories,
    usage,
    num_instances: h.num_instances ?? h.instances?.length ?? 0,
    num_io_ops: h.num_io_ops ?? 0,
    traits: h.traits ?? [],
    service: {
      disabled: h.service?.disabled ?? false,
      disabled_reason: h.service?.disabled_reason ?? null,
      forced_down: h.service?.forced_down ?? false,
      up: h.service?.up ?? true,
    },
    hypervisor_type: h.hypervisor_type ?? "QEMU",
    hypervisor_version: h.hypervisor_version ?? 0,
    host_ip: h.host_ip ?? "",
    supported_instances: h.supported_instances ?? [["x86_64", "qemu", "hvm"]],
    // the scenario's own stats win over the counters (as a compute node's stats dict would)
    stats: { ...(h.stats ?? {}), failed_builds: h.failed_builds ?? 0 },
    metrics,
  };
}

function scenarioHost(
  h: ScenarioHost,
  aggregates: readonly HostAggregate[],
  config: SchedulerConfig,
): HostState {
  const state = hostStateOf(scenarioProvider(h, config), aggregates, config);
  // A scenario's stats dict is shown as given, over the counters the builder fills in.
  const given = Object.entries(h.stats ?? {}).map(([k, v]) => [k, String(v)]);
  return given.length > 0 ? { ...state, stats: { ...state.stats, ...Object.fromEntries(given) } } : state;
}

function scenarioRequest(
  q: ScenarioRequest,
  k: number,
): { spec: RequestSpec; instance_uuids: string[]; exclude_hosts: string[] } {
  const n = q.instance_uuids?.length ?? q.num_instances ?? 1;
  const uuids = q.instance_uuids ?? Array.from({ length: n }, (_, i) => planUuid(k, i));
  let group: InstanceGroup | undefined;
  if (q.instance_group) {
    const members = [...(q.instance_group.members ?? [])];
    // Nova's API adds the instances being created to their group before scheduling.
    for (const u of uuids) if (!members.includes(u)) members.push(u);
    group = {
      ...(q.instance_group.uuid ? { uuid: q.instance_group.uuid } : {}),
      policy: q.instance_group.policy,
      rules: { ...(q.instance_group.rules ?? {}) },
      members,
      hosts: [...(q.instance_group.hosts ?? [])],
    };
  }
  const spec: RequestSpec = {
    project_id: q.project_id ?? "project",
    ...(q.user_id ? { user_id: q.user_id } : {}),
    flavor: {
      id: q.flavor.id ?? q.flavor.name,
      name: q.flavor.name,
      vcpus: q.flavor.vcpus,
      memory_mb: q.flavor.memory_mb,
      root_gb: q.flavor.root_gb ?? 0,
      ephemeral_gb: q.flavor.ephemeral_gb ?? 0,
      swap: q.flavor.swap ?? 0,
      extra_specs: { ...(q.flavor.extra_specs ?? {}) },
    },
    image: {
      id: q.image?.id ?? q.image?.name ?? "image",
      name: q.image?.name ?? q.image?.id ?? "image",
      properties: { ...(q.image?.properties ?? {}) },
    },
    // the API's split of az:host:node into a zone and forced hosts/nodes
    ...zoneRequest(q.availability_zone ? parseAvailabilityZone(q.availability_zone) : undefined, q),
    scheduler_hints: { ...(q.scheduler_hints ?? {}) },
    num_instances: uuids.length,
    ...(q.ignore_hosts ? { ignore_hosts: [...q.ignore_hosts] } : {}),
    ...(q.requested_destination ? { requested_destination: { ...q.requested_destination } } : {}),
    ...(group ? { instance_group: group } : {}),
  };
  const exclude = (q.retry?.hosts ?? []).map((h) => (Array.isArray(h) ? h[0]! : h));
  return { spec, instance_uuids: uuids, exclude_hosts: exclude };
}

/** Readable, stable instance uuids for requests that name none. */
function planUuid(request: number, instance: number): string {
  const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
  return `00000000-0000-4000-8000-${hex(request, 6)}${hex(instance, 6)}`;
}

/** One instance's decision, as novaless-plan prints it. */
export interface PlannedDecision {
  instance_uuid: string;
  summary: string;
  /** every stage: hosts in and out, each rejected host with its reason */
  filter_trace: DetailedStage[];
  /** hosts that passed every stage */
  filtered_hosts: string[];
  /** per weigher, each candidate's raw and normalized value and multiplier */
  weighers: DetailedWeigher[];
  /** candidates by final weight, best first */
  weighed_hosts: RankedHost[];
  chosen: { host: string; nodename: string } | null;
}

/** One instance's decision in compact form: what the scheduler Lambda keeps on the instance. */
export interface CompactDecision {
  instance_uuid: string;
  summary: string;
  explanation: DecisionExplanation;
}

export interface PlannedRequest {
  request: number;
  instance_uuids: string[];
  /** per instance: the chosen host, then its alternates */
  selections?: { host: string; nodename: string }[][];
  /** the NoValidHost summary, when the request could not be placed */
  no_valid_host?: string;
  decisions: (PlannedDecision | CompactDecision)[];
}

export interface PlanOutput {
  warnings: string[];
  requests: PlannedRequest[];
}

/**
 * Run the requests in order on one fleet; each placed instance consumes its host (a request that
 * cannot be placed whole consumes nothing). Decisions are detailed (every host) unless `compact`.
 */
export function runScenario(prepared: PreparedScenario, opts: { compact?: boolean } = {}): PlanOutput {
  const explain = (
    uuid: string,
    d: Decision,
    summary: string,
    chosen: { host: string; nodename: string } | null,
  ) =>
    opts.compact
      ? { instance_uuid: uuid, summary, explanation: d.compact(chosen ? { chosen } : {}) }
      : planned(uuid, d, summary, chosen);
  const fleet = new Fleet(prepared.hosts, prepared.aggregates);
  // Instances placed by earlier requests run where they were placed, for later hints and groups.
  const instanceHosts = new Map(prepared.instanceHosts);
  const random = seededRandom(prepared.seed);
  const requests = prepared.requests.map((q, k): PlannedRequest => {
    const result = runSchedule(
      schedule({
        fleet,
        spec: q.spec,
        instanceUuids: q.instance_uuids,
        config: prepared.config,
        random,
        excludeHosts: q.exclude_hosts,
        instanceHosts,
        ...(opts.compact ? { explanation: "compact" as const } : {}),
      }),
    );
    const decisions = result.placements.map((p) => {
      const chosen = { host: p.selected.host, nodename: p.selected.nodename };
      return explain(p.instance_uuid, p.decision, summarizeSelection(p.decision.compact({ chosen })), chosen);
    });
    if (!result.ok) {
      const which =
        q.instance_uuids.length > 1
          ? `for instance ${decisions.length + 1} of ${q.instance_uuids.length}`
          : undefined;
      const summary = summarizeNoValidHost(result.decision.compact(), which);
      decisions.push(explain(result.instance_uuid, result.decision, summary, null));
      // All or nothing: what this request consumed is given back for the next one.
      for (const p of result.placements) fleet.unconsume(p.position, p.decision.requested);
      return { request: k, instance_uuids: q.instance_uuids, no_valid_host: summary, decisions };
    }
    for (const p of result.placements) instanceHosts.set(p.instance_uuid, p.selected.host);
    const selections = result.placements.map((p, i) => [
      { host: p.selected.host, nodename: p.selected.nodename },
      ...result.alternates[i]!.map((a) => ({ host: a.host, nodename: a.nodename })),
    ]);
    return { request: k, instance_uuids: q.instance_uuids, selections, decisions };
  });
  return { warnings: prepared.warnings, requests };
}

function planned(
  instance_uuid: string,
  decision: Decision,
  summary: string,
  chosen: { host: string; nodename: string } | null,
): PlannedDecision {
  const d = decision.detailed();
  return {
    instance_uuid,
    summary,
    filter_trace: d.stages,
    filtered_hosts: d.order.map((o) => o.host),
    weighers: d.weighers,
    weighed_hosts: d.order,
    chosen,
  };
}

/** mulberry32: a small seeded generator, so a plan is reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
