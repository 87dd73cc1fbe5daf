// Availability zones as Nova derives them: a host's zone is its AZ aggregate's, else the zone it
// registered with, else default_availability_zone; a zone is available while an enabled host is
// in it. The create path asks for the available zones on every create with a zone, so they are
// cached per deps (per process) for a few seconds; this process's aggregate writes drop them.
import { aggregateZoneByHost, hostAvailabilityZone } from "../catalog/aggregates.js";
import type { Aggregate } from "../catalog/types.js";
import { schedulerConfig } from "../config.js";
import type { HostRecord } from "../placement/types.js";
import { isServiceUp } from "../placement-rules.js";
import type { ApiDeps } from "./deps.js";

export const ZONES_TTL_MS = 5_000;

export interface ZoneHost {
  host: string;
  /** the compute service is up (not forced down, not marked down by the liveness sweep) */
  up: boolean;
  /** its last heartbeat, when the caller read them (the detail view); null otherwise */
  last_heartbeat: string | null;
}

export interface Zone {
  name: string;
  /** some enabled host is in it */
  available: boolean;
  /** its enabled hosts, by name */
  hosts: ZoneHost[];
}

export interface ZoneOptions {
  defaultZone: string;
  /** each host's last heartbeat (the Services table), for the detail view */
  heartbeats?: ReadonlyMap<string, string>;
}

/** Available zones first, then the zones only disabled hosts are in; each by name. */
export function availabilityZones(
  hosts: readonly HostRecord[],
  aggregates: readonly Aggregate[],
  opts: ZoneOptions,
): Zone[] {
  const byHost = aggregateZoneByHost(aggregates);
  const zones = new Map<string, Zone>();
  const disabledIn = new Set<string>();
  for (const h of [...hosts].sort((a, b) => a.host.localeCompare(b.host))) {
    const name = hostAvailabilityZone(h, byHost, opts.defaultZone);
    if (h.service.disabled) {
      disabledIn.add(name);
      continue;
    }
    let z = zones.get(name);
    if (!z) {
      z = { name, available: true, hosts: [] };
      zones.set(name, z);
    }
    z.hosts.push({
      host: h.host,
      up: isServiceUp(h),
      last_heartbeat: opts.heartbeats?.get(h.host) ?? null,
    });
  }
  const available = [...zones.values()].sort((a, b) => a.name.localeCompare(b.name));
  const unavailable = [...disabledIn]
    .filter((n) => !zones.has(n))
    .sort()
    .map((name): Zone => ({ name, available: false, hosts: [] }));
  return [...available, ...unavailable];
}

const cache = new WeakMap<ApiDeps, { at: number; zones: Set<string> }>();

/** Names of the available zones, cached for ZONES_TTL_MS. */
export async function availableZoneNames(deps: ApiDeps): Promise<Set<string>> {
  const now = deps.now().getTime();
  const hit = cache.get(deps);
  if (hit && now - hit.at < ZONES_TTL_MS && now >= hit.at) return hit.zones;
  const [hosts, aggregates] = await Promise.all([deps.listHosts(), deps.listAggregates()]);
  const cfg = schedulerConfig();
  const zones = new Set(
    availabilityZones(hosts, aggregates, {
      defaultZone: cfg.default_availability_zone,
    })
      .filter((z) => z.available)
      .map((z) => z.name),
  );
  cache.set(deps, { at: now, zones });
  return zones;
}

/** After an aggregate write: the next create sees the new zones at once. */
export function forgetZones(deps: ApiDeps): void {
  cache.delete(deps);
}
