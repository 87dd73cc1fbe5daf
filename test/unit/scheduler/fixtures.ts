// Builders for scheduler tests: a realistic default host and request, overridable per case.
import { SCHEDULER_DEFAULTS, type SchedulerConfig } from "../../../lib/config.js";
import { Fleet } from "../../../lib/scheduler/fleet.js";
import type {
  FlavorSpec,
  HostAggregate,
  HostResource,
  HostState,
  RequestSpec,
} from "../../../lib/scheduler/types.js";

/** Placement's capacity, computed here the way the host-state builder does: (total − reserved) × ratio. */
export function inventory(
  total: number,
  opts: {
    reserved?: number;
    ratio?: number;
    used?: number;
    min_unit?: number;
    max_unit?: number;
    step_size?: number;
  } = {},
): HostResource {
  const { reserved = 0, ratio = 1, used = 0, min_unit = 1, max_unit = total, step_size = 1 } = opts;
  return { capacity: Math.floor((total - reserved) * ratio), used, min_unit, max_unit, step_size };
}

type HostOverrides = Omit<Partial<HostState>, "service"> & { service?: Partial<HostState["service"]> };

export function host(name: string, overrides: HostOverrides = {}): HostState {
  const { service, ...rest } = overrides;
  return {
    host: name,
    nodename: name,
    availability_zone: "nova",
    aggregates: [],
    traits: [],
    resources: {
      VCPU: inventory(16, { ratio: 16 }),
      MEMORY_MB: inventory(65536, { reserved: 512, ratio: 1.5 }),
      DISK_GB: inventory(1000),
    },
    free_ram_mb: 65024,
    free_disk_mb: 1000 * 1024,
    total_usable_ram_mb: 65536,
    total_usable_disk_gb: 1000,
    disk_mb_used: 0,
    vcpus_total: 16,
    vcpus_used: 0,
    cpu_allocation_ratio: 16,
    ram_allocation_ratio: 1.5,
    disk_allocation_ratio: 1,
    num_instances: 0,
    num_io_ops: 0,
    failed_builds: 0,
    hypervisor_type: "fake",
    hypervisor_version: 1,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    metrics: {},
    stats: {},
    ...rest,
    service: { disabled: false, disabled_reason: null, forced_down: false, up: true, ...service },
  };
}

export function aggregate(id: string, metadata: Record<string, string> = {}, name = id): HostAggregate {
  return { id, name, metadata };
}

export function flavor(overrides: Partial<FlavorSpec> = {}): FlavorSpec {
  return {
    id: "1",
    name: "m1.small",
    vcpus: 1,
    memory_mb: 2048,
    root_gb: 20,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
    ...overrides,
  };
}

export function spec(overrides: Partial<RequestSpec> = {}): RequestSpec {
  return {
    project_id: "p1",
    flavor: flavor(),
    image: { id: "img", name: "cirros", properties: {} },
    scheduler_hints: {},
    num_instances: 1,
    ...overrides,
  };
}

export function config(overrides: Partial<SchedulerConfig> = {}): SchedulerConfig {
  const d = SCHEDULER_DEFAULTS;
  return {
    ...d,
    enabled_filters: [...d.enabled_filters],
    weight_classes: [...d.weight_classes],
    isolated_hosts: [...d.isolated_hosts],
    isolated_images: [...d.isolated_images],
    metrics_weight_setting: [...d.metrics_weight_setting],
    ...overrides,
  };
}

/** A fleet of these hosts; aggregates default to those the hosts are in. */
export function fleet(hosts: HostState[], aggregates?: HostAggregate[]): Fleet {
  const all = aggregates ?? [...new Map(hosts.flatMap((h) => h.aggregates).map((a) => [a.id, a])).values()];
  return new Fleet(hosts, all);
}
