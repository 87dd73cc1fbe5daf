// Placement's model, stored on the host item: one resource provider per compute host.
export const STANDARD_RESOURCE_CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB"] as const;
export type ResourceClass = (typeof STANDARD_RESOURCE_CLASSES)[number] | `CUSTOM_${string}`;
export type Resources = Partial<Record<ResourceClass, number>>;

export interface Inventory {
  total: number;
  reserved: number;
  allocation_ratio: number;
  min_unit: number;
  max_unit: number;
  step_size: number;
}

export interface Allocation {
  resources: Resources;
  /** The instance's attempt that claimed this: a release for another attempt is a no-op. */
  attempt: number;
  claimed_at: string;
}

export interface ServiceRecord {
  disabled: boolean;
  disabled_reason: string | null;
  forced_down: boolean;
  /** ISO timestamp of the compute agent's last heartbeat. */
  last_heartbeat: string;
}

export interface HostRecord {
  host: string;
  /** Nova's nodename (hypervisor_hostname); one node per host here. */
  node: string;
  availability_zone: string;
  aggregates: string[];
  traits: string[];
  inventories: Partial<Record<ResourceClass, Inventory>>;
  usage: Resources;
  /** capacity − usage per class, kept so a claim's condition needs no arithmetic. */
  free: Resources;
  allocations: Record<string, Allocation>;
  generation: number;
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  /** [architecture, hypervisor_type, vm_mode] triples, as Nova's supported_instances. */
  supported_instances: [string, string, string][];
  stats: { failed_builds: number };
  service: ServiceRecord;
  queue_url: string;
}

/** Placement's capacity: (total − reserved) × allocation_ratio, floored. */
export function capacity(inv: Inventory): number {
  return Math.floor((inv.total - inv.reserved) * inv.allocation_ratio);
}
