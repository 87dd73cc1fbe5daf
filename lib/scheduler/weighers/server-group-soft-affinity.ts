// Nova's ServerGroupSoftAffinityWeigher: for a `soft-affinity` group, the more of its members a
// host runs, the more it weighs.
import { countsByPosition } from "../instances.js";
import type { HostState, RequestSpec, Weigher, WeigherContext } from "../types.js";

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
): ((host: HostState, i: number) => number) | null {
  const group = spec.instance_group;
  if (group?.policy !== policy || group.members.length === 0) return null;
  const counts = countsByPosition(ctx.fleet, ctx.instances, group.members);
  return (_host, i) => counts.get(i) ?? 0;
}
