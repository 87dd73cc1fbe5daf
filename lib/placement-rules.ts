// Placement's rules for one resource provider, each written once: the resource classes, the
// inventory record a host reports and Placement keeps, its capacity, the unit rules a request must
// respect, Nova's used and free, whether a host's compute service is up, and the inventories a
// compute node reports. Pure, at the bottom of lib/'s graph beside config and resources:
// lib/scheduler may not import lib/placement, and both need these (so do the API's views, the
// planner and the compute agent), so they live below both.
import { z } from "zod";
import type { SchedulerConfig } from "./config.js";

export const STANDARD_RESOURCE_CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB"] as const;
export type StandardResourceClass = (typeof STANDARD_RESOURCE_CLASSES)[number];
/** Placement's resource classes: the standard ones, or CUSTOM_*. */
export type ResourceClass = StandardResourceClass | `CUSTOM_${string}`;

/** One resource class of a provider: Placement's inventory record, as a host reports it. */
export const inventorySchema = z.object({
  total: z.number().int().min(0),
  reserved: z.number().int().min(0),
  min_unit: z.number().int().min(1),
  max_unit: z.number().int().min(1),
  step_size: z.number().int().min(1),
  allocation_ratio: z.number().positive(),
});

export type Inventory = z.infer<typeof inventorySchema>;

/** Placement's capacity: (total − reserved) × allocation_ratio, whole units. */
export function capacity(inv: Pick<Inventory, "total" | "reserved" | "allocation_ratio">): number {
  return Math.floor((inv.total - inv.reserved) * inv.allocation_ratio);
}

/** An inventory's unit rules: each may refuse an amount whatever the usage. */
export type UnitRule = "min_unit" | "max_unit" | "step_size";

/**
 * The unit rule refusing `amount`, or undefined: min_unit, max_unit, then step_size, all checked
 * before capacity, as Placement does. Scalars, so the scheduler's loops over its columns call it
 * as they are.
 */
export function violatedUnitRule(
  amount: number,
  min_unit: number,
  max_unit: number,
  step_size: number,
): UnitRule | undefined {
  if (amount < min_unit) return "min_unit";
  if (amount > max_unit) return "max_unit";
  if (step_size > 1 && amount % step_size !== 0) return "step_size";
  return undefined;
}

/** Why `amount` of `rc` breaks `rule`, whose value on the inventory is `limit`. */
export function describeUnitViolation(rc: string, rule: UnitRule, amount: number, limit: number): string {
  switch (rule) {
    case "min_unit":
      return `${rc} request ${amount} is below min_unit ${limit}`;
    case "max_unit":
      return `${rc} request ${amount} exceeds max_unit ${limit}`;
    case "step_size":
      return `${rc} request ${amount} is not a multiple of step_size ${limit}`;
  }
}

/** Why a class the provider has no inventory of cannot be allocated. */
export function noInventory(rc: string): string {
  return `no ${rc} inventory`;
}

/**
 * Nova's used (memory_mb_used, local_gb_used, disk_mb_used): what the instances use plus what
 * the host keeps for itself (reserved).
 */
export function novaUsed(inv: Pick<Inventory, "reserved"> | undefined, used: number): number {
  return used + (inv?.reserved ?? 0);
}

/**
 * Nova's free (free_ram_mb, free_disk_gb): total − reserved − used, physical (no allocation
 * ratio), so it may go below 0 where a ratio lets usage pass the total.
 */
export function novaFree(inv: Pick<Inventory, "total" | "reserved"> | undefined, used: number): number {
  return (inv?.total ?? 0) - novaUsed(inv, used);
}

/**
 * Nova's servicegroup answer from the provider item alone (what the scheduler caches and the
 * API shows): not forced down by an operator and not marked down by the liveness sweep.
 */
export function isServiceUp(h: {
  service: { forced_down: boolean; down_since?: string | undefined };
}): boolean {
  return !h.service.forced_down && !h.service.down_since;
}

/** Nova's servicegroup check on the heartbeat itself: not forced down, and heard from within service_down_time. */
export function isHeartbeatAlive(
  s: { last_heartbeat: string; forced_down?: boolean | undefined },
  serviceDownTime: number,
  now = Date.now(),
): boolean {
  return !s.forced_down && heardWithin(s.last_heartbeat, serviceDownTime, now);
}

/** The heartbeat at `lastHeartbeat` (ISO) is within service_down_time (seconds) of `now` (ms). */
export function heardWithin(lastHeartbeat: string, serviceDownTime: number, now: number): boolean {
  return now - Date.parse(lastHeartbeat) <= serviceDownTime * 1000;
}

/** A compute node's size and its nova.conf overrides (unset: the [DEFAULT] options). */
export interface ComputeNodeSize {
  vcpus: number;
  memory_mb: number;
  local_gb: number;
  cpu_allocation_ratio?: number | undefined;
  ram_allocation_ratio?: number | undefined;
  disk_allocation_ratio?: number | undefined;
  reserved_host_memory_mb?: number | undefined;
  reserved_host_cpus?: number | undefined;
  reserved_host_disk_mb?: number | undefined;
}

type InventoryOptions = Pick<
  SchedulerConfig,
  | "reserved_host_cpus"
  | "reserved_host_memory_mb"
  | "reserved_host_disk_mb"
  | "cpu_allocation_ratio"
  | "ram_allocation_ratio"
  | "disk_allocation_ratio"
  | "initial_cpu_allocation_ratio"
  | "initial_ram_allocation_ratio"
  | "initial_disk_allocation_ratio"
>;

/**
 * The inventories a compute node reports to Placement, as Nova's resource tracker builds them:
 * its size, with ratios and reserved amounts from nova.conf (a ratio unset falls back to the
 * initial_* option). Shared by the compute agent and novaless-plan's scenarios.
 */
export function computeNodeInventories(
  size: ComputeNodeSize,
  c: InventoryOptions,
): Record<StandardResourceClass, Inventory> {
  const inv = (total: number, reserved: number, allocation_ratio: number): Inventory => ({
    total,
    reserved,
    allocation_ratio,
    min_unit: 1,
    max_unit: total,
    step_size: 1,
  });
  return {
    VCPU: inv(
      size.vcpus,
      size.reserved_host_cpus ?? c.reserved_host_cpus,
      size.cpu_allocation_ratio ?? c.cpu_allocation_ratio ?? c.initial_cpu_allocation_ratio,
    ),
    MEMORY_MB: inv(
      size.memory_mb,
      size.reserved_host_memory_mb ?? c.reserved_host_memory_mb,
      size.ram_allocation_ratio ?? c.ram_allocation_ratio ?? c.initial_ram_allocation_ratio,
    ),
    DISK_GB: inv(
      size.local_gb,
      Math.ceil((size.reserved_host_disk_mb ?? c.reserved_host_disk_mb) / 1024),
      size.disk_allocation_ratio ?? c.disk_allocation_ratio ?? c.initial_disk_allocation_ratio,
    ),
  };
}
