// A create's reservation through the router on fakes: 403 with Nova's message when nothing fits,
// and given back when the create fails after reserving (the records or the message could not be
// written, or the server group is full).
import { beforeEach, describe, expect, it } from "vitest";
import { apiCall, type FakeWorld, fakeWorld } from "../api/fakes.js";
import { type MemoryQuotas, memoryQuotaStore } from "./memory-store.js";

let w: FakeWorld;
let quotas: MemoryQuotas;

beforeEach(() => {
  w = fakeWorld();
  const q = memoryQuotaStore();
  quotas = q.state;
  w.deps.quotas = q.store;
});

const create = (server: Record<string, unknown> = {}, hints?: Record<string, unknown>) =>
  apiCall(w.deps, "POST", "/v2.1/servers", "demo-token", {
    server: { name: "vm", flavorRef: "1", imageRef: "cirros", ...server },
    ...(hints ? { "os:scheduler_hints": hints } : {}),
  });

describe("a create's quota", () => {
  it("reserves what it creates; 403 with Nova's message when min_count does not fit", async () => {
    quotas.usage.set("demo", { instances: 9, cores: 9, ram: 9 * 512 });
    const over = await create({ min_count: 3, max_count: 3 });
    expect([over.status, over.json.forbidden?.message]).toEqual([
      403,
      "Quota exceeded for instances: Requested 3, but already used 9 of 10 instances",
    ]);
    expect(w.instances.size).toBe(0);
    const fits = await create({ min_count: 1, max_count: 3 });
    expect(fits.status).toBe(202);
    expect(w.instances.size).toBe(1);
    expect(quotas.usage.get("demo")).toEqual({ instances: 10, cores: 10, ram: 5120 });
  });

  it("a create that fails after reserving gives the reservation back", async () => {
    w.failEnqueue = true;
    expect((await create({ max_count: 2 })).status).toBe(500);
    expect(quotas.usage.get("demo")).toEqual({ instances: 0, cores: 0, ram: 0 });
  });

  it("a full server group gives the reservation back", async () => {
    quotas.projects.set("demo", { server_group_members: 1 });
    const g = await apiCall(w.deps, "POST", "/v2.1/os-server-groups", "demo-token", {
      server_group: { name: "g", policies: ["anti-affinity"] },
    });
    expect(g.status).toBe(200);
    const r = await create({ max_count: 2 }, { group: g.json.server_group.id });
    expect(r.status).toBe(403);
    expect(quotas.usage.get("demo")).toEqual({ instances: 0, cores: 0, ram: 0 });
  });
});
