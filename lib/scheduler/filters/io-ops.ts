// Nova's IoOpsFilter: hosts with [filter_scheduler] max_io_ops_per_host instances building (or
// in another I/O-heavy task) are out.

import type { HostFilter } from "../types.js";
import { belowOption } from "./num-instances.js";

export const IoOpsFilter: HostFilter = {
  name: "IoOpsFilter",
  // Runs for every instance: each placed instance is one more build.
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare: (_spec, ctx) => belowOption("max_io_ops_per_host", ctx),
};
