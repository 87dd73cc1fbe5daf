// Nova's AggregateNumInstancesFilter: NumInstancesFilter with the limit from the host's aggregates'
// `max_instances_per_host` metadata (the smallest), else the option.
import { aggregateValuesFromKey, minAggregateValue } from "../aggregates.js";
import { belowLimit } from "../checks.js";
import type { FleetIndex, HostAggregate, HostFilter, HostState } from "../types.js";
import { tooMany } from "./num-instances.js";

export const AggregateNumInstancesFilter: HostFilter = {
  name: "AggregateNumInstancesFilter",
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const limit = perAggregateLimit("max_instances_per_host", ctx.config.max_instances_per_host, ctx.fleet);
    const reject = tooMany("instances", "max_instances_per_host");
    const count = ctx.fleet?.column("num_instances");
    if (count) {
      const hosts = ctx.fleet!;
      return belowLimit(count, (i) => limit(hosts.hostAt(i), i), reject);
    }
    return (host, i) => {
      const max = limit(host, i);
      return host.num_instances < max ? null : reject(host.num_instances, max);
    };
  },
};

/**
 * The aggregates' value of `key` (the smallest; an unparsable one means the option), worked out
 * once per aggregate list — per aggregate class of the fleet when there is one, kept with it.
 */
export function perAggregateLimit(
  key: string,
  configured: number,
  fleet?: FleetIndex,
): (host: HostState, i: number) => number {
  const compute = (aggs: readonly HostAggregate[]) =>
    minAggregateValue(aggregateValuesFromKey(aggs, key), configured, "int");
  if (fleet) {
    const byClass = fleet.classNumbers(`${key}\u0000${configured}`);
    const classOf = fleet.aggregateSetOf;
    return (host, i) => {
      const c = classOf[i]!;
      let v = byClass[c]!;
      if (Number.isNaN(v)) {
        v = compute(host.aggregates);
        byClass[c] = v;
      }
      return v;
    };
  }
  const known = new Map<readonly HostAggregate[], number>();
  return (host) => {
    let v = known.get(host.aggregates);
    if (v === undefined) {
      v = compute(host.aggregates);
      known.set(host.aggregates, v);
    }
    return v;
  };
}
