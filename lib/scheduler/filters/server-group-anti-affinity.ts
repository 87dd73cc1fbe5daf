// Nova's ServerGroupAntiAffinityFilter: a host already running max_server_per_host (rules,
// default 1) members of an `anti-affinity` group is out. Members on a host are the host's
// instances that are in the group; the scheduler records each instance it places on its host,
// so the instances of one multi-create spread too.
import type { HostFilter } from "../types.js";

export const ServerGroupAntiAffinityFilter: HostFilter = {
  name: "ServerGroupAntiAffinityFilter",
  runOncePerRequest: false,
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
    if (ctx.fleet) {
      const counts = ctx.fleet.countsOf(group.members);
      // A move may stay on the host it is on (Nova checks the request's own instance first).
      const mine = self ? ctx.fleet.hostsWith([self]) : new Set<number>();
      return (_host, i) => {
        const n = counts.get(i) ?? 0;
        return n < max || mine.has(i) ? null : reject(n);
      };
    }
    const members = new Set(group.members);
    return (host) => {
      if (self && host.instances.includes(self)) return null;
      let n = 0;
      for (const uuid of host.instances) if (members.has(uuid)) n++;
      return n < max ? null : reject(n);
    };
  },
};
