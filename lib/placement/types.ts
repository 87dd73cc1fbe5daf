// Placement's model, stored on the host item: one resource provider per compute host.
export const STANDARD_RESOURCE_CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB"] as const;
export type ResourceClass = (typeof STANDARD_RESOURCE_CLASSES)[number] | `CUSTOM_${string}`;
export type Resources = Partial<Record<ResourceClass, number>>;

/** Placement's (and MySQL's) largest integer: the bound of every inventory field. */
export const MAX_INT = 2147483647;

export interface Inventory {
  total: number;
  reserved: number;
  allocation_ratio: number;
  min_unit: number;
  max_unit: number;
  step_size: number;
}

export type InventoryOverride = Partial<Pick<Inventory, "reserved" | "allocation_ratio">>;

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
  /**
   * Set by the liveness sweep when the host stopped heartbeating, removed when it heartbeats again:
   * the scheduler learns liveness from the provider item without heartbeats rewriting it.
   */
  down_since?: string;
}

export interface HostRecord {
  host: string;
  /** Nova's nodename (hypervisor_hostname); one node per host here. */
  node: string;
  availability_zone: string;
  aggregates: string[];
  traits: string[];
  /** per class, standard or CUSTOM_*; capacity = (total − reserved) × allocation_ratio */
  inventories: Partial<Record<ResourceClass, Inventory>>;
  /**
   * `reserved` and `allocation_ratio` an admin set through the inventory API: the agent's next
   * registration keeps them (as Nova keeps Placement's ratios when its *_allocation_ratio options
   * are unset) instead of resetting them to its configuration.
   */
  inventory_overrides?: Partial<Record<ResourceClass, InventoryOverride>>;
  /**
   * Per class, the largest amount one claim may take without reading the inventory: max_unit
   * when min_unit and step_size are 1 (Nova's standard classes), absent otherwise. Written with
   * the inventories, so a claim's condition checks every unit rule with one comparison (a
   * condition expression has no modulo for step_size); a class without it is claimed after a read.
   */
  claim_limit?: Partial<Record<ResourceClass, number>>;
  /** Σ allocations per class, kept in step by every claim and release */
  usage: Resources;
  /** capacity − usage per class, kept so a claim's condition needs no arithmetic. */
  free: Resources;
  allocations: Record<string, Allocation>;
  /** Placement's resource provider generation: bumped by every inventory or allocation change */
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
