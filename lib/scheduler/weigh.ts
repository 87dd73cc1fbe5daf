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

/**
 * One weigher's share of every weight: multiplier × normalized, added in weigher order. `byClass`
 * when aggregates override the multiplier; `zero` when every value normalized to 0 but a
 * non-finite multiplier still counts (× 0 is NaN, as in Nova).
 */
interface Term {
  bounded: Float64Array;
  min: number;
  range: number;
  uniform: number;
  byClass: Float64Array | undefined;
  zero: boolean;
}

/**
 * Weigh the candidates: Σ multiplier × normalized, in weigher order, exactly as Nova sums them.
 * Each weigher's raw values go to one buffer shared by all of them (one allocation, not one per
 * weigher), a column weigher's gathered and bounded in the same pass; the weights are summed in
 * one pass over the candidates at the end, each term added in weigher order as before.
 */
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
  // A weigher with nothing to weigh (no group, no metrics) leaves every raw value 0: it reads the
  // fleet's zeros, and only the others take room in the buffer.
  const values = weighers.map((w) => (w.column ? undefined : w.prepare(spec, ctx)));
  let weighing = 0;
  for (const [w, weigher] of weighers.entries()) if (weigher.column || values[w] !== null) weighing++;
  const buffer = new Float64Array(n * weighing);
  let used = 0;
  const terms: Term[] = [];
  for (const [w, weigher] of weighers.entries()) {
    const value = values[w];
    let raw: Float64Array;
    if (value === null) raw = fleet.zeros.subarray(0, n);
    else {
      raw = buffer.subarray(used, used + n);
      used += n;
    }
    const { minval, maxval } = weigher;
    // (bounds as plain numbers, so the loops compare numbers only: ±Infinity clamp nothing)
    const lo = minval ?? Number.NEGATIVE_INFINITY;
    const hi = maxval ?? Number.POSITIVE_INFINITY;
    let bound: Bounds;
    if (weigher.column) {
      // A plain field: gathered from the fleet's column (what prepare() would read, host by host).
      bound = gatherBounded(fleet.column(weigher.column), candidates, raw, lo, hi);
    } else {
      if (value?.fill) value.fill(candidates, raw);
      else if (value) {
        for (let j = 0; j < n; j++) {
          const i = candidates[j]!;
          raw[j] = value(hosts[i]!, i);
        }
      }
      // A weigher with nothing to weigh (no group, no metrics) leaves every raw value 0.
      bound = value === null ? zeroBounds(minval, maxval) : bounded(raw, lo, hi);
    }
    // Normalization reads the clamped values (BaseWeigher.weigh_objects); `raw` keeps what the
    // weigher said, for the explanation. Clamping rarely changes anything: copy only if it does.
    const min = minval ?? bound.lowest;
    const max = maxval ?? bound.highest;
    const clamped = bound.clamps ? clampAll(raw, minval, maxval) : raw;
    const table = fleet.multipliers(
      weigher.multiplierOption,
      config[weigher.multiplierOption],
      weigher.negated,
    );
    runs.push({ weigher, raw, min, max, multipliers: table });
    const byClass = table.uniform === undefined ? classMultipliers(table, fleet, candidates) : undefined;
    if (min === max) {
      // Every normalized value is 0: adding (finite × 0) changes no weight; only a non-finite
      // multiplier (aggregate metadata "inf") would, as it does in Nova.
      if (table.uniform !== undefined && Number.isFinite(table.uniform)) continue;
      terms.push({ bounded: clamped, min, range: 1, uniform: table.uniform ?? 0, byClass, zero: true });
      continue;
    }
    const range = max - min;
    // A multiplier of 0 everywhere (NumInstancesWeigher's default) adds ±0 to finite weights.
    if (table.uniform === 0 && Number.isFinite(range)) continue;
    terms.push({ bounded: clamped, min, range, uniform: table.uniform ?? 0, byClass, zero: false });
  }
  sumTerms(terms, candidates, fleet.aggregateSetOf, weights);
  return { candidates, weights, runs };
}

/** weights[j] = Σ over the terms in order of term(j), each added to the sum so far (as Nova's +=). */
function sumTerms(
  terms: readonly Term[],
  candidates: Int32Array,
  classOf: Int32Array,
  weights: Float64Array,
) {
  const n = candidates.length;
  // The common case, every multiplier uniform and every term a plain one: one tight loop per
  // term is what V8 runs fastest, and the additions happen in the same order either way.
  for (const t of terms) {
    const { bounded: b, min, range, uniform: m, byClass } = t;
    if (t.zero) {
      for (let j = 0; j < n; j++) {
        const multiplier = byClass ? byClass[classOf[candidates[j]!]!]! : m;
        weights[j] = weights[j]! + multiplier * 0;
      }
    } else if (byClass) {
      for (let j = 0; j < n; j++) {
        weights[j] = weights[j]! + byClass[classOf[candidates[j]!]!]! * ((b[j]! - min) / range);
      }
    } else for (let j = 0; j < n; j++) weights[j] = weights[j]! + m * ((b[j]! - min) / range);
  }
}

interface Bounds {
  /** the clamped values' bounds, starting from the first (normalize()'s) */
  lowest: number;
  highest: number;
  /** some value lies outside [lo, hi] */
  clamps: boolean;
}

/** raw[j] = column[candidates[j]], and the bounds of the clamped values, in one pass. */
function gatherBounded(
  column: Float64Array,
  candidates: Int32Array,
  raw: Float64Array,
  lo: number,
  hi: number,
): Bounds {
  const first = column[candidates[0]!]!;
  let lowest = first < lo ? lo : first > hi ? hi : first;
  let highest = lowest;
  let clamps = false;
  for (let j = 0; j < candidates.length; j++) {
    const v = column[candidates[j]!]!;
    raw[j] = v;
    const c = v < lo ? lo : v > hi ? hi : v;
    if (c !== v) clamps = true;
    if (c > highest) highest = c;
    if (c < lowest) lowest = c;
  }
  return { lowest, highest, clamps };
}

/** The bounds of the clamped values of `raw`, and whether clamping changes any. */
function bounded(raw: Float64Array, lo: number, hi: number): Bounds {
  const first = raw[0]!;
  let lowest = first < lo ? lo : first > hi ? hi : first;
  let highest = lowest;
  let clamps = false;
  for (let j = 0; j < raw.length; j++) {
    const v = raw[j]!;
    const c = v < lo ? lo : v > hi ? hi : v;
    if (c !== v) clamps = true;
    if (c > highest) highest = c;
    if (c < lowest) lowest = c;
  }
  return { lowest, highest, clamps };
}

/** Every raw value 0: its clamped value is the bound, and it is a copy only if clamping moves 0. */
function zeroBounds(minval: number | undefined, maxval: number | undefined): Bounds {
  const c = clamp(0, minval, maxval);
  return { lowest: c, highest: c, clamps: c !== 0 };
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
