// The provider items' change feed: every write to a host item sets `changed_at` (the writer's
// clock), and then appends `{host, changed_at}` to the HostChanges table, in one of FEED_SHARDS
// partitions (lib/placement/change-log.ts). A scheduler refreshes its cache by reading the
// entries since its last refresh, then only the host items it does not already hold at that
// stamp, instead of a Scan of the fleet. Shards spread the feed's writes over partitions; their
// number is part of the item format.

/**
 * One partition: a claim and a build's num_io_ops are about 1.6 entries a build (bench:cost), so
 * 100 builds/s write about 160 a second to it, where a partition takes 1,000 (idle heartbeats
 * write no entry). Every decision of every warm scheduler reads every shard, each a Query of at
 * least ½ read unit, so a second shard cost ½ unit a decision for headroom the feed does not
 * need (two until 2026-12-08: an entry a writer of the old release put in shard "1" meanwhile is
 * not read, which leaves that host stale in a cache until its next write, as a lost entry does).
 */
export const FEED_SHARDS = ["0"] as const;

/** How long an entry stays readable (the table's TTL); a cache older than this reads the fleet. */
export const FEED_RETENTION_S = 3_600;

/** One write to a host item, as the feed keeps it. */
export interface HostChange {
  host: string;
  /** the `changed_at` the write set on the item */
  changed_at: string;
}

/** The feed shard of `host`: FNV-1a of its name, fixed for the host's life. */
export function feedOf(host: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < host.length; i++) {
    h ^= host.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return FEED_SHARDS[(h >>> 0) % FEED_SHARDS.length]!;
}

/** The HostChanges item of one write: its shard, a sort key unique per host and stamp, its expiry. */
export function changeItem(c: HostChange) {
  return {
    feed: feedOf(c.host),
    at: `${c.changed_at}#${c.host}`,
    host: c.host,
    changed_at: c.changed_at,
    expires_at: Math.floor(Date.parse(c.changed_at) / 1000) + FEED_RETENTION_S,
  };
}

/**
 * The sort key every entry written after `since` (ISO-8601) is above, and no entry at `since`:
 * `$` sorts after the `#` that ends an entry's stamp.
 */
export function entriesAfter(since: string): string {
  return `${since}$`;
}

/**
 * The SET clause every provider UpdateItem carries, its value added to `values`. The time is the
 * writer's clock at the write (never a caller's `now`, which may be old): readers of the feed
 * look back a margin for clock skew and the feed's lag. `stampOf(values)` is what it set.
 */
export function stamp(values: Record<string, unknown>): string {
  values[":changed_at"] = new Date().toISOString();
  return "changed_at = :changed_at";
}

/** The `changed_at` that `stamp(values)` put in `values`. */
export function stampOf(values: Record<string, unknown>): string {
  const at = values[":changed_at"];
  if (typeof at !== "string") throw new Error("stampOf: the write carries no stamp(values)");
  return at;
}

/** A new provider item with its first `changed_at`. */
export function stampNew<T extends { host: string }>(item: T): T & { changed_at: string } {
  return { ...item, changed_at: new Date().toISOString() };
}
