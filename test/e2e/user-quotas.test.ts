// Per-user quota sets on the local runtime, as Nova's DbQuotaDriver keeps them: an admin sets,
// shows (the user's own limits over the project's), details (the user's own usage) and deletes a
// user's quotas; a user's limit above what its project has left is Nova's 400; concurrent creates
// by a user at its own limit give exactly that many servers and Nova's 403, while another user of
// the same project still creates, and a resize up is held to the user's limits; a delete gives the
// user's share back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, DEMO, startTestRuntime } from "./harness.js";

const DEMO2 = "demo2-token";
const TOKENS = {
  [ADMIN]: { user_id: "admin", project_id: "admin", roles: ["admin", "member"] },
  [DEMO]: { user_id: "demo", project_id: "demo", roles: ["member"] },
  [DEMO2]: { user_id: "demo2", project_id: "demo", roles: ["member"] },
};

let runtime: Runtime;
let demo: Client;
let demo2: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client: demo } = await startTestRuntime({
    hosts: 2,
    buildMs: 20,
    env: { NOVALESS_AUTH_TOKENS: JSON.stringify(TOKENS), NOVALESS_QUOTA_INSTANCES: "10" },
  }));
  demo2 = demo.as(DEMO2);
  admin = demo.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const create = (c: Client) =>
  c.post("/v2.1/servers", { server: { name: "uq", flavorRef: "1", imageRef: "cirros" } });
const message = (r: { body: Record<string, { message?: string }> }) =>
  r.body.badRequest?.message ?? r.body.forbidden?.message;

describe("a user's quota set", () => {
  it("set and shown over the project's; the project and the other user unchanged", async () => {
    const put = await admin.call("PUT", "/v2.1/os-quota-sets/demo?user_id=demo", {
      quota_set: { instances: 2, ram: "2048" },
    });
    expect(put.status).toBe(200);
    expect(put.body.quota_set).toMatchObject({ instances: 2, ram: 2048, cores: -1, key_pairs: 100 });
    expect(put.body.quota_set.id).toBeUndefined();
    const mine = await demo.get("/v2.1/os-quota-sets/demo?user_id=demo");
    expect([mine.status, mine.body.quota_set.id, mine.body.quota_set.instances]).toEqual([200, "demo", 2]);
    expect((await demo.get("/v2.1/os-quota-sets/demo?user_id=demo2")).body.quota_set.instances).toBe(10);
    expect((await demo.get("/v2.1/os-quota-sets/demo")).body.quota_set.instances).toBe(10);
    // the microversions' resources, as the project's
    const v257 = await admin.at("2.57").get("/v2.1/os-quota-sets/demo?user_id=demo");
    expect(Object.keys(v257.body.quota_set).sort()).toEqual([
      "cores",
      "id",
      "instances",
      "key_pairs",
      "metadata_items",
      "ram",
      "server_group_members",
      "server_groups",
    ]);
    const member = await demo.call("PUT", "/v2.1/os-quota-sets/demo?user_id=demo", {
      quota_set: { instances: 5 },
    });
    expect(member.status).toBe(403);
  });

  it("a user's limit above what the project has left is Nova's 400, unless forced", async () => {
    const over = await admin.call("PUT", "/v2.1/os-quota-sets/demo?user_id=demo", {
      quota_set: { instances: 11 },
    });
    expect([over.status, message(over)]).toEqual([
      400,
      "Quota limit 11 for instances must be less than or equal to 10.",
    ]);
    // demo holds 2 of the project's 10
    const other = await admin.call("PUT", "/v2.1/os-quota-sets/demo?user_id=demo2", {
      quota_set: { instances: 9 },
    });
    expect([other.status, message(other)]).toEqual([
      400,
      "Quota limit 9 for instances must be less than or equal to 8.",
    ]);
    const forced = await admin.call("PUT", "/v2.1/os-quota-sets/demo?user_id=demo2", {
      quota_set: { instances: 9, force: "True" },
    });
    expect([forced.status, forced.body.quota_set.instances]).toEqual([200, 9]);
    expect((await admin.delete("/v2.1/os-quota-sets/demo?user_id=demo2")).status).toBe(202);
  });
});

describe("a create under a user's own limits", () => {
  const mine: string[] = [];

  it("6 concurrent creates by a user limited to 2: exactly 2, the rest Nova's 403; another user still creates", async () => {
    const replies = await Promise.all(Array.from({ length: 6 }, () => create(demo)));
    const accepted = replies.filter((r) => r.status === 202);
    const refused = replies.filter((r) => r.status === 403);
    expect([accepted.length, refused.length]).toEqual([2, 4]);
    expect(message(refused[0]!)).toBe(
      "Quota exceeded for instances: Requested 1, but already used 2 of 2 instances",
    );
    mine.push(...accepted.map((r) => r.body.server.id as string));
    expect((await create(demo2)).status).toBe(202);
  });

  it("detail counts the user's own usage; the project's counts everyone's", async () => {
    const d = await demo.get("/v2.1/os-quota-sets/demo/detail?user_id=demo");
    expect(d.body.quota_set.instances).toEqual({ in_use: 2, limit: 2, reserved: 0 });
    expect(d.body.quota_set.ram).toEqual({ in_use: 1024, limit: 2048, reserved: 0 });
    const other = await demo.get("/v2.1/os-quota-sets/demo/detail?user_id=demo2");
    expect(other.body.quota_set.instances).toEqual({ in_use: 1, limit: 10, reserved: 0 });
    const project = await demo.get("/v2.1/os-quota-sets/demo/detail");
    expect(project.body.quota_set.instances).toEqual({ in_use: 3, limit: 10, reserved: 0 });
    // below what the user uses is Nova's 400
    const low = await admin.call("PUT", "/v2.1/os-quota-sets/demo?user_id=demo", {
      quota_set: { instances: 1 },
    });
    expect(message(low)).toBe(
      "Quota limit 1 for instances must be greater than or equal to already used and reserved 2.",
    );
  });

  it("a resize up is held to the user's own limits too", async () => {
    await demo.waitForStatus(mine[0]!, ["ACTIVE"]);
    // m1.small's 2048 MB where m1.tiny had 512: 1536 more, over the user's 2048 with 1024 used
    const r = await demo.post(`/v2.1/servers/${mine[0]}/action`, { resize: { flavorRef: "2" } });
    expect([r.status, message(r)]).toEqual([
      403,
      "Quota exceeded for ram: Requested 1536, but already used 1024 of 2048 ram",
    ]);
  });

  it("a delete gives the user's share back; DELETE ?user_id= lifts its own limits only", async () => {
    expect((await demo.delete(`/v2.1/servers/${mine[0]}`)).status).toBe(204);
    const d = await demo.get("/v2.1/os-quota-sets/demo/detail?user_id=demo");
    expect(d.body.quota_set.instances.in_use).toBe(1);
    expect((await create(demo)).status).toBe(202);
    expect((await create(demo)).status).toBe(403);

    expect((await admin.delete("/v2.1/os-quota-sets/demo?user_id=demo")).status).toBe(202);
    const back = await demo.get("/v2.1/os-quota-sets/demo?user_id=demo");
    expect([back.body.quota_set.instances, back.body.quota_set.ram]).toEqual([10, -1]);
    expect((await create(demo)).status).toBe(202);
  });
});
