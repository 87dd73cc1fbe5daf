// Nova's RAMWeigher: more free RAM weighs more, so instances spread by default; a negative
// ram_weight_multiplier stacks them instead.
import type { Weigher } from "../types.js";
import { fromColumn } from "./columns.js";

export const RAMWeigher: Weigher = {
  name: "RAMWeigher",
  multiplierOption: "ram_weight_multiplier",
  // Normalized from 0, not from the smallest candidate: weight = free_ram_mb ÷ max free_ram_mb.
  minval: 0,
  column: "free_ram_mb",
  prepare: (_spec, ctx) => fromColumn(ctx, "free_ram_mb"),
};
