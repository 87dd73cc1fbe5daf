// Nova's os-hypervisors views, from the host records (one node per host; the id is the host name,
// the node's uuid from 2.53), as version tables.

import type { AllocationRecord, HostRecord, ResourceClass } from "../../placement/types.js";
import { capacity, type Inventory, novaFree, novaUsed } from "../../placement-rules.js";
import { nodeNumber, nodeUuid, serviceNumber, serviceUuid } from "../host-ids.js";
import { type FieldRows, viewFields } from "../microversion.js";

function inv(h: HostRecord, rc: ResourceClass): Inventory | undefined {
  return h.inventories[rc];
}

function used(h: HostRecord, rc: ResourceClass): number {
  return h.usage[rc] ?? 0;
}

/** What a hypervisor view reads besides its host: liveness and, when asked, its servers. */
export interface HypervisorContext {
  up: boolean;
  /** the host's servers, when the request asked for them (with_servers, /servers) */
  servers?: { name: string; uuid: string }[];
  /** the request's time, for the uptime (2.88's show) */
  now?: Date;
}

const resourceFields = (h: HostRecord) => {
  const vcpu = inv(h, "VCPU");
  const mem = inv(h, "MEMORY_MB");
  const disk = inv(h, "DISK_GB");
  const free_disk_gb = novaFree(disk, used(h, "DISK_GB"));
  return {
    vcpus: vcpu?.total ?? 0,
    vcpus_used: used(h, "VCPU"),
    memory_mb: mem?.total ?? 0,
    memory_mb_used: novaUsed(mem, used(h, "MEMORY_MB")),
    free_ram_mb: novaFree(mem, used(h, "MEMORY_MB")),
    local_gb: disk?.total ?? 0,
    local_gb_used: novaUsed(disk, used(h, "DISK_GB")),
    free_disk_gb,
    disk_available_least: free_disk_gb,
    running_vms: h.num_instances,
    current_workload: 0,
  };
};

const summaryRows: FieldRows<HostRecord, HypervisorContext> = [
  {
    // the host name stands for Nova's integer id; from 2.53 the node's uuid
    fields: (h, c) => ({
      id: nodeNumber(h.host),
      hypervisor_hostname: h.node,
      state: c.up ? "up" : "down",
      status: h.service.disabled ? "disabled" : "enabled",
    }),
  },
  { min: "2.53", fields: (h) => ({ id: nodeUuid(h.host) }) },
];

// Nova lists a host's servers when there are some; from 2.75 an empty list when asked and none
const serverRows: FieldRows<HostRecord, HypervisorContext> = [
  { max: "2.74", fields: (_h, c) => (c.servers?.length ? { servers: c.servers } : {}) },
  { min: "2.75", fields: (_h, c) => (c.servers ? { servers: c.servers } : {}) },
];

/** Nova's hypervisor summary (index, search, uptime's base). */
export const hypervisorSummaryView = viewFields<HostRecord, HypervisorContext>([
  ...summaryRows,
  ...serverRows,
]);

/**
 * Nova's hypervisor detail. Totals are the inventories' totals (before ratios, as Nova reports
 * them). cpu_info carries the driver's facts; 2.28 makes it an object; 2.88 drops the resource fields (Placement has them) and
 * adds uptime, which the fake driver cannot tell (Nova's null for a driver without it).
 */
export const hypervisorDetailView = viewFields<HostRecord, HypervisorContext>([
  ...summaryRows,
  {
    fields: (h) => ({
      hypervisor_type: h.hypervisor_type,
      hypervisor_version: h.hypervisor_version,
      host_ip: h.host_ip,
      service: { host: h.host, id: serviceNumber(h.host), disabled_reason: h.service.disabled_reason },
    }),
  },
  {
    min: "2.53",
    fields: (h) => ({
      service: { host: h.host, id: serviceUuid(h.host), disabled_reason: h.service.disabled_reason },
    }),
  },
  { max: "2.87", fields: resourceFields },
  // the driver's facts where libvirt puts the host's CPU (cgroup limits enforced or not, URI…)
  { max: "2.27", fields: (h) => ({ cpu_info: JSON.stringify(h.hypervisor_facts ?? {}) }) },
  { min: "2.28", max: "2.87", fields: (h) => ({ cpu_info: h.hypervisor_facts ?? {} }) },
  { min: "2.88", fields: (h, c) => ({ uptime: uptimeText(h, c.now) }) },
  ...serverRows,
]);

const two = (n: number) => String(n).padStart(2, "0");

/**
 * What a libvirt host's `uptime` says, as Nova's drivers report it ("17:37:14 up 2 days,  2:33,
 * 0 users,  load average: 0.00, 0.00, 0.00"), counted from when the host's compute service last
 * registered (the fake driver has no kernel of its own); null for a host that never said.
 */
export function uptimeText(h: Pick<HostRecord, "started_at">, now: Date | undefined): string | null {
  if (!h.started_at || !now) return null;
  const up = Math.max(0, Math.floor((now.getTime() - Date.parse(h.started_at)) / 1000));
  const days = Math.floor(up / 86400);
  const hours = Math.floor((up % 86400) / 3600);
  const minutes = Math.floor((up % 3600) / 60);
  const clock = `${two(now.getUTCHours())}:${two(now.getUTCMinutes())}:${two(now.getUTCSeconds())}`;
  const span =
    days > 0
      ? `${days} day${days === 1 ? "" : "s"}, ${String(hours).padStart(2)}:${two(minutes)}`
      : hours > 0
        ? `${String(hours).padStart(2)}:${two(minutes)}`
        : `${minutes} min`;
  return ` ${clock} up ${span},  0 users,  load average: 0.00, 0.00, 0.00`;
}

/** Nova's os-hypervisors/statistics (until 2.87): the resource fields summed over hosts. */
export function hypervisorStatisticsView(hosts: readonly HostRecord[]): Record<string, number> {
  const totals: Record<string, number> = {
    count: hosts.length,
    vcpus_used: 0,
    local_gb_used: 0,
    memory_mb: 0,
    current_workload: 0,
    vcpus: 0,
    running_vms: 0,
    free_disk_gb: 0,
    disk_available_least: 0,
    local_gb: 0,
    free_ram_mb: 0,
    memory_mb_used: 0,
  };
  for (const h of hosts) {
    for (const [k, v] of Object.entries(resourceFields(h))) totals[k] = (totals[k] ?? 0) + v;
  }
  return totals;
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
