// Nova's AggregateIoOpsFilter: IoOpsFilter with the limit from the host's aggregates'
// `max_io_ops_per_host` metadata (the smallest), else the option.
import type { HostFilter } from "../types.js";
import { perAggregateLimit } from "./aggregate-num-instances.js";
import { tooMany } from "./num-instances.js";

export const AggregateIoOpsFilter: HostFilter = {
  name: "AggregateIoOpsFilter",
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const limit = perAggregateLimit("max_io_ops_per_host", ctx.config.max_io_ops_per_host, ctx.fleet);
    const reject = tooMany("I/O operations in progress", "max_io_ops_per_host");
    const count = ctx.fleet?.column("num_io_ops");
    if (count) {
      return (host, i) => {
        const max = limit(host, i);
        return count[i]! < max ? null : reject(count[i]!, max);
      };
    }
    return (host, i) => {
      const max = limit(host, i);
      return host.num_io_ops < max ? null : reject(host.num_io_ops, max);
    };
  },
};
