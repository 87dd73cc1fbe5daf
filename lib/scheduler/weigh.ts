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

function clampAll(raw: Float64Array, min?: number, max?: number, into?: Float64Array): Float64Array {
  const out = into ?? new Float64Array(raw.length);
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
  /**
   * raw values (before clamping), aligned with the candidates; undefined when only the compact
   * explanation was asked for: then the decision keeps the few hosts' it names (rawAt)
   */
  raw: Float64Array | undefined;
  /** the raw value of the host at a position, as the fleet is now (the same while it is unchanged) */
  rawAt: (position: number) => number;
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

/** Which explanation the decision will be asked for: "compact" keeps raw values of the hosts it names only. */
export type ExplanationKind = "detailed" | "compact";

export function normalizedValue(run: WeigherRun, raw: number): number {
  if (run.min === run.max) return 0;
  return (clamp(raw, run.weigher.minval, run.weigher.maxval) - run.min) / (run.max - run.min);
}

export function multiplierAt(fleet: Fleet, run: WeigherRun, position: number): number {
  return run.multipliers.at(fleet.hosts[position]!, fleet.aggregateSetOf[position]!);
}

/**
 * Weigh the candidates: Σ multiplier × normalized, in weigher order, exactly as Nova sums them.
 * Each weigher's raw values are gathered (a column weigher's bounded in the same pass) and its
 * term added to every weight before the next weigher's: the additions happen in weigher order,
 * as Nova's +=. For the detailed explanation every raw value is kept (one buffer per decision);
 * for the compact one they pass through the fleet's scratch, and the decision keeps the values of
 * the hosts it names: a buffer of weighers × candidates numbers per decision (3.6 MB at 50,000
 * hosts) made the garbage collector scavenge for external memory.
 */
export function weighCandidates(
  fleet: Fleet,
  candidates: Int32Array,
  spec: RequestSpec,
  weighers: readonly Weigher[],
  ctx: WeigherContext,
  explanation: ExplanationKind = "detailed",
): Weighing {
  const { config } = ctx;
  const n = candidates.length;
  const weights = new Float64Array(n);
  const runs: WeigherRun[] = [];
  if (n <= 1) return { candidates, weights, runs };
  const hosts = fleet.hosts;
  const classOf = fleet.aggregateSetOf;
  // A weigher with nothing to weigh (no group, no metrics) leaves every raw value 0: it reads the
  // fleet's zeros, and only the others take room.
  const values = weighers.map((w) => (w.column ? undefined : w.prepare(spec, ctx)));
  const keepAll = explanation === "detailed";
  let weighing = 0;
  if (keepAll)
    for (const [w, weigher] of weighers.entries()) if (weigher.column || values[w] !== null) weighing++;
  const buffer = keepAll ? new Float64Array(n * weighing) : undefined;
  const scratch = fleet.weighScratch.subarray(0, n);
  let used = 0;
  for (const [w, weigher] of weighers.entries()) {
    const value = values[w];
    let raw: Float64Array;
    if (value === null) raw = fleet.zeros.subarray(0, n);
    else if (buffer) {
      raw = buffer.subarray(used, used + n);
      used += n;
    } else raw = scratch;
    const { minval, maxval } = weigher;
    // (bounds as plain numbers, so the loops compare numbers only: ±Infinity clamp nothing)
    const lo = minval ?? Number.NEGATIVE_INFINITY;
    const hi = maxval ?? Number.POSITIVE_INFINITY;
    let bound: Bounds;
    let rawAt: (position: number) => number;
    if (weigher.column) {
      // A plain field: gathered from the fleet's column (what prepare() would read, host by host).
      const column = fleet.column(weigher.column);
      bound = gatherBounded(column, candidates, raw, lo, hi);
      rawAt = (i) => column[i]!;
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
      rawAt = value ? (i) => value(hosts[i]!, i) : () => 0;
    }
    // Normalization reads the clamped values (BaseWeigher.weigh_objects); `raw` keeps what the
    // weigher said, for the explanation. Clamping rarely changes anything: copy only if it does.
    const min = minval ?? bound.lowest;
    const max = maxval ?? bound.highest;
    // (the fleet's scratch, not kept, is clamped where it is)
    const clamped = bound.clamps ? clampAll(raw, minval, maxval, raw === scratch ? raw : undefined) : raw;
    const table = fleet.multipliers(
      weigher.multiplierOption,
      config[weigher.multiplierOption],
      weigher.negated,
    );
    runs.push({ weigher, raw: buffer ? raw : undefined, rawAt, min, max, multipliers: table });
    // Multipliers overridden by aggregates: the table's, by class (worked out once per class).
    const byClass = table.uniform === undefined ? table.values : undefined;
    const known = table.known;
    const m = table.uniform ?? 0;
    if (min === max) {
      // Every normalized value is 0: adding (finite × 0) changes no weight; only a non-finite
      // multiplier (aggregate metadata "inf") would, as it does in Nova.
      if (table.uniform !== undefined && Number.isFinite(table.uniform)) continue;
      for (let j = 0; j < n; j++) {
        const i = candidates[j]!;
        const c = classOf[i]!;
        const multiplier = byClass ? (known[c] ? byClass[c]! : table.at(hosts[i]!, c)) : m;
        weights[j] = weights[j]! + multiplier * 0;
      }
      continue;
    }
    const range = max - min;
    // A multiplier of 0 everywhere (NumInstancesWeigher's default) adds ±0 to finite weights.
    if (table.uniform === 0 && Number.isFinite(range)) continue;
    // weights[j] += term(j): one tight loop per term is what V8 runs fastest.
    if (byClass) {
      for (let j = 0; j < n; j++) {
        const i = candidates[j]!;
        const c = classOf[i]!;
        const multiplier = known[c] ? byClass[c]! : table.at(hosts[i]!, c);
        weights[j] = weights[j]! + multiplier * ((clamped[j]! - min) / range);
      }
    } else for (let j = 0; j < n; j++) weights[j] = weights[j]! + m * ((clamped[j]! - min) / range);
  }
  return { candidates, weights, runs };
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

/** Nova's weigher.weight_multiplier(host_state), unsigned. */
export function hostMultiplier(host: HostState, weigher: Weigher, configured: number): number {
  return weightMultiplier(host.aggregates, weigher.multiplierOption, configured);
}
