// The scheduler's own view of the world: pure data, no AWS and nothing of lib/placement (Placement's
// pure rules, lib/placement-rules.ts, are below both).
import type { SchedulerConfig } from "../config.js";
import type { FlavorSpec, ImageSpec } from "../messages/common.js";
import type { UnitRule } from "../placement-rules.js";

export type ResourceAmounts = Record<string, number>;

export interface HostResource {
  /** (total − reserved) × allocation_ratio */
  capacity: number;
  used: number;
  max_unit: number;
  min_unit: number;
  step_size: number;
}

/** A host aggregate as the scheduler sees it (Nova's Aggregate: id is its uuid). */
export interface HostAggregate {
  id: string;
  name: string;
  metadata: Readonly<Record<string, string>>;
}

/**
 * Nova's HostState: what the filters and weighers read about one compute node. Field names are
 * Nova's, so JsonFilter queries (`$free_ram_mb`) and ComputeCapabilitiesFilter keys read the same.
 */
export interface HostState {
  host: string;
  nodename: string;
  /** the host's zone: its AZ aggregate's, else the zone it registered with, else the default */
  availability_zone: string;
  /** every aggregate listing this host (a registered zone counts as an aggregate of that zone) */
  aggregates: readonly HostAggregate[];
  /** Placement traits of the host's resource provider */
  traits: readonly string[];
  resources: Record<string, HostResource>;
  /** total − reserved − used MEMORY_MB, physical (Nova's free_ram_mb; may be negative) */
  free_ram_mb: number;
  /** (total − reserved − used DISK_GB) × 1024 */
  free_disk_mb: number;
  /** MEMORY_MB total */
  total_usable_ram_mb: number;
  /** DISK_GB total */
  total_usable_disk_gb: number;
  /** (reserved + used DISK_GB) × 1024 */
  disk_mb_used: number;
  vcpus_total: number;
  vcpus_used: number;
  cpu_allocation_ratio: number;
  ram_allocation_ratio: number;
  disk_allocation_ratio: number;
  /** instances on the host (Placement's allocations); which ones: the request's InstanceLocator */
  num_instances: number;
  /** instances building on the host (Nova's io_workload) */
  num_io_ops: number;
  failed_builds: number;
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  /** [architecture, hypervisor_type, vm_mode] triples */
  supported_instances: readonly (readonly [string, string, string])[];
  /** compute monitor metrics by name (Nova's MonitorMetricList, as a map) */
  metrics: Readonly<Record<string, number>>;
  /** the compute node's stats dict (num_instances, io_workload, failed_builds, …), values as text */
  stats: Readonly<Record<string, string>>;
  service: {
    disabled: boolean;
    disabled_reason: string | null;
    forced_down: boolean;
    /** computed by the caller from the last heartbeat and service_down_time */
    up: boolean;
  };
}

// The flavor and image a RequestSpec carries are the request messages' own.
export type { FlavorSpec, ImageSpec };

export type ServerGroupPolicy = "affinity" | "anti-affinity" | "soft-affinity" | "soft-anti-affinity";

/** Nova's RequestSpec.instance_group, resolved by the caller from scheduler_hints.group. */
export interface InstanceGroup {
  uuid?: string;
  policy: ServerGroupPolicy;
  rules: { max_server_per_host?: number };
  /** uuids of every member, the instances being scheduled included */
  members: string[];
  /** hosts of the members already placed (the scheduler adds each host it picks) */
  hosts: string[];
}

/** Nova's RequestSpec, as much of it as the scheduler reads. */
export interface RequestSpec {
  project_id: string;
  user_id?: string;
  flavor: FlavorSpec;
  image: ImageSpec;
  /** requested AZ (the API splits az:host:node into this and force_hosts/force_nodes) */
  availability_zone?: string;
  /**
   * the zones every network of the server is available in (Neutron's availability_zone_hints, the
   * ones given intersected); absent when none says
   */
  network_availability_zones?: string[];
  /** Nova's scheduler hints: each value a string or a list of strings */
  scheduler_hints: Record<string, unknown>;
  num_instances: number;
  ignore_hosts?: string[];
  force_hosts?: string[];
  force_nodes?: string[];
  requested_destination?: { host?: string; node?: string };
  instance_group?: InstanceGroup;
  /** the instance being placed now (set by the scheduler for each instance of a multi-create) */
  instance_uuid?: string;
}

export interface Selection {
  host: string;
  nodename: string;
  availability_zone: string;
  /** what a claim on this host must allocate */
  resources: ResourceAmounts;
}

/** Why a stage turned a host away. Host-independent `summary`s are what rejections are counted by. */
export interface Rejection {
  /** plural and host-independent, for the summary: "are not in availability zone az2" */
  summary: string;
  /** about this host, when it says more than the summary: "host is in az1, not az2" */
  reason?: string;
  /** Placement's resource shortfall, for "largest free" */
  fit?: ResourceFitFailure;
}

/**
 * Which host runs an instance (uuid → host name), for the instances a request names (its hints'
 * uuids, its group's members), filled by the caller from their records; the scheduler adds each
 * instance it places. Nova reads this from HostState.instances; the provider item does not list
 * its instances (only their count), so the request carries the few it needs.
 */
export interface InstanceLocator {
  /** the host running the instance, if the caller knows it */
  get(uuid: string): string | undefined;
}

export interface FilterContext {
  /** 0 for the first instance of a multi-create, 1 for the next, … */
  index: number;
  config: SchedulerConfig;
  /** the fleet's indexes: a check answers by the host's position `i` in it */
  fleet: FleetIndex;
  instances: InstanceLocator;
}

/**
 * Static parts of a host a verdict may depend on alone: its aggregates; its traits; its
 * hypervisor (supported_instances, hypervisor_type and _version); the names of its metrics; its
 * compute service's state.
 */
export type HostFacet = "aggregates" | "traits" | "hypervisor" | "metrics" | "service";

/** RequestSpec fields a filter's verdict may read, as paths ("flavor.name" is spec.flavor.name). */
export type SpecField = keyof RequestSpec | `flavor.${keyof FlavorSpec}` | `image.${keyof ImageSpec}`;

/**
 * What a filter's verdict for one host depends on: one static part of the host, and the request's
 * fields and options it reads. The stage runner keys the verdicts it keeps with the fleet by the
 * values of these, so that later requests asking the same reuse them.
 */
export interface FilterReads {
  host: HostFacet;
  spec?: readonly SpecField[];
  config?: readonly (keyof SchedulerConfig)[];
}

/**
 * A host's check for one request: null when the host passes. `i` is its position in the fleet.
 * It may also carry `pass`, the same check over many positions at once, for the fleet's loops.
 */
export interface HostCheck {
  (host: HostState, i: number): Rejection | null;
  pass?: PositionsPass;
}

/** Where a pass puts the positions it rejects, in order, each with its rejection. */
export interface RejectionSink {
  reject(i: number, why: Rejection): void;
}

/**
 * A check over `count` live positions (in order): those passing go to `next` (in order), the
 * others to `out` with their rejections; returns how many passed. Answers as the check.
 */
export type PositionsPass = (live: Int32Array, count: number, next: Int32Array, out: RejectionSink) => number;

export interface HostFilter {
  /** Nova's class name, as enabled_filters names it */
  name: string;
  /** Nova's run_filter_once_per_request: skipped for the 2nd+ instance of a multi-create. */
  runOncePerRequest: boolean;
  /**
   * Nova's RUN_ON_REBUILD: whether the filter checks a rebuild's new image against the server's
   * own host (scheduler_hints._nova_check_type = ["rebuild"]); the others pass every host then.
   */
  runOnRebuild: boolean;
  /**
   * When the verdict depends on one static part of the host and on these inputs alone: it is then
   * computed once per distinct value of that part (hosts sharing their aggregates, traits, …) and
   * reused, by later requests reading the same inputs too. Nothing else may be read.
   */
  reads?: FilterReads;
  /**
   * Nova's host_passes for this request: the check, or null when the request asks nothing of this
   * filter (all pass).
   */
  prepare(spec: RequestSpec, ctx: FilterContext): HostCheck | null;
}

export interface WeigherContext {
  config: SchedulerConfig;
  fleet: FleetIndex;
  instances: InstanceLocator;
}

export interface Weigher {
  /** Nova's class name */
  name: string;
  /** the multiplier's option, also the aggregate metadata key overriding it (Nova's get_weight_multiplier) */
  multiplierOption: keyof SchedulerConfig & `${string}weight_multiplier`;
  /** BuildFailureWeigher: the multiplier is applied negated */
  negated?: boolean;
  /** Nova's BaseWeigher.minval: raw values are clamped to it and it is the normalization floor. */
  minval?: number;
  /** Nova's BaseWeigher.maxval: raw values are clamped to it and it is the normalization ceiling. */
  maxval?: number;
  /** The raw value for this request, or null when every host weighs 0 for it. */
  prepare(spec: RequestSpec, ctx: WeigherContext): WeigherValue | null;
  /** the raw value is this one host field, whatever the request: the fleet may read its column directly */
  column?: HostNumber;
}

/**
 * A weigher's raw value of the host at position `i`. It may also carry `fill`, the same values for
 * many positions at once (`raw[j]` for `candidates[j]`), for the fleet's loops.
 */
export interface WeigherValue {
  (host: HostState, i: number): number;
  fill?: (candidates: Int32Array, raw: Float64Array) => void;
}

/** Numeric host fields the fleet keeps as arrays by position (read thousands of times per decision). */
export type HostNumber =
  | "free_ram_mb"
  | "free_disk_mb"
  | "vcpus_total"
  | "vcpus_used"
  | "cpu_allocation_ratio"
  | "num_instances"
  | "num_io_ops"
  | "failed_builds";

/** What the fleet knows beyond each host: lookups filters and weighers use by host position. */
export interface FleetIndex {
  /** the host at a position */
  hostAt(i: number): HostState;
  /** the field's value by position, always equal to the host state's */
  column(field: HostNumber): Float64Array;
  /** column(name) when `name` is a host number the fleet keeps in a column, else undefined */
  numberColumn(name: string): Float64Array | undefined;
  /** a metric's value by position, and whether the host reports it */
  metric(name: string): { value: Float64Array; has: Uint8Array };
  /** each host's host_ip as the 32 bits of an IPv4 address (NaN when it is not one), by position */
  ipv4(): Float64Array;
  /** a mask by position of the hosts with these names */
  named(names: Iterable<string>, caseInsensitive?: boolean): Uint8Array;
  /** numbers by aggregate class (NaN: not worked out yet), kept with the fleet under `key` */
  classNumbers(key: string): Float64Array;
  /** per facet, position → class id (hosts in one class share that facet's value) */
  readonly classOf: Readonly<Record<HostFacet, Int32Array>>;
  readonly classCount: Readonly<Record<HostFacet, number>>;
  /** position → id of its aggregate list (hosts sharing their aggregates share an id) */
  readonly aggregateSetOf: Int32Array;
  readonly aggregateSetCount: number;
  /** positions of the host's nodes (none when it is not in the fleet) */
  positionsOf(host: string): readonly number[];
}

export interface WeighedHost {
  host: HostState;
  /** Σ multiplier × normalized over the weighers; 0 when there was a single candidate. */
  weight: number;
}

// ── The explanation of one decision: plain data, stored with the instance and logged. ──

/** Why Placement's resource check rejected a host, kept as data for "largest free" summaries. */
export interface ResourceFitFailure {
  resource_class: string;
  violation: "missing" | "capacity" | UnitRule;
  requested: number;
  /** whole units left: floor(capacity − used), never below 0 */
  free: number;
  /** the violated bound: min_unit, max_unit or step_size */
  limit?: number;
}

export interface HostRejection {
  host: string;
  nodename: string;
  reason: string;
  /** host-independent phrase rejections are grouped by (see Rejection.summary) */
  summary: string;
  fit?: ResourceFitFailure;
}

/** One stage with every rejected host and its reason. */
export interface DetailedStage {
  /** "previous_instance", "requested_destination", "ignore_hosts", "force_hosts", "force_nodes",
   * "exclude_hosts", "placement", or a filter's Nova name */
  stage: string;
  hosts_in: number;
  hosts_passed: number;
  rejected: HostRejection[];
  /** set when a filter did not run: "run_filter_once_per_request" or "forced host" */
  skipped?: string;
}

export interface WeigherValues {
  host: string;
  nodename: string;
  raw: number;
  normalized: number;
  multiplier: number;
}

export interface DetailedWeigher {
  weigher: string;
  hosts: WeigherValues[];
}

export interface RankedHost {
  host: string;
  nodename: string;
  weight: number;
}

/** Everything about one decision, host by host (the plan CLI prints it; it grows with the fleet). */
export interface DetailedExplanation {
  /** the instance's index in a multi-create */
  index: number;
  /** what a claim must allocate (resourcesFromFlavor) */
  requested: ResourceAmounts;
  /** hosts the decision started from (the fleet) */
  hosts: number;
  stages: DetailedStage[];
  /** empty when at most one host survived: Nova does not weigh a single candidate */
  weighers: DetailedWeigher[];
  /** hosts in final weighed order */
  order: RankedHost[];
}

/** Rejections of one stage sharing a summary. */
export interface RejectionGroup {
  summary: string;
  count: number;
  /** the first few hosts, in fleet order */
  sample: string[];
  /** "lacked" groups: the request and the most any of these hosts had free */
  capacity?: { resource_class: string; requested: number; largest_free: number };
}

export interface CompactStage {
  stage: string;
  hosts_in: number;
  hosts_passed: number;
  rejected: RejectionGroup[];
  skipped?: string;
}

/**
 * One decision, bounded whatever the fleet's size (compactExplanation): counts per stage,
 * rejections grouped with a capped sample, weigher values and the order for the top hosts only.
 * This is what is stored on the instance and what the dry run returns.
 */
export interface DecisionExplanation {
  index: number;
  requested: ResourceAmounts;
  hosts: number;
  stages: CompactStage[];
  /** hosts that passed every stage */
  candidates: number;
  /** per weigher, the values of the top hosts (in `order`) */
  weighers: DetailedWeigher[];
  /** the top hosts in weighed order */
  order: RankedHost[];
  /** the host this instance went to, when it got one */
  chosen?: ChosenHost;
}

/** The chosen host's place in the order and its weighers' values: why it won. */
export interface ChosenHost extends RankedHost {
  /** 0 for the best weighed; more when host_subset_size, a shuffle or a lost claim moved past it */
  rank: number;
  weighers: { weigher: string; raw: number; normalized: number; multiplier: number }[];
}
