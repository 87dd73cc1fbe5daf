// Nova's IoOpsFilter: hosts with [filter_scheduler] max_io_ops_per_host instances building (or
// in another I/O-heavy task) are out.
import type { HostFilter, HostState, Rejection } from "../types.js";

export const IoOpsFilter: HostFilter = {
  name: "IoOpsFilter",
  // Runs for every instance: each placed instance is one more build.
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const max = ctx.config.max_io_ops_per_host;
    const count = ctx.fleet?.column("num_io_ops");
    if (count) return (host, i) => (count[i]! < max ? null : tooManyIoOps(host, max));
    return (host) => tooManyIoOps(host, max);
  },
};

export function tooManyIoOps(host: HostState, max: number): Rejection | null {
  if (host.num_io_ops < max) return null;
  return {
    summary: `have reached max_io_ops_per_host ${max}`,
    reason: `host has ${host.num_io_ops} I/O operations in progress (max_io_ops_per_host ${max})`,
  };
}
