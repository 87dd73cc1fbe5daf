// Nova's IoOpsFilter: hosts with [filter_scheduler] max_io_ops_per_host instances building (or
// in another I/O-heavy task) are out.

import { belowLimit } from "../checks.js";
import type { HostFilter } from "../types.js";
import { tooMany } from "./num-instances.js";

export const IoOpsFilter: HostFilter = {
  name: "IoOpsFilter",
  // Runs for every instance: each placed instance is one more build.
  runOncePerRequest: false,
  prepare(_spec, ctx) {
    const max = ctx.config.max_io_ops_per_host;
    const reject = tooMany("I/O operations in progress", "max_io_ops_per_host");
    return belowLimit(ctx.fleet.column("num_io_ops"), () => max, reject);
  },
};
