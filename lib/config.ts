// One place for every option. Scheduler options keep Nova's names (group.option) and defaults;
// resource names come from the environment the stack (or the local runtime) sets.

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`configuration ${name}=${raw} is not a number`);
  return n;
}

// ── Scheduler options ────────────────────────────────────────────────────────────────────────
// Every option keeps Nova's (Zed) name and default; the table below is the one place they are
// declared, and SCHEDULER_DEFAULTS, schedulerConfig() (the environment) and the README's table all
// derive from it. Keys are Nova's option names; the [metrics] group's carry a `metrics_` prefix.

export interface SchedulerConfig {
  /** [scheduler] max_attempts: builds per instance, the first included (alternates = this − 1). */
  max_attempts: number;
  /** [scheduler] query_placement_for_availability_zone: the AZ prefilter (member_of the AZ's aggregates). */
  query_placement_for_availability_zone: boolean;
  /** [scheduler] limit_tenants_to_placement_aggregate: the filter_tenant_id prefilter. */
  limit_tenants_to_placement_aggregate: boolean;
  /** [scheduler] placement_aggregate_required_for_tenants: no tenant aggregate → no host. */
  placement_aggregate_required_for_tenants: boolean;
  /** [scheduler] enable_isolated_aggregate_filtering: aggregates requiring traits the request lacks are out. */
  enable_isolated_aggregate_filtering: boolean;
  /** [scheduler] image_metadata_prefilter: image hw_* properties become required traits. */
  image_metadata_prefilter: boolean;
  /** [scheduler] query_placement_for_image_type_support: COMPUTE_IMAGE_TYPE_<disk_format> required. */
  query_placement_for_image_type_support: boolean;
  /** [filter_scheduler] host_subset_size: choose randomly among the best N. */
  host_subset_size: number;
  /** [filter_scheduler] shuffle_best_same_weighed_hosts: shuffle the hosts tied for the best weight. */
  shuffle_best_same_weighed_hosts: boolean;
  /** [filter_scheduler] enabled_filters, run in this order. */
  enabled_filters: string[];
  /** [filter_scheduler] weight_classes. */
  weight_classes: string[];
  /** [filter_scheduler] max_io_ops_per_host: IoOpsFilter's limit. */
  max_io_ops_per_host: number;
  /** [filter_scheduler] max_instances_per_host: NumInstancesFilter's limit. */
  max_instances_per_host: number;
  /** [filter_scheduler] ram_weight_multiplier. */
  ram_weight_multiplier: number;
  /** [filter_scheduler] disk_weight_multiplier. */
  disk_weight_multiplier: number;
  /** [filter_scheduler] cpu_weight_multiplier. */
  cpu_weight_multiplier: number;
  /** [filter_scheduler] io_ops_weight_multiplier. */
  io_ops_weight_multiplier: number;
  /** [filter_scheduler] num_instances_weight_multiplier. */
  num_instances_weight_multiplier: number;
  /** [filter_scheduler] build_failure_weight_multiplier. */
  build_failure_weight_multiplier: number;
  /** [filter_scheduler] soft_affinity_weight_multiplier. */
  soft_affinity_weight_multiplier: number;
  /** [filter_scheduler] soft_anti_affinity_weight_multiplier. */
  soft_anti_affinity_weight_multiplier: number;
  /** [filter_scheduler] image_properties_default_architecture: assumed when an image has none. */
  image_properties_default_architecture: string | null;
  /** [filter_scheduler] isolated_images: image ids that may only run on isolated_hosts. */
  isolated_images: string[];
  /** [filter_scheduler] isolated_hosts: host names reserved for isolated_images. */
  isolated_hosts: string[];
  /** [filter_scheduler] restrict_isolated_hosts_to_isolated_images. */
  restrict_isolated_hosts_to_isolated_images: boolean;
  /** [filter_scheduler] aggregate_image_properties_isolation_namespace. */
  aggregate_image_properties_isolation_namespace: string | null;
  /** [filter_scheduler] aggregate_image_properties_isolation_separator. */
  aggregate_image_properties_isolation_separator: string;
  /** [metrics] weight_multiplier. */
  metrics_weight_multiplier: number;
  /** [metrics] weight_setting: `name=ratio` entries. */
  metrics_weight_setting: string[];
  /** [metrics] required: a host missing a weighed metric fails the request (else weight_of_unavailable). */
  metrics_required: boolean;
  /** [metrics] weight_of_unavailable. */
  metrics_weight_of_unavailable: number;
  /** [DEFAULT] report_interval, seconds between a compute service's heartbeats. */
  report_interval: number;
  /** [DEFAULT] service_down_time, seconds without a heartbeat before a host is down. */
  service_down_time: number;
  /** [DEFAULT] default_availability_zone: the AZ of hosts in no AZ aggregate. */
  default_availability_zone: string;
  /** [DEFAULT] cpu_allocation_ratio: when set, overrides every host's VCPU ratio. */
  cpu_allocation_ratio: number | null;
  /** [DEFAULT] ram_allocation_ratio: when set, overrides every host's MEMORY_MB ratio. */
  ram_allocation_ratio: number | null;
  /** [DEFAULT] disk_allocation_ratio: when set, overrides every host's DISK_GB ratio. */
  disk_allocation_ratio: number | null;
  /** [DEFAULT] initial_cpu_allocation_ratio: a new host's VCPU ratio. */
  initial_cpu_allocation_ratio: number;
  /** [DEFAULT] initial_ram_allocation_ratio: a new host's MEMORY_MB ratio. */
  initial_ram_allocation_ratio: number;
  /** [DEFAULT] initial_disk_allocation_ratio: a new host's DISK_GB ratio. */
  initial_disk_allocation_ratio: number;
  /** [DEFAULT] reserved_host_memory_mb. */
  reserved_host_memory_mb: number;
  /** [DEFAULT] reserved_host_disk_mb. */
  reserved_host_disk_mb: number;
  /** [DEFAULT] reserved_host_cpus. */
  reserved_host_cpus: number;
}

type OptionKind = "int" | "float" | "bool" | "list" | "string" | "float?" | "string?";

export interface SchedulerOption {
  key: keyof SchedulerConfig;
  /** Nova's config group */
  group: "scheduler" | "filter_scheduler" | "metrics" | "DEFAULT";
  /** Nova's option name in that group */
  name: string;
  kind: OptionKind;
  default: SchedulerConfig[keyof SchedulerConfig];
  /** smallest accepted value (Nova's IntOpt min) */
  min?: number;
  help: string;
}

const opt = (
  group: SchedulerOption["group"],
  name: string,
  kind: OptionKind,
  value: SchedulerOption["default"],
  help: string,
  min?: number,
): SchedulerOption => ({
  key: (group === "metrics" ? `metrics_${name}` : name) as keyof SchedulerConfig,
  group,
  name,
  kind,
  default: value,
  help,
  ...(min === undefined ? {} : { min }),
});

/** Nova's default enabled_filters (Zed): AZs are enforced by the placement prefilter. */
const NOVA_DEFAULT_FILTERS = [
  "ComputeFilter",
  "ComputeCapabilitiesFilter",
  "ImagePropertiesFilter",
  "ServerGroupAntiAffinityFilter",
  "ServerGroupAffinityFilter",
];

/** Every scheduler option, in the order the README documents them. */
export const SCHEDULER_OPTIONS: readonly SchedulerOption[] = [
  opt(
    "filter_scheduler",
    "enabled_filters",
    "list",
    NOVA_DEFAULT_FILTERS,
    "Filters run on every request, in this order (names as in Nova).",
  ),
  opt(
    "filter_scheduler",
    "weight_classes",
    "list",
    ["nova.scheduler.weights.all_weighers"],
    "Weighers: class names, Nova's dotted paths, or all_weighers.",
  ),
  opt("filter_scheduler", "host_subset_size", "int", 1, "Choose randomly among the best N weighed hosts.", 1),
  opt(
    "filter_scheduler",
    "shuffle_best_same_weighed_hosts",
    "bool",
    false,
    "Shuffle the hosts tied for the best weight before choosing.",
  ),
  opt(
    "filter_scheduler",
    "max_io_ops_per_host",
    "int",
    8,
    "IoOpsFilter: hosts with this many building instances are out.",
    0,
  ),
  opt(
    "filter_scheduler",
    "max_instances_per_host",
    "int",
    50,
    "NumInstancesFilter: hosts with this many instances are out.",
    1,
  ),
  opt(
    "filter_scheduler",
    "ram_weight_multiplier",
    "float",
    1.0,
    "RAMWeigher; negative stacks instead of spreading.",
  ),
  opt(
    "filter_scheduler",
    "disk_weight_multiplier",
    "float",
    1.0,
    "DiskWeigher; negative stacks instead of spreading.",
  ),
  opt(
    "filter_scheduler",
    "cpu_weight_multiplier",
    "float",
    1.0,
    "CPUWeigher; negative stacks instead of spreading.",
  ),
  opt(
    "filter_scheduler",
    "io_ops_weight_multiplier",
    "float",
    -1.0,
    "IoOpsWeigher; negative prefers idle hosts.",
  ),
  opt(
    "filter_scheduler",
    "num_instances_weight_multiplier",
    "float",
    0.0,
    "NumInstancesWeigher; positive packs, negative spreads.",
  ),
  opt(
    "filter_scheduler",
    "build_failure_weight_multiplier",
    "float",
    1000000.0,
    "BuildFailureWeigher: weight taken per recent failed build.",
  ),
  opt(
    "filter_scheduler",
    "soft_affinity_weight_multiplier",
    "float",
    1.0,
    "ServerGroupSoftAffinityWeigher (positive only).",
  ),
  opt(
    "filter_scheduler",
    "soft_anti_affinity_weight_multiplier",
    "float",
    1.0,
    "ServerGroupSoftAntiAffinityWeigher (positive only).",
  ),
  opt(
    "filter_scheduler",
    "image_properties_default_architecture",
    "string?",
    null,
    "ImagePropertiesFilter: architecture assumed for images without hw_architecture.",
  ),
  opt(
    "filter_scheduler",
    "isolated_images",
    "list",
    [],
    "IsolatedHostsFilter: image ids that run only on isolated_hosts.",
  ),
  opt(
    "filter_scheduler",
    "isolated_hosts",
    "list",
    [],
    "IsolatedHostsFilter: host names reserved for isolated_images.",
  ),
  opt(
    "filter_scheduler",
    "restrict_isolated_hosts_to_isolated_images",
    "bool",
    true,
    "IsolatedHostsFilter: isolated hosts take isolated images only.",
  ),
  opt(
    "filter_scheduler",
    "aggregate_image_properties_isolation_namespace",
    "string?",
    null,
    "AggregateImagePropertiesIsolation: only metadata keys in this namespace.",
  ),
  opt(
    "filter_scheduler",
    "aggregate_image_properties_isolation_separator",
    "string",
    ".",
    "AggregateImagePropertiesIsolation: namespace separator.",
  ),
  opt(
    "scheduler",
    "max_attempts",
    "int",
    3,
    "Builds per instance, the first included; alternates per instance = max_attempts − 1.",
    1,
  ),
  opt(
    "scheduler",
    "query_placement_for_availability_zone",
    "bool",
    true,
    "Prefilter: a requested AZ restricts placement to that AZ's aggregates.",
  ),
  opt(
    "scheduler",
    "limit_tenants_to_placement_aggregate",
    "bool",
    false,
    "Prefilter: projects named in filter_tenant_id* metadata get only their aggregates.",
  ),
  opt(
    "scheduler",
    "placement_aggregate_required_for_tenants",
    "bool",
    false,
    "With the tenant prefilter: a project with no aggregate gets no host.",
  ),
  opt(
    "scheduler",
    "enable_isolated_aggregate_filtering",
    "bool",
    false,
    "Prefilter: aggregates with trait:X=required metadata only take requests requiring X.",
  ),
  opt(
    "scheduler",
    "image_metadata_prefilter",
    "bool",
    false,
    "Prefilter: image hw_* bus/model/arch properties become required traits.",
  ),
  opt(
    "scheduler",
    "query_placement_for_image_type_support",
    "bool",
    false,
    "Prefilter: require COMPUTE_IMAGE_TYPE_<disk_format>.",
  ),
  opt("metrics", "weight_multiplier", "float", 1.0, "MetricsWeigher's multiplier."),
  opt("metrics", "weight_setting", "list", [], "MetricsWeigher and MetricsFilter: name=ratio entries."),
  opt(
    "metrics",
    "required",
    "bool",
    true,
    "A host missing a weighed metric fails the request (MetricsFilter prevents it).",
  ),
  opt(
    "metrics",
    "weight_of_unavailable",
    "float",
    -10000.0,
    "Weight of a host missing a metric when not required.",
  ),
  // Nova heartbeats every 10 s and calls a service down after 60 s; here a heartbeat is a paid
  // write (on-demand, $0.625 per million units) beside the agent's long polls (20 s, $0.40 per
  // million requests): at 40 s an idle host costs 64,800 writes + 129,600 receives a month, about
  // $0.09, under the $0.10 target, where 10 s would be $0.21. service_down_time keeps Nova's ratio
  // of three missed heartbeats, so a dead host is noticed within 2 to 3 minutes (the watchdog
  // sweeps once a minute).
  opt("DEFAULT", "report_interval", "int", 40, "Seconds between a compute service's heartbeats.", 1),
  opt(
    "DEFAULT",
    "service_down_time",
    "int",
    120,
    "Seconds without a heartbeat before a compute service is down.",
  ),
  opt(
    "DEFAULT",
    "default_availability_zone",
    "string",
    "nova",
    "The AZ of hosts in no AZ aggregate and registered with none.",
  ),
  opt("DEFAULT", "cpu_allocation_ratio", "float?", null, "When set, every host's VCPU allocation ratio."),
  opt(
    "DEFAULT",
    "ram_allocation_ratio",
    "float?",
    null,
    "When set, every host's MEMORY_MB allocation ratio.",
  ),
  opt("DEFAULT", "disk_allocation_ratio", "float?", null, "When set, every host's DISK_GB allocation ratio."),
  opt("DEFAULT", "initial_cpu_allocation_ratio", "float", 16.0, "A new host's VCPU allocation ratio."),
  opt("DEFAULT", "initial_ram_allocation_ratio", "float", 1.5, "A new host's MEMORY_MB allocation ratio."),
  opt("DEFAULT", "initial_disk_allocation_ratio", "float", 1.0, "A new host's DISK_GB allocation ratio."),
  opt(
    "DEFAULT",
    "reserved_host_memory_mb",
    "int",
    512,
    "Memory kept for the host (Placement's MEMORY_MB reserved).",
    0,
  ),
  opt(
    "DEFAULT",
    "reserved_host_disk_mb",
    "int",
    0,
    "Disk kept for the host (DISK_GB reserved, rounded up to GB).",
    0,
  ),
  opt("DEFAULT", "reserved_host_cpus", "int", 0, "CPUs kept for the host (VCPU reserved).", 0),
];

/** Nova's defaults for every scheduler option. */
export const SCHEDULER_DEFAULTS: Readonly<SchedulerConfig> = Object.freeze(
  Object.fromEntries(SCHEDULER_OPTIONS.map((o) => [o.key, o.default])) as unknown as SchedulerConfig,
);

/** The environment variable an option is read from: NOVALESS_<OPTION> (lists comma-separated). */
export function schedulerEnvName(o: SchedulerOption): string {
  return `NOVALESS_${o.key.toUpperCase()}`;
}

const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);

/** An option's value from its text (an environment variable, or a scenario's string); throws if invalid. */
export function parseSchedulerOption(
  o: SchedulerOption,
  raw: string,
): SchedulerConfig[keyof SchedulerConfig] {
  const where = `configuration ${schedulerEnvName(o)}=${raw}`;
  switch (o.kind) {
    case "list":
      return raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
    case "bool": {
      const v = raw.trim().toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      throw new Error(`${where} is not a boolean`);
    }
    case "string":
      return raw;
    case "string?":
      return raw === "" ? null : raw;
    case "float?":
      if (raw.trim() === "") return null;
      return checkNumber(o, Number(raw), where);
    case "int": {
      const n = checkNumber(o, Number(raw), where);
      if (!Number.isInteger(n)) throw new Error(`${where} is not an integer`);
      return n;
    }
    case "float":
      return checkNumber(o, Number(raw), where);
  }
}

function checkNumber(o: SchedulerOption, n: number, where: string): number {
  if (Number.isNaN(n) || !Number.isFinite(n)) throw new Error(`${where} is not a number`);
  if (o.min !== undefined && n < o.min) throw new Error(`${where} is below its minimum ${o.min}`);
  return n;
}

export function schedulerConfig(): SchedulerConfig {
  const out: Record<string, unknown> = {};
  for (const o of SCHEDULER_OPTIONS) {
    const raw = process.env[schedulerEnvName(o)];
    out[o.key] = raw === undefined ? cloneDefault(o.default) : parseSchedulerOption(o, raw);
  }
  return out as unknown as SchedulerConfig;
}

function cloneDefault<T>(v: T): T {
  return (Array.isArray(v) ? [...v] : v) as T;
}

/** The environment that schedulerConfig() reads back as `options` (the stack sets it on functions). */
export function schedulerEnvironment(options: SchedulerConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const o of SCHEDULER_OPTIONS) {
    const v = options[o.key];
    env[schedulerEnvName(o)] = Array.isArray(v) ? v.join(",") : v === null ? "" : String(v);
  }
  return env;
}

export interface Resources {
  hostsTable: string;
  allocationsTable: string;
  instancesTable: string;
  servicesTable: string;
  schedulingTable: string;
  catalogTable: string;
  buildRequestsQueueUrl: string;
  buildRequestsDlqUrl: string;
  conductorStateMachineArn: string;
  /** Prefix of every compute host's queue name (see computeQueueName in lib/compute/queue-name.ts). */
  computeQueuePrefix: string;
  /** compute → conductor reports (lib/messages/reports.ts) and their dead-letter queue */
  computeEventsQueueUrl: string;
  computeEventsDlqUrl: string;
}

/**
 * The deployed stack's default compute queue prefix: `${stackName}-compute-` lowercased, for the
 * stack infra/app.ts names "NovalessStack". An agent started with no NOVALESS_COMPUTE_QUEUE_PREFIX
 * therefore reads the queues that stack's IAM policy covers.
 */
export const DEFAULT_COMPUTE_QUEUE_PREFIX = "novalessstack-compute-";

export function resources(): Resources {
  return {
    hostsTable: process.env.NOVALESS_HOSTS_TABLE || "novaless-hosts",
    allocationsTable: process.env.NOVALESS_ALLOCATIONS_TABLE || "novaless-allocations",
    instancesTable: process.env.NOVALESS_INSTANCES_TABLE || "novaless-instances",
    servicesTable: process.env.NOVALESS_SERVICES_TABLE || "novaless-services",
    schedulingTable: process.env.NOVALESS_SCHEDULING_TABLE || "novaless-scheduling",
    catalogTable: process.env.NOVALESS_CATALOG_TABLE || "novaless-catalog",
    buildRequestsQueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL || "",
    buildRequestsDlqUrl: process.env.NOVALESS_BUILD_REQUESTS_DLQ_URL || "",
    conductorStateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN || "",
    computeQueuePrefix: process.env.NOVALESS_COMPUTE_QUEUE_PREFIX || DEFAULT_COMPUTE_QUEUE_PREFIX,
    computeEventsQueueUrl: process.env.NOVALESS_COMPUTE_EVENTS_QUEUE_URL || "",
    computeEventsDlqUrl: process.env.NOVALESS_COMPUTE_EVENTS_DLQ_URL || "",
  };
}

/**
 * [DEFAULT] instance_build_timeout: seconds an attempt may take from its placement before the
 * watchdog fences it and reschedules (Nova's default 0 disables it and errors out instead; a
 * serverless build path has no long-running compute to notice a lost build, so it is on here).
 */
export function instanceBuildTimeout(): number {
  return num("NOVALESS_INSTANCE_BUILD_TIMEOUT", 600);
}

/** Largest API request body accepted, in bytes (Nova's osapi_max_request_body_size is 112 KiB). */
export const MAX_REQUEST_BODY_BYTES = num("NOVALESS_MAX_REQUEST_BODY_BYTES", 114688);
