// Nova's AggregateNumInstancesFilter: NumInstancesFilter with the limit from the host's aggregates'
// `max_instances_per_host` metadata (the smallest), else the option.
import { aggregateValuesFromKey, minAggregateValue } from "../aggregates.js";
import { belowLimit } from "../checks.js";
import type { FilterContext, FleetIndex, HostCheck, HostFilter, HostState } from "../types.js";
import { COUNTED, tooMany } from "./num-instances.js";

export const AggregateNumInstancesFilter: HostFilter = {
  name: "AggregateNumInstancesFilter",
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare: (_spec, ctx) => belowAggregateLimit("max_instances_per_host", ctx),
};

/** A host passes while its count is below its aggregates' value of the option, else the option. */
export function belowAggregateLimit(option: keyof typeof COUNTED, ctx: FilterContext): HostCheck {
  const limit = perAggregateLimit(option, ctx.config[option], ctx.fleet);
  const { column, what } = COUNTED[option];
  const hosts = ctx.fleet;
  return belowLimit(hosts.column(column), (i) => limit(hosts.hostAt(i), i), tooMany(what, option));
}

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
