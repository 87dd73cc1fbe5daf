// Nova's BaseWeightHandler.get_weighed_objects and nova/weights.py normalize(), in TypeScript.
import type { SchedulerConfig } from "../config.js";
import type { HostState, RequestSpec, WeighedHost, Weigher, WeigherExplanation } from "./types.js";

/**
 * Nova's normalize(weight_list, minval, maxval): maps values onto 0..1 as (v − min) ÷ (max − min),
 * where min and max are the given bounds or, when absent, the observed ones. If min == max every
 * value normalizes to 0. So with observed bounds equal values all weigh 0; with minval = 0 (the
 * RAM weigher) it is v ÷ max, and equal non-zero values all weigh 1 — either way ties stay ties.
 */
export function normalize(values: readonly number[], minval?: number, maxval?: number): number[] {
  if (values.length === 0) return [];
  // reduce, not Math.max(...values): a large fleet would overflow the argument list.
  const max = maxval ?? values.reduce((a, b) => Math.max(a, b));
  const min = minval ?? values.reduce((a, b) => Math.min(a, b));
  if (min === max) return values.map(() => 0);
  const range = max - min;
  return values.map((v) => (v - min) / range);
}

/**
 * Weight = Σ over weighers of multiplier × normalized raw value; sorted by weight descending,
 * ties by host then node name so the order is deterministic. A single candidate is returned
 * unweighed (weight 0), as Nova does.
 */
export function weighHosts(
  hosts: readonly HostState[],
  spec: RequestSpec,
  weighers: readonly Weigher[],
  config: SchedulerConfig,
): { weighed: WeighedHost[]; explanations: WeigherExplanation[] } {
  const weighed: WeighedHost[] = hosts.map((host) => ({ host, weight: 0 }));
  const explanations: WeigherExplanation[] = [];
  if (weighed.length <= 1) return { weighed, explanations };

  for (const weigher of weighers) {
    const raw = hosts.map((h) => weigher.weigh(h, spec));
    // BaseWeigher.weigh_objects: don't let a weight go beyond the weigher's bounds.
    const bounded = raw.map((v) => clamp(v, weigher.minval, weigher.maxval));
    const normalized = normalize(bounded, weigher.minval, weigher.maxval);
    const multiplier = weigher.multiplier(config);
    const entries: WeigherExplanation["hosts"] = [];
    weighed.forEach((w, i) => {
      const n = normalized[i]!;
      w.weight += multiplier * n;
      entries.push({ host: w.host.host, nodename: w.host.nodename, raw: raw[i]!, normalized: n, multiplier });
    });
    explanations.push({ weigher: weigher.name, hosts: entries });
  }
  weighed.sort(byWeightThenName);
  return { weighed, explanations };
}

function clamp(v: number, min?: number, max?: number): number {
  if (min !== undefined && v < min) return min;
  if (max !== undefined && v > max) return max;
  return v;
}

function byWeightThenName(a: WeighedHost, b: WeighedHost): number {
  if (a.weight !== b.weight) return b.weight - a.weight;
  return compare(a.host.host, b.host.host) || compare(a.host.nodename, b.host.nodename);
}

// Code-point order, not locale order: the same on every Lambda.
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
