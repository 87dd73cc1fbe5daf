// Placement's resource rule for one host: does its inventory fit the request?
import type { ResourceFitFailure } from "./types.js";

/**
 * Placement's rule for one class of one provider, the only place it is written: the amount
 * respects min_unit, max_unit and step_size (checked first, as Placement does), and
 * used + amount ≤ capacity. Undefined fits. (A class the provider lacks is "missing", found by
 * the caller.)
 */
export function inventoryFit(
  rc: string,
  amount: number,
  capacity: number,
  used: number,
  min_unit: number,
  max_unit: number,
  step_size: number,
): ResourceFitFailure | undefined {
  if (amount < min_unit) return failure(rc, "min_unit", amount, capacity, used, min_unit);
  if (amount > max_unit) return failure(rc, "max_unit", amount, capacity, used, max_unit);
  if (step_size > 1 && amount % step_size !== 0)
    return failure(rc, "step_size", amount, capacity, used, step_size);
  if (exceeds(used, amount, capacity)) return failure(rc, "capacity", amount, capacity, used);
  return undefined;
}

/** The capacity half of the rule alone, for loops that know the unit bounds cannot refuse. */
export function exceeds(used: number, amount: number, capacity: number): boolean {
  return used + amount > capacity;
}

export function failure(
  rc: string,
  violation: ResourceFitFailure["violation"],
  requested: number,
  capacity: number,
  used: number,
  limit?: number,
): ResourceFitFailure {
  const free = freeUnits(capacity, used);
  return limit === undefined
    ? { resource_class: rc, violation, requested, free }
    : { resource_class: rc, violation, requested, free, limit };
}

/** Whole units still allocatable; capacity may be fractional with a ratio, amounts never are. */
export function freeUnits(capacity: number, used: number): number {
  return Math.max(0, Math.floor(capacity - used));
}

export function describeFitFailure(f: ResourceFitFailure): string {
  const rc = f.resource_class;
  switch (f.violation) {
    case "missing":
      return `no ${rc} inventory`;
    case "min_unit":
      return `${rc} request ${f.requested} is below min_unit ${f.limit}`;
    case "max_unit":
      return `${rc} request ${f.requested} exceeds max_unit ${f.limit}`;
    case "step_size":
      return `${rc} request ${f.requested} is not a multiple of step_size ${f.limit}`;
    case "capacity":
      return `insufficient ${rc}: needs ${f.requested}, free ${f.free}`;
  }
}

/** The host-independent phrase a summary groups by ("lacked" ones get "largest free" added). */
export function fitSummary(f: ResourceFitFailure): string {
  const rc = f.resource_class;
  const n = withUnit(rc, f.requested);
  switch (f.violation) {
    case "missing":
      return `have no ${rc} inventory`;
    case "min_unit":
      return `have a ${rc} min_unit above ${n}`;
    case "max_unit":
      return `have a ${rc} max_unit below ${n}`;
    case "step_size":
      return `have a ${rc} step_size not dividing ${n}`;
    case "capacity":
      return `lacked ${rc}`;
  }
}

/** "8192 MB", "40 GB", "4" — the unit is in the class's name. */
export function withUnit(rc: string, amount: number): string {
  if (rc.endsWith("_MB")) return `${amount} MB`;
  if (rc.endsWith("_GB")) return `${amount} GB`;
  return String(amount);
}
