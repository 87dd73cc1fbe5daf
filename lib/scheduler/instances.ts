// "Which host runs instance X" for the instances a request names, by fleet position: the
// request's InstanceLocator (uuid → host name) read through the fleet's name index.
import type { FleetIndex, InstanceLocator } from "./types.js";

/** Positions of the hosts running any of these instances. */
export function positionsRunning(
  fleet: FleetIndex,
  instances: InstanceLocator,
  uuids: Iterable<string>,
): Set<number> {
  const out = new Set<number>();
  for (const uuid of uuids) {
    const host = instances.get(uuid);
    if (host !== undefined) for (const i of fleet.positionsOf(host)) out.add(i);
  }
  return out;
}

/** Per host position, how many of these instances it runs (hosts running none are absent). */
export function countsByPosition(
  fleet: FleetIndex,
  instances: InstanceLocator,
  uuids: Iterable<string>,
): Map<number, number> {
  const out = new Map<number, number>();
  for (const uuid of new Set(uuids)) {
    const host = instances.get(uuid);
    if (host === undefined) continue;
    for (const i of fleet.positionsOf(host)) out.set(i, (out.get(i) ?? 0) + 1);
  }
  return out;
}
