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

export type FilterResult = { pass: true } | { pass: false; reason: string };

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
  /** raw value; normalized by the pipeline (value ÷ max over the candidates, floor 0) */
  weigh(host: HostState, spec: RequestSpec): number;
}
