// Nova's ServerGroupSoftAffinityWeigher: for a `soft-affinity` group, the more of its members a
// host runs, the more it weighs.
import type { RequestSpec, Weigher, WeigherContext } from "../types.js";

export const ServerGroupSoftAffinityWeigher: Weigher = {
  name: "ServerGroupSoftAffinityWeigher",
  multiplierOption: "soft_affinity_weight_multiplier",
  prepare: (spec, ctx) => membersOnHost(spec, ctx, "soft-affinity"),
};

/** _SoftAffinityWeigherBase._weigh_object: members of the group on the host, 0 for another policy. */
export function membersOnHost(
  spec: RequestSpec,
  ctx: WeigherContext,
  policy: "soft-affinity" | "soft-anti-affinity",
): ((host: import("../types.js").HostState, i: number) => number) | null {
  const group = spec.instance_group;
  if (group?.policy !== policy || group.members.length === 0) return null;
  if (ctx.fleet) {
    const counts = ctx.fleet.countsOf(group.members);
    return (_host, i) => counts.get(i) ?? 0;
  }
  const members = new Set(group.members);
  return (host) => {
    let n = 0;
    for (const uuid of host.instances) if (members.has(uuid)) n++;
    return n;
  };
}
