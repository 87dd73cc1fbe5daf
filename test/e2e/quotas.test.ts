// Quotas through the HTTP API on the local runtime: 50 concurrent creates against Nova's default
// of 10 instances give exactly 10 servers and Nova's 403; /limits and /os-quota-sets show the
// numbers and shapes Nova does at each microversion; a delete gives its instance back once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { accessKeyIdOf } from "../../local/iam/identities.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let member: Client;
let admin: Client;

beforeAll(async () => {
  // Nova's defaults, not the harness's lifted ones
  ({ runtime, client: member } = await startTestRuntime({
    hosts: 4,
    buildMs: 20,
    env: { NOVALESS_QUOTA_INSTANCES: "10", NOVALESS_QUOTA_CORES: "20", NOVALESS_QUOTA_RAM: "51200" },
  }));
  admin = member.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const create = (c: Client, server: Record<string, unknown> = {}) =>
  c.post("/v2.1/servers", { server: { name: "q", flavorRef: "1", imageRef: "cirros", ...server } });

describe("quota sets", () => {
  it("Nova's defaults and shapes per microversion; a member reads its own project only", async () => {
    const r = await member.get("/v2.1/os-quota-sets/demo");
    expect(r.status).toBe(200);
    expect(r.body.quota_set).toEqual({
      id: "demo",
      instances: 10,
      cores: 20,
      ram: 51200,
      floating_ips: 10,
      fixed_ips: -1,
      metadata_items: 128,
      injected_files: 5,
      injected_file_content_bytes: 10240,
      injected_file_path_bytes: 255,
      key_pairs: 100,
      security_groups: 10,
      security_group_rules: 20,
      server_groups: 10,
      server_group_members: 10,
    });
    expect(
      Object.keys((await member.at("2.36").get("/v2.1/os-quota-sets/demo")).body.quota_set).sort(),
    ).toEqual([
      "cores",
      "id",
      "injected_file_content_bytes",
      "injected_file_path_bytes",
      "injected_files",
      "instances",
      "key_pairs",
      "metadata_items",
      "ram",
      "server_group_members",
      "server_groups",
    ]);
    const latest = await member.at("2.96").get("/v2.1/os-quota-sets/demo/defaults");
    expect(Object.keys(latest.body.quota_set).sort()).toEqual([
      "cores",
      "id",
      "instances",
      "key_pairs",
      "metadata_items",
      "ram",
      "server_group_members",
      "server_groups",
    ]);
    const other = await member.get("/v2.1/os-quota-sets/admin");
    expect([other.status, other.body.forbidden?.message]).toEqual([
      403,
      "Policy doesn't allow os_compute_api:os-quota-sets:show to be performed.",
    ]);
    const put = await member.call("PUT", "/v2.1/os-quota-sets/demo", { quota_set: { instances: 50 } });
    expect(put.status).toBe(403);
    const unknown = await admin
      .at("2.57")
      .call("PUT", "/v2.1/os-quota-sets/x", { quota_set: { floating_ips: 1 } });
    expect([unknown.status, unknown.body.badRequest?.message]).toEqual([
      400,
      "Invalid input for field/attribute quota_set. Value: {'floating_ips': 1}. Additional properties are not allowed ('floating_ips' was unexpected)",
    ]);
  });
});

describe("a create's quota reads", () => {
  it("the project's quota item is read once: the checks and the reservation share it (its users' own limits in it)", async () => {
    startMeter();
    meterReading({ reset: true });
    const r = await create(member, { name: "one-read" });
    const api = meterReading({ reset: true })[accessKeyIdOf("api")];
    stopMeter();
    expect(r.status).toBe(202);
    // the default quota class and the project's quota item in one consistent request, the flavor
    // (and an image named by id) in one eventually consistent request: what a create reads as
    // settled (lib/aws/dynamo-loader.ts); the image named "cirros" is found by name in the cached
    // list. The reservation is one conditional write with the limits as its condition.
    expect(api?.requests["dynamodb:BatchGetItem"]).toBe(2);
    expect(api?.requests["dynamodb:GetItem"]).toBeUndefined();
    expect(api?.requests["dynamodb:UpdateItem"]).toBe(1);
    await member.waitForStatus(r.body.server.id, ["ACTIVE"]);
    expect((await member.delete(`/v2.1/servers/${r.body.server.id}`)).status).toBe(204);
    await member.waitForStatus(r.body.server.id, ["GONE"]);
  });
});

describe("the instance quota", () => {
  const ids: string[] = [];

  it("50 concurrent creates against 10: exactly 10 accepted, the rest 403 with Nova's message", async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, () => create(member)));
    const accepted = replies.filter((r) => r.status === 202);
    const refused = replies.filter((r) => r.status === 403);
    expect([accepted.length, refused.length]).toEqual([10, 40]);
    expect(refused[0]!.body.forbidden.message).toBe(
      "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances",
    );
    ids.push(...accepted.map((r) => r.body.server.id as string));
    const servers = await member.get("/v2.1/servers");
    expect(servers.body.servers).toHaveLength(10);
  });

  it("/limits shows the limits and the usage, per microversion; another project's is the admin's", async () => {
    const r = await member.get("/v2.1/limits");
    expect(r.status).toBe(200);
    expect(r.body.limits.rate).toEqual([]);
    expect(r.body.limits.absolute).toEqual({
      maxServerMeta: 128,
      maxPersonality: 5,
      maxPersonalitySize: 10240,
      maxImageMeta: 128,
      maxTotalKeypairs: 100,
      maxSecurityGroups: 10,
      maxSecurityGroupRules: 20,
      maxTotalFloatingIps: 10,
      maxTotalInstances: 10,
      maxTotalCores: 20,
      maxTotalRAMSize: 51200,
      maxServerGroups: 10,
      maxServerGroupMembers: 10,
      totalInstancesUsed: 10,
      totalCoresUsed: 10,
      totalRAMUsed: 5120,
      totalServerGroupsUsed: 0,
      totalFloatingIpsUsed: 0,
      totalSecurityGroupsUsed: 0,
    });
    const v257 = await member.at("2.57").get("/v2.1/limits");
    expect(Object.keys(v257.body.limits.absolute).sort()).toEqual([
      "maxServerGroupMembers",
      "maxServerGroups",
      "maxServerMeta",
      "maxTotalCores",
      "maxTotalInstances",
      "maxTotalKeypairs",
      "maxTotalRAMSize",
      "totalCoresUsed",
      "totalInstancesUsed",
      "totalRAMUsed",
      "totalServerGroupsUsed",
    ]);
    const other = await member.get("/v2.1/limits?tenant_id=admin");
    expect([other.status, other.body.forbidden?.message]).toEqual([
      403,
      "Policy doesn't allow os_compute_api:limits:other_project to be performed.",
    ]);
    const asAdmin = await admin.get("/v2.1/limits?tenant_id=demo");
    expect(asAdmin.body.limits.absolute.totalInstancesUsed).toBe(10);
    const strict = await member.at("2.75").get("/v2.1/limits?foo=1");
    expect([strict.status, strict.body.badRequest?.message]).toEqual([
      400,
      "Additional properties are not allowed ('foo' was unexpected)",
    ]);
    expect((await member.at("2.74").get("/v2.1/limits?foo=1")).status).toBe(200);
  });

  it("detail; a limit below the usage is refused unless forced", async () => {
    const d = await member.get("/v2.1/os-quota-sets/demo/detail");
    expect(d.body.quota_set.instances).toEqual({ in_use: 10, limit: 10, reserved: 0 });
    expect(d.body.quota_set.cores).toEqual({ in_use: 10, limit: 20, reserved: 0 });
    const low = await admin.call("PUT", "/v2.1/os-quota-sets/demo", { quota_set: { instances: 5 } });
    expect([low.status, low.body.badRequest?.message]).toEqual([
      400,
      "Quota limit 5 for instances must be greater than or equal to already used and reserved 10.",
    ]);
  });

  it("a delete releases once; max_count is reduced to what fits", async () => {
    const [a, b] = ids;
    expect((await member.delete(`/v2.1/servers/${a}`)).status).toBe(204);
    expect((await member.delete(`/v2.1/servers/${a}`)).status).toBe(404);
    expect((await member.delete(`/v2.1/servers/${b}`)).status).toBe(204);
    expect((await member.get("/v2.1/limits")).body.limits.absolute.totalInstancesUsed).toBe(8);

    const r = await create(member, { min_count: 1, max_count: 5, return_reservation_id: true });
    expect(r.status).toBe(202);
    const mine = await member.get(`/v2.1/servers?reservation_id=${r.body.reservation_id}`);
    expect(mine.body.servers).toHaveLength(2);
    const over = await create(member, { min_count: 2, max_count: 3 });
    expect([over.status, over.body.forbidden?.message]).toEqual([
      403,
      "Quota exceeded for instances: Requested 2-3, but already used 10 of 10 instances",
    ]);
  });

  it("an admin raises the project's quota, then deletes it back to the defaults", async () => {
    const put = await admin.call("PUT", "/v2.1/os-quota-sets/demo", {
      quota_set: { instances: 11, cores: "-1" },
    });
    expect(put.status).toBe(200);
    expect(put.body.quota_set).toMatchObject({ instances: 11, cores: -1, ram: 51200 });
    expect(put.body.quota_set.id).toBeUndefined();
    expect((await create(member)).status).toBe(202);
    expect((await create(member)).status).toBe(403);
    expect((await admin.delete("/v2.1/os-quota-sets/demo")).status).toBe(202);
    expect((await member.get("/v2.1/os-quota-sets/demo")).body.quota_set.instances).toBe(10);
  });
});

describe("os-simple-tenant-usage", () => {
  it("a member's own usage, deleted servers included as terminated; the index is the admin's", async () => {
    const start = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19);
    const end = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19);
    const live = (await member.get("/v2.1/servers")).body.servers as { id: string }[];
    await Promise.all(live.map((s) => member.waitForStatus(s.id, ["ACTIVE"])));
    const r = await member.get(`/v2.1/os-simple-tenant-usage/demo?start=${start}&end=${end}`);
    expect(r.status).toBe(200);
    const usage = r.body.tenant_usage;
    expect(usage.tenant_id).toBe("demo");
    const states = (usage.server_usages as { state: string; vcpus: number; flavor: string }[]).map(
      (u) => u.state,
    );
    expect(states.filter((s) => s === "terminated").length).toBeGreaterThanOrEqual(2);
    expect(states.filter((s) => s === "active")).toHaveLength(live.length);
    expect(usage.total_hours).toBeGreaterThan(0);
    expect(usage.total_vcpus_usage).toBeCloseTo(usage.total_hours, 6);
    expect(usage.total_memory_mb_usage).toBeCloseTo(usage.total_hours * 512, 3);

    expect((await member.get(`/v2.1/os-simple-tenant-usage?start=${start}&end=${end}`)).status).toBe(403);
    expect((await member.get("/v2.1/os-simple-tenant-usage/admin")).status).toBe(403);
    const index = await admin.get(`/v2.1/os-simple-tenant-usage?start=${start}&end=${end}`);
    const demo = (index.body.tenant_usages as { tenant_id: string; server_usages?: unknown }[]).find(
      (u) => u.tenant_id === "demo",
    );
    expect(demo).toBeDefined();
    expect(demo!.server_usages).toBeUndefined();
    const paged = await admin
      .at("2.40")
      .get(`/v2.1/os-simple-tenant-usage?start=${start}&end=${end}&limit=2`);
    expect(paged.body.tenant_usages_links[0].href).toContain("marker=");
    const bad = await member.get(`/v2.1/os-simple-tenant-usage/demo?start=${end}&end=${start}`);
    expect([bad.status, bad.body.badRequest?.message]).toEqual([
      400,
      "Invalid start time. The start time cannot occur after the end time.",
    ]);
  });
});

describe("a failed build", () => {
  it("an ERROR instance keeps counting (Nova's default, legacy counting) until it is deleted", async () => {
    const flavor = await admin.post("/v2.1/flavors", {
      flavor: { name: "no-host-has-it", ram: 512, vcpus: 1, disk: 999999 },
    });
    expect(flavor.status).toBe(200);
    const id = await admin.createServer({ name: "doomed", flavorRef: flavor.body.flavor.id });
    await admin.waitForStatus(id, ["ERROR"]);
    const used = async () => (await admin.get("/v2.1/limits")).body.limits.absolute;
    expect(await used()).toMatchObject({ totalInstancesUsed: 1, totalCoresUsed: 1, totalRAMUsed: 512 });
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    expect(await used()).toMatchObject({ totalInstancesUsed: 0, totalCoresUsed: 0, totalRAMUsed: 0 });
  });
});

describe("the other quotas follow the quota set", () => {
  it("server_groups and key_pairs set by an admin are what creates are held to", async () => {
    const put = await admin.call("PUT", "/v2.1/os-quota-sets/demo", {
      quota_set: { server_groups: 1, key_pairs: 1 },
    });
    expect(put.status).toBe(200);
    const group = (name: string) =>
      member.post("/v2.1/os-server-groups", { server_group: { name, policies: ["affinity"] } });
    expect((await group("g1")).status).toBe(200);
    const second = await group("g2");
    expect([second.status, second.body.forbidden?.message]).toEqual([
      403,
      "Quota exceeded, too many server groups.",
    ]);
    expect((await member.get("/v2.1/limits")).body.limits.absolute).toMatchObject({
      maxServerGroups: 1,
      totalServerGroupsUsed: 1,
      maxTotalKeypairs: 1,
    });
    expect((await member.post("/v2.1/os-keypairs", { keypair: { name: "k1" } })).status).toBe(200);
    const k2 = await member.post("/v2.1/os-keypairs", { keypair: { name: "k2" } });
    expect([k2.status, k2.body.forbidden?.message]).toEqual([403, "Quota exceeded, too many key pairs."]);
    expect((await admin.delete("/v2.1/os-quota-sets/demo")).status).toBe(202);
  });
});
