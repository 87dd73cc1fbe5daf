// Per-user quota sets through the router on fakes, as Nova's DbQuotaDriver keeps them: a user's
// own limits over its project's, the settable range (at least what the user uses, at most what
// the project has not given its other users), the per-project resources set on the project, and
// a create checked against both the project's limits and its user's own. (The admin sets its own
// project's, which needs no Identity lookup.)
import { beforeEach, describe, expect, it } from "vitest";
import { effectiveLimits, settableRange } from "../../../lib/quotas/quotas.js";
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

const admin = (method: string, path: string, body?: unknown, version?: string) =>
  apiCall(w.deps, method, path, "admin-token", body, version);
const message = (r: { json?: Record<string, { message?: string }> }) =>
  r.json?.badRequest?.message ?? r.json?.forbidden?.message;

describe("a user's quota set", () => {
  it("shows its own limits over the project's; PUT answers the user's; DELETE drops them only", async () => {
    await admin("PUT", "/v2.1/os-quota-sets/admin", { quota_set: { ram: 5120 } });
    const put = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { ram: "2048" } });
    expect(put.status).toBe(200);
    expect(put.json.quota_set).toMatchObject({ ram: 2048, instances: 10 });
    expect(put.json.quota_set.id).toBeUndefined();
    const mine = await admin("GET", "/v2.1/os-quota-sets/admin?user_id=u1");
    expect(mine.json.quota_set).toMatchObject({ id: "admin", ram: 2048, cores: 20 });
    // another user, and the project itself, are unchanged
    expect((await admin("GET", "/v2.1/os-quota-sets/admin?user_id=u2")).json.quota_set.ram).toBe(5120);
    expect((await admin("GET", "/v2.1/os-quota-sets/admin")).json.quota_set.ram).toBe(5120);
    expect((await admin("DELETE", "/v2.1/os-quota-sets/admin?user_id=u1")).status).toBe(202);
    expect((await admin("GET", "/v2.1/os-quota-sets/admin?user_id=u1")).json.quota_set.ram).toBe(5120);
    expect((await admin("GET", "/v2.1/os-quota-sets/admin")).json.quota_set.ram).toBe(5120);
  });

  it("a project's DELETE drops its users' limits too (Nova's destroy_all_by_project)", async () => {
    await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { instances: 3 } });
    await admin("DELETE", "/v2.1/os-quota-sets/admin");
    expect((await admin("GET", "/v2.1/os-quota-sets/admin?user_id=u1")).json.quota_set.instances).toBe(10);
  });

  it("above what the project has left is Nova's 400, unless forced; -1 is above any limit", async () => {
    await admin("PUT", "/v2.1/os-quota-sets/admin", { quota_set: { instances: 5 } });
    const over = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { instances: 6 } });
    expect([over.status, message(over)]).toEqual([
      400,
      "Quota limit 6 for instances must be less than or equal to 5.",
    ]);
    const unl = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { instances: -1 } });
    expect(message(unl)).toBe("Quota limit -1 for instances must be less than or equal to 5.");
    expect(
      (await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { instances: 3 } })).status,
    ).toBe(200);
    // u1 holds 3 of the 5: u2 may have 2 at most; u1 itself may go back up to 5
    const u2 = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u2", { quota_set: { instances: 3 } });
    expect(message(u2)).toBe("Quota limit 3 for instances must be less than or equal to 2.");
    expect(
      (await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { instances: 5 } })).status,
    ).toBe(200);
    // the project's limit may not go below what its users were given
    const proj = await admin("PUT", "/v2.1/os-quota-sets/admin", { quota_set: { instances: 4 } });
    expect(message(proj)).toBe(
      "Quota limit 4 for instances must be greater than or equal to already used and reserved 5.",
    );
    const forced = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u2", {
      quota_set: { instances: 50, force: true },
    });
    expect([forced.status, forced.json.quota_set.instances]).toEqual([200, 50]);
  });

  it("below what the user uses is Nova's 400; detail counts the user's own instances", async () => {
    quotas.usage.set("admin", { instances: 5, cores: 5, ram: 2560 });
    quotas.usage.set("admin/u1", { instances: 2, cores: 2, ram: 1024 });
    const low = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", { quota_set: { cores: 1 } });
    expect(message(low)).toBe(
      "Quota limit 1 for cores must be greater than or equal to already used and reserved 2.",
    );
    const detail = await admin("GET", "/v2.1/os-quota-sets/admin/detail?user_id=u1");
    expect(detail.json.quota_set).toMatchObject({
      id: "admin",
      instances: { in_use: 2, limit: 10, reserved: 0 },
      cores: { in_use: 2, limit: 20, reserved: 0 },
      ram: { in_use: 1024, limit: 51200, reserved: 0 },
    });
    expect((await admin("GET", "/v2.1/os-quota-sets/admin/detail")).json.quota_set.instances.in_use).toBe(5);
  });

  it("the per-project resources named with a user are the project's; 2.57 drops injected files", async () => {
    const put = await admin("PUT", "/v2.1/os-quota-sets/admin?user_id=u1", {
      quota_set: { floating_ips: 3, instances: 2 },
    });
    expect(put.status).toBe(200);
    expect(quotas.projects.get("admin")).toEqual({ floating_ips: 3 });
    expect(quotas.users.get("admin/u1")).toEqual({ instances: 2 });
    const v257 = await admin("GET", "/v2.1/os-quota-sets/admin?user_id=u1", undefined, "2.57");
    expect(v257.json.quota_set.injected_files).toBeUndefined();
    expect(v257.json.quota_set.instances).toBe(2);
    const bad = await admin(
      "PUT",
      "/v2.1/os-quota-sets/admin?user_id=u1",
      { quota_set: { injected_files: 1 } },
      "2.57",
    );
    expect(bad.status).toBe(400);
  });

  it("a member reads its own project's user quotas and changes none", async () => {
    const r = await apiCall(w.deps, "GET", "/v2.1/os-quota-sets/demo?user_id=demo", "demo-token");
    expect(r.status).toBe(200);
    const put = await apiCall(w.deps, "PUT", "/v2.1/os-quota-sets/demo?user_id=demo", "demo-token", {
      quota_set: { instances: 1 },
    });
    expect(put.status).toBe(403);
  });
});

describe("a create under a user's own limits", () => {
  const create = (server: Record<string, unknown> = {}) =>
    apiCall(w.deps, "POST", "/v2.1/servers", "demo-token", {
      server: { name: "vm", flavorRef: "1", imageRef: "cirros", ...server },
    });

  it("is refused at the user's limit with Nova's message, the user's numbers in it", async () => {
    quotas.users.set("demo/demo", { instances: 2 });
    quotas.usage.set("demo", { instances: 4, cores: 4, ram: 2048 });
    quotas.usage.set("demo/demo", { instances: 1, cores: 1, ram: 512 });
    const fits = await create({ min_count: 1, max_count: 3 });
    expect(fits.status).toBe(202);
    expect(w.instances.size).toBe(1);
    expect(quotas.usage.get("demo")).toEqual({ instances: 5, cores: 5, ram: 2560 });
    expect(quotas.usage.get("demo/demo")).toEqual({ instances: 2, cores: 2, ram: 1024 });
    const over = await create();
    expect([over.status, message(over)]).toEqual([
      403,
      "Quota exceeded for instances: Requested 1, but already used 2 of 2 instances",
    ]);
  });

  it("the project's limit is checked first, with the project's numbers", async () => {
    quotas.users.set("demo/demo", { instances: 5 });
    quotas.projects.set("demo", { instances: 3 });
    quotas.usage.set("demo", { instances: 3, cores: 3, ram: 1536 });
    const over = await create();
    expect(message(over)).toBe(
      "Quota exceeded for instances: Requested 1, but already used 3 of 3 instances",
    );
  });

  it("a user without limits of its own has its share counted and released", async () => {
    w.failEnqueue = true;
    expect((await create({ max_count: 2 })).status).toBe(500);
    expect(quotas.usage.get("demo/demo")).toEqual({ instances: 0, cores: 0, ram: 0 });
    w.failEnqueue = false;
    expect((await create()).status).toBe(202);
    expect(quotas.usage.get("demo/demo")).toEqual({ instances: 1, cores: 1, ram: 512 });
  });
});

describe("settableRange (Nova's get_settable_quotas)", () => {
  const project = effectiveLimits({}, { instances: 10 });
  it("a user: from its usage to the project's limit less the other users' own", () => {
    expect(
      settableRange("instances", project, [{ instances: 3 }, { instances: 4 }], 1, { instances: 4 }),
    ).toEqual({ minimum: 1, maximum: 7 });
    expect(settableRange("instances", project, [], 0, {})).toEqual({ minimum: 0, maximum: 10 });
    // an unlimited project leaves its users unlimited
    expect(settableRange("cores", effectiveLimits({}, { cores: -1 }), [{ cores: 5 }], 0, {})).toEqual({
      minimum: 0,
      maximum: -1,
    });
  });
  it("a project: at least its usage and what its users were given", () => {
    expect(settableRange("instances", project, [{ instances: 3 }, { instances: 4 }], 2)).toEqual({
      minimum: 7,
      maximum: -1,
    });
    expect(settableRange("instances", project, [], 2)).toEqual({ minimum: 2, maximum: -1 });
  });
});
