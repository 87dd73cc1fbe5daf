// Nova's IoOpsWeigher: the number of instances building (or in another I/O-heavy task) on the
// host; the default negative multiplier prefers idle hosts.
import type { Weigher } from "../types.js";
import { fromColumn } from "./columns.js";

export const IoOpsWeigher: Weigher = {
  name: "IoOpsWeigher",
  multiplierOption: "io_ops_weight_multiplier",
  minval: 0,
  column: "num_io_ops",
  prepare: (_spec, ctx) => fromColumn(ctx, "num_io_ops"),
};
