// Placement's model: one resource provider item per compute host, one allocation item per claim.
import type { Inventory, ResourceClass } from "../placement-rules.js";

// The resource classes, the inventory record and its capacity are Placement's rules, below both
// placement and the scheduler.
export {
  capacity,
  type Inventory,
  type ResourceClass,
  STANDARD_RESOURCE_CLASSES,
} from "../placement-rules.js";

export type Resources = Partial<Record<ResourceClass, number>>;

/** Placement's (and MySQL's) largest integer: the bound of every inventory field. */
export const MAX_INT = 2147483647;

export type InventoryOverride = Partial<Pick<Inventory, "reserved" | "allocation_ratio">>;

/** One claim: an item of the Allocations table (pk consumer, sk host). */
export interface AllocationRecord {
  /** the instance uuid */
  consumer: string;
  host: string;
  /** The instance's attempt that claimed this: a release for another attempt is a no-op. */
  attempt: number;
  resources: Resources;
  claimed_at: string;
  /**
   * The server group (affinity or anti-affinity) whose ledger counts this allocation
   * (lib/placement/group-claims.ts): a release takes it off in the same transaction, a move of
   * the allocation to a migration consumer keeps it, still counting the instance.
   */
  group?: AllocationGroup;
}

/** What an allocation item keeps of its group, so a release or a move finds the ledger. */
export interface AllocationGroup {
  id: string;
  policy: "affinity" | "anti-affinity";
  /** the member counted (a migration consumer's allocation counts its instance) */
  instance: string;
}

export interface ServiceRecord {
  disabled: boolean;
  disabled_reason: string | null;
  forced_down: boolean;
  /**
   * Set by the liveness sweep when the host stopped heartbeating (ISO timestamp), removed when it
   * heartbeats again: written on those transitions only, so liveness reaches the scheduler's
   * cache without a write per beat.
   */
  down_since?: string;
  /**
   * Set by DELETE /os-services/{id} (ISO timestamp): the service is gone from the API's lists and
   * disabled for the scheduler until its agent registers again, which recreates it (as a restarted
   * nova-compute recreates its service record).
   */
  deleted_at?: string;
}

/**
 * The resource provider: one compact item per compute host (about 1 KB), what the scheduler's
 * cache holds. Its allocations are items of their own (AllocationRecord); usage, free,
 * num_instances and generation move with them in the same transaction.
 */
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
  /** Placement's resource provider generation: bumped by every inventory or allocation change */
  generation: number;
  /** how many allocations the host holds (claim +1, release −1): Nova's num_instances */
  num_instances: number;
  /** builds in flight: claim +1; the agent writes the absolute count at each build's end */
  num_io_ops: number;
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  /** [architecture, hypervisor_type, vm_mode] triples, as Nova's supported_instances. */
  supported_instances: [string, string, string][];
  stats: { failed_builds: number };
  service: ServiceRecord;
  queue_url: string;
  /** the driver's facts, as the agent registered them (os-hypervisors' cpu_info) */
  hypervisor_facts?: Record<string, unknown>;
  /** when the host's compute service last registered (started): its uptime counts from it */
  started_at?: string;
  /** ISO-8601 (ms) of the item's last write, as its change-feed entry says (lib/placement/feed.ts) */
  changed_at: string;
}
