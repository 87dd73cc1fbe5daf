// Nova's SameHostFilter: scheduler hint same_host (instance uuids): only hosts running one of them.
import { hintList } from "../hints.js";
import { positionsRunning } from "../instances.js";
import type { HostFilter } from "../types.js";

export const SameHostFilter: HostFilter = {
  name: "SameHostFilter",
  // The hosts the instances are running on do not change within a request.
  runOncePerRequest: true,
  prepare(spec, ctx) {
    const uuids = hintList(spec, "same_host");
    if (uuids.length === 0) return null;
    const rejection = { summary: "run none of the same_host instances" };
    const hosts = positionsRunning(ctx.fleet, ctx.instances, uuids);
    return (_host, i) => (hosts.has(i) ? null : rejection);
  },
};
