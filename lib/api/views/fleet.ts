// novaless's fleet view (GET /os-fleet, admin): every host in one compact row, what the console's
// fleet map draws. Pure: hosts and aggregates in, rows out.
import { aggregateZoneByHost, hostAvailabilityZone } from "../../catalog/aggregates.js";
import type { Aggregate } from "../../catalog/types.js";
import { isServiceUp } from "../../placement/liveness.js";
import { capacity, type HostRecord, type ResourceClass } from "../../placement/types.js";
import { serviceUuid } from "../host-ids.js";
import type { FleetHost } from "./fleet-types.js";

export type { FleetHost } from "./fleet-types.js";

export function fleetHostView(
  h: HostRecord,
  byHost: Map<string, string>,
  aggs: readonly Aggregate[],
  defaultZone: string,
): FleetHost {
  const resources: Record<string, [number, number]> = {};
  for (const [rc, inv] of Object.entries(h.inventories)) {
    if (inv) resources[rc] = [h.usage[rc as ResourceClass] ?? 0, capacity(inv)];
  }
  return {
    host: h.host,
    service_id: serviceUuid(h.host),
    zone: hostAvailabilityZone(h, byHost, defaultZone),
    aggregates: aggs.filter((a) => a.hosts.includes(h.host) && a.number !== undefined).map((a) => a.number!),
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
  const rows = hosts
    // a full answer lists live services only; a changes-since one says which went away
    .filter((h) => !opts.full || !h.service.deleted_at)
    .sort((a, b) => a.host.localeCompare(b.host))
    .map((h) => fleetHostView(h, byHost, aggregates, opts.defaultZone));
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
