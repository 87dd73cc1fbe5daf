// Placement's resource rule for one host: does its inventory fit the request? The unit rules and
// their wording are Placement's own (lib/placement-rules.ts); this adds capacity and the data a
// NoValidHost summary is made from.
import { describeUnitViolation, noInventory, violatedUnitRule } from "../placement-rules.js";
import type { ResourceFitFailure } from "./types.js";

/**
 * Placement's rule for one class of one provider: the amount respects min_unit, max_unit and
 * step_size (checked first, as Placement does), and used + amount ≤ capacity. Undefined fits.
 * (A class the provider lacks is "missing", found by the caller.)
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
  const rule = violatedUnitRule(amount, min_unit, max_unit, step_size);
  if (rule) {
    const limit = rule === "min_unit" ? min_unit : rule === "max_unit" ? max_unit : step_size;
    return failure(rc, rule, amount, capacity, used, limit);
  }
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
      return noInventory(rc);
    case "capacity":
      return `insufficient ${rc}: needs ${f.requested}, free ${f.free}`;
    default:
      return describeUnitViolation(rc, f.violation, f.requested, f.limit!);
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
