// Nova's NumInstancesFilter: hosts with [filter_scheduler] max_instances_per_host instances or
// more are out.
import { belowLimit } from "../checks.js";
import type { FilterContext, HostCheck, HostFilter, HostNumber, Rejection } from "../types.js";

/** The options limiting a count per host, and what each counts. */
export const COUNTED = {
  max_instances_per_host: { column: "num_instances", what: "instances" },
  max_io_ops_per_host: { column: "num_io_ops", what: "I/O operations in progress" },
} as const satisfies Record<string, { column: HostNumber; what: string }>;

export const NumInstancesFilter: HostFilter = {
  name: "NumInstancesFilter",
  // Runs for every instance: each placed instance counts.
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare: (_spec, ctx) => belowOption("max_instances_per_host", ctx),
};

/** A host passes while its count is below the option. */
export function belowOption(option: keyof typeof COUNTED, ctx: FilterContext): HostCheck {
  const max = ctx.config[option];
  const { column, what } = COUNTED[option];
  return belowLimit(ctx.fleet.column(column), () => max, tooMany(what, option));
}

/**
 * The rejection of a host with `n` of `what` against `max`, made once per (n, max): a full
 * fleet rejects many hosts for the same count.
 */
export function tooMany(what: string, option: string): (n: number, max: number) => Rejection {
  const made = new Map<number, Rejection>();
  return (n, max) => {
    // (counts and limits are whole numbers well below 2^26)
    const key = n * 67108864 + max;
    let r = made.get(key);
    if (!r) {
      r = { summary: `have reached ${option} ${max}`, reason: `host has ${n} ${what} (${option} ${max})` };
      made.set(key, r);
    }
    return r;
  };
}
