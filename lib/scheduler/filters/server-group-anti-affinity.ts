// Nova's ServerGroupAntiAffinityFilter: a host already running max_server_per_host (rules,
// default 1) members of an `anti-affinity` group is out. Members on a host are the group's
// instances the request's locator puts there; the scheduler adds each instance it places, so the
// instances of one multi-create spread too.
import { countsByPosition, positionsRunning } from "../instances.js";
import type { HostFilter } from "../types.js";

export const ServerGroupAntiAffinityFilter: HostFilter = {
  name: "ServerGroupAntiAffinityFilter",
  runOncePerRequest: false,
  runOnRebuild: false,
  prepare(spec, ctx) {
    const group = spec.instance_group;
    if (group?.policy !== "anti-affinity") return null;
    const max = group.rules.max_server_per_host ?? 1;
    const summary = `already run ${max} of the anti-affinity group's members`;
    const self = spec.instance_uuid;
    const reject = (n: number) => ({
      summary,
      reason: `host runs ${n} of the group's members (max_server_per_host ${max})`,
    });
    const counts = countsByPosition(ctx.fleet, ctx.instances, group.members);
    // A move may stay on the host it is on (Nova checks the request's own instance first).
    const mine = positionsRunning(ctx.fleet, ctx.instances, self ? [self] : []);
    return (_host, i) => {
      const n = counts.get(i) ?? 0;
      return n < max || mine.has(i) ? null : reject(n);
    };
  },
};
