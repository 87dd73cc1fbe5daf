// Nova's HostManager: the host states a warm scheduler keeps between invocations. A cold start
// reads the fleet snapshot (lib/placement/fleet-snapshot.ts: the hosts as a warm cache held them
// at a feed position) and goes on from its position as a warm cache would; with no snapshot, or
// one older than the feed keeps entries, it reads the fleet (parallel Scan segments). After that
// each decision reads the change feed's entries since its last refresh (lib/placement/feed.ts),
// then only the provider items it does not already hold at their stamp, so what a decision reads
// does not grow with the fleet. The cache is
// never the authority: a claim is a conditional write, so a stale host costs a claim conflict,
// after which the claim loop moves on and the host is read again (Nova's claim loop; Nomad's
// snapshot and plan applier).
import type { Aggregate } from "../catalog/types.js";
import type { SchedulerConfig } from "../config.js";
import type { HostChange } from "../placement/feed.js";
import type { FleetSnapshot, SchedulerHost } from "../placement/fleet-snapshot.js";
import { isServiceUp } from "../placement-rules.js";
import { Fleet } from "./fleet.js";
import { hostAggregates, hostStateOf } from "./host-state.js";
import type { HostAggregate, HostState } from "./types.js";

const AZ_KEY = "availability_zone";

/**
 * How far before a refresh's start the next one looks again: a writer appends its entry after its
 * write, reads are eventually consistent (typically well under a second), and writers' clocks
 * differ by milliseconds.
 */
export const FEED_LAG_MS = 2_000;

export interface RefreshStats {
  /** cold: the fleet read whole (Scan); snapshot: a cold start from the snapshot and the feed */
  kind: "cold" | "snapshot" | "warm";
  /** the feed's entries this refresh read (0 when cold) */
  entries: number;
  /** provider items this refresh read */
  read: number;
  /** hosts whose state changed in the cache */
  applied: number;
  ms: number;
}

/** Which of two images of one provider item is the later write. */
export function isNewer(a: SchedulerHost, than: SchedulerHost): boolean {
  // Every later image carries a generation at least as high (claims, releases and inventory
  // changes bump it); writes that do not (service changes) are ordered by their stamp.
  if (a.generation !== than.generation) return a.generation > than.generation;
  return a.changed_at > than.changed_at;
}

/** The provider as the scheduler reads it, with its service's liveness worked out. */
function viewOf(h: SchedulerHost) {
  return {
    ...h,
    service: {
      disabled: h.service.disabled,
      disabled_reason: h.service.disabled_reason,
      forced_down: h.service.forced_down,
      up: isServiceUp(h),
    },
  };
}

/**
 * Where host states come from: the fleet snapshot (a cold start), the whole fleet (a cold start
 * without a usable snapshot), the feed since a stamp, some hosts.
 */
export interface HostReads {
  all: () => Promise<SchedulerHost[]>;
  changes: (since: string) => Promise<HostChange[]>;
  hosts: (hosts: readonly string[]) => Promise<SchedulerHost[]>;
  /** the stored snapshot, or undefined when there is none (or it cannot be read: the Scan serves) */
  snapshot?: () => Promise<FleetSnapshot | undefined>;
  /** how long the feed keeps an entry: a cache last refreshed longer ago (less a minute) is cold */
  retentionMs: number;
}

/** How much younger than the feed's retention a position must be to go on from it (clock skew, lag). */
const RETENTION_MARGIN_MS = 60_000;

const entryKey = (c: HostChange) => `${c.changed_at}#${c.host}`;

/** Below this many changed hosts a refresh reads them by key, whatever the fleet's size. */
const WHOLE_READ_MIN = 16;

export class HostManager {
  private fleet: Fleet | undefined;
  private providers = new Map<string, SchedulerHost>();
  /** the catalog's aggregates as the scheduler sees them, and those listing each host */
  private listed: HostAggregate[] = [];
  private byHost = new Map<string, HostAggregate[]>();
  private aggregatesKey = "";
  /** the registered zones seen as aggregates (one object per zone, kept across refreshes) */
  private zones = new Map<string, HostAggregate>();
  /** the next refresh reads what was written after this (ISO-8601, as `changed_at`) */
  private since = "";
  /**
   * The feed's entries since `since` whose write (or a later one) the cache holds: the next
   * refresh, looking back over them again, reads none of their hosts again.
   */
  private handled = new Set<string>();
  lastRefresh: RefreshStats | undefined;
  /** the newest snapshot position this container knows of (read, written or seen): the writer's clue */
  snapshotPosition = "";

  private readonly lagMs: number;

  constructor(
    private readonly reads: HostReads,
    opts: { lagMs?: number } = {},
  ) {
    this.lagMs = opts.lagMs ?? FEED_LAG_MS;
  }

  /** The fleet with every change since the last refresh applied: the host states to decide over. */
  async hostStates(
    aggregates: readonly Aggregate[],
    config: Pick<SchedulerConfig, "default_availability_zone">,
    now = Date.now(),
  ): Promise<Fleet> {
    const started = performance.now();
    let kind: RefreshStats["kind"] = this.isCold(now) ? "cold" : "warm";
    if (kind === "cold") {
      // A usable snapshot is a warm cache's view at its position: go on from there as one would.
      const snapshot = await this.reads.snapshot?.();
      if (snapshot && this.usable(snapshot.position, now)) {
        this.providers = new Map(snapshot.hosts.map((h) => [h.host, h]));
        this.since = snapshot.position;
        this.handled.clear();
        this.snapshotPosition = snapshot.position;
        kind = "snapshot";
      } else {
        this.providers = new Map();
      }
    }
    const cold = kind === "cold";
    const since = new Date(now - this.lagMs).toISOString();
    const entries = cold ? [] : await this.reads.changes(this.since);
    // From a snapshot, an entry whose write (or a later one) it holds already is not read again.
    const held = (c: HostChange) =>
      this.handled.has(entryKey(c)) ||
      (kind === "snapshot" && (this.providers.get(c.host)?.changed_at ?? "") >= c.changed_at);
    const wanted = new Set(entries.filter((c) => !held(c)).map((c) => c.host));
    // A read by key costs a host half a read unit; a Scan reads about four hosts for that, but a
    // whole read is 8 segments' Scans at least. So past a quarter of the fleet and WHOLE_READ_MIN
    // hosts (a cache long idle) the fleet is read whole.
    const whole = cold || wanted.size > Math.max(WHOLE_READ_MIN, this.providers.size / 4);
    const read = whole ? await this.reads.all() : wanted.size ? await this.reads.hosts([...wanted]) : [];
    this.since = since;
    if (cold) this.handled.clear();
    const changed: SchedulerHost[] = [];
    for (const rec of read) {
      const known = this.providers.get(rec.host);
      if (known && !isNewer(rec, known)) continue;
      this.providers.set(rec.host, rec);
      changed.push(rec);
    }
    // An entry is handled once the cache holds its write or a later one; an image older than its
    // entry (an eventually consistent read) is read again while the entry is in the next window.
    for (const key of this.handled) if (key < since) this.handled.delete(key);
    for (const c of entries) {
      if ((this.providers.get(c.host)?.changed_at ?? "") >= c.changed_at) this.handled.add(entryKey(c));
    }
    const key = aggregatesKey(aggregates);
    if (kind !== "warm" || key !== this.aggregatesKey) {
      this.aggregatesKey = key;
      this.listed = aggregates.map(toHostAggregate);
      this.byHost = new Map();
      for (const [k, a] of aggregates.entries()) {
        for (const h of a.hosts) {
          const list = this.byHost.get(h);
          if (list) list.push(this.listed[k]!);
          else this.byHost.set(h, [this.listed[k]!]);
        }
      }
      // Aggregates say every host's zone and metadata: rebuild the states (no read).
      this.fleet = this.build(config);
    } else if (changed.length > 0) {
      this.apply(changed, config);
    }
    this.lastRefresh = {
      kind,
      entries: entries.length,
      read: read.length,
      applied: changed.length,
      ms: performance.now() - started,
    };
    return this.fleet!;
  }

  /** The next refresh reads a snapshot or the whole fleet: nothing held, or held too long idle. */
  isCold(now = Date.now()): boolean {
    return this.fleet === undefined || !this.usable(this.since, now);
  }

  /** A position the feed still holds every entry after. */
  private usable(position: string, now: number): boolean {
    return now - Date.parse(position) <= this.reads.retentionMs - RETENTION_MARGIN_MS;
  }

  /**
   * What a snapshot of this cache would hold: every provider as held, current to the feed position
   * the next refresh reads after. Undefined before the first refresh.
   */
  view(): { position: string; hosts: SchedulerHost[] } | undefined {
    if (!this.fleet) return undefined;
    return { position: this.since, hosts: [...this.providers.values()] };
  }

  /** The cached state of one host, as the next decision will see it before refreshing. */
  cached(host: string): HostState | undefined {
    const i = this.fleet?.positionOf(host, this.providers.get(host)?.node ?? host);
    return i === undefined ? undefined : this.fleet!.hosts[i];
  }

  /** A provider item read outside a refresh (after a claim conflict): the cache takes it if newer. */
  learn(rec: SchedulerHost, config: Pick<SchedulerConfig, "default_availability_zone">): void {
    const known = this.providers.get(rec.host);
    if (known && !isNewer(rec, known)) return;
    this.providers.set(rec.host, rec);
    if (this.fleet) this.apply([rec], config);
  }

  /** Changed hosts into the fleet; a zone never seen before is a new aggregate (the fleet rebuilds). */
  private apply(records: SchedulerHost[], config: Pick<SchedulerConfig, "default_availability_zone">): void {
    const zones = this.zones.size;
    const { states, all } = this.resolve(records, config);
    this.fleet!.update(states, this.zones.size > zones ? { aggregates: all } : {});
  }

  /** Forget everything (tests; the local runtime switching tables). */
  reset(): void {
    this.fleet = undefined;
    this.providers.clear();
    this.aggregatesKey = "";
    this.zones = new Map();
    this.since = "";
    this.handled.clear();
    this.lastRefresh = undefined;
    this.snapshotPosition = "";
  }

  private build(config: Pick<SchedulerConfig, "default_availability_zone">): Fleet {
    this.zones = new Map();
    const records = [...this.providers.values()].sort((a, b) => a.host.localeCompare(b.host));
    const { states, all } = this.resolve(records, config);
    return new Fleet(states, all);
  }

  /** Host states with their aggregates: those listing them, else their registered zone's. */
  private resolve(
    records: readonly SchedulerHost[],
    config: Pick<SchedulerConfig, "default_availability_zone">,
  ): { states: HostState[]; all: HostAggregate[] } {
    const states = records.map((h) =>
      hostStateOf(
        viewOf(h),
        hostAggregates(this.byHost.get(h.host) ?? [], h.availability_zone, this.zones),
        config,
      ),
    );
    return { states, all: [...this.listed, ...this.zones.values()] };
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
