// Nova's NumInstancesWeigher: the number of instances on the host; positive multipliers pack,
// negative ones spread, the default 0 does nothing.
import type { Weigher } from "../types.js";
import { fromColumn } from "./columns.js";

export const NumInstancesWeigher: Weigher = {
  name: "NumInstancesWeigher",
  multiplierOption: "num_instances_weight_multiplier",
  column: "num_instances",
  prepare: (_spec, ctx) => fromColumn(ctx, "num_instances"),
};
