import type { Inventory, ResourceClass } from "../placement/types.js";

export interface HostSize {
  vcpus: number;
  memory_mb: number;
  local_gb: number;
  /** Nova's defaults: cpu 16.0, ram 1.5, disk 1.0 */
  cpu_allocation_ratio?: number;
  ram_allocation_ratio?: number;
  disk_allocation_ratio?: number;
  /** Nova's reserved_host_memory_mb default: 512 */
  reserved_host_memory_mb?: number;
  reserved_host_cpus?: number;
  reserved_host_disk_mb?: number;
}

/** The inventories a compute node reports to Placement, as Nova's resource tracker builds them. */
export function inventoriesFor(size: HostSize): Record<ResourceClass, Inventory> {
  const inv = (total: number, reserved: number, ratio: number): Inventory => ({
    total,
    reserved,
    allocation_ratio: ratio,
    min_unit: 1,
    max_unit: total,
    step_size: 1,
  });
  return {
    VCPU: inv(size.vcpus, size.reserved_host_cpus ?? 0, size.cpu_allocation_ratio ?? 16.0),
    MEMORY_MB: inv(size.memory_mb, size.reserved_host_memory_mb ?? 512, size.ram_allocation_ratio ?? 1.5),
    DISK_GB: inv(
      size.local_gb,
      Math.ceil((size.reserved_host_disk_mb ?? 0) / 1024),
      size.disk_allocation_ratio ?? 1.0,
    ),
  };
}
