// Seeded synthetic fleets and requests, for the reference comparison and the benchmark: zones,
// feature, tenant, flavor, limit, multiplier and isolation aggregates; hosts of varied sizes and
// loads, some disabled or down; requests mixing zones, hints, server groups, extra specs, image
// properties and multi-creates.
import type { SchedulerConfig } from "../../../lib/config.js";
import { seededRandom } from "../../../lib/scheduler/scenario.js";
import type {
  FlavorSpec,
  HostAggregate,
  HostState,
  ImageSpec,
  InstanceGroup,
  RequestSpec,
} from "../../../lib/scheduler/types.js";
import { config, inventory } from "./fixtures.js";

/** The scenario runner's seeded generator (mulberry32). */
export const seeded = seededRandom;

export class Rng {
  constructor(readonly next: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  uuid(): string {
    const hex = (n: number) =>
      Array.from({ length: n }, () => Math.floor(this.next() * 16).toString(16)).join("");
    return `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
  }
}

export const ZONES = ["az1", "az2", "az3"];

export interface SyntheticFleet {
  hosts: HostState[];
  aggregates: HostAggregate[];
  /** instance uuids running somewhere, for hints and groups */
  instances: string[];
  /** where each of them runs */
  hostOf: Map<string, string>;
}

/** Every filter Nova has that this scheduler implements, cheap ones first. */
export const ALL_FILTERS = [
  "ComputeFilter",
  "AvailabilityZoneFilter",
  "AggregateMultiTenancyIsolation",
  "AggregateTypeAffinityFilter",
  "AggregateInstanceExtraSpecsFilter",
  "AggregateImagePropertiesIsolation",
  "IsolatedHostsFilter",
  "ComputeCapabilitiesFilter",
  "ImagePropertiesFilter",
  "NumInstancesFilter",
  "AggregateNumInstancesFilter",
  "IoOpsFilter",
  "AggregateIoOpsFilter",
  "SameHostFilter",
  "DifferentHostFilter",
  "SimpleCIDRAffinityFilter",
  "ServerGroupAntiAffinityFilter",
  "ServerGroupAffinityFilter",
  "MetricsFilter",
  "JsonFilter",
  "AllHostsFilter",
];

/** All filters and weighers, with settings that make each of them do something. */
export function busyConfig(overrides: Partial<SchedulerConfig> = {}): SchedulerConfig {
  return config({
    enabled_filters: [...ALL_FILTERS],
    weight_classes: ["nova.scheduler.weights.all_weighers"],
    num_instances_weight_multiplier: -0.5,
    metrics_weight_setting: ["cpu.percent=-1.0", "mem.percent=-0.5"],
    isolated_hosts: ["host-00007"],
    isolated_images: ["img-isolated"],
    limit_tenants_to_placement_aggregate: true,
    enable_isolated_aggregate_filtering: true,
    ...overrides,
  });
}

export function syntheticFleet(size: number, seed: number): SyntheticFleet {
  const rng = new Rng(seeded(seed));
  const zoneAggs = ZONES.map((z) => ({ id: `agg-${z}`, name: z, metadata: { availability_zone: z } }));
  const feature: HostAggregate[] = [
    { id: "agg-ssd", name: "ssd", metadata: { ssd: "true" } },
    { id: "agg-gpu", name: "gpu", metadata: { gpu: "true", ssd: "false" } },
    { id: "agg-tenant", name: "tenant", metadata: { filter_tenant_id: "p-special" } },
    { id: "agg-large", name: "large-only", metadata: { instance_type: "m1.large, m1.xlarge" } },
    {
      id: "agg-limits",
      name: "limits",
      metadata: { max_instances_per_host: "20", max_io_ops_per_host: "3" },
    },
    {
      id: "agg-stack",
      name: "stacking",
      metadata: { ram_weight_multiplier: "-1.0", cpu_weight_multiplier: "2" },
    },
    { id: "agg-windows", name: "windows", metadata: { os_distro: "windows" } },
    { id: "agg-sgx", name: "sgx", metadata: { "trait:CUSTOM_SGX": "required" } },
  ];
  const members = new Map<string, string[]>([...zoneAggs, ...feature].map((a) => [a.id, []]));
  const hosts: HostState[] = [];
  const instances: string[] = [];
  const hostOf = new Map<string, string>();
  for (let i = 0; i < size; i++) {
    const name = `host-${String(i).padStart(5, "0")}`;
    const aggs: HostAggregate[] = [];
    // 5% of hosts are in no zone aggregate: the default zone.
    if (!rng.chance(0.05)) aggs.push(rng.pick(zoneAggs));
    for (const [a, p] of [
      [feature[0]!, 0.3],
      [feature[1]!, 0.05],
      [feature[2]!, 0.05],
      [feature[3]!, 0.05],
      [feature[4]!, 0.1],
      [feature[5]!, 0.1],
      [feature[6]!, 0.05],
      [feature[7]!, 0.03],
    ] as const) {
      if (rng.chance(p)) aggs.push(a);
    }
    for (const a of aggs) members.get(a.id)!.push(name);
    const vcpus = rng.pick([16, 32, 48, 64]);
    const memory = rng.pick([65536, 131072, 262144, 524288]);
    const disk = rng.pick([500, 1000, 2000, 4000]);
    const load = rng.next();
    const vcpusUsed = Math.floor(vcpus * 16 * load * 0.9);
    const memUsed = Math.floor((memory - 512) * 1.5 * load * rng.next());
    const diskUsed = Math.floor(disk * load * 0.8);
    const n = rng.int(0, 40);
    const hostInstances = Array.from({ length: n }, () => rng.uuid());
    instances.push(...hostInstances);
    for (const u of hostInstances) hostOf.set(u, name);
    const zone = aggs.find((a) => a.metadata.availability_zone)?.metadata.availability_zone ?? "nova";
    const arch = rng.chance(0.9) ? "x86_64" : "aarch64";
    const hv = rng.chance(0.9) ? "qemu" : "kvm";
    const metrics: Record<string, number> = {};
    if (rng.chance(0.97)) metrics["cpu.percent"] = rng.int(0, 100);
    if (rng.chance(0.97)) metrics["mem.percent"] = rng.int(0, 100);
    hosts.push({
      host: name,
      nodename: name,
      availability_zone: zone,
      aggregates: aggs,
      traits: [
        ...(rng.chance(0.5) ? ["HW_CPU_X86_AVX2"] : []),
        ...(aggs.some((a) => a.id === "agg-sgx") ? ["CUSTOM_SGX"] : []),
        ...(rng.chance(0.02) ? ["COMPUTE_STATUS_DISABLED"] : []),
      ],
      resources: {
        VCPU: inventory(vcpus, { ratio: 16, used: vcpusUsed }),
        MEMORY_MB: inventory(memory, { reserved: 512, ratio: 1.5, used: memUsed }),
        DISK_GB: inventory(disk, { used: diskUsed }),
        ...(aggs.some((a) => a.id === "agg-gpu")
          ? { CUSTOM_GPU: inventory(4, { used: rng.int(0, 4) }) }
          : {}),
      },
      free_ram_mb: memory - 512 - memUsed,
      free_disk_mb: (disk - diskUsed) * 1024,
      total_usable_ram_mb: memory,
      total_usable_disk_gb: disk,
      disk_mb_used: diskUsed * 1024,
      vcpus_total: vcpus,
      vcpus_used: vcpusUsed,
      cpu_allocation_ratio: 16,
      ram_allocation_ratio: 1.5,
      disk_allocation_ratio: 1,
      num_instances: n,
      num_io_ops: rng.chance(0.7) ? 0 : rng.int(0, 10),
      failed_builds: rng.chance(0.95) ? 0 : rng.int(1, 3),
      hypervisor_type: hv === "qemu" ? "QEMU" : "KVM",
      hypervisor_version: rng.pick([6002000, 7001000, 8000000]),
      host_ip: `10.${Math.floor(i / 65536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}`,
      supported_instances: [[arch, hv, "hvm"]],
      metrics,
      stats: { num_instances: String(n), io_workload: "0", failed_builds: "0" },
      service: {
        disabled: rng.chance(0.02),
        disabled_reason: null,
        forced_down: rng.chance(0.005),
        up: !rng.chance(0.02),
      },
    });
  }
  const aggregates = [...zoneAggs, ...feature];
  return { hosts, aggregates, instances, hostOf };
}

const FLAVORS: FlavorSpec[] = [
  {
    id: "1",
    name: "m1.tiny",
    vcpus: 1,
    memory_mb: 512,
    root_gb: 1,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
  },
  {
    id: "2",
    name: "m1.small",
    vcpus: 1,
    memory_mb: 2048,
    root_gb: 20,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
  },
  {
    id: "3",
    name: "m1.medium",
    vcpus: 2,
    memory_mb: 4096,
    root_gb: 40,
    ephemeral_gb: 0,
    swap: 512,
    extra_specs: {},
  },
  {
    id: "4",
    name: "m1.large",
    vcpus: 4,
    memory_mb: 8192,
    root_gb: 80,
    ephemeral_gb: 10,
    swap: 0,
    extra_specs: {},
  },
  {
    id: "5",
    name: "m1.xlarge",
    vcpus: 8,
    memory_mb: 16384,
    root_gb: 160,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
  },
];

const EXTRA_SPECS: Record<string, string>[] = [
  { "aggregate_instance_extra_specs:ssd": "true" },
  { "aggregate_instance_extra_specs:ssd": "<or> true <or> false" },
  { "capabilities:hypervisor_type": "s== QEMU" },
  { "capabilities:vcpus_total": ">= 32" },
  { "trait:HW_CPU_X86_AVX2": "required" },
  { "trait:CUSTOM_SGX": "required" },
  { "trait:HW_CPU_X86_AVX2": "forbidden" },
  { "resources:CUSTOM_GPU": "1", "aggregate_instance_extra_specs:gpu": "true" },
  { gpu: "true" },
];

const IMAGES: ImageSpec[] = [
  { id: "img-cirros", name: "cirros", properties: {} },
  { id: "img-x86", name: "ubuntu", properties: { hw_architecture: "x86_64", img_hv_type: "qemu" } },
  { id: "img-arm", name: "arm", properties: { architecture: "aarch64" } },
  { id: "img-win", name: "windows", properties: { os_distro: "windows", hw_architecture: "x86_64" } },
  { id: "img-linux", name: "linux", properties: { os_distro: "ubuntu" } },
  { id: "img-new-hv", name: "new", properties: { hw_vm_mode: "hvm", img_hv_requested_version: ">=7.0" } },
  { id: "img-isolated", name: "isolated", properties: {} },
];

export interface RequestMix {
  /** share of requests naming an availability zone */
  zone?: number;
  different_host?: number;
  same_host?: number;
  group?: number;
  extra_specs?: number;
  image_props?: number;
  query?: number;
  cidr?: number;
  force?: number;
  multi?: number;
}

export const REALISTIC_MIX: Required<RequestMix> = {
  zone: 0.6,
  different_host: 0.1,
  same_host: 0.02,
  group: 0.1,
  extra_specs: 0.2,
  image_props: 0.3,
  query: 0.02,
  cidr: 0.02,
  force: 0.01,
  multi: 0.1,
};

export interface SyntheticRequest {
  spec: RequestSpec;
  uuids: string[];
  exclude: string[];
}

export function syntheticRequest(
  rng: Rng,
  fleet: SyntheticFleet,
  mix: RequestMix = REALISTIC_MIX,
): SyntheticRequest {
  const m = { ...REALISTIC_MIX, ...mix };
  const base = rng.pick(FLAVORS);
  const flavor: FlavorSpec = {
    ...base,
    extra_specs: rng.chance(m.extra_specs) ? { ...rng.pick(EXTRA_SPECS) } : {},
  };
  const image = rng.chance(m.image_props) ? rng.pick(IMAGES) : IMAGES[0]!;
  const count = rng.chance(m.multi) ? rng.int(2, 4) : 1;
  const uuids = Array.from({ length: count }, () => rng.uuid());
  const hints: Record<string, unknown> = {};
  const running = () => rng.pick(fleet.instances);
  if (rng.chance(m.different_host) && fleet.instances.length) hints.different_host = [running(), running()];
  if (rng.chance(m.same_host) && fleet.instances.length) hints.same_host = running();
  if (rng.chance(m.query)) {
    hints.query = rng.pick([
      '[">=", "$free_ram_mb", 16384]',
      '["and", [">", "$vcpus_total", 16], ["not", ["=", "$hypervisor_type", "KVM"]]]',
      '["or", ["in", "$host", "host-00001", "host-00002"], ["<", "$num_instances", 5]]',
      '[">=", "$stats.num_instances", "3"]',
    ]);
  }
  if (rng.chance(m.cidr) && fleet.hosts.length) {
    hints.build_near_host_ip = rng.pick(fleet.hosts).host_ip;
    hints.cidr = rng.pick(["/24", "/16", "/30"]);
  }
  let instance_group: InstanceGroup | undefined;
  if (rng.chance(m.group)) {
    const policy = rng.pick(["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"] as const);
    const existing = fleet.instances.length ? Array.from({ length: rng.int(0, 3) }, running) : [];
    instance_group = {
      uuid: rng.uuid(),
      policy,
      rules: policy === "anti-affinity" && rng.chance(0.5) ? { max_server_per_host: rng.int(1, 3) } : {},
      members: [...existing, ...uuids],
      hosts: [],
    };
    instance_group.hosts = [
      ...new Set(existing.map((u) => fleet.hostOf.get(u)).filter((h): h is string => !!h)),
    ];
  }
  const spec: RequestSpec = {
    project_id: rng.chance(0.1) ? "p-special" : "p-1",
    flavor,
    image,
    scheduler_hints: hints,
    num_instances: count,
    // Users name zones that exist; now and then the default one (no aggregate carries it).
    ...(rng.chance(m.zone) ? { availability_zone: rng.chance(0.05) ? "nova" : rng.pick(ZONES) } : {}),
    ...(instance_group ? { instance_group } : {}),
  };
  if (rng.chance(m.force) && fleet.hosts.length)
    spec.force_hosts = [rng.pick(fleet.hosts).host.toUpperCase()];
  if (rng.chance(0.05) && fleet.hosts.length) spec.ignore_hosts = [rng.pick(fleet.hosts).host];
  const exclude = rng.chance(0.05) && fleet.hosts.length ? [rng.pick(fleet.hosts).host] : [];
  return { spec, uuids, exclude };
}

/**
 * A host's next state as a refresh brings it: claims and releases moved its usage and instance
 * count, builds started or ended (num_io_ops), a build failed; now and then its service went down
 * or came back. With `facets`, also what changes rarely: traits, metrics, aggregates (membership
 * among `aggregates`), inventory bounds, the hypervisor. Returns a new object.
 */
export function driftHost(
  rng: Rng,
  h: HostState,
  aggregates: readonly HostAggregate[],
  facets = false,
): HostState {
  const next = structuredClone(h);
  const delta = rng.int(-2, 2);
  for (const [rc, inv] of Object.entries(next.resources)) {
    const step = rc === "MEMORY_MB" ? 2048 : rc === "DISK_GB" ? 20 : 1;
    inv.used = Math.max(0, Math.min(Math.floor(inv.capacity), inv.used + delta * step));
  }
  next.vcpus_used = next.resources.VCPU?.used ?? 0;
  next.free_ram_mb = next.total_usable_ram_mb - 512 - (next.resources.MEMORY_MB?.used ?? 0);
  next.free_disk_mb = (next.total_usable_disk_gb - (next.resources.DISK_GB?.used ?? 0)) * 1024;
  next.num_instances = Math.max(0, next.num_instances + delta);
  next.num_io_ops = rng.chance(0.6) ? 0 : rng.int(0, 5);
  if (rng.chance(0.05)) next.failed_builds += 1;
  if (rng.chance(0.03)) next.service = { ...next.service, up: !next.service.up };
  if (!facets) return next;
  if (rng.chance(0.2)) {
    const avx = "HW_CPU_X86_AVX2";
    next.traits = next.traits.includes(avx) ? next.traits.filter((t) => t !== avx) : [...next.traits, avx];
  }
  if (rng.chance(0.2)) {
    const disabled = !next.service.disabled;
    next.service = { ...next.service, disabled };
    const rest = next.traits.filter((t) => t !== "COMPUTE_STATUS_DISABLED");
    next.traits = disabled ? [...rest, "COMPUTE_STATUS_DISABLED"] : rest;
  }
  if (rng.chance(0.2)) {
    const a = rng.pick(aggregates);
    const mine = next.aggregates.filter((x) => x.id !== a.id);
    next.aggregates = mine.length < next.aggregates.length ? mine : [...mine, structuredClone(a)];
    const zone = next.aggregates.find((x) => x.metadata.availability_zone)?.metadata.availability_zone;
    next.availability_zone = zone ?? "nova";
  }
  if (rng.chance(0.3)) {
    // A monitor starts or stops reporting one metric.
    const name = rng.pick(["cpu.percent", "mem.percent"]);
    next.metrics =
      name in next.metrics
        ? Object.fromEntries(Object.entries(next.metrics).filter(([k]) => k !== name))
        : { ...next.metrics, [name]: rng.int(0, 100) };
  }
  if (rng.chance(0.15)) {
    if (next.resources.CUSTOM_GPU) delete next.resources.CUSTOM_GPU;
    else next.resources.CUSTOM_GPU = inventory(4, { used: rng.int(0, 4) });
  }
  if (rng.chance(0.15)) {
    const vcpu = next.resources.VCPU!;
    vcpu.max_unit = rng.pick([4, 8, vcpu.max_unit]);
    vcpu.step_size = rng.pick([1, 1, 2]);
  }
  if (rng.chance(0.1)) next.hypervisor_version = rng.pick([6002000, 7001000, 8000000]);
  return next;
}
