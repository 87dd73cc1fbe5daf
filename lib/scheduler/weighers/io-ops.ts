// Nova's IoOpsWeigher: the number of instances building (or in another I/O-heavy task) on the
// host; the default negative multiplier prefers idle hosts.
import type { Weigher } from "../types.js";
import { columnWeigher } from "./columns.js";

export const IoOpsWeigher: Weigher = columnWeigher({
  name: "IoOpsWeigher",
  multiplierOption: "io_ops_weight_multiplier",
  minval: 0,
  column: "num_io_ops",
});
