// Nova's ServerGroupSoftAntiAffinityWeigher: for a `soft-anti-affinity` group, the more of its
// members a host runs, the less it weighs.
import type { Weigher } from "../types.js";
import { membersOnHost } from "./server-group-soft-affinity.js";

export const ServerGroupSoftAntiAffinityWeigher: Weigher = {
  name: "ServerGroupSoftAntiAffinityWeigher",
  multiplierOption: "soft_anti_affinity_weight_multiplier",
  prepare(spec, ctx) {
    const count = membersOnHost(spec, ctx, "soft-anti-affinity");
    return count && ((host, i) => -1 * count(host, i));
  },
};
