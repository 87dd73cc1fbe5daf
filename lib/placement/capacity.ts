// Placement's capacity rules, pure: what an inventory can hold, what a request may ask of it, and
// whether an inventory change still holds what is allocated. No I/O; the writes in claims.ts and
// inventory.ts turn these into DynamoDB conditions.
import { capacity, describeUnitViolation, noInventory, violatedUnitRule } from "../placement-rules.js";
import {
  type AllocationRecord,
  type HostRecord,
  type Inventory,
  MAX_INT,
  type ResourceClass,
  type Resources,
  STANDARD_RESOURCE_CLASSES,
} from "./types.js";

/** Placement's names: standard classes, or `CUSTOM_` followed by capitals, digits and `_`. */
const CUSTOM_CLASS = /^CUSTOM_[A-Z0-9_]+$/;

export function isResourceClass(name: string): name is ResourceClass {
  return (STANDARD_RESOURCE_CLASSES as readonly string[]).includes(name) || CUSTOM_CLASS.test(name);
}

/** Placement's defaults for the fields an inventory record may omit. */
export const INVENTORY_DEFAULTS: Omit<Inventory, "total"> = {
  reserved: 0,
  min_unit: 1,
  max_unit: MAX_INT,
  step_size: 1,
  allocation_ratio: 1.0,
};

/** capacity − usage for every inventory class: the `free` map a claim's condition compares with. */
export function freeFor(inventories: HostRecord["inventories"], usage: Resources): Resources {
  const free: Resources = {};
  for (const [rc, inv] of Object.entries(inventories) as [ResourceClass, Inventory][]) {
    free[rc] = capacity(inv) - (usage[rc] ?? 0);
  }
  return free;
}

/** Σ allocations per class: what usage must equal. */
export function sumAllocations(allocations: readonly Pick<AllocationRecord, "resources">[]): Resources {
  const sum: Record<string, number> = {};
  for (const a of allocations) {
    for (const [rc, amount] of Object.entries(a.resources)) {
      if (amount) sum[rc] = (sum[rc] ?? 0) + amount;
    }
  }
  return sum as Resources;
}

/**
 * Why `amount` of `rc` may never be allocated from `inv`, whatever the usage (Placement checks
 * the unit constraints before capacity); undefined when it may.
 */
export function unitViolation(rc: string, amount: number, inv: Inventory | undefined): string | undefined {
  if (!inv) return noInventory(rc);
  const rule = violatedUnitRule(amount, inv.min_unit, inv.max_unit, inv.step_size);
  return rule && describeUnitViolation(rc, rule, amount, inv[rule]);
}

/** The amounts a request may carry: positive integers (zero means "not requested"). */
export function invalidAmount(res: Resources): string | undefined {
  for (const [rc, amount] of Object.entries(res)) {
    if (amount === undefined || amount === 0) continue;
    if (!Number.isInteger(amount) || amount < 0 || amount > MAX_INT) {
      return `${rc} amount ${amount} is not a positive integer`;
    }
  }
  return undefined;
}

/** `claim_limit`: max_unit of the classes whose min_unit and step_size are 1. */
export function claimLimits(inventories: HostRecord["inventories"]): NonNullable<HostRecord["claim_limit"]> {
  const out: NonNullable<HostRecord["claim_limit"]> = {};
  for (const [rc, inv] of Object.entries(inventories) as [ResourceClass, Inventory][]) {
    if (inv.min_unit <= 1 && inv.step_size <= 1) out[rc] = inv.max_unit;
  }
  return out;
}

/** Why an inventory record is malformed (Placement's 400s), or undefined. */
export function invalidInventory(host: string, rc: string, inv: Inventory): string | undefined {
  if (inv.reserved > inv.total) {
    return (
      `Unable to update inventory for resource provider '${host}': ` +
      `Invalid inventory for '${rc}' on resource provider '${host}'. The reserved value is greater than total.`
    );
  }
  if (inv.min_unit > inv.max_unit) {
    return `Bad inventory ${rc} for resource provider ${host}: min_unit ${inv.min_unit} exceeds max_unit ${inv.max_unit}.`;
  }
  if (!(inv.allocation_ratio > 0)) {
    return `Bad inventory ${rc} for resource provider ${host}: allocation_ratio must be greater than 0.`;
  }
  return undefined;
}

/** One class whose allocations would not fit the new inventory. */
export interface InventoryInUseDetail {
  resource_class: string;
  used: number;
  /** the new capacity; null when the class would be removed */
  capacity: number | null;
}

/**
 * The classes whose current usage would not fit `next` (removed while in use, or a capacity
 * below usage). Placement refuses removing an inventory in use with 409 InventoryInUse; here a
 * shrink below usage is refused the same way, so `free` never goes negative. Usage is Σ of the
 * host's allocation items, kept so by the transactions that write both (the audit checks it).
 */
export function inventoryInUse(
  current: Pick<HostRecord, "usage">,
  next: HostRecord["inventories"],
): InventoryInUseDetail[] {
  const out: InventoryInUseDetail[] = [];
  for (const [rc, u] of Object.entries(current.usage) as [string, number][]) {
    if (u <= 0) continue;
    const inv = next[rc as ResourceClass];
    if (!inv) out.push({ resource_class: rc, used: u, capacity: null });
    else if (u > capacity(inv)) out.push({ resource_class: rc, used: u, capacity: capacity(inv) });
  }
  return out.sort((a, b) => a.resource_class.localeCompare(b.resource_class));
}

/** Placement's InventoryInUse text, with what does not fit. */
export function describeInventoryInUse(host: string, details: InventoryInUseDetail[]): string {
  const classes = details.map((d) => d.resource_class).join(", ");
  const why = details
    .map((d) =>
      d.capacity === null
        ? `${d.resource_class} has ${d.used} allocated and would be removed`
        : `${d.resource_class} usage ${d.used} exceeds the new capacity ${d.capacity}`,
    )
    .join("; ");
  return `Inventory for '${classes}' on resource provider '${host}' in use: ${why}.`;
}

/** Placement's 409s: a generation that moved on, or an inventory change that allocations forbid. */
export class PlacementConflict extends Error {
  constructor(
    message: string,
    /** Placement's error code */
    readonly code: "placement.concurrent_update" | "placement.inventory.inuse",
    readonly details: InventoryInUseDetail[] = [],
  ) {
    super(message);
    this.name = "PlacementConflict";
  }
}

/** Placement's 400 for an inventory record that cannot exist. */
export class InvalidInventory extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidInventory";
  }
}

export const GENERATION_CONFLICT = "resource provider generation conflict";

/** The inventory the agent reports, with the reserved and allocation_ratio an admin set kept. */
export function withOverrides(
  reported: HostRecord["inventories"],
  overrides: HostRecord["inventory_overrides"] = {},
): HostRecord["inventories"] {
  const out: HostRecord["inventories"] = {};
  for (const [rc, inv] of Object.entries(reported) as [ResourceClass, Inventory][]) {
    out[rc] = { ...inv, ...(overrides[rc] ?? {}) };
  }
  return out;
}

/**
 * The host's inventory, usage and free after replacing its inventories with `next`; throws
 * InvalidInventory or PlacementConflict (in use). Usage is carried over (the write is conditioned
 * on the generation it was read at, so it cannot have changed), free recomputed from it.
 */
export function planInventory(
  current: Pick<HostRecord, "host" | "usage">,
  next: HostRecord["inventories"],
): Pick<HostRecord, "inventories" | "claim_limit" | "usage" | "free"> {
  for (const [rc, inv] of Object.entries(next) as [ResourceClass, Inventory][]) {
    const bad = invalidInventory(current.host, rc, inv);
    if (bad) throw new InvalidInventory(bad);
  }
  const inUse = inventoryInUse(current, next);
  if (inUse.length) {
    throw new PlacementConflict(
      describeInventoryInUse(current.host, inUse),
      "placement.inventory.inuse",
      inUse,
    );
  }
  const usage: Resources = {};
  for (const rc of Object.keys(next) as ResourceClass[]) usage[rc] = current.usage[rc] ?? 0;
  return { inventories: next, claim_limit: claimLimits(next), usage, free: freeFor(next, usage) };
}
