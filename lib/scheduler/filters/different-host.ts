// Nova's DifferentHostFilter: scheduler hint different_host (instance uuids): hosts running any of
// them are out.
import { hintList } from "../hints.js";
import { positionsRunning } from "../instances.js";
import type { HostFilter } from "../types.js";

export const DifferentHostFilter: HostFilter = {
  name: "DifferentHostFilter",
  // The hosts the instances are running on do not change within a request.
  runOncePerRequest: true,
  prepare(spec, ctx) {
    const uuids = hintList(spec, "different_host");
    if (uuids.length === 0) return null;
    const rejection = { summary: "run a different_host instance" };
    const hosts = positionsRunning(ctx.fleet, ctx.instances, uuids);
    return (_host, i) => (hosts.has(i) ? rejection : null);
  },
};
