// Every option of novaless, declared once: its Nova group and name (Nova's, or Keystone's, where
// they have one), its environment variable, type, default and help. The functions (API,
// scheduler, conductor), the local runtime, identity and novaless-compute all read their options
// through this file, and docs/configuration.md and packaging/compute.conf.example are generated
// from it (`npm run docs:config`; test/unit/config-docs.test.ts fails when they drift).
// It sits at the bottom of lib's imports: it imports no other folder of lib.
import { z } from "zod";

/** An option's type; `?` kinds may be unset (null), an empty value unsets them. */
export type OptionKind = "int" | "float" | "bool" | "list" | "string" | "float?" | "string?" | "bool?";
export type OptionValue = number | boolean | string | string[] | null;

/** The part an option belongs to: docs/configuration.md's sections. */
export type Topic =
  | "scheduler"
  | "compute"
  | "conductor"
  | "api"
  | "identity"
  | "quota"
  | "placement"
  | "observability"
  | "deployment"
  | "resources";

export interface ConfigOption {
  /** the name the code reads it by (SchedulerConfig's keys for the scheduler's) */
  key: string;
  /** its group and name in nova.conf (or keystone.conf) style */
  group: string;
  name: string;
  /** Nova's, Keystone's or keystonemiddleware's own option; otherwise novaless's */
  nova: boolean;
  /** the environment variable it is read from */
  env: string;
  /** older environment variables still honoured after env */
  aliases?: readonly string[];
  kind: OptionKind;
  /** undefined: required, or computed when read (defaultText says how) */
  default?: OptionValue;
  defaultText?: string;
  /** smallest accepted value (Nova's IntOpt min) */
  min?: number;
  choices?: readonly string[];
  /** an invalid value is ignored (the default applies) rather than refused */
  lenient?: boolean;
  help: string;
  topic: Topic;
  /** novaless-compute reads it too, from compute.conf [group] name and NOVALESS_<GROUP>_<NAME> */
  agent?: AgentUse;
}

export interface AgentUse {
  required?: boolean;
  /** a flag that sets it (besides --set group.name=value) */
  flag?: string;
  /** the agent's default where it differs from the table's (see report_interval) */
  default?: OptionValue;
  defaultText?: string;
}

// ── Parsing: one zod schema per kind ───────────────────────────────────────────────────────────

const TRUE = ["true", "1", "yes", "on", "y", "t"];
const FALSE = ["false", "0", "no", "off", "n", "f"];

const boolText = z.union(
  [
    z.boolean(),
    z
      .string()
      .trim()
      .toLowerCase()
      .pipe(z.enum([...TRUE, ...FALSE]))
      .transform((v) => TRUE.includes(v)),
  ],
  { error: "is not a boolean" },
);

function numberSchema(o: ConfigOption): z.ZodType<number> {
  let n = z.coerce.number({ error: "is not a number" });
  if (o.kind === "int") n = n.int({ error: "is not an integer" });
  if (o.min !== undefined) n = n.min(o.min, { error: `is below its minimum ${o.min}` });
  return n;
}

const schemas = new WeakMap<ConfigOption, z.ZodType<OptionValue>>();

/** The schema that turns an option's text (or an INI file's value) into its value. */
function schemaOf(o: ConfigOption): z.ZodType<OptionValue> {
  let s = schemas.get(o);
  if (s) return s;
  const nullable = <T extends OptionValue>(inner: z.ZodType<T>): z.ZodType<T | null> =>
    z.preprocess((v) => (v === "" ? null : v), inner.nullable()) as z.ZodType<T | null>;
  switch (o.kind) {
    case "int":
    case "float":
      s = numberSchema(o);
      break;
    case "float?":
      s = nullable(numberSchema(o));
      break;
    case "bool":
      s = boolText;
      break;
    case "bool?":
      s = nullable(boolText);
      break;
    case "list":
      s = z.string().transform((v) =>
        v
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean),
      );
      break;
    case "string":
      s = o.choices
        ? z
            .string()
            .trim()
            .toLowerCase()
            .pipe(z.enum(o.choices as [string, ...string[]], { error: "is not a choice" }))
        : z.string({ error: "is not a string" });
      break;
    case "string?":
      s = nullable(z.string({ error: "is not a string" }));
      break;
  }
  schemas.set(o, s);
  return s;
}

/** An option's value from its text, or why not ("is not a number", "is below its minimum 1", …). */
export function checkOption(
  o: ConfigOption,
  raw: string | number | boolean,
): { ok: true; value: OptionValue } | { ok: false; problem: string } {
  const text = typeof raw === "boolean" && !o.kind.startsWith("bool") ? String(raw) : raw;
  const r = schemaOf(o).safeParse(typeof text === "number" ? String(text) : text);
  if (r.success) return { ok: true, value: r.data };
  const problem = r.error.issues[0]?.message ?? "is invalid";
  return {
    ok: false,
    problem: problem === "is not a choice" ? `must be one of ${(o.choices ?? []).join(", ")}` : problem,
  };
}

/** An option's value from its text; throws `configuration ENV=raw <problem>`. */
export function parseOption(o: ConfigOption, raw: string): OptionValue {
  const r = checkOption(o, raw);
  if (!r.ok) throw new Error(`configuration ${o.env}=${raw} ${r.problem}`);
  return r.value;
}

const cloneValue = <T>(v: T): T => (Array.isArray(v) ? ([...v] as T) : v);

/** The environment's text for an option (its variable, else an alias), undefined when unset. */
function envText(o: ConfigOption, env: Record<string, string | undefined>): string | undefined {
  for (const name of [o.env, ...(o.aliases ?? [])]) {
    const v = env[name];
    if (v !== undefined) return v;
  }
  return undefined;
}

// Options are read on every call (tests and the local runtime change the environment at run
// time); the last text seen and its value are kept, so an unchanged option is not parsed again.
const lastRead = new WeakMap<ConfigOption, { text: string | undefined; value: OptionValue | undefined }>();

/**
 * An option's value from the environment. An empty variable is unset, except for lists (empty)
 * and `?` kinds (null). Invalid text throws, unless the option is lenient (then the default).
 */
export function readOption(
  o: ConfigOption,
  env: Record<string, string | undefined> = process.env,
): OptionValue | undefined {
  const text = envText(o, env);
  const last = lastRead.get(o);
  if (env === process.env && last && last.text === text) return cloneValue(last.value);
  let value: OptionValue | undefined;
  if (text === undefined || (text === "" && o.kind !== "list" && !o.kind.endsWith("?"))) {
    value = o.default;
  } else if (o.lenient) {
    const r = checkOption(o, text);
    value = r.ok ? r.value : o.default;
  } else {
    value = parseOption(o, text);
  }
  if (env === process.env) lastRead.set(o, { text, value });
  return cloneValue(value);
}

// ── The scheduler's options (and the compute node's that Nova's scheduler also reads) ──────────
// Every option keeps Nova's (Zed) name and default; keys are Nova's option names, the [metrics]
// group's with a `metrics_` prefix. SCHEDULER_DEFAULTS and schedulerConfig() derive from them.

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

/** The environment variable an option is read from: NOVALESS_<OPTION> (lists comma-separated). */
export function schedulerEnvName(o: SchedulerOption): string {
  return o.env;
}

/** An option's value from its text (an environment variable, or a scenario's string); throws if invalid. */
export function parseSchedulerOption(
  o: SchedulerOption,
  raw: string,
): SchedulerConfig[keyof SchedulerConfig] {
  return parseOption(o, raw) as SchedulerConfig[keyof SchedulerConfig];
}

export function schedulerConfig(): SchedulerConfig {
  const out: Record<string, unknown> = {};
  for (const o of SCHEDULER_OPTIONS) out[o.key] = readOption(o);
  return out as unknown as SchedulerConfig;
}

/** The environment that schedulerConfig() reads back as `options` (the stack sets it on functions). */
export function schedulerEnvironment(options: SchedulerConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const o of SCHEDULER_OPTIONS) {
    const v = options[o.key];
    env[o.env] = Array.isArray(v) ? v.join(",") : v === null ? "" : String(v);
  }
  return env;
}

// ── novaless-compute's own options (compute.conf; lib/compute/agent-config.ts loads them) ──────

const agentEnv = (group: string, name: string) => `NOVALESS_${group.toUpperCase()}_${name.toUpperCase()}`;

const agentOpt = (
  group: "DEFAULT" | "libvirt" | "ovs" | "novaless" | "fake",
  name: string,
  kind: OptionKind,
  value: OptionValue | undefined,
  help: string,
  extra: Partial<ConfigOption> & { agent?: AgentUse } = {},
): ConfigOption => ({
  key: `compute_${group === "DEFAULT" ? "" : `${group}_`}${name}`,
  group,
  name,
  nova: group === "DEFAULT" || group === "libvirt",
  env: agentEnv(group, name),
  kind,
  ...(value === undefined ? {} : { default: value }),
  help,
  topic: "compute",
  ...extra,
  agent: extra.agent ?? {},
});

export const COMPUTE_OPTIONS: readonly ConfigOption[] = [
  agentOpt(
    "DEFAULT",
    "host",
    "string",
    undefined,
    "The host name this compute service registers as (Nova's [DEFAULT] host).",
    { defaultText: "the machine's FQDN", agent: { flag: "host" } },
  ),
  agentOpt("DEFAULT", "my_ip", "string", undefined, "The host's IP address (os-hypervisors host_ip).", {
    defaultText: "the first non-internal IPv4 address",
  }),
  agentOpt(
    "DEFAULT",
    "compute_driver",
    "string",
    "exec",
    "The virt driver: exec (each server a process), libvirt, or fake (simulation).",
    { choices: ["exec", "libvirt", "fake"], agent: { flag: "driver" } },
  ),
  agentOpt(
    "DEFAULT",
    "instances_path",
    "string",
    "/var/lib/novaless/instances",
    "Where instances' files live; its filesystem's size is the host's DISK_GB.",
    { agent: { flag: "instances-path" } },
  ),
  agentOpt(
    "DEFAULT",
    "sync_power_state_interval",
    "int",
    600,
    "Seconds between power-state syncs; -1 disables them.",
  ),
  agentOpt(
    "DEFAULT",
    "shutdown_timeout",
    "int",
    60,
    "Seconds a clean shutdown may take before the guest is forced off.",
  ),
  agentOpt("libvirt", "connection_uri", "string", "qemu:///system", "libvirt's connection URI.", {
    agent: { flag: "libvirt-uri" },
  }),
  agentOpt("libvirt", "virt_type", "string", "kvm", "The domain type: kvm, qemu (or test)."),
  agentOpt(
    "libvirt",
    "images_path",
    "string",
    undefined,
    "The image cache: <images_path>/<image id> is an image's file.",
    { defaultText: "<instances_path>/_base" },
  ),
  // Neutron's openvswitch_agent.ini [ovs] bridge_mappings, read by the libvirt driver
  agentOpt(
    "ovs",
    "bridge_mappings",
    "string?",
    undefined,
    "Each physical network's Open vSwitch bridge on this host, <physical_network>:<bridge>, comma-separated (e.g. physnet1:br-ex,physnet2:br-vlan), as Neutron's Open vSwitch agent's option. A port on a network whose physical network is not listed fails its build here (PortBindingFailed); a vlan network's ports are tagged with their VLAN on that bridge (libvirt driver).",
    { defaultText: "none: a port fails to bind on this host" },
  ),
  agentOpt(
    "novaless",
    "events_url",
    "string",
    undefined,
    "compute-events' function URL, where the host posts its reports signed with its session (stack output ComputeEventsUrl).",
    { defaultText: "required", agent: { required: true } },
  ),
  agentOpt(
    "novaless",
    "compute_queue_prefix",
    "string",
    undefined,
    "Compute queues' prefix (stack output ComputeQueuePrefix).",
    { defaultText: "required", agent: { required: true } },
  ),
  agentOpt(
    "novaless",
    "images_bucket",
    "string",
    undefined,
    "The S3 bucket of snapshots' image data (stack output ImagesBucket): a snapshot is uploaded there, and a host boots one from it.",
    { defaultText: "the resource images_bucket (NOVALESS_IMAGES_BUCKET)" },
  ),
  agentOpt("novaless", "region", "string", undefined, "The stack's AWS region (stack output Region).", {
    defaultText: "the SDK's (AWS_REGION)",
  }),
  agentOpt(
    "novaless",
    "assume_role_arn",
    "string",
    undefined,
    "ComputeHostRole (stack output ComputeHostRoleArn), assumed with session name and tag novaless-host = the host.",
    { defaultText: "none: the credentials the SDK finds are the host's session already" },
  ),
  agentOpt(
    "novaless",
    "report_spool_path",
    "string",
    "/var/lib/novaless/reports",
    "Where the host keeps each report that answers a cast until compute-events has applied it (one file per report, in the unit's StateDirectory): kept across restarts and outages, sent in order per instance. Back it up with the instances; never share it between hosts.",
  ),
  agentOpt("novaless", "concurrency", "int", 8, "Builds at once."),
  agentOpt("novaless", "wait_time_seconds", "int", 20, "The long poll's wait (SQS WaitTimeSeconds, 1-20)."),
  // One GetQueueAttributes a count: every 300 s is 8,640 requests, $0.0035 a host-month.
  agentOpt(
    "novaless",
    "dead_letter_check_interval",
    "int",
    300,
    "Seconds between the agent's counts of its dead-letter queue, reported with its heartbeats while not empty (the ComputeDeadLetters alarm's source); -1 disables them.",
  ),
  agentOpt("fake", "build_ms", "int", 1000, "How long a fake build takes."),
  agentOpt("fake", "fail_builds", "bool", false, "The fake driver fails every build."),
  agentOpt(
    "fake",
    "live_migration_ms",
    "int",
    2000,
    "How long a fake live migration takes; its source reports its progress meanwhile. force_complete ends it at once, an abort cancels it.",
  ),
];

/** The sections of compute.conf, in its order. */
export const AGENT_SECTIONS = ["DEFAULT", "libvirt", "ovs", "novaless", "fake"] as const;
export type AgentSection = (typeof AGENT_SECTIONS)[number];

/** The order compute.conf and `novaless-compute --help` list [DEFAULT]'s options in. */
const AGENT_DEFAULT_ORDER = [
  "host",
  "my_ip",
  "compute_driver",
  "instances_path",
  "default_availability_zone",
  "reserved_host_memory_mb",
  "reserved_host_cpus",
  "reserved_host_disk_mb",
  "cpu_allocation_ratio",
  "ram_allocation_ratio",
  "disk_allocation_ratio",
  "report_interval",
  "service_down_time",
  "sync_power_state_interval",
  "shutdown_timeout",
];

// ── The API's, identity's, quotas', the conductor's and the stack's options ───────────────────

const row = (o: ConfigOption): ConfigOption => o;

/** The tokens accepted when NOVALESS_AUTH_TOKENS is unset (lib/api/settings.ts parses the JSON). */
const DEMO_TOKENS_TEXT = "admin-token (admin, member of project admin) and demo-token (member of demo)";

export const SERVICE_OPTIONS: readonly ConfigOption[] = [
  row({
    key: "instance_build_timeout",
    group: "DEFAULT",
    name: "instance_build_timeout",
    nova: true,
    env: "NOVALESS_INSTANCE_BUILD_TIMEOUT",
    kind: "float",
    default: 600,
    min: 0,
    // Nova's default 0 disables it; a serverless build path has no long-running compute to notice a
    // lost build, so it is on here.
    help: "Seconds an attempt may take from its placement before the watchdog fences it and reschedules.",
    topic: "conductor",
  }),
  row({
    key: "allow_resize_to_same_host",
    group: "DEFAULT",
    name: "allow_resize_to_same_host",
    nova: true,
    env: "NOVALESS_ALLOW_RESIZE_TO_SAME_HOST",
    kind: "bool",
    default: false,
    help: "A resize may stay on its host; when false (Nova's default) the source is in the request's ignore list. A cold migration always leaves its host.",
    topic: "conductor",
  }),
  row({
    key: "resize_confirm_window",
    group: "DEFAULT",
    name: "resize_confirm_window",
    nova: true,
    env: "NOVALESS_RESIZE_CONFIRM_WINDOW",
    kind: "int",
    default: 0,
    min: 0,
    help: "Seconds after which the watchdog confirms a finished resize or migration left in VERIFY_RESIZE; 0 turns it off.",
    topic: "conductor",
  }),
  row({
    key: "shelved_offload_time",
    group: "DEFAULT",
    name: "shelved_offload_time",
    nova: true,
    env: "NOVALESS_SHELVED_OFFLOAD_TIME",
    kind: "int",
    default: 0,
    min: -1,
    help: "Seconds a SHELVED server keeps its host before the watchdog offloads it (SHELVED_OFFLOADED, its claim freed); 0 offloads it as it is shelved, -1 never (only shelveOffload does).",
    topic: "conductor",
  }),
  row({
    key: "auto_evacuate_grace",
    group: "novaless",
    name: "auto_evacuate_grace",
    nova: false,
    env: "NOVALESS_AUTO_EVACUATE_GRACE",
    kind: "int",
    default: 60,
    min: 0,
    help: "Seconds a host opted in to automatic evacuation (aggregate metadata novaless:auto_evacuate=true) must stay down beyond service_down_time before the watchdog fences it (forced_down) and evacuates its servers.",
    topic: "conductor",
  }),
  row({
    key: "auto_evacuate_rate",
    group: "novaless",
    name: "auto_evacuate_rate",
    nova: false,
    env: "NOVALESS_AUTO_EVACUATE_RATE",
    kind: "int",
    default: 10,
    min: 1,
    help: "Most servers the watchdog evacuates automatically per run (once a minute on AWS), over every fenced host: a dead rack does not flood the scheduler.",
    topic: "conductor",
  }),
  row({
    key: "report_path_suspect_fraction",
    group: "novaless",
    name: "report_path_suspect_fraction",
    nova: false,
    env: "NOVALESS_REPORT_PATH_SUSPECT_FRACTION",
    kind: "float",
    default: 0.55,
    min: 0,
    // Kubernetes' unhealthyZoneThreshold (0.55): hosts heartbeat over the same path as reports, so
    // most of them silent at once is more likely compute-events refusing them than a dead fleet.
    help: "When more than this share of the compute services that are neither forced down nor already down (and more than two) are silent at once, the watchdog holds: it marks no host down and fences, evacuates or reschedules nothing for a host's silence, until the report path is sound again; a host's silence then counts from that moment. A fleet whose every host is quiet is held whatever this is; 1 leaves only that.",
    topic: "conductor",
  }),
  row({
    key: "max_request_body_size",
    group: "oslo_middleware",
    name: "max_request_body_size",
    nova: true,
    env: "NOVALESS_MAX_REQUEST_BODY_BYTES",
    kind: "int",
    default: 114688,
    min: 1,
    help: "Largest API request body accepted, in bytes; larger is a 413. Read once, at start.",
    topic: "api",
  }),
  row({
    key: "multi_instance_display_name_template",
    group: "DEFAULT",
    name: "multi_instance_display_name_template",
    nova: true,
    env: "NOVALESS_MULTI_INSTANCE_NAME_TEMPLATE",
    kind: "string",
    default: "%(name)s-%(count)d",
    help: "The name of each server a create of several makes: %(name)s, %(count)d and %(uuid)s are replaced.",
    topic: "api",
  }),
  row({
    key: "compute_link_prefix",
    group: "api",
    name: "compute_link_prefix",
    nova: true,
    env: "NOVALESS_API_URL",
    kind: "string?",
    default: null,
    defaultText: "from the request (Host, X-Forwarded-Proto, X-Forwarded-Host)",
    help: "The public base URL of links in answers (trailing slashes dropped).",
    topic: "api",
  }),
  row({
    key: "console_timeout",
    group: "api",
    name: "console_timeout",
    nova: false,
    env: "NOVALESS_CONSOLE_TIMEOUT_S",
    kind: "float",
    default: 10,
    min: 0,
    help: "Seconds os-getConsoleOutput waits for the host's answer (Nova's rpc_response_timeout plays this part). Read once, at start.",
    topic: "api",
  }),
  row({
    key: "auth_tokens",
    group: "api",
    name: "auth_tokens",
    nova: false,
    env: "NOVALESS_AUTH_TOKENS",
    kind: "string?",
    default: null,
    defaultText: DEMO_TOKENS_TEXT,
    help: 'The static token table, JSON: {"<token>": {"user_id", "project_id", "roles": [...]}}.',
    topic: "api",
  }),
  row({
    key: "auth_tokens_secret",
    group: "api",
    name: "auth_tokens_secret",
    nova: false,
    env: "NOVALESS_AUTH_TOKENS_SECRET",
    kind: "string?",
    default: null,
    help: "A Secrets Manager secret holding the token table (deployed); when set, auth_tokens is not read.",
    topic: "api",
  }),
  row({
    key: "keystone_url",
    group: "keystone_authtoken",
    name: "auth_url",
    nova: true,
    env: "NOVALESS_KEYSTONE_URL",
    kind: "string?",
    default: null,
    help: "An existing Keystone that validates tokens; when set, /identity is not served here.",
    topic: "identity",
  }),
  row({
    key: "keystone_cache_seconds",
    group: "keystone_authtoken",
    name: "token_cache_time",
    nova: true,
    env: "NOVALESS_KEYSTONE_CACHE_SECONDS",
    kind: "int",
    default: 300,
    min: 0,
    help: "Seconds a token Keystone validated is remembered.",
    topic: "identity",
  }),
  row({
    key: "password_hash_rounds",
    group: "identity",
    name: "password_hash_rounds",
    nova: false,
    env: "NOVALESS_PASSWORD_HASH_ROUNDS",
    kind: "int",
    default: 14,
    min: 10,
    help: "scrypt's cost, as log2 of N, for the password and application-credential hashes /identity makes from now on (Keystone's [identity] password_hash_rounds); a stored hash keeps its own. 14 (N = 16384) is about 70 ms a hash on one core.",
    topic: "identity",
  }),
  row({
    key: "token_revocation_cache_time",
    group: "token",
    name: "revocation_cache_time",
    nova: false,
    env: "NOVALESS_TOKEN_REVOCATION_CACHE_TIME",
    kind: "int",
    default: 2,
    min: 0,
    // keystonemiddleware would keep a validation 300 s; our tokens are checked against the store
    // (user, project, roles, revocation) in one read, so a short memory costs little and a
    // disabled user or a removed role takes effect at once, as at Keystone itself.
    help: "Seconds the compute and image APIs remember that a token /identity signed is still valid (its user, project, roles and revocation read again after). 0 reads them on every request; /identity itself always reads them.",
    topic: "identity",
  }),
  row({
    key: "token_expiration",
    group: "token",
    name: "expiration",
    nova: true,
    env: "NOVALESS_TOKEN_EXPIRATION",
    kind: "int",
    default: 3600,
    min: 1,
    help: "Seconds a token issued by /identity is valid (Keystone's [token] expiration).",
    topic: "identity",
  }),
  row({
    key: "token_key_secret",
    group: "token",
    name: "signing_key_secret",
    nova: false,
    env: "NOVALESS_TOKEN_KEY_SECRET",
    kind: "string?",
    default: null,
    help: "A Secrets Manager secret holding the key that signs /identity's tokens (deployed).",
    topic: "identity",
  }),
  row({
    key: "token_key",
    group: "token",
    name: "signing_key",
    nova: false,
    env: "NOVALESS_TOKEN_KEY",
    kind: "string?",
    default: null,
    defaultText: "one generated per process (tokens die with it)",
    help: "The key that signs /identity's tokens, when signing_key_secret is unset.",
    topic: "identity",
  }),
  row({
    key: "placement_audit_grace_seconds",
    group: "placement",
    name: "audit_grace_seconds",
    nova: false,
    env: "NOVALESS_PLACEMENT_AUDIT_GRACE_SECONDS",
    kind: "float",
    default: 300,
    min: 0,
    help: "novaless-audit: claims younger than this, of instances still in BUILD, may be mid-placement (not leaks).",
    topic: "placement",
  }),
  row({
    key: "log_level",
    group: "DEFAULT",
    name: "log_level",
    nova: false,
    env: "NOVALESS_LOG_LEVEL",
    kind: "string",
    default: "info",
    choices: ["debug", "info", "warn", "error"],
    lenient: true,
    help: "The least severe level logged (any case); an unknown level is info.",
    topic: "observability",
  }),
  row({
    key: "service_name",
    group: "powertools",
    name: "service_name",
    nova: false,
    env: "POWERTOOLS_SERVICE_NAME",
    kind: "string",
    default: "novaless",
    help: "The `service` of every log line and metric (the stack sets api, scheduler, conductor, …).",
    topic: "observability",
  }),
  row({
    key: "metrics_disabled",
    group: "powertools",
    name: "metrics_disabled",
    nova: false,
    env: "POWERTOOLS_METRICS_DISABLED",
    kind: "bool?",
    default: null,
    defaultText: "metrics on in Lambda, off elsewhere",
    lenient: true,
    help: "true stops the build metrics (CloudWatch EMF); false prints them outside Lambda too.",
    topic: "observability",
  }),
];

/**
 * What the stack is sized for, read when it is synthesized (`-c <name>=…` or the variable): the
 * build path's Lambda concurrency (infra/constructs/functions.ts, docs/deploy.md).
 */
export const DEPLOYMENT_OPTIONS: readonly ConfigOption[] = [
  row({
    key: "fleet_size",
    group: "deployment",
    name: "fleet_size",
    nova: false,
    env: "NOVALESS_FLEET_SIZE",
    kind: "int",
    default: 1000,
    min: 0,
    help: "Compute hosts the stack is sized for. compute-events gets a reserved concurrency of max(5, ceil(fleet_size / 100)), build-intake max(5, ceil(fleet_size / 200)), which is also its build-requests event source's MaximumConcurrency (up to 1,000; with 0, that bound without a reservation): past compute-events' reservation Lambda answers a host's report with 429 and the host sends it again, so a fleet-wide re-registration or heartbeat storm does not take the account's concurrency from the API, scheduler and conductor. 0: no reservation (an account whose limit cannot spare it).",
    topic: "deployment",
  }),
  row({
    key: "lambda_concurrency_limit",
    group: "deployment",
    name: "lambda_concurrency_limit",
    nova: false,
    env: "NOVALESS_LAMBDA_CONCURRENCY_LIMIT",
    kind: "int",
    default: 1000,
    min: 1,
    help: "The account's Lambda concurrency limit in the stack's region (Service Quotas, Concurrent executions: 1,000 by default, as low as 10 on a new account). A synth whose reservations would leave less than the 100 Lambda keeps unreserved fails. The local runtime models this limit.",
    topic: "deployment",
  }),
];

/** Nova's [quota] defaults (nova/conf/quota.py); lib/quotas/quotas.ts reasons about them. */
export const NOVA_QUOTA_DEFAULTS = {
  instances: 10,
  cores: 20,
  ram: 51200,
  floating_ips: 10,
  fixed_ips: -1,
  metadata_items: 128,
  injected_files: 5,
  injected_file_content_bytes: 10240,
  injected_file_path_bytes: 255,
  key_pairs: 100,
  security_groups: 10,
  security_group_rules: 20,
  server_groups: 10,
  server_group_members: 10,
} as const;

/** The server groups' settings from before quota sets, still honoured. */
const QUOTA_ALIASES: Partial<Record<keyof typeof NOVA_QUOTA_DEFAULTS, string>> = {
  server_groups: "NOVALESS_MAX_SERVER_GROUPS",
  server_group_members: "NOVALESS_MAX_SERVER_GROUP_MEMBERS",
};

export const QUOTA_OPTIONS: readonly ConfigOption[] = Object.entries(NOVA_QUOTA_DEFAULTS).map(
  ([resource, value]) => {
    const alias = QUOTA_ALIASES[resource as keyof typeof NOVA_QUOTA_DEFAULTS];
    return {
      key: `quota_${resource}`,
      group: "quota",
      name: resource,
      nova: true,
      env: `NOVALESS_QUOTA_${resource.toUpperCase()}`,
      ...(alias ? { aliases: [alias] } : {}),
      kind: "int" as const,
      default: value,
      min: -1,
      lenient: true,
      help: `Default limit of ${resource.replaceAll("_", " ")} per project (-1: unlimited), under the default quota class; an invalid value is ignored.`,
      topic: "quota" as const,
    };
  },
);

/**
 * The deployed stack's default compute queue prefix: `${stackName}-compute-` lowercased, for the
 * stack infra/app.ts names "NovalessStack". An agent started with no NOVALESS_COMPUTE_QUEUE_PREFIX
 * therefore reads the queues that stack's IAM policy covers.
 */
export const DEFAULT_COMPUTE_QUEUE_PREFIX = "novalessstack-compute-";

const resource = (key: keyof Resources, name: string, env: string, value: string, help: string) =>
  row({
    key,
    group: "resources",
    name,
    nova: false,
    env,
    kind: "string",
    default: value,
    ...(value === "" ? { defaultText: "set by the stack" } : {}),
    help,
    topic: "resources",
  });

/** The stack's tables, queues and state machine: set by the stack (or the local runtime). */
export const RESOURCE_OPTIONS: readonly ConfigOption[] = [
  resource(
    "hostsTable",
    "hosts_table",
    "NOVALESS_HOSTS_TABLE",
    "novaless-hosts",
    "Resource providers (hosts).",
  ),
  resource(
    "hostChangesTable",
    "host_changes_table",
    "NOVALESS_HOST_CHANGES_TABLE",
    "novaless-host-changes",
    "The hosts' change feed: which host item was written when (the schedulers' refresh).",
  ),
  resource(
    "allocationsTable",
    "allocations_table",
    "NOVALESS_ALLOCATIONS_TABLE",
    "novaless-allocations",
    "Placement's allocations.",
  ),
  resource(
    "instancesTable",
    "instances_table",
    "NOVALESS_INSTANCES_TABLE",
    "novaless-instances",
    "Instances and build requests.",
  ),
  resource(
    "servicesTable",
    "services_table",
    "NOVALESS_SERVICES_TABLE",
    "novaless-services",
    "Compute services.",
  ),
  resource(
    "schedulingTable",
    "scheduling_table",
    "NOVALESS_SCHEDULING_TABLE",
    "novaless-scheduling",
    "The scheduler's records and decisions.",
  ),
  resource(
    "migrationsTable",
    "migrations_table",
    "NOVALESS_MIGRATIONS_TABLE",
    "novaless-migrations",
    "Migration records (resize, cold migration).",
  ),
  resource(
    "catalogTable",
    "catalog_table",
    "NOVALESS_CATALOG_TABLE",
    "novaless-catalog",
    "Flavors, images, key pairs, server groups, aggregates, quotas.",
  ),
  resource(
    "identityTable",
    "identity_table",
    "NOVALESS_IDENTITY_TABLE",
    "novaless-identity",
    "Identity's domains, projects, users, roles.",
  ),
  resource(
    "networkingTable",
    "networking_table",
    "NOVALESS_NETWORKING_TABLE",
    "novaless-networking",
    "Networking's networks, subnets, ports and allocated addresses.",
  ),
  resource(
    "buildRequestsQueueUrl",
    "build_requests_queue_url",
    "NOVALESS_BUILD_REQUESTS_QUEUE_URL",
    "",
    "The build-requests queue.",
  ),
  resource(
    "buildRequestsDlqUrl",
    "build_requests_dlq_url",
    "NOVALESS_BUILD_REQUESTS_DLQ_URL",
    "",
    "The build-requests queue's dead-letter queue.",
  ),
  resource(
    "conductorStateMachineArn",
    "conductor_arn",
    "NOVALESS_CONDUCTOR_ARN",
    "",
    "The conductor's state machine.",
  ),
  resource(
    "computeQueuePrefix",
    "compute_queue_prefix",
    "NOVALESS_COMPUTE_QUEUE_PREFIX",
    DEFAULT_COMPUTE_QUEUE_PREFIX,
    "Prefix of every compute host's queue name (lib/compute/queue-name.ts).",
  ),
  resource(
    "computeEventsUrl",
    "compute_events_url",
    "NOVALESS_COMPUTE_EVENTS_URL",
    "",
    "compute → conductor reports (lib/messages/reports.ts): compute-events' function URL (AWS_IAM).",
  ),
  resource(
    "imagesBucket",
    "images_bucket",
    "NOVALESS_IMAGES_BUCKET",
    "novaless-images",
    "The S3 bucket of snapshots' and backups' image data (images/<image id>), which any host reads to boot them.",
  ),
  resource(
    "computeEventsDlqUrl",
    "compute_events_dlq_url",
    "NOVALESS_COMPUTE_EVENTS_DLQ_URL",
    "",
    "The hosts' reports compute-events could not apply (malformed, or a host speaking for another), each with its reason. Not redrivable.",
  ),
];

/** The whole table: docs/configuration.md lists it in this order. */
export const OPTIONS: readonly ConfigOption[] = [
  ...SCHEDULER_OPTIONS,
  ...COMPUTE_OPTIONS,
  ...SERVICE_OPTIONS,
  ...QUOTA_OPTIONS,
  ...DEPLOYMENT_OPTIONS,
  ...RESOURCE_OPTIONS,
];

const byKey = new Map(OPTIONS.map((o) => [o.key, o]));

/** The row of an option by its key; throws for a key the table does not have. */
export function option(key: string): ConfigOption {
  const o = byKey.get(key);
  if (!o) throw new Error(`no option ${key} in lib/config.ts`);
  return o;
}

/** Every option novaless-compute reads, in compute.conf's order. */
export const AGENT_OPTIONS: readonly ConfigOption[] = AGENT_SECTIONS.flatMap((section) => {
  const rows = OPTIONS.filter((o) => o.agent && o.group === section);
  if (section !== "DEFAULT") return rows;
  // in that order, and any row it does not name after them (none is left out)
  const rank = (o: ConfigOption) => {
    const i = AGENT_DEFAULT_ORDER.indexOf(o.name);
    return i < 0 ? AGENT_DEFAULT_ORDER.length : i;
  };
  return [...rows].sort((a, b) => rank(a) - rank(b));
});

/** The environment variable novaless-compute reads an option from: NOVALESS_<GROUP>_<NAME>. */
export const agentEnvName = (o: ConfigOption): string => agentEnv(o.group, o.name);

/** novaless-compute's default of an option: undefined when unset, computed or required. */
export function agentDefault(o: ConfigOption): string | number | boolean | undefined {
  const v = o.agent?.default !== undefined ? o.agent.default : o.default;
  return v === null || v === undefined || Array.isArray(v) ? undefined : v;
}

// ── What each part reads ──────────────────────────────────────────────────────────────────────

/** An option's value from the environment, by its key. */
export const optionValue = <T extends OptionValue>(key: string): T => readOption(option(key)) as T;
const read = optionValue;

export interface Resources {
  hostsTable: string;
  hostChangesTable: string;
  allocationsTable: string;
  instancesTable: string;
  servicesTable: string;
  schedulingTable: string;
  migrationsTable: string;
  catalogTable: string;
  identityTable: string;
  networkingTable: string;
  buildRequestsQueueUrl: string;
  buildRequestsDlqUrl: string;
  conductorStateMachineArn: string;
  /** Prefix of every compute host's queue name (see computeQueueName in lib/compute/queue-name.ts). */
  computeQueuePrefix: string;
  /** snapshots' image data, images/<image id> (lib/compute/image-store.ts) */
  imagesBucket: string;
  /** compute → conductor reports (lib/messages/reports.ts): the function URL, and the reports' dead-letter queue */
  computeEventsUrl: string;
  computeEventsDlqUrl: string;
}

export function resources(): Resources {
  return Object.fromEntries(RESOURCE_OPTIONS.map((o) => [o.key, readOption(o)])) as unknown as Resources;
}

/** [DEFAULT] allow_resize_to_same_host and resize_confirm_window (seconds, 0 = off). */
export function moveOptions(): {
  allowResizeToSameHost: boolean;
  resizeConfirmWindow: number;
  shelvedOffloadTime: number;
  autoEvacuateGrace: number;
  autoEvacuateRate: number;
} {
  return {
    allowResizeToSameHost: read<boolean>("allow_resize_to_same_host"),
    resizeConfirmWindow: read<number>("resize_confirm_window"),
    shelvedOffloadTime: read<number>("shelved_offload_time"),
    autoEvacuateGrace: read<number>("auto_evacuate_grace"),
    autoEvacuateRate: read<number>("auto_evacuate_rate"),
  };
}

/** [DEFAULT] instance_build_timeout (seconds). */
export function instanceBuildTimeout(): number {
  return read<number>("instance_build_timeout");
}

/** report_path_suspect_fraction: the share of silent hosts at which the watchdog holds (lib/placement/report-path.ts). */
export function reportPathSuspectFraction(): number {
  return read<number>("report_path_suspect_fraction");
}

/** Largest API request body accepted, in bytes (Nova's max_request_body_size is 112 KiB). */
export const MAX_REQUEST_BODY_BYTES = read<number>("max_request_body_size");

export interface ApiOptions {
  multiInstanceNameTemplate: string;
  /** the public base URL for links, without trailing slashes; undefined: from the request */
  publicUrl: string | undefined;
  consoleTimeoutSeconds: number;
  /** the token table's JSON text; null: the demo tokens */
  authTokens: string | null;
  authTokensSecret: string | null;
}

export function apiOptions(): ApiOptions {
  return {
    multiInstanceNameTemplate: read("multi_instance_display_name_template"),
    publicUrl: read<string | null>("compute_link_prefix")?.replace(/\/+$/, "") || undefined,
    consoleTimeoutSeconds: read("console_timeout"),
    authTokens: read("auth_tokens"),
    authTokensSecret: read("auth_tokens_secret"),
  };
}

export interface IdentityOptions {
  keystoneUrl: string | null;
  keystoneCacheSeconds: number;
  tokenExpiration: number;
  tokenRevocationCacheTime: number;
  passwordHashRounds: number;
  tokenKeySecret: string | null;
  tokenKey: string | null;
}

export function identityOptions(): IdentityOptions {
  return {
    keystoneUrl: read("keystone_url"),
    keystoneCacheSeconds: read("keystone_cache_seconds"),
    tokenExpiration: read("token_expiration"),
    tokenRevocationCacheTime: read("token_revocation_cache_time"),
    passwordHashRounds: read("password_hash_rounds"),
    tokenKeySecret: read("token_key_secret"),
    tokenKey: read("token_key"),
  };
}

/**
 * The deployment's quota defaults: the [quota] options set (NOVALESS_QUOTA_<RESOURCE>, or an
 * alias) to a valid value; the others are absent, so the defaults apply as the caller decides.
 */
export function quotaDefaults(
  env: Record<string, string | undefined> = process.env,
): Partial<Record<keyof typeof NOVA_QUOTA_DEFAULTS, number>> {
  const out: Partial<Record<string, number>> = {};
  for (const o of QUOTA_OPTIONS) {
    const text = envText(o, env);
    if (text === undefined) continue;
    const r = checkOption(o, text);
    if (r.ok && Number.isInteger(r.value)) out[o.name] = r.value as number;
  }
  return out;
}

/** novaless-audit's grace for claims that may be mid-placement, in seconds. */
export function placementAuditGraceSeconds(): number {
  return read("placement_audit_grace_seconds");
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface ObservabilityOptions {
  logLevel: LogLevel;
  serviceName: string;
  /** null: unset (metrics on in Lambda only) */
  metricsDisabled: boolean | null;
}

export function observabilityOptions(): ObservabilityOptions {
  return {
    logLevel: read("log_level"),
    serviceName: read("service_name"),
    metricsDisabled: read("metrics_disabled"),
  };
}

// ── The process's environment beyond options ──────────────────────────────────────────────────

/** Whether this process is a Lambda function (its runtime sets AWS_LAMBDA_FUNCTION_NAME). */
export function inLambda(): boolean {
  return Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
}

/** This process's PATH, which the exec driver hands on to its guests. */
export function inheritedPath(): string {
  return process.env.PATH ?? "/usr/bin:/bin";
}
