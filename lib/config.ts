// One place for every option. Scheduler options keep Nova's names (group.option) and defaults;
// resource names come from the environment the stack (or the local runtime) sets.

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`configuration ${name}=${raw} is not a number`);
  return n;
}

function list(name: string, fallback: readonly string[]): string[] {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return [...fallback];
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

export interface SchedulerConfig {
  /** [scheduler] max_attempts: builds per instance, the first included. */
  max_attempts: number;
  /** [filter_scheduler] host_subset_size: choose randomly among the best N. */
  host_subset_size: number;
  /** [filter_scheduler] enabled_filters, run in this order. */
  enabled_filters: string[];
  /** [filter_scheduler] weight_classes. */
  weight_classes: string[];
  /** [filter_scheduler] ram_weight_multiplier. */
  ram_weight_multiplier: number;
  /** [DEFAULT] service_down_time, seconds without a heartbeat before a host is down. */
  service_down_time: number;
  /** [DEFAULT] default_availability_zone: the AZ of hosts in no AZ aggregate. */
  default_availability_zone: string;
}

/** Nova's defaults for every scheduler option. */
export const SCHEDULER_DEFAULTS: Readonly<SchedulerConfig> = Object.freeze({
  max_attempts: 3,
  host_subset_size: 1,
  enabled_filters: ["AvailabilityZoneFilter", "ComputeFilter"],
  weight_classes: ["RAMWeigher"],
  ram_weight_multiplier: 1.0,
  service_down_time: 60,
  default_availability_zone: "nova",
});

export function schedulerConfig(): SchedulerConfig {
  const d = SCHEDULER_DEFAULTS;
  return {
    max_attempts: num("NOVALESS_MAX_ATTEMPTS", d.max_attempts),
    host_subset_size: num("NOVALESS_HOST_SUBSET_SIZE", d.host_subset_size),
    enabled_filters: list("NOVALESS_ENABLED_FILTERS", d.enabled_filters),
    weight_classes: list("NOVALESS_WEIGHT_CLASSES", d.weight_classes),
    ram_weight_multiplier: num("NOVALESS_RAM_WEIGHT_MULTIPLIER", d.ram_weight_multiplier),
    service_down_time: num("NOVALESS_SERVICE_DOWN_TIME", d.service_down_time),
    default_availability_zone: process.env.NOVALESS_DEFAULT_AVAILABILITY_ZONE || d.default_availability_zone,
  };
}

/** The environment that schedulerConfig() reads back as `options` (the stack sets it on functions). */
export function schedulerEnvironment(options: SchedulerConfig): Record<string, string> {
  return {
    NOVALESS_MAX_ATTEMPTS: String(options.max_attempts),
    NOVALESS_HOST_SUBSET_SIZE: String(options.host_subset_size),
    NOVALESS_ENABLED_FILTERS: options.enabled_filters.join(","),
    NOVALESS_WEIGHT_CLASSES: options.weight_classes.join(","),
    NOVALESS_RAM_WEIGHT_MULTIPLIER: String(options.ram_weight_multiplier),
    NOVALESS_SERVICE_DOWN_TIME: String(options.service_down_time),
    NOVALESS_DEFAULT_AVAILABILITY_ZONE: options.default_availability_zone,
  };
}

export interface Resources {
  hostsTable: string;
  instancesTable: string;
  catalogTable: string;
  buildRequestsQueueUrl: string;
  buildRequestsDlqUrl: string;
  conductorStateMachineArn: string;
  /** Prefix of every compute host's queue name: `${prefix}<host>`. */
  computeQueuePrefix: string;
}

export function resources(): Resources {
  return {
    hostsTable: process.env.NOVALESS_HOSTS_TABLE || "novaless-hosts",
    instancesTable: process.env.NOVALESS_INSTANCES_TABLE || "novaless-instances",
    catalogTable: process.env.NOVALESS_CATALOG_TABLE || "novaless-catalog",
    buildRequestsQueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL || "",
    buildRequestsDlqUrl: process.env.NOVALESS_BUILD_REQUESTS_DLQ_URL || "",
    conductorStateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN || "",
    computeQueuePrefix: process.env.NOVALESS_COMPUTE_QUEUE_PREFIX || "novaless-compute-",
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
