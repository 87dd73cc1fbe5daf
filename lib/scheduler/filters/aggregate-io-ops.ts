// Nova's AggregateIoOpsFilter: IoOpsFilter with the limit from the host's aggregates'
// `max_io_ops_per_host` metadata (the smallest), else the option.

import { belowLimit } from "../checks.js";
import type { HostFilter } from "../types.js";
import { perAggregateLimit } from "./aggregate-num-instances.js";
import { tooMany } from "./num-instances.js";

export const AggregateIoOpsFilter: HostFilter = {
  name: "AggregateIoOpsFilter",
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const limit = perAggregateLimit("max_io_ops_per_host", ctx.config.max_io_ops_per_host, ctx.fleet);
    const reject = tooMany("I/O operations in progress", "max_io_ops_per_host");
    const hosts = ctx.fleet;
    return belowLimit(hosts.column("num_io_ops"), (i) => limit(hosts.hostAt(i), i), reject);
  },
};
