// Placement's host records → the scheduler's HostState (the scheduler never sees DynamoDB).
import type { SchedulerConfig } from "../config.js";
import { isServiceUp } from "../placement/hosts.js";
import { capacity, type HostRecord, type Inventory } from "../placement/types.js";
import type { HostResource, HostState } from "../scheduler/types.js";

/** Physical free amount as Nova's compute node reports it: total − reserved − used (may go < 0). */
function physicalFree(inv: Inventory | undefined, used: number): number {
  return inv ? inv.total - inv.reserved - used : 0;
}

export function toHostState(h: HostRecord, config: SchedulerConfig, now = Date.now()): HostState {
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
  return {
    host: h.host,
    nodename: h.node,
    availability_zone: h.availability_zone || config.default_availability_zone,
    aggregates: h.aggregates,
    traits: h.traits,
    resources,
    free_ram_mb: physicalFree(h.inventories.MEMORY_MB, h.usage.MEMORY_MB ?? 0),
    free_disk_mb: physicalFree(h.inventories.DISK_GB, h.usage.DISK_GB ?? 0) * 1024,
    vcpus_total: h.inventories.VCPU?.total ?? 0,
    vcpus_used: h.usage.VCPU ?? 0,
    num_instances: Object.keys(h.allocations).length,
    failed_builds: h.stats?.failed_builds ?? 0,
    hypervisor_type: h.hypervisor_type,
    hypervisor_version: h.hypervisor_version,
    host_ip: h.host_ip,
    supported_instances: h.supported_instances,
    service: {
      disabled: h.service.disabled,
      disabled_reason: h.service.disabled_reason,
      forced_down: h.service.forced_down,
      up: isServiceUp(h, config.service_down_time, now),
    },
  };
}
