// Nova's SameHostFilter: scheduler hint same_host (instance uuids): only hosts running one of them.
import { hintList } from "../hints.js";
import { positionsRunning } from "../instances.js";
import type { HostFilter, Rejection } from "../types.js";

export const SameHostFilter: HostFilter = {
  name: "SameHostFilter",
  // The hosts the instances are running on do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  prepare: byHintedInstances("same_host", true, { summary: "run none of the same_host instances" }),
};

/**
 * The check for a hint naming instances: a host passes when whether it runs one of them is
 * `passWhenRunning`; no check when the hint names none.
 */
export function byHintedInstances(
  hint: string,
  passWhenRunning: boolean,
  rejection: Rejection,
): HostFilter["prepare"] {
  return (spec, ctx) => {
    const uuids = hintList(spec, hint);
    if (uuids.length === 0) return null;
    const hosts = positionsRunning(ctx.fleet, ctx.instances, uuids);
    return (_host, i) => (hosts.has(i) === passWhenRunning ? null : rejection);
  };
}
