// Nova's nova/scheduler/filters/utils.py aggregate helpers and utils.get_weight_multiplier: how
// filters and weighers read per-aggregate settings from the aggregates a host belongs to.
// Results are remembered per aggregate list (lists are immutable, and a fleet shares one list
// object among the hosts in the same aggregates): callers must not modify what they get.
import { pyFloat, pyInt } from "./python.js";
import type { HostAggregate } from "./types.js";

interface Memo {
  metadata?: ReadonlyMap<string, ReadonlySet<string>>;
  values: Map<string, readonly string[]>;
  multipliers: Map<string, number>;
}

/** Where a list keeps what was worked out about it: a property of the list, quicker than a WeakMap. */
const MEMO = Symbol("aggregate-list memo");
type Memoized = readonly HostAggregate[] & { [MEMO]?: Memo };

/** For lists that cannot take a property (frozen ones). */
const frozen = new WeakMap<readonly HostAggregate[], Memo>();

function memo(aggregates: readonly HostAggregate[]): Memo {
  const list = aggregates as Memoized;
  let m = list[MEMO] ?? frozen.get(list);
  if (!m) {
    m = { values: new Map(), multipliers: new Map() };
    if (Object.isExtensible(list)) Object.defineProperty(list, MEMO, { value: m, enumerable: false });
    else frozen.set(list, m);
  }
  return m;
}

/** aggregate_values_from_key: the distinct values of `key` across the host's aggregates (not split). */
export function aggregateValuesFromKey(aggregates: readonly HostAggregate[], key: string): readonly string[] {
  const m = memo(aggregates);
  let values = m.values.get(key);
  if (!values) {
    const set = new Set<string>();
    for (const a of aggregates) {
      const v = a.metadata[key];
      if (v !== undefined) set.add(v);
    }
    values = [...set];
    m.values.set(key, values);
  }
  return values;
}

/**
 * aggregate_metadata_get_by_host: metadata key → the set of its values across the host's
 * aggregates, each value split on commas and stripped. (Nova's `key=` argument only narrows the
 * aggregates to those having the key, which changes nothing for that key's own values.)
 */
export function aggregateMetadataByHost(
  aggregates: readonly HostAggregate[],
): ReadonlyMap<string, ReadonlySet<string>> {
  const m = memo(aggregates);
  if (!m.metadata) {
    const metadata = new Map<string, Set<string>>();
    for (const a of aggregates) {
      for (const [k, v] of Object.entries(a.metadata)) {
        let set = metadata.get(k);
        if (!set) {
          set = new Set();
          metadata.set(k, set);
        }
        for (const part of v.split(",")) set.add(part.trim());
      }
    }
    m.metadata = metadata;
  }
  return m.metadata;
}

/**
 * validate_num_values(vals, default, cast_to, based_on=min): the smallest of the values, or the
 * default when there is none or one does not parse (Nova logs the ValueError and uses the default).
 */
export function minAggregateValue(
  values: readonly string[],
  fallback: number,
  cast: "int" | "float",
): number {
  if (values.length === 0) return fallback;
  let min: number | undefined;
  for (const v of values) {
    const n = cast === "int" ? pyInt(v) : pyFloat(v);
    if (n === undefined) return fallback;
    // Python's min(): the first value stays unless a later one is smaller.
    if (min === undefined || n < min) min = n;
  }
  return min!;
}

/** utils.get_weight_multiplier: `key` in the host's aggregates' metadata (the minimum), else the option. */
export function weightMultiplier(
  aggregates: readonly HostAggregate[],
  key: string,
  configured: number,
): number {
  const m = memo(aggregates);
  const k = `${key}\u0000${configured}`;
  let v = m.multipliers.get(k);
  if (v === undefined) {
    v = minAggregateValue(aggregateValuesFromKey(aggregates, key), configured, "float");
    m.multipliers.set(k, v);
  }
  return v;
}
