// Nova's AggregateIoOpsFilter: IoOpsFilter with the limit from the host's aggregates'
// `max_io_ops_per_host` metadata (the smallest), else the option.

import type { HostFilter } from "../types.js";
import { belowAggregateLimit } from "./aggregate-num-instances.js";

export const AggregateIoOpsFilter: HostFilter = {
  name: "AggregateIoOpsFilter",
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare: (_spec, ctx) => belowAggregateLimit("max_io_ops_per_host", ctx),
};
