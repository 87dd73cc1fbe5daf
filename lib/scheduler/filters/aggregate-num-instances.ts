// Nova's AggregateNumInstancesFilter: NumInstancesFilter with the limit from the host's aggregates'
// `max_instances_per_host` metadata (the smallest), else the option.
import { aggregateValuesFromKey, minAggregateValue } from "../aggregates.js";
import { belowLimit } from "../checks.js";
import type { FleetIndex, HostFilter, HostState } from "../types.js";
import { tooMany } from "./num-instances.js";

export const AggregateNumInstancesFilter: HostFilter = {
  name: "AggregateNumInstancesFilter",
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const limit = perAggregateLimit("max_instances_per_host", ctx.config.max_instances_per_host, ctx.fleet);
    const reject = tooMany("instances", "max_instances_per_host");
    const hosts = ctx.fleet;
    return belowLimit(hosts.column("num_instances"), (i) => limit(hosts.hostAt(i), i), reject);
  },
};

/**
 * The aggregates' value of `key` (the smallest; an unparsable one means the option), worked out
 * once per aggregate class of the fleet and kept with it.
 */
export function perAggregateLimit(
  key: string,
  configured: number,
  fleet: FleetIndex,
): (host: HostState, i: number) => number {
  const byClass = fleet.classNumbers(`${key}\u0000${configured}`);
  const classOf = fleet.aggregateSetOf;
  return (host, i) => {
    const c = classOf[i]!;
    let v = byClass[c]!;
    if (Number.isNaN(v)) {
      v = minAggregateValue(aggregateValuesFromKey(host.aggregates, key), configured, "int");
      byClass[c] = v;
    }
    return v;
  };
}
