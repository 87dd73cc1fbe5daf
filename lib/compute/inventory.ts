import { schedulerConfig } from "../config.js";
import { computeNodeInventories, type Inventory, type ResourceClass } from "../placement-rules.js";

export interface HostSize {
  vcpus: number;
  memory_mb: number;
  local_gb: number;
  /** unset: [DEFAULT] cpu_allocation_ratio, else initial_cpu_allocation_ratio (16.0) */
  cpu_allocation_ratio?: number;
  /** unset: [DEFAULT] ram_allocation_ratio, else initial_ram_allocation_ratio (1.5) */
  ram_allocation_ratio?: number;
  /** unset: [DEFAULT] disk_allocation_ratio, else initial_disk_allocation_ratio (1.0) */
  disk_allocation_ratio?: number;
  /** unset: [DEFAULT] reserved_host_memory_mb (512) */
  reserved_host_memory_mb?: number;
  reserved_host_cpus?: number;
  reserved_host_disk_mb?: number;
}

/**
 * The inventories a compute node reports to Placement, as Nova's resource tracker builds them:
 * the host's own size, with ratios and reserved amounts from the [DEFAULT] options. (An admin's
 * ratio or reserved set through Placement survives the agent's next registration.)
 */
export function inventoriesFor(size: HostSize): Record<ResourceClass, Inventory> {
  return computeNodeInventories(size, schedulerConfig()) as Record<ResourceClass, Inventory>;
}
