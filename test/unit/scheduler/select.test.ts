import { describe, expect, it } from "vitest";
import { consume, orderForClaims, pickAlternates, toSelection } from "../../../lib/scheduler/select.js";
import type { WeighedHost } from "../../../lib/scheduler/types.js";
import { host, inventory } from "./fixtures.js";

const weighed = (...names: string[]): WeighedHost[] =>
  names.map((n, i) => ({ host: host(n), weight: names.length - i }));
const order = (ws: WeighedHost[]) => ws.map((w) => w.host.host);

describe("orderForClaims", () => {
  it.each([
    ["subset 1 always takes the best", 1, 0.99, ["a", "b", "c", "d"]],
    ["subset 3, random picks the 2nd", 3, 0.4, ["b", "a", "c", "d"]],
    ["subset 3, random picks the 3rd", 3, 0.99, ["c", "a", "b", "d"]],
    ["subset larger than the list", 10, 0.99, ["d", "a", "b", "c"]],
    ["random() of 1 stays in the subset", 2, 1, ["b", "a", "c", "d"]],
    ["subset 0 behaves as 1", 0, 0.5, ["a", "b", "c", "d"]],
  ])("%s", (_name, size, r, expected) => {
    expect(order(orderForClaims(weighed("a", "b", "c", "d"), size, () => r))).toEqual(expected);
  });

  it("empty list", () => {
    expect(orderForClaims([], 3, () => 0)).toEqual([]);
  });
});

describe("consume", () => {
  it("updates usage and the host's free counters as Nova's consume_from_request", () => {
    const h = host("h1", {
      resources: {
        VCPU: inventory(16, { ratio: 16, used: 4 }),
        MEMORY_MB: inventory(8192),
        DISK_GB: inventory(100),
      },
      free_ram_mb: 8192,
      free_disk_mb: 102400,
      vcpus_used: 4,
      num_instances: 2,
    });
    consume(h, { VCPU: 2, MEMORY_MB: 2048, DISK_GB: 21 });
    expect(h.resources.VCPU!.used).toBe(6);
    expect(h.resources.MEMORY_MB!.used).toBe(2048);
    expect(h.resources.DISK_GB!.used).toBe(21);
    expect(h.free_ram_mb).toBe(6144);
    expect(h.free_disk_mb).toBe(102400 - 21 * 1024);
    expect(h.vcpus_used).toBe(6);
    expect(h.num_instances).toBe(3);
  });

  it("ignores classes the host has no inventory of", () => {
    const h = host("h1");
    consume(h, { CUSTOM_GPU: 1 });
    expect(h.resources.CUSTOM_GPU).toBeUndefined();
    expect(h.num_instances).toBe(1);
  });
});

describe("pickAlternates", () => {
  const resources = { VCPU: 1, MEMORY_MB: 2048 };

  it("takes the next hosts in weighed order, excluding the chosen and selected ones", () => {
    const ws = weighed("a", "b", "c", "d", "e");
    const chosen = toSelection(ws[1]!.host, resources);
    expect(pickAlternates(ws, chosen, 2, new Set(["a", "b"])).map((s) => s.host)).toEqual(["c", "d"]);
  });

  it("returns fewer when not enough hosts remain", () => {
    const ws = weighed("a", "b");
    expect(pickAlternates(ws, toSelection(ws[0]!.host, resources), 2, new Set(["a"]))).toHaveLength(1);
  });

  it("skips hosts that no longer fit, e.g. after consumption", () => {
    const ws = weighed("a", "b", "c");
    ws[1]!.host.resources.MEMORY_MB = inventory(4096, { used: 3000 });
    const alts = pickAlternates(ws, toSelection(ws[0]!.host, resources), 2, new Set());
    expect(alts).toEqual([{ host: "c", nodename: "c", availability_zone: "nova", resources }]);
  });

  it("count 0 (max_attempts 1) gives none", () => {
    const ws = weighed("a", "b");
    expect(pickAlternates(ws, toSelection(ws[0]!.host, resources), 0, new Set())).toEqual([]);
  });
});
