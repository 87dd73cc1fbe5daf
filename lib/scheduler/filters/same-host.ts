// Nova's SameHostFilter: scheduler hint same_host (instance uuids): only hosts running one of them.
import { hintList } from "../hints.js";
import type { HostFilter } from "../types.js";

export const SameHostFilter: HostFilter = {
  name: "SameHostFilter",
  // The hosts the instances are running on do not change within a request.
  runOncePerRequest: true,
  prepare(spec, ctx) {
    const uuids = hintList(spec, "same_host");
    if (uuids.length === 0) return null;
    const rejection = { summary: "run none of the same_host instances" };
    if (ctx.fleet) {
      const hosts = ctx.fleet.hostsWith(uuids);
      return (_host, i) => (hosts.has(i) ? null : rejection);
    }
    const wanted = new Set(uuids);
    return (host) => (host.instances.some((u) => wanted.has(u)) ? null : rejection);
  },
};
