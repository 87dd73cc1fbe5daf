// Nova's NumInstancesWeigher: the number of instances on the host; positive multipliers pack,
// negative ones spread, the default 0 does nothing.
import type { Weigher } from "../types.js";
import { columnWeigher } from "./columns.js";

export const NumInstancesWeigher: Weigher = columnWeigher({
  name: "NumInstancesWeigher",
  multiplierOption: "num_instances_weight_multiplier",
  column: "num_instances",
});
