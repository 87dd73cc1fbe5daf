// The scheduler's HostManager (lib/scheduler/host-manager.ts): Placement's provider items joined
// with the catalog's aggregates into host states, read whole once and then only as they change.
// Pure: the reads are given, so what each refresh reads is counted exactly.
import { describe, expect, it } from "vitest";
import type { Aggregate } from "../../../lib/catalog/types.js";
import { FEED_RETENTION_S, type HostChange } from "../../../lib/placement/feed.js";
import type { HostRecord } from "../../../lib/placement/types.js";
import { HostManager, isNewer } from "../../../lib/scheduler/host-manager.js";
import { inv } from "../api/fakes.js";
import { config } from "./fixtures.js";

function record(host: string, extra: Partial<HostRecord> = {}): HostRecord {
  return {
    host,
    node: host,
    availability_zone: "",
    aggregates: [],
    traits: ["HW_CPU_X86_AVX2"],
    inventories: { VCPU: inv(16, 0, 16), MEMORY_MB: inv(65536, 512, 1.5), DISK_GB: inv(1000, 0, 1) },
    usage: { VCPU: 4, MEMORY_MB: 8192, DISK_GB: 40 },
    free: {},
    num_instances: 2,
    num_io_ops: 1,
    generation: 3,
    hypervisor_type: "fake",
    hypervisor_version: 1000,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    stats: { failed_builds: 2 },
    service: { disabled: false, disabled_reason: null, forced_down: false },
    queue_url: "",
    changed_at: "2026-01-01T00:00:00.000Z",
    ...extra,
  } as HostRecord;
}

const aggregate = (
  id: string,
  hosts: string[],
  metadata: Record<string, string>,
  availability_zone: string | null = null,
) => ({ id, name: id, availability_zone, hosts, metadata, created_at: "", updated_at: "" }) as Aggregate;

/**
 * Reads served from a table and its change feed in memory; each call's answer is recorded. A
 * write puts the item and appends its entry, as lib/placement/change-log.ts does; `lagging`
 * images are what the next read of their hosts answers instead (an eventually consistent read).
 */
function table(records: HostRecord[]) {
  const items = new Map(records.map((r) => [r.host, r]));
  const feed: HostChange[] = [];
  const lagging = new Map<string, HostRecord>();
  const calls: { kind: "all" | "since" | "hosts"; since?: string; answered: number }[] = [];
  return {
    calls,
    lagging,
    write(r: HostRecord) {
      items.set(r.host, r);
      feed.push({ host: r.host, changed_at: r.changed_at });
    },
    reads: {
      all: async () => {
        calls.push({ kind: "all", answered: items.size });
        return [...items.values()];
      },
      changes: async (since: string) => {
        const out = feed.filter((c) => c.changed_at > since);
        calls.push({ kind: "since", since, answered: out.length });
        return out;
      },
      hosts: async (hosts: readonly string[]) => {
        const out = hosts.flatMap((h) => {
          const stale = lagging.get(h);
          lagging.delete(h);
          const r = stale ?? items.get(h);
          return r ? [r] : [];
        });
        calls.push({ kind: "hosts", answered: out.length });
        return out;
      },
      retentionMs: FEED_RETENTION_S * 1000,
    },
  };
}

const T0 = Date.parse("2026-01-01T00:00:10.000Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe("HostManager", () => {
  it("maps a provider item to Nova's HostState", async () => {
    const t = table([record("h1")]);
    const fleet = await new HostManager(t.reads).hostStates([], config(), T0);
    const h = fleet.hosts[0]!;
    expect(h).toMatchObject({
      host: "h1",
      nodename: "h1",
      availability_zone: "nova",
      free_ram_mb: 65536 - 512 - 8192,
      free_disk_mb: (1000 - 40) * 1024,
      total_usable_ram_mb: 65536,
      disk_mb_used: 40 * 1024,
      vcpus_total: 16,
      vcpus_used: 4,
      cpu_allocation_ratio: 16,
      ram_allocation_ratio: 1.5,
      num_instances: 2,
      num_io_ops: 1,
      failed_builds: 2,
      traits: ["HW_CPU_X86_AVX2"],
      stats: { num_instances: "2", io_workload: "1", failed_builds: "2" },
      service: { disabled: false, forced_down: false, up: true },
    });
    expect(h.resources.MEMORY_MB).toEqual({
      capacity: 97536,
      used: 8192,
      min_unit: 1,
      max_unit: 65536,
      step_size: 1,
    });
  });

  it("joins aggregates from Aggregate.hosts; an AZ aggregate's zone wins over the registered one", async () => {
    const t = table([
      record("h1", { availability_zone: "az-reg" }),
      record("h2", { availability_zone: "az-reg" }),
      record("h3"),
    ]);
    const fleet = await new HostManager(t.reads).hostStates(
      [
        aggregate("agg-az1", ["h1"], { availability_zone: "az1" }),
        aggregate("agg-ssd", ["h1", "h2"], { ssd: "true" }),
        aggregate("agg-az9", ["h3"], {}, "az9"),
      ],
      config(),
      T0,
    );
    expect(fleet.hosts.map((h) => [h.host, h.availability_zone, h.aggregates.map((a) => a.id)])).toEqual([
      ["h1", "az1", ["agg-az1", "agg-ssd"]],
      ["h2", "az-reg", ["agg-ssd", "zone:az-reg"]],
      ["h3", "az9", ["agg-az9"]],
    ]);
    expect(fleet.aggregates.map((a) => a.id)).toEqual(["agg-az1", "agg-ssd", "agg-az9", "zone:az-reg"]);
  });

  it("a disabled service's host carries COMPUTE_STATUS_DISABLED; one the sweep marked down is down", async () => {
    const t = table([
      record("h1", { service: { disabled: true, disabled_reason: "x", forced_down: false } }),
      record("h2", {
        service: { disabled: false, disabled_reason: null, forced_down: false, down_since: at(0) },
      }),
      record("h3", { service: { disabled: false, disabled_reason: null, forced_down: true } }),
    ]);
    const fleet = await new HostManager(t.reads).hostStates([], config(), T0);
    expect(fleet.hosts[0]!.traits).toContain("COMPUTE_STATUS_DISABLED");
    expect(fleet.hosts.map((h) => h.service.up)).toEqual([true, false, false]);
  });

  it("reads the fleet once, then only what changed since the last refresh (less the feed's lag)", async () => {
    const t = table(Array.from({ length: 100 }, (_, i) => record(`h${i}`, { changed_at: at(-60_000) })));
    const hm = new HostManager(t.reads, { lagMs: 2_000 });
    await hm.hostStates([], config(), T0);
    expect(hm.lastRefresh).toMatchObject({ kind: "cold", read: 100, applied: 100 });

    // Three hosts change; the next refresh reads those three and nothing else.
    for (const name of ["h3", "h40", "h77"]) {
      t.write(record(name, { generation: 4, usage: { VCPU: 8 }, changed_at: at(500) }));
    }
    const fleet = await hm.hostStates([], config(), T0 + 1_000);
    expect(t.calls.slice(-2)).toEqual([
      { kind: "since", since: at(-2_000), answered: 3 },
      { kind: "hosts", answered: 3 },
    ]);
    expect(hm.lastRefresh).toMatchObject({ kind: "warm", entries: 3, read: 3, applied: 3 });
    expect(fleet.hosts.find((h) => h.host === "h40")!.vcpus_used).toBe(8);
    expect(fleet.hosts.find((h) => h.host === "h41")!.vcpus_used).toBe(4);

    // Nothing new: the lag window still shows the three entries, whose writes the cache holds:
    // no host is read again.
    await hm.hostStates([], config(), T0 + 1_500);
    expect(hm.lastRefresh).toMatchObject({ kind: "warm", entries: 3, read: 0, applied: 0 });
    expect(t.calls.at(-1)!.kind).toBe("since");
    // Past the lag, a refresh with nothing written reads no entry.
    await hm.hostStates([], config(), T0 + 10_000);
    await hm.hostStates([], config(), T0 + 10_001);
    expect(hm.lastRefresh).toMatchObject({ kind: "warm", entries: 0, read: 0, applied: 0 });
    expect(t.calls.filter((c) => c.kind === "all")).toHaveLength(1);
  });

  it("keeps the later image of a host when an older one arrives late", async () => {
    const t = table([record("h1", { generation: 5, usage: { VCPU: 10 }, changed_at: at(0) })]);
    const hm = new HostManager(t.reads, { lagMs: 0 });
    await hm.hostStates([], config(), T0);
    // An older image (lower generation) surfaces from the feed after the newer one was read.
    t.write(record("h1", { generation: 4, usage: { VCPU: 2 }, changed_at: at(5_000) }));
    const fleet = await hm.hostStates([], config(), T0 + 1);
    expect(fleet.hosts[0]!.vcpus_used).toBe(10);
    expect(isNewer(record("h", { generation: 5 }), record("h", { generation: 4, changed_at: at(9) }))).toBe(
      true,
    );
    // Same generation (a service change): the later stamp wins.
    expect(isNewer(record("h", { changed_at: at(2) }), record("h", { changed_at: at(1) }))).toBe(true);
  });

  it("a host that joins, and a zone never seen, reach the warm fleet", async () => {
    const t = table([record("h1", { availability_zone: "az1" })]);
    const hm = new HostManager(t.reads, { lagMs: 0 });
    await hm.hostStates([], config(), T0);
    t.write(record("h2", { availability_zone: "az2", changed_at: at(100) }));
    const fleet = await hm.hostStates([], config(), T0 + 1);
    expect(fleet.hosts.map((h) => [h.host, h.availability_zone])).toEqual([
      ["h1", "az1"],
      ["h2", "az2"],
    ]);
    expect(fleet.aggregates.map((a) => a.id)).toEqual(["zone:az1", "zone:az2"]);
  });

  it("an aggregate change re-joins every host without reading the fleet again", async () => {
    const t = table([record("h1"), record("h2")]);
    const hm = new HostManager(t.reads, { lagMs: 0 });
    await hm.hostStates([], config(), T0);
    const fleet = await hm.hostStates([aggregate("agg-az7", ["h2"], {}, "az7")], config(), T0 + 1);
    expect(fleet.hosts.map((h) => h.availability_zone)).toEqual(["nova", "az7"]);
    expect(t.calls.map((c) => c.kind)).toEqual(["all", "since"]);
  });

  it("an image older than its entry (an eventually consistent read) is read again at the next refresh", async () => {
    const t = table([record("h1", { changed_at: at(-60_000) })]);
    const hm = new HostManager(t.reads, { lagMs: 2_000 });
    await hm.hostStates([], config(), T0);
    t.write(record("h1", { generation: 4, usage: { VCPU: 12 }, changed_at: at(100) }));
    // the read answers the image from before the write
    t.lagging.set("h1", record("h1", { changed_at: at(-60_000) }));
    let fleet = await hm.hostStates([], config(), T0 + 500);
    expect(hm.lastRefresh).toMatchObject({ entries: 1, read: 1, applied: 0 });
    expect(fleet.hosts[0]!.vcpus_used).toBe(4);
    fleet = await hm.hostStates([], config(), T0 + 1_000);
    expect(hm.lastRefresh).toMatchObject({ entries: 1, read: 1, applied: 1 });
    expect(fleet.hosts[0]!.vcpus_used).toBe(12);
    // held now: the entry, still in the window, reads nothing more
    await hm.hostStates([], config(), T0 + 1_500);
    expect(hm.lastRefresh).toMatchObject({ entries: 1, read: 0 });
  });

  it("past a quarter of the fleet changed (and 16 hosts), a refresh reads the fleet whole, not host by host", async () => {
    const t = table(Array.from({ length: 80 }, (_, i) => record(`h${i}`, { changed_at: at(-60_000) })));
    const hm = new HostManager(t.reads, { lagMs: 0 });
    await hm.hostStates([], config(), T0);
    for (let i = 0; i < 20; i++) t.write(record(`h${i}`, { generation: 4, changed_at: at(100) }));
    await hm.hostStates([], config(), T0 + 1_000);
    expect(t.calls.at(-1)).toEqual({ kind: "hosts", answered: 20 });
    for (let i = 20; i < 41; i++) t.write(record(`h${i}`, { generation: 4, changed_at: at(1_100) }));
    await hm.hostStates([], config(), T0 + 2_000);
    expect(t.calls.at(-1)).toEqual({ kind: "all", answered: 80 });
    expect(hm.lastRefresh).toMatchObject({ kind: "warm", entries: 21, read: 80, applied: 21 });
  });

  it("a cache whose last refresh is older than the feed keeps its entries reads the fleet again", async () => {
    const t = table([record("h1"), record("h2")]);
    const hm = new HostManager(t.reads, { lagMs: 0 });
    await hm.hostStates([], config(), T0);
    await hm.hostStates([], config(), T0 + 60_000);
    expect(hm.lastRefresh!.kind).toBe("warm");
    // entries this old may have expired unread (the table's TTL)
    await hm.hostStates([], config(), T0 + 60_000 + FEED_RETENTION_S * 1000);
    expect(hm.lastRefresh).toMatchObject({ kind: "cold", read: 2 });
    expect(t.calls.filter((c) => c.kind === "all")).toHaveLength(2);
  });

  it("a host read after a claim conflict replaces its stale state at once", async () => {
    const t = table([record("h1"), record("h2")]);
    const hm = new HostManager(t.reads, { lagMs: 0 });
    const fleet = await hm.hostStates([], config(), T0);
    hm.learn(record("h1", { generation: 9, usage: { MEMORY_MB: 97536 } }), config());
    expect(fleet.hosts[0]!.resources.MEMORY_MB!.used).toBe(97536);
    hm.learn(record("h1", { generation: 8 }), config());
    expect(fleet.hosts[0]!.resources.MEMORY_MB!.used).toBe(97536);
  });
});
