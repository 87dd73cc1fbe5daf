// Nova's os-hypervisors views, from the host records (one node per host; the id is the host name).
import {
  type AllocationRecord,
  capacity,
  type HostRecord,
  type Inventory,
  type ResourceClass,
} from "../../placement/types.js";

function inv(h: HostRecord, rc: ResourceClass): Inventory | undefined {
  return h.inventories[rc];
}

function used(h: HostRecord, rc: ResourceClass): number {
  return h.usage[rc] ?? 0;
}

export function hypervisorSummaryView(h: HostRecord, up: boolean): Record<string, unknown> {
  return {
    id: h.host,
    hypervisor_hostname: h.node,
    state: up ? "up" : "down",
    status: h.service.disabled ? "disabled" : "enabled",
  };
}

/**
 * Nova's hypervisor detail. Totals are the inventories' totals (before ratios, as Nova reports
 * them); memory and disk "used" include the reserved amount, as Nova counts reserved as used.
 */
export function hypervisorDetailView(h: HostRecord, up: boolean): Record<string, unknown> {
  const vcpu = inv(h, "VCPU");
  const mem = inv(h, "MEMORY_MB");
  const disk = inv(h, "DISK_GB");
  const memory_mb = mem?.total ?? 0;
  const memory_mb_used = used(h, "MEMORY_MB") + (mem?.reserved ?? 0);
  const local_gb = disk?.total ?? 0;
  const local_gb_used = used(h, "DISK_GB") + (disk?.reserved ?? 0);
  return {
    ...hypervisorSummaryView(h, up),
    vcpus: vcpu?.total ?? 0,
    vcpus_used: used(h, "VCPU"),
    memory_mb,
    memory_mb_used,
    free_ram_mb: memory_mb - memory_mb_used,
    local_gb,
    local_gb_used,
    free_disk_gb: local_gb - local_gb_used,
    disk_available_least: local_gb - local_gb_used,
    running_vms: h.num_instances,
    current_workload: 0,
    hypervisor_type: h.hypervisor_type,
    hypervisor_version: h.hypervisor_version,
    host_ip: h.host_ip,
    cpu_info: "{}",
    service: { host: h.host, id: h.host, disabled_reason: h.service.disabled_reason },
  };
}

/**
 * What Placement knows about the host (admins): the provider generation, each inventory (with its
 * capacity), usage per class and every allocation item on it (`held`), by consumer.
 */
export function hypervisorPlacementView(
  h: HostRecord,
  held: readonly AllocationRecord[],
): Record<string, unknown> {
  const inventories: Record<string, unknown> = {};
  for (const [rc, i] of Object.entries(h.inventories).sort(([a], [b]) => a.localeCompare(b)) as [
    ResourceClass,
    Inventory,
  ][]) {
    inventories[rc] = { ...inventoryView(i), capacity: capacity(i) };
  }
  const allocations: Record<string, unknown> = {};
  for (const a of [...held].sort((x, y) => x.consumer.localeCompare(y.consumer))) {
    allocations[a.consumer] = { resources: a.resources, attempt: a.attempt, claimed_at: a.claimed_at };
  }
  return {
    resource_provider_generation: h.generation,
    inventories,
    usages: Object.fromEntries(
      Object.keys(h.inventories)
        .sort()
        .map((rc) => [rc, used(h, rc as ResourceClass)]),
    ),
    allocations,
  };
}

/** One inventory record in Placement's field order. */
export function inventoryView(i: Inventory): Record<string, number> {
  return {
    total: i.total,
    reserved: i.reserved,
    min_unit: i.min_unit,
    max_unit: i.max_unit,
    step_size: i.step_size,
    allocation_ratio: i.allocation_ratio,
  };
}
