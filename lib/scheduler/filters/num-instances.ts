// Nova's NumInstancesFilter: hosts with [filter_scheduler] max_instances_per_host instances or
// more are out.
import { belowLimit } from "../checks.js";
import type { HostFilter, Rejection } from "../types.js";

export const NumInstancesFilter: HostFilter = {
  name: "NumInstancesFilter",
  // Runs for every instance: each placed instance counts.
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const max = ctx.config.max_instances_per_host;
    const reject = tooMany("instances", "max_instances_per_host");
    return belowLimit(ctx.fleet.column("num_instances"), () => max, reject);
  },
};

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
