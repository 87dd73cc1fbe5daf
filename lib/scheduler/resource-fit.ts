// Placement's resource rule for one host: does its inventory fit the request?
import type { HostState, ResourceFitFailure } from "./types.js";

/**
 * A host fits when, for every requested class, it has inventory of that class and the amount
 * respects min_unit, max_unit, step_size and used + requested ≤ capacity. The first failing
 * class (in request order) is returned, so each host counts once in a summary; undefined fits.
 */
export function resourceFit(
  host: HostState,
  requested: readonly (readonly [string, number])[],
): ResourceFitFailure | undefined {
  for (let k = 0; k < requested.length; k++) {
    const rc = requested[k]![0];
    const amount = requested[k]![1];
    const inv = host.resources[rc];
    if (inv === undefined) return { resource_class: rc, violation: "missing", requested: amount, free: 0 };
    // Placement checks the unit constraints before capacity.
    if (amount < inv.min_unit) return failure(rc, "min_unit", amount, inv.capacity, inv.used, inv.min_unit);
    if (amount > inv.max_unit) return failure(rc, "max_unit", amount, inv.capacity, inv.used, inv.max_unit);
    if (inv.step_size > 1 && amount % inv.step_size !== 0) {
      return failure(rc, "step_size", amount, inv.capacity, inv.used, inv.step_size);
    }
    if (inv.used + amount > inv.capacity) return failure(rc, "capacity", amount, inv.capacity, inv.used);
  }
  return undefined;
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
