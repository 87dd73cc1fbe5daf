// Nova's CPUWeigher: more free vCPUs (total × cpu_allocation_ratio − used) weigh more
// (spreading); a negative multiplier stacks.
import type { Weigher, WeigherValue } from "../types.js";

export const CPUWeigher: Weigher = {
  name: "CPUWeigher",
  multiplierOption: "cpu_weight_multiplier",
  minval: 0,
  prepare(_spec, ctx) {
    const total = ctx.fleet.column("vcpus_total");
    const ratio = ctx.fleet.column("cpu_allocation_ratio");
    const used = ctx.fleet.column("vcpus_used");
    const value: WeigherValue = (_host, i) => total[i]! * ratio[i]! - used[i]!;
    value.fill = (candidates, raw) => {
      for (let j = 0; j < candidates.length; j++) {
        const i = candidates[j]!;
        raw[j] = total[i]! * ratio[i]! - used[i]!;
      }
    };
    return value;
  },
};
