// Nova's AggregateNumInstancesFilter: NumInstancesFilter with the limit from the host's aggregates'
// `max_instances_per_host` metadata (the smallest), else the option.
import { aggregateValuesFromKey, minAggregateValue } from "../aggregates.js";
import { belowClassLimit } from "../checks.js";
import type { FilterContext, HostCheck, HostFilter } from "../types.js";
import { COUNTED, tooMany } from "./num-instances.js";

export const AggregateNumInstancesFilter: HostFilter = {
  name: "AggregateNumInstancesFilter",
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare: (_spec, ctx) => belowAggregateLimit("max_instances_per_host", ctx),
};

/** A host passes while its count is below its aggregates' value of the option, else the option. */
export function belowAggregateLimit(option: keyof typeof COUNTED, ctx: FilterContext): HostCheck {
  const configured = ctx.config[option];
  const { column, what } = COUNTED[option];
  const fleet = ctx.fleet;
  // The aggregates' value of the option (the smallest; an unparsable one means the option),
  // worked out once per aggregate class of the fleet and kept with it.
  return belowClassLimit(
    fleet.column(column),
    fleet.aggregateSetOf,
    fleet.classNumbers(`${option}\u0000${configured}`),
    (i) => minAggregateValue(aggregateValuesFromKey(fleet.hostAt(i).aggregates, option), configured, "int"),
    tooMany(what, option),
  );
}
