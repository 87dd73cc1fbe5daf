// Placement's host records, joined with the catalog's aggregates and the instances still
// building, → the scheduler's HostState (the scheduler never sees DynamoDB). Nova's HostManager.
import type { Aggregate } from "../catalog/types.js";
import type { SchedulerConfig } from "../config.js";
import type { InstanceRecord } from "../instances/types.js";
import { isServiceUp } from "../placement/liveness.js";
import { capacity, type HostRecord, type Inventory } from "../placement/types.js";
import { Fleet } from "../scheduler/fleet.js";
import { COMPUTE_STATUS_DISABLED } from "../scheduler/prefilters.js";
import type { HostAggregate, HostResource, HostState } from "../scheduler/types.js";

const AZ_KEY = "availability_zone";

export interface FleetSources {
  hosts: readonly HostRecord[];
  /** every host aggregate (membership lives only in Aggregate.hosts) */
  aggregates: readonly Aggregate[];
  /** instances in BUILD: on their host they are Nova's io_workload */
  building: readonly Pick<InstanceRecord, "id" | "host" | "deleted">[];
  /** instances being scheduled now: not yet anywhere */
  scheduling?: readonly string[];
}

/**
 * The fleet one scheduling run decides over. A host's aggregates are those listing it; its zone
 * is its AZ aggregate's, else the zone it registered with — which counts as an aggregate of that
 * zone here, so Nova's zone rules (the prefilter, AvailabilityZoneFilter) apply to it unchanged —
 * else [DEFAULT] default_availability_zone.
 */
export function buildFleet(src: FleetSources, config: SchedulerConfig, now = Date.now()): Fleet {
  const aggregates = src.aggregates.map(toHostAggregate);
  const byHost = new Map<string, HostAggregate[]>();
  for (const [k, a] of src.aggregates.entries()) {
    for (const h of a.hosts) {
      const list = byHost.get(h);
      if (list) list.push(aggregates[k]!);
      else byHost.set(h, [aggregates[k]!]);
    }
  }
  const scheduling = new Set(src.scheduling ?? []);
  const ioOps = new Map<string, number>();
  for (const rec of src.building) {
    if (!rec.host || rec.deleted || scheduling.has(rec.id)) continue;
    ioOps.set(rec.host, (ioOps.get(rec.host) ?? 0) + 1);
  }
  const zones = new Map<string, HostAggregate>();
  const hosts = src.hosts.map((h) => {
    const own = byHost.get(h.host) ?? [];
    const registered = h.availability_zone;
    let list: readonly HostAggregate[] = own;
    if (registered && !own.some((a) => a.metadata[AZ_KEY])) {
      let zone = zones.get(registered);
      if (!zone) {
        zone = { id: `zone:${registered}`, name: registered, metadata: { [AZ_KEY]: registered } };
        zones.set(registered, zone);
      }
      list = [...own, zone];
    }
    return toHostState(h, list, ioOps.get(h.host) ?? 0, config, now);
  });
  return new Fleet(hosts, [...aggregates, ...zones.values()]);
}

function toHostAggregate(a: Aggregate): HostAggregate {
  const metadata = { ...a.metadata };
  if (a.availability_zone && !metadata[AZ_KEY]) metadata[AZ_KEY] = a.availability_zone;
  return { id: a.id, name: a.name, metadata };
}

/** Physical free amount as Nova's compute node reports it: total − reserved − used (may go < 0). */
function physicalFree(inv: Inventory | undefined, used: number): number {
  return inv ? inv.total - inv.reserved - used : 0;
}

/** Facts a compute agent may report beyond Placement's record (metrics: none report them yet). */
type ReportedFacts = { metrics?: Record<string, number>; stats?: Record<string, unknown> };

export function toHostState(
  h: HostRecord,
  aggregates: readonly HostAggregate[],
  numIoOps: number,
  config: SchedulerConfig,
  now = Date.now(),
): HostState {
  const resources: Record<string, HostResource> = {};
  for (const [rc, inv] of Object.entries(h.inventories) as [string, Inventory][]) {
    resources[rc] = {
      capacity: capacity(inv),
      used: (h.usage as Record<string, number>)[rc] ?? 0,
      max_unit: inv.max_unit,
      min_unit: inv.min_unit,
      step_size: inv.step_size,
    };
  }
  const { MEMORY_MB: mem, DISK_GB: disk, VCPU: cpu } = h.inventories;
  const usedDisk = h.usage.DISK_GB ?? 0;
  const instances = Object.keys(h.allocations);
  const failedBuilds = h.stats?.failed_builds ?? 0;
  const reported = h as HostRecord & ReportedFacts;
  const zone = aggregates.find((a) => a.metadata[AZ_KEY])?.metadata[AZ_KEY];
  const stats: Record<string, string> = {};
  for (const [k, v] of Object.entries(reported.stats ?? {}))
    if (v !== undefined && v !== null) stats[k] = String(v);
  Object.assign(stats, {
    num_instances: String(instances.length),
    io_workload: String(numIoOps),
    failed_builds: String(failedBuilds),
  });
  return {
    host: h.host,
    nodename: h.node,
    availability_zone: zone ?? config.default_availability_zone,
    aggregates,
    // nova-compute keeps COMPUTE_STATUS_DISABLED on a disabled service's provider.
    traits: h.service.disabled ? [...h.traits, COMPUTE_STATUS_DISABLED] : [...h.traits],
    resources,
    free_ram_mb: physicalFree(mem, h.usage.MEMORY_MB ?? 0),
    free_disk_mb: physicalFree(disk, usedDisk) * 1024,
    total_usable_ram_mb: mem?.total ?? 0,
    total_usable_disk_gb: disk?.total ?? 0,
    disk_mb_used: ((disk?.reserved ?? 0) + usedDisk) * 1024,
    vcpus_total: cpu?.total ?? 0,
    vcpus_used: h.usage.VCPU ?? 0,
    cpu_allocation_ratio: cpu?.allocation_ratio ?? 1,
    ram_allocation_ratio: mem?.allocation_ratio ?? 1,
    disk_allocation_ratio: disk?.allocation_ratio ?? 1,
    instances,
    num_instances: instances.length,
    num_io_ops: numIoOps,
    failed_builds: failedBuilds,
    hypervisor_type: h.hypervisor_type,
    hypervisor_version: h.hypervisor_version,
    host_ip: h.host_ip,
    supported_instances: h.supported_instances,
    metrics: reported.metrics ?? {},
    stats,
    service: {
      disabled: h.service.disabled,
      disabled_reason: h.service.disabled_reason,
      forced_down: h.service.forced_down,
      up: isServiceUp(h),
    },
  };
}
