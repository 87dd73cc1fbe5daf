// Nova's AggregateIoOpsFilter: IoOpsFilter with the limit from the host's aggregates'
// `max_io_ops_per_host` metadata (the smallest), else the option.
import type { HostFilter } from "../types.js";
import { perAggregateLimit } from "./aggregate-num-instances.js";
import { tooManyIoOps } from "./io-ops.js";

export const AggregateIoOpsFilter: HostFilter = {
  name: "AggregateIoOpsFilter",
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const limit = perAggregateLimit("max_io_ops_per_host", ctx.config.max_io_ops_per_host, ctx.fleet);
    const count = ctx.fleet?.column("num_io_ops");
    if (count) return (host, i) => (count[i]! < limit(host, i) ? null : tooManyIoOps(host, limit(host, i)));
    return (host, i) => tooManyIoOps(host, limit(host, i));
  },
};
