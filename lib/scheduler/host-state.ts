// Nova's HostManager turning a compute node into a HostState, once for every caller: the
// scheduler Lambda (from its provider items) and novaless-plan (from a scenario's hosts) both
// describe a host as a ProviderView and get the same HostState from it.
import type { SchedulerConfig } from "../config.js";
import { capacity, type Inventory, novaFree, novaUsed } from "../placement-rules.js";
import { COMPUTE_STATUS_DISABLED } from "./prefilters.js";
import type { HostAggregate, HostResource, HostState } from "./types.js";

const AZ_KEY = "availability_zone";

/**
 * What the scheduler reads about one host: a resource provider and its compute service, shaped
 * as the compact provider item (structurally: an item with more fields is one too).
 */
export interface ProviderView {
  host: string;
  node: string;
  /** the zone the host registered with (its AZ aggregate's wins) */
  availability_zone?: string | null | undefined;
  inventories: Readonly<Record<string, Inventory | undefined>>;
  /** allocated amounts per class: what instances use, reserved not included */
  usage: Readonly<Record<string, number | undefined>>;
  num_instances: number;
  num_io_ops: number;
  traits: readonly string[];
  service: { disabled: boolean; disabled_reason: string | null; forced_down: boolean; up: boolean };
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  supported_instances: readonly (readonly [string, string, string])[];
  /** the compute node's stats; failed_builds is BuildFailureWeigher's */
  stats?: Readonly<Record<string, unknown>> & { failed_builds?: number | undefined };
  /** compute monitor metrics by name */
  metrics?: Readonly<Record<string, number>> | undefined;
}

/**
 * The HostState of a provider with its aggregates (those listing it, the registered zone's
 * included), with Nova's free and used (free_disk_mb and disk_mb_used in MB).
 */
export function hostStateOf(
  p: ProviderView,
  aggregates: readonly HostAggregate[],
  config: Pick<SchedulerConfig, "default_availability_zone">,
): HostState {
  const resources: Record<string, HostResource> = {};
  for (const [rc, inv] of Object.entries(p.inventories)) {
    if (!inv) continue;
    resources[rc] = {
      capacity: capacity(inv),
      used: p.usage[rc] ?? 0,
      max_unit: inv.max_unit,
      min_unit: inv.min_unit,
      step_size: inv.step_size,
    };
  }
  const { MEMORY_MB: mem, DISK_GB: disk, VCPU: cpu } = p.inventories;
  const usedMem = p.usage.MEMORY_MB ?? 0;
  const usedDisk = p.usage.DISK_GB ?? 0;
  const failedBuilds = p.stats?.failed_builds ?? 0;
  const stats: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.stats ?? {})) if (v !== undefined && v !== null) stats[k] = String(v);
  Object.assign(stats, {
    num_instances: String(p.num_instances),
    io_workload: String(p.num_io_ops),
    failed_builds: String(failedBuilds),
  });
  const zone = aggregates.find((a) => a.metadata[AZ_KEY])?.metadata[AZ_KEY];
  return {
    host: p.host,
    nodename: p.node,
    availability_zone: zone ?? config.default_availability_zone,
    aggregates,
    // nova-compute keeps COMPUTE_STATUS_DISABLED on a disabled service's provider.
    traits: p.service.disabled ? [...p.traits, COMPUTE_STATUS_DISABLED] : [...p.traits],
    resources,
    free_ram_mb: novaFree(mem, usedMem),
    free_disk_mb: novaFree(disk, usedDisk) * 1024,
    total_usable_ram_mb: mem?.total ?? 0,
    total_usable_disk_gb: disk?.total ?? 0,
    disk_mb_used: novaUsed(disk, usedDisk) * 1024,
    vcpus_total: cpu?.total ?? 0,
    vcpus_used: p.usage.VCPU ?? 0,
    cpu_allocation_ratio: cpu?.allocation_ratio ?? 1,
    ram_allocation_ratio: mem?.allocation_ratio ?? 1,
    disk_allocation_ratio: disk?.allocation_ratio ?? 1,
    num_instances: p.num_instances,
    num_io_ops: p.num_io_ops,
    failed_builds: failedBuilds,
    hypervisor_type: p.hypervisor_type,
    hypervisor_version: p.hypervisor_version,
    host_ip: p.host_ip,
    supported_instances: p.supported_instances,
    metrics: { ...(p.metrics ?? {}) },
    stats,
    service: { ...p.service },
  };
}

/**
 * A host's aggregates as the scheduler sees them: those listing it, and when none of them sets a
 * zone, the zone it registered with as an aggregate of that zone (one object per zone, from
 * `zones`), so Nova's zone rules (the prefilter, AvailabilityZoneFilter) apply to it unchanged.
 */
export function hostAggregates(
  listing: readonly HostAggregate[],
  registeredZone: string | null | undefined,
  zones: Map<string, HostAggregate>,
): readonly HostAggregate[] {
  if (!registeredZone || listing.some((a) => a.metadata[AZ_KEY])) return listing;
  let zone = zones.get(registeredZone);
  if (!zone) {
    zone = { id: `zone:${registeredZone}`, name: registeredZone, metadata: { [AZ_KEY]: registeredZone } };
    zones.set(registeredZone, zone);
  }
  return [...listing, zone];
}
