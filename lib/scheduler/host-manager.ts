// Nova's HostManager: the host states a warm scheduler keeps between invocations. A cold start
// reads the fleet once (parallel Scan segments); after that each decision reads only the provider
// items written since its last refresh (the Hosts table's `host-changes` feed index), so what a
// decision reads does not grow with the fleet. The cache is never the authority: a claim is a
// conditional write, so a stale host costs a claim conflict, after which the claim loop moves on
// and the host is read again (Nova's claim loop; Nomad's snapshot and plan applier).
import type { Aggregate } from "../catalog/types.js";
import type { SchedulerConfig } from "../config.js";
import { readAllHosts, readChangedHosts } from "../placement/hosts.js";
import type { HostRecord } from "../placement/types.js";
import { Fleet } from "./fleet.js";
import { hostAggregates, hostStateOf } from "./host-state.js";
import type { HostAggregate, HostState } from "./types.js";

const AZ_KEY = "availability_zone";

/**
 * How far before a refresh's start the next one looks again: the feed index is eventually
 * consistent (typically well under a second) and writers' clocks differ by milliseconds.
 */
export const FEED_LAG_MS = 2_000;

export interface RefreshStats {
  kind: "cold" | "warm";
  /** provider items this refresh read */
  read: number;
  /** hosts whose state changed in the cache */
  applied: number;
  ms: number;
}

/** Which of two images of one provider item is the later write. */
export function isNewer(a: HostRecord, than: HostRecord): boolean {
  // Every later image carries a generation at least as high (claims, releases and inventory
  // changes bump it); writes that do not (service changes) are ordered by their stamp.
  if (a.generation !== than.generation) return a.generation > than.generation;
  return a.changed_at > than.changed_at;
}

/** A host is up unless the liveness sweep marked it down or an operator forced it down. */
function viewOf(h: HostRecord) {
  return {
    ...h,
    service: {
      disabled: h.service.disabled,
      disabled_reason: h.service.disabled_reason,
      forced_down: h.service.forced_down,
      up: !h.service.forced_down && !h.service.down_since,
    },
  };
}

export class HostManager {
  private fleet: Fleet | undefined;
  private readonly providers = new Map<string, HostRecord>();
  private aggregates: readonly Aggregate[] = [];
  private aggregatesKey = "";
  /** the next refresh reads what was written after this (ISO-8601, as `changed_at`) */
  private since = "";
  lastRefresh: RefreshStats | undefined;

  constructor(
    private readonly reads: {
      all: () => Promise<HostRecord[]>;
      changedSince: (since: string) => Promise<HostRecord[]>;
    } = { all: () => readAllHosts(), changedSince: readChangedHosts },
  ) {}

  /** The fleet with every change since the last refresh applied: the host states to decide over. */
  async hostStates(
    aggregates: readonly Aggregate[],
    config: Pick<SchedulerConfig, "default_availability_zone">,
    now = Date.now(),
  ): Promise<Fleet> {
    const started = performance.now();
    const cold = this.fleet === undefined;
    const since = new Date(now - FEED_LAG_MS).toISOString();
    const read = cold ? await this.reads.all() : await this.reads.changedSince(this.since);
    this.since = since;
    const changed: HostRecord[] = [];
    for (const rec of read) {
      const known = this.providers.get(rec.host);
      if (known && !isNewer(rec, known)) continue;
      this.providers.set(rec.host, rec);
      changed.push(rec);
    }
    const key = aggregatesKey(aggregates);
    if (cold || key !== this.aggregatesKey) {
      this.aggregates = aggregates;
      this.aggregatesKey = key;
      // Aggregates say every host's zone and metadata: rebuild the states (no read).
      this.fleet = this.build(config);
    } else if (changed.length > 0) {
      this.fleet!.update(this.statesOf(changed, config));
    }
    this.lastRefresh = {
      kind: cold ? "cold" : "warm",
      read: read.length,
      applied: changed.length,
      ms: performance.now() - started,
    };
    return this.fleet!;
  }

  /** A provider item read outside a refresh (after a claim conflict): the cache takes it if newer. */
  learn(rec: HostRecord, config: Pick<SchedulerConfig, "default_availability_zone">): void {
    const known = this.providers.get(rec.host);
    if (known && !isNewer(rec, known)) return;
    this.providers.set(rec.host, rec);
    this.fleet?.update(this.statesOf([rec], config));
  }

  /** Forget everything (tests; the local runtime switching tables). */
  reset(): void {
    this.fleet = undefined;
    this.providers.clear();
    this.aggregatesKey = "";
    this.since = "";
    this.lastRefresh = undefined;
  }

  private build(config: Pick<SchedulerConfig, "default_availability_zone">): Fleet {
    const records = [...this.providers.values()].sort((a, b) => a.host.localeCompare(b.host));
    const { states, all } = this.resolve(records, config);
    return new Fleet(states, all);
  }

  private statesOf(records: HostRecord[], config: Pick<SchedulerConfig, "default_availability_zone">) {
    return this.resolve(records, config).states;
  }

  /** Host states with their aggregates: those listing them, else their registered zone's. */
  private resolve(
    records: readonly HostRecord[],
    config: Pick<SchedulerConfig, "default_availability_zone">,
  ): { states: HostState[]; all: HostAggregate[] } {
    const listed = this.aggregates.map(toHostAggregate);
    const byHost = new Map<string, HostAggregate[]>();
    for (const [k, a] of this.aggregates.entries()) {
      for (const h of a.hosts) {
        const list = byHost.get(h);
        if (list) list.push(listed[k]!);
        else byHost.set(h, [listed[k]!]);
      }
    }
    const zones = new Map<string, HostAggregate>();
    const states = records.map((h) =>
      hostStateOf(viewOf(h), hostAggregates(byHost.get(h.host) ?? [], h.availability_zone, zones), config),
    );
    return { states, all: [...listed, ...zones.values()] };
  }
}

function toHostAggregate(a: Aggregate): HostAggregate {
  const metadata = { ...a.metadata };
  if (a.availability_zone && !metadata[AZ_KEY]) metadata[AZ_KEY] = a.availability_zone;
  return { id: a.id, name: a.name, metadata };
}

function aggregatesKey(aggregates: readonly Aggregate[]): string {
  return JSON.stringify(aggregates);
}
