// Nova's BaseWeightHandler.get_weighed_objects and nova/weights.py normalize(): each weigher's
// raw values, clamped to its minval/maxval, normalized over the candidates, times the host's
// multiplier, summed in weigher order. Values live in arrays aligned with the candidates.
import { weightMultiplier } from "./aggregates.js";
import type { Fleet, MultiplierTable } from "./fleet.js";
import type { HostState, RequestSpec, Weigher, WeigherContext } from "./types.js";

/**
 * Nova's normalize(weight_list, minval, maxval): maps values onto 0..1 as (v − min) ÷ (max − min),
 * where min and max are the given bounds or, when absent, the observed ones. If min == max every
 * value normalizes to 0. So with observed bounds equal values all weigh 0; with minval = 0 (the
 * RAM weigher) it is v ÷ max, and equal non-zero values all weigh 1 — either way ties stay ties.
 */
export function normalize(values: ArrayLike<number>, minval?: number, maxval?: number): number[] {
  const n = values.length;
  if (n === 0) return [];
  const { min, max } = bounds(values, minval, maxval);
  if (min === max) return Array.from({ length: n }, () => 0);
  const range = max - min;
  return Array.from(values, (v) => (v - min) / range);
}

function bounds(values: ArrayLike<number>, minval?: number, maxval?: number): { min: number; max: number } {
  let min = minval ?? values[0]!;
  let max = maxval ?? values[0]!;
  // A loop, not Math.max(...values): a large fleet would overflow the argument list.
  for (let j = 0; j < values.length; j++) {
    const v = values[j]!;
    if (maxval === undefined && v > max) max = v;
    if (minval === undefined && v < min) min = v;
  }
  return { min, max };
}

function clampAll(raw: Float64Array, min?: number, max?: number): Float64Array {
  const out = new Float64Array(raw.length);
  for (let j = 0; j < raw.length; j++) out[j] = clamp(raw[j]!, min, max);
  return out;
}

/** BaseWeigher.weigh_objects: a raw value never goes beyond the weigher's bounds. */
export function clamp(v: number, min?: number, max?: number): number {
  if (min !== undefined && v < min) return min;
  if (max !== undefined && v > max) return max;
  return v;
}

/** One weigher's contribution over the candidates. */
export interface WeigherRun {
  weigher: Weigher;
  /** raw values (before clamping), aligned with the candidates */
  raw: Float64Array;
  /** normalization bounds actually used; equal means every value normalized to 0 */
  min: number;
  max: number;
  /** the multiplier of each host: overrides applied, sign included */
  multipliers: MultiplierTable;
}

export interface Weighing {
  /** candidate positions in the fleet, in fleet order */
  candidates: Int32Array;
  /** final weight per candidate */
  weights: Float64Array;
  /** empty when at most one candidate: Nova does not weigh a single host */
  runs: WeigherRun[];
}

export function normalizedValue(run: WeigherRun, j: number): number {
  if (run.min === run.max) return 0;
  return (clamp(run.raw[j]!, run.weigher.minval, run.weigher.maxval) - run.min) / (run.max - run.min);
}

export function multiplierAt(fleet: Fleet, run: WeigherRun, position: number): number {
  return run.multipliers.at(fleet.hosts[position]!, fleet.aggregateSetOf[position]!);
}

/** Weigh the candidates: Σ multiplier × normalized, in weigher order, exactly as Nova sums them. */
export function weighCandidates(
  fleet: Fleet,
  candidates: Int32Array,
  spec: RequestSpec,
  weighers: readonly Weigher[],
  ctx: WeigherContext,
): Weighing {
  const { config } = ctx;
  const n = candidates.length;
  const weights = new Float64Array(n);
  const runs: WeigherRun[] = [];
  if (n <= 1) return { candidates, weights, runs };
  const hosts = fleet.hosts;
  const classOf = fleet.aggregateSetOf;
  for (const weigher of weighers) {
    const raw = new Float64Array(n);
    let prepared = true;
    const { minval, maxval } = weigher;
    if (weigher.column) {
      // A plain field: gathered from the fleet's column (what prepare() would read, host by host).
      const column = fleet.column(weigher.column);
      for (let j = 0; j < n; j++) raw[j] = column[candidates[j]!]!;
    } else {
      const value = weigher.prepare(spec, ctx);
      prepared = value !== null;
      if (value?.fill) value.fill(candidates, raw);
      else if (value) {
        for (let j = 0; j < n; j++) {
          const i = candidates[j]!;
          raw[j] = value(hosts[i]!, i);
        }
      }
    }
    // Normalization reads the clamped values (BaseWeigher.weigh_objects); `raw` keeps what the
    // weigher said, for the explanation. Clamping rarely changes anything: copy only if it does.
    // One pass finds whether it does and the bounds of the clamped values (normalize()'s).
    let bounded: Float64Array = raw;
    let clamps = false;
    // A weigher with nothing to weigh (no group, no metrics) leaves every raw value 0.
    const allZero = !weigher.column && !prepared;
    // (bounds as plain numbers, so the loop compares numbers only: ±Infinity clamp nothing)
    const lo = minval ?? Number.NEGATIVE_INFINITY;
    const hi = maxval ?? Number.POSITIVE_INFINITY;
    // The clamped values' bounds, both always (no branch on which are wanted inside the loop),
    // starting from the first as normalize() does.
    let lowest = clamp(raw[0]!, minval, maxval);
    let highest = lowest;
    for (let j = 0; j < n && !allZero; j++) {
      const v = raw[j]!;
      const c = v < lo ? lo : v > hi ? hi : v;
      if (c !== v) clamps = true;
      if (c > highest) highest = c;
      if (c < lowest) lowest = c;
    }
    const min = minval ?? lowest;
    const max = maxval ?? highest;
    if (clamps || (allZero && clamp(0, minval, maxval) !== 0)) bounded = clampAll(raw, minval, maxval);
    const table = fleet.multipliers(
      weigher.multiplierOption,
      config[weigher.multiplierOption],
      weigher.negated,
    );
    runs.push({ weigher, raw, min, max, multipliers: table });
    if (min === max) {
      // Every normalized value is 0: adding (finite × 0) changes no weight; only a non-finite
      // multiplier (aggregate metadata "inf") would, as it does in Nova.
      if (table.uniform !== undefined && Number.isFinite(table.uniform)) continue;
      for (let j = 0; j < n; j++) {
        const i = candidates[j]!;
        weights[j] = weights[j]! + table.at(hosts[i]!, classOf[i]!) * 0;
      }
      continue;
    }
    const range = max - min;
    // A multiplier of 0 everywhere (NumInstancesWeigher's default) adds ±0 to finite weights.
    if (table.uniform === 0 && Number.isFinite(range)) continue;
    if (table.uniform !== undefined) {
      const m = table.uniform;
      for (let j = 0; j < n; j++) weights[j] = weights[j]! + m * ((bounded[j]! - min) / range);
    } else {
      const byClass = classMultipliers(table, fleet, candidates);
      for (let j = 0; j < n; j++) {
        weights[j] = weights[j]! + byClass[classOf[candidates[j]!]!]! * ((bounded[j]! - min) / range);
      }
    }
  }
  return { candidates, weights, runs };
}

/** The table's multiplier for every aggregate class among the candidates, by class. */
function classMultipliers(table: MultiplierTable, fleet: Fleet, candidates: Int32Array): Float64Array {
  const byClass = new Float64Array(fleet.aggregateSetCount);
  const seen = new Uint8Array(fleet.aggregateSetCount);
  const classOf = fleet.aggregateSetOf;
  for (let j = 0; j < candidates.length; j++) {
    const i = candidates[j]!;
    const c = classOf[i]!;
    if (seen[c] === 0) {
      byClass[c] = table.at(fleet.hosts[i]!, c);
      seen[c] = 1;
    }
  }
  return byClass;
}

/** Nova's weigher.weight_multiplier(host_state), unsigned. */
export function hostMultiplier(host: HostState, weigher: Weigher, configured: number): number {
  return weightMultiplier(host.aggregates, weigher.multiplierOption, configured);
}
