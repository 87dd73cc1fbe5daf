// The change feed's shard of a host: fixed by its name, and spread evenly over the shards; its
// entries; the stamp a write carries.
import { describe, expect, it } from "vitest";
import {
  changeItem,
  entriesAfter,
  FEED_RETENTION_S,
  FEED_SHARDS,
  feedOf,
  stamp,
  stampNew,
  stampOf,
} from "../../../lib/placement/feed.js";

describe("feedOf", () => {
  it("is one of the shards and always the same for a host", () => {
    for (const h of ["host-1", "compute-0042.example.org", ""]) {
      expect(FEED_SHARDS).toContain(feedOf(h));
      expect(feedOf(h)).toBe(feedOf(`${h}`));
    }
  });

  it("spreads 10,000 hosts within 10% of an even share per shard (every one in the one shard there is)", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 10_000; i++) {
      const f = feedOf(`compute-${String(i).padStart(5, "0")}`);
      counts.set(f, (counts.get(f) ?? 0) + 1);
    }
    const even = 10_000 / FEED_SHARDS.length;
    expect([...counts.keys()].sort()).toEqual([...FEED_SHARDS]);
    for (const [shard, n] of counts)
      expect(Math.abs(n - even), `shard ${shard}: ${n}`).toBeLessThan(even / 10);
  });
});

describe("stamp", () => {
  it("sets changed_at to the writer's clock, ISO-8601 with milliseconds", () => {
    const values: Record<string, unknown> = {};
    const before = new Date().toISOString();
    expect(stamp(values)).toBe("changed_at = :changed_at");
    expect(values[":changed_at"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((values[":changed_at"] as string) >= before).toBe(true);
  });

  it("stampOf is the stamp a write carries; a write without one is a bug, said at once", () => {
    const values: Record<string, unknown> = {};
    stamp(values);
    expect(stampOf(values)).toBe(values[":changed_at"]);
    expect(() => stampOf({})).toThrow(/no stamp/);
  });

  it("a new item gets its changed_at", () => {
    const item = stampNew({ host: "h-7", x: 1 });
    expect(item).toMatchObject({ host: "h-7", x: 1 });
    expect(item.changed_at).toMatch(/Z$/);
  });
});

describe("changeItem", () => {
  it("is the host's shard, a sort key after every earlier stamp, and expires after the retention", () => {
    const e = changeItem({ host: "h-7", changed_at: "2026-11-27T01:00:00.000Z" });
    expect(e).toEqual({
      feed: feedOf("h-7"),
      at: "2026-11-27T01:00:00.000Z#h-7",
      host: "h-7",
      changed_at: "2026-11-27T01:00:00.000Z",
      expires_at: Date.parse("2026-11-27T01:00:00.000Z") / 1000 + FEED_RETENTION_S,
    });
    // a reader asks for what was written after a stamp: not the entry of that very stamp
    expect(e.at > entriesAfter("2026-11-27T00:59:59.999Z")).toBe(true);
    expect(e.at > entriesAfter("2026-11-27T01:00:00.000Z")).toBe(false);
    expect(
      changeItem({ host: "~", changed_at: "2026-11-27T01:00:00.000Z" }).at <
        entriesAfter("2026-11-27T01:00:00.000Z"),
    ).toBe(true);
  });
});
