// novaless's fleet view (GET /os-fleet, admin): every host in one compact row, what the console's
// fleet map draws. Pure: hosts and aggregates in, rows out.
import { aggregateZoneByHost, hostAvailabilityZone } from "../../catalog/aggregates.js";
import type { Aggregate } from "../../catalog/types.js";
import { isServiceUp } from "../../placement/liveness.js";
import { capacity, type HostRecord, type ResourceClass } from "../../placement/types.js";
import { serviceUuid } from "../host-ids.js";
import type { FleetHost } from "./fleet-types.js";

export type { FleetHost } from "./fleet-types.js";

// A service's id is a name-based UUID (a SHA-1 per host): kept across a warm function's answers,
// since a full fleet asks for all 10,000 every time.
const serviceIds = new Map<string, string>();
function serviceId(host: string): string {
  let id = serviceIds.get(host);
  if (id === undefined) {
    id = serviceUuid(host);
    serviceIds.set(host, id);
  }
  return id;
}

export function fleetHostView(
  h: HostRecord,
  byHost: Map<string, string>,
  aggregateNumbers: ReadonlyMap<string, number[]>,
  defaultZone: string,
): FleetHost {
  const resources: Record<string, [number, number]> = {};
  for (const [rc, inv] of Object.entries(h.inventories)) {
    if (inv) resources[rc] = [h.usage[rc as ResourceClass] ?? 0, capacity(inv)];
  }
  return {
    host: h.host,
    service_id: serviceId(h.host),
    zone: hostAvailabilityZone(h, byHost, defaultZone),
    aggregates: aggregateNumbers.get(h.host) ?? [],
    state: isServiceUp(h) ? "up" : "down",
    status: h.service.disabled ? "disabled" : "enabled",
    forced_down: h.service.forced_down,
    disabled_reason: h.service.disabled_reason,
    instances: h.num_instances,
    building: h.num_io_ops,
    failed_builds: h.stats.failed_builds,
    resources,
    changed_at: h.changed_at,
    ...(h.service.deleted_at ? { deleted: true as const } : {}),
  };
}

export function fleetView(
  hosts: readonly HostRecord[],
  aggregates: readonly Aggregate[],
  opts: { defaultZone: string; full: boolean; nextChangesSince: string },
): { fleet: Record<string, unknown> } {
  const byHost = aggregateZoneByHost(aggregates);
  // each host's aggregates' numbers, in the aggregates' order: one pass over their members, not
  // a search of every aggregate per host (10,000 hosts in zone aggregates of thousands each)
  const numbers = new Map<string, number[]>();
  for (const a of aggregates) {
    if (a.number === undefined) continue;
    for (const member of a.hosts) {
      const list = numbers.get(member);
      if (list) {
        if (list.at(-1) !== a.number) list.push(a.number);
      } else numbers.set(member, [a.number]);
    }
  }
  const rows = hosts
    // a full answer lists live services only; a changes-since one says which went away
    .filter((h) => !opts.full || !h.service.deleted_at)
    .sort((a, b) => a.host.localeCompare(b.host))
    .map((h) => fleetHostView(h, byHost, numbers, opts.defaultZone));
  const classes = new Set<string>();
  for (const r of rows) for (const rc of Object.keys(r.resources)) classes.add(rc);
  return {
    fleet: {
      hosts: rows,
      aggregates: aggregates.map((a) => ({
        id: a.number ?? null,
        uuid: a.id,
        name: a.name,
        availability_zone: a.availability_zone,
        hosts: a.hosts.length,
      })),
      resource_classes: [...classes].sort(),
      full: opts.full,
      next_changes_since: opts.nextChangesSince,
    },
  };
}
