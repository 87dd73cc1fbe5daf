// Placement's job in Nova, done in memory: does this host's inventory fit the request?
// The claim (a conditional write) remains the authority; this only narrows the candidates.
import type { HostState, ResourceAmounts, ResourceFitFailure } from "./types.js";

export type FitResult = { fit: true } | { fit: false; failure: ResourceFitFailure; reason: string };

/**
 * A host fits when, for every requested class, it has inventory of that class and the amount
 * respects min_unit, max_unit, step_size and used + requested ≤ capacity. The first failing
 * class (in request order) is reported, so each host counts once in a summary.
 */
export function resourceFit(host: HostState, requested: ResourceAmounts): FitResult {
  for (const [rc, amount] of Object.entries(requested)) {
    const failure = classFailure(host, rc, amount);
    if (failure) return { fit: false, failure, reason: describeFitFailure(failure) };
  }
  return { fit: true };
}

function classFailure(host: HostState, rc: string, requested: number): ResourceFitFailure | undefined {
  const inv = host.resources[rc];
  if (!inv) return { resource_class: rc, violation: "missing", requested, free: 0 };
  const free = freeUnits(inv.capacity, inv.used);
  const failure = (violation: ResourceFitFailure["violation"], limit?: number): ResourceFitFailure =>
    limit === undefined
      ? { resource_class: rc, violation, requested, free }
      : { resource_class: rc, violation, requested, free, limit };
  // Placement checks the unit constraints before capacity.
  if (requested < inv.min_unit) return failure("min_unit", inv.min_unit);
  if (requested > inv.max_unit) return failure("max_unit", inv.max_unit);
  if (inv.step_size > 0 && requested % inv.step_size !== 0) return failure("step_size", inv.step_size);
  if (inv.used + requested > inv.capacity) return failure("capacity");
  return undefined;
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
