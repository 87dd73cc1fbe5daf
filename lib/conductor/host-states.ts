// Placement's host records, joined with the catalog's aggregates and the instances still
// building, → the scheduler's HostState (the scheduler never sees DynamoDB). Nova's HostManager.
import type { Aggregate } from "../catalog/types.js";
import type { SchedulerConfig } from "../config.js";
import type { InstanceRecord } from "../instances/types.js";
import { isServiceUp } from "../placement/hosts.js";
import type { HostRecord, Inventory } from "../placement/types.js";
import { Fleet } from "../scheduler/fleet.js";
import { hostAggregates, hostStateOf } from "../scheduler/host-state.js";
import type { HostAggregate, HostState } from "../scheduler/types.js";

const AZ_KEY = "availability_zone";

export interface FleetSources {
  hosts: readonly HostRecord[];
  /** every host aggregate (membership lives only in Aggregate.hosts) */
  aggregates: readonly Aggregate[];
  /** instances in BUILD: on their host they are Nova's io_workload */
  building: readonly InstanceRecord[];
  /** instances being scheduled now: not yet anywhere */
  scheduling?: readonly string[];
}

/**
 * The fleet one scheduling run decides over. A host's aggregates are those listing it; its zone
 * is its AZ aggregate's, else the zone it registered with — which counts as an aggregate of that
 * zone here, so Nova's zone rules (the prefilter, AvailabilityZoneFilter) apply to it unchanged —
 * else [DEFAULT] default_availability_zone.
 */
export function buildFleet(src: FleetSources, config: SchedulerConfig, now = Date.now()): Fleet {
  const aggregates = src.aggregates.map(toHostAggregate);
  const byHost = new Map<string, HostAggregate[]>();
  for (const [k, a] of src.aggregates.entries()) {
    for (const h of a.hosts) {
      const list = byHost.get(h);
      if (list) list.push(aggregates[k]!);
      else byHost.set(h, [aggregates[k]!]);
    }
  }
  const scheduling = new Set(src.scheduling ?? []);
  const ioOps = new Map<string, number>();
  for (const rec of src.building) {
    if (!rec.host || rec.deleted || scheduling.has(rec.id)) continue;
    ioOps.set(rec.host, (ioOps.get(rec.host) ?? 0) + 1);
  }
  const zones = new Map<string, HostAggregate>();
  const hosts = src.hosts.map((h) =>
    toHostState(
      h,
      hostAggregates(byHost.get(h.host) ?? [], h.availability_zone, zones),
      ioOps.get(h.host) ?? 0,
      config,
      now,
    ),
  );
  return new Fleet(hosts, [...aggregates, ...zones.values()]);
}

function toHostAggregate(a: Aggregate): HostAggregate {
  const metadata = { ...a.metadata };
  if (a.availability_zone && !metadata[AZ_KEY]) metadata[AZ_KEY] = a.availability_zone;
  return { id: a.id, name: a.name, metadata };
}

/** Facts a compute agent may report beyond Placement's record (metrics: none report them yet). */
type ReportedFacts = { metrics?: Record<string, number>; stats?: Record<string, unknown> };

export function toHostState(
  h: HostRecord,
  aggregates: readonly HostAggregate[],
  numIoOps: number,
  config: SchedulerConfig,
  now = Date.now(),
): HostState {
  const reported = h as HostRecord & ReportedFacts;
  return hostStateOf(
    {
      ...h,
      inventories: h.inventories as Record<string, Inventory>,
      usage: h.usage as Record<string, number>,
      num_instances: Object.keys(h.allocations).length,
      num_io_ops: numIoOps,
      stats: { ...(reported.stats ?? {}), failed_builds: h.stats?.failed_builds ?? 0 },
      metrics: reported.metrics,
      service: {
        disabled: h.service.disabled,
        disabled_reason: h.service.disabled_reason,
        forced_down: h.service.forced_down,
        up: isServiceUp(h, config.service_down_time, now),
      },
    },
    aggregates,
    config,
  );
}

/** Where each instance with an allocation runs (uuid → host): the scheduler's InstanceLocator. */
export function instanceHostsOf(hosts: readonly HostRecord[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const h of hosts) for (const uuid of Object.keys(h.allocations)) out.set(uuid, h.host);
  return out;
}
