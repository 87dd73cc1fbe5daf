// The provider items' change feed: every write to a host item sets `changed_at`, and each item
// sits in one of FEED_SHARDS `feed` partitions of the host-changes index, so a scheduler refreshes
// its cache with one Query per shard for `changed_at > since` instead of a Scan of the fleet.
// Shards spread the index's writes over partitions; their number is part of the item format.

export const FEED_SHARDS = ["0", "1", "2", "3"] as const;

/** The feed shard of `host`: FNV-1a of its name, fixed for the host's life. */
export function feedOf(host: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < host.length; i++) {
    h ^= host.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return FEED_SHARDS[(h >>> 0) % FEED_SHARDS.length]!;
}

/**
 * The SET clause every provider UpdateItem carries, its value added to `values`. The time is the
 * writer's clock at the write (never a caller's `now`, which may be old): readers of the feed
 * look back a margin for clock skew and the index's lag.
 */
export function stamp(values: Record<string, unknown>): string {
  values[":changed_at"] = new Date().toISOString();
  return "changed_at = :changed_at";
}

/** A new provider item with its feed shard and first `changed_at`. */
export function stampNew<T extends { host: string }>(item: T): T & { feed: string; changed_at: string } {
  return { ...item, feed: feedOf(item.host), changed_at: new Date().toISOString() };
}
