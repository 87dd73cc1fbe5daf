// Nova's DiskWeigher: more free disk weighs more (spreading); a negative multiplier stacks.
import type { Weigher } from "../types.js";
import { columnWeigher } from "./columns.js";

export const DiskWeigher: Weigher = columnWeigher({
  name: "DiskWeigher",
  multiplierOption: "disk_weight_multiplier",
  minval: 0,
  column: "free_disk_mb",
});
