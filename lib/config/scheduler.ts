// The scheduler's options (and the compute node's that Nova's scheduler also reads): nova/conf/
// scheduler.py, compute.py and metrics.py. Every option keeps Nova's (Zed) name and default; keys
// are Nova's option names, the [metrics] group's with a `metrics_` prefix. SCHEDULER_DEFAULTS and
// schedulerConfig() (accessors.ts) derive from them.
import type { AgentUse, ConfigOption, OptionKind } from "./option.js";

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

export interface SchedulerOption extends ConfigOption {
  key: keyof SchedulerConfig;
  group: "scheduler" | "filter_scheduler" | "metrics" | "DEFAULT";
  default: SchedulerConfig[keyof SchedulerConfig];
}

const opt = (
  group: SchedulerOption["group"],
  name: string,
  kind: OptionKind,
  value: SchedulerOption["default"],
  help: string,
  min?: number,
  extra: { agent?: AgentUse } = {},
): SchedulerOption => {
  const key = (group === "metrics" ? `metrics_${name}` : name) as keyof SchedulerConfig;
  return {
    key,
    group,
    name,
    nova: true,
    env: `NOVALESS_${key.toUpperCase()}`,
    kind,
    default: value,
    help,
    topic: "scheduler",
    ...(min === undefined ? {} : { min }),
    ...extra,
  };
};

/** Nova's default enabled_filters (Zed): AZs are enforced by the placement prefilter. */
const NOVA_DEFAULT_FILTERS = [
  "ComputeFilter",
  "ComputeCapabilitiesFilter",
  "ImagePropertiesFilter",
  "ServerGroupAntiAffinityFilter",
  "ServerGroupAffinityFilter",
];

/** Every scheduler option (SchedulerConfig's keys), in the order docs/configuration.md shows them. */
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
  // report and write ($0.40 per million SQS requests, $0.625 per million write units) beside the
  // agent's long polls (20 s, $0.40 per million requests). The agent checks every interval but
  // sends a heartbeat with nothing new only when due (lib/compute/heartbeat.ts): at 40 s and
  // 120 s an idle host reports every 80 s, 32,400 reports and writes beside 129,600 receives a
  // month (bench:cost measures it). service_down_time keeps Nova's ratio of three intervals, so a
  // dead host is noticed within 2 to 3 minutes (the watchdog sweeps once a minute).
  opt("DEFAULT", "report_interval", "int", 40, "Seconds between a compute service's heartbeats.", 1, {
    // novaless-compute has defaulted to Nova's 10 s since it was packaged; kept as it was, so an
    // installed host's heartbeat does not change under it (the cost figure above assumes 40 s).
    agent: { default: 10 },
  }),
  opt(
    "DEFAULT",
    "service_down_time",
    "int",
    120,
    "Seconds without a heartbeat before a compute service is down. A host reads it too: an idle host's heartbeat, which says nothing new, is sent only once its last is half this old, or when waiting one more interval would leave less than one to spare; set it on hosts as on the control plane.",
    undefined,
    { agent: {} },
  ),
  opt(
    "DEFAULT",
    "default_availability_zone",
    "string",
    "nova",
    "The AZ of hosts in no AZ aggregate and registered with none.",
    undefined,
    { agent: {} },
  ),
  opt(
    "DEFAULT",
    "cpu_allocation_ratio",
    "float?",
    null,
    "Virtual CPUs per physical CPU: when set, every host's VCPU allocation ratio.",
    undefined,
    { agent: { defaultText: "16.0 (initial_cpu_allocation_ratio)" } },
  ),
  opt(
    "DEFAULT",
    "ram_allocation_ratio",
    "float?",
    null,
    "Virtual memory per physical memory: when set, every host's MEMORY_MB allocation ratio.",
    undefined,
    { agent: { defaultText: "1.5 (initial_ram_allocation_ratio)" } },
  ),
  opt(
    "DEFAULT",
    "disk_allocation_ratio",
    "float?",
    null,
    "Virtual disk per physical disk: when set, every host's DISK_GB allocation ratio.",
    undefined,
    { agent: { defaultText: "1.0 (initial_disk_allocation_ratio)" } },
  ),
  opt("DEFAULT", "initial_cpu_allocation_ratio", "float", 16.0, "A new host's VCPU allocation ratio."),
  opt("DEFAULT", "initial_ram_allocation_ratio", "float", 1.5, "A new host's MEMORY_MB allocation ratio."),
  opt("DEFAULT", "initial_disk_allocation_ratio", "float", 1.0, "A new host's DISK_GB allocation ratio."),
  opt(
    "DEFAULT",
    "reserved_host_memory_mb",
    "int",
    512,
    "Memory (MB) kept for the host, not for instances (Placement's MEMORY_MB reserved).",
    0,
    { agent: {} },
  ),
  opt(
    "DEFAULT",
    "reserved_host_disk_mb",
    "int",
    0,
    "Disk (MB) kept for the host (DISK_GB reserved, rounded up to GB).",
    0,
    { agent: {} },
  ),
  opt("DEFAULT", "reserved_host_cpus", "int", 0, "CPUs kept for the host (VCPU reserved).", 0, {
    agent: {},
  }),
];

/** Nova's defaults for every scheduler option. */
export const SCHEDULER_DEFAULTS: Readonly<SchedulerConfig> = Object.freeze(
  Object.fromEntries(SCHEDULER_OPTIONS.map((o) => [o.key, o.default])) as unknown as SchedulerConfig,
);
