// Nova's ServerGroupAffinityFilter: an `affinity` group's instances go where its members already
// are (group.hosts, which grows as a multi-create places instances); anywhere while it has none.
import { maskCheck } from "../checks.js";
import type { HostFilter } from "../types.js";

export const ServerGroupAffinityFilter: HostFilter = {
  name: "ServerGroupAffinityFilter",
  // Runs for every instance: each placed instance adds its host to the group.
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare(spec, ctx) {
    const group = spec.instance_group;
    if (group?.policy !== "affinity" || group.hosts.length === 0) return null;
    const hosts = new Set(group.hosts);
    const summary = "are not where the affinity group's members are";
    const rejection = { summary, reason: `host is not one of the group's hosts (${[...hosts].join(", ")})` };
    return maskCheck(ctx.fleet.named(hosts), 1, rejection);
  },
};
