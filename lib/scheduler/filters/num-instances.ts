// Nova's NumInstancesFilter: hosts with [filter_scheduler] max_instances_per_host instances or
// more are out.
import type { HostFilter, HostState, Rejection } from "../types.js";

export const NumInstancesFilter: HostFilter = {
  name: "NumInstancesFilter",
  // Runs for every instance: each placed instance counts.
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const max = ctx.config.max_instances_per_host;
    const count = ctx.fleet?.column("num_instances");
    if (count) return (host, i) => (count[i]! < max ? null : tooManyInstances(host, max));
    return (host) => tooManyInstances(host, max);
  },
};

export function tooManyInstances(host: HostState, max: number): Rejection | null {
  if (host.num_instances < max) return null;
  return {
    summary: `have reached max_instances_per_host ${max}`,
    reason: `host has ${host.num_instances} instances (max_instances_per_host ${max})`,
  };
}
