// Nova's RAMWeigher: more free RAM weighs more, so instances spread by default; a negative
// ram_weight_multiplier stacks them instead.
import type { Weigher } from "../types.js";
import { columnWeigher } from "./columns.js";

export const RAMWeigher: Weigher = columnWeigher({
  name: "RAMWeigher",
  multiplierOption: "ram_weight_multiplier",
  // Normalized from 0, not from the smallest candidate: weight = free_ram_mb ÷ max free_ram_mb.
  minval: 0,
  column: "free_ram_mb",
});
