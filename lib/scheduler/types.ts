// The scheduler's own view of the world: pure data, no AWS and no Placement types.
export type ResourceAmounts = Record<string, number>;

export interface HostResource {
  /** (total − reserved) × allocation_ratio */
  capacity: number;
  used: number;
  max_unit: number;
  min_unit: number;
  step_size: number;
}

/** Nova's HostState: what the filters and weighers read about one compute node. */
export interface HostState {
  host: string;
  nodename: string;
  availability_zone: string;
  aggregates: string[];
  traits: string[];
  resources: Record<string, HostResource>;
  /** Nova reports free_ram_mb = capacity-free without the ratio; we weigh by usable free. */
  free_ram_mb: number;
  free_disk_mb: number;
  vcpus_total: number;
  vcpus_used: number;
  num_instances: number;
  failed_builds: number;
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  supported_instances: [string, string, string][];
  service: {
    disabled: boolean;
    disabled_reason: string | null;
    forced_down: boolean;
    /** computed by the caller from the last heartbeat and service_down_time */
    up: boolean;
  };
}

export interface FlavorSpec {
  id: string;
  name: string;
  vcpus: number;
  memory_mb: number;
  root_gb: number;
  ephemeral_gb: number;
  swap: number;
  extra_specs: Record<string, string>;
}

export interface ImageSpec {
  id: string;
  name: string;
  properties: Record<string, string>;
}

/** Nova's RequestSpec, as much of it as the scheduler reads. */
export interface RequestSpec {
  project_id: string;
  user_id?: string;
  flavor: FlavorSpec;
  image: ImageSpec;
  /** requested AZ, possibly in az, az:host, az::node or az:host:node form */
  availability_zone?: string;
  scheduler_hints: Record<string, unknown>;
  num_instances: number;
  ignore_hosts?: string[];
  force_hosts?: string[];
  force_nodes?: string[];
  requested_destination?: { host?: string; node?: string };
}

export interface Selection {
  host: string;
  nodename: string;
  availability_zone: string;
  /** what a claim on this host must allocate */
  resources: ResourceAmounts;
}

export type FilterResult =
  | { pass: true }
  | {
      pass: false;
      /** about this host, for the explanation: "host is in availability zone az1, not az2" */
      reason: string;
      /**
       * the same for every host it rejects, in the plural, for NoValidHost's summary:
       * "are not in availability zone az2". Rejections are counted by it.
       */
      summary?: string;
    };

export interface FilterContext {
  /** 0 for the first instance of a multi-create, 1 for the next, … */
  index: number;
  config: import("../config.js").SchedulerConfig;
}

export interface HostFilter {
  name: string;
  /** Nova's run_filter_once_per_request: skipped for the 2nd+ instance of a multi-create. */
  runOncePerRequest: boolean;
  hostPasses(host: HostState, spec: RequestSpec, ctx: FilterContext): FilterResult;
}

export interface Weigher {
  name: string;
  multiplier(config: import("../config.js").SchedulerConfig): number;
  /**
   * raw value; normalized by the pipeline as Nova's nova/weights.py normalize():
   * (v − min) ÷ (max − min), where min/max are `minval`/`maxval` when set, else observed.
   * With minval 0 (RAM, disk, CPU weighers) that is value ÷ max over the candidates.
   */
  weigh(host: HostState, spec: RequestSpec): number;
  /** Nova's BaseWeigher.minval: raw values are clamped to it and it is the normalization floor. */
  minval?: number;
  /** Nova's BaseWeigher.maxval: raw values are clamped to it and it is the normalization ceiling. */
  maxval?: number;
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
  violation: "missing" | "capacity" | "min_unit" | "max_unit" | "step_size";
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
  /** host-independent phrase rejections are grouped by (see FilterResult.summary) */
  summary: string;
  fit?: ResourceFitFailure;
}

export interface StageExplanation {
  /** "requested_destination", "ignore_hosts", "force_hosts", "force_nodes", "exclude_hosts",
   * "resource_fit", or a filter's Nova name */
  stage: string;
  hosts_in: number;
  hosts_passed: number;
  rejected: HostRejection[];
  /** set when a filter did not run: "run_filter_once_per_request" or "forced host" */
  skipped?: string;
}

export interface WeigherExplanation {
  weigher: string;
  hosts: { host: string; nodename: string; raw: number; normalized: number; multiplier: number }[];
}

export interface DecisionExplanation {
  /** the instance's index in a multi-create */
  index: number;
  /** what a claim must allocate (resourcesFromFlavor) */
  requested: ResourceAmounts;
  stages: StageExplanation[];
  /** empty when at most one host survived: Nova does not weigh a single candidate */
  weighers: WeigherExplanation[];
  /** hosts in final weighed order */
  order: { host: string; nodename: string; weight: number }[];
}
