// Evacuation: a server whose host is down is rebuilt on another (Nova's evacuate), the source's
// allocation held by the evacuation until the source comes back, destroys its copy and reports it
// (Nova's _destroy_evacuated_instances); and automatic evacuation of hosts opted in with the
// aggregate metadata novaless:auto_evacuate=true, fenced first. Hosts are stopped and started
// through the local runtime's own routes, as a newcomer would on `npm start`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { getInstance } from "../../lib/instances/queries.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    heartbeatSeconds: 1,
    watchdogIntervalMs: 0, // the tests run it when they mean to
    env: { NOVALESS_SERVICE_DOWN_TIME: "4", NOVALESS_AUTO_EVACUATE_GRACE: "1" },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

/** A server of the admin's on `host`. */
async function bootOn(host: string, flavorRef = "1"): Promise<string> {
  const id = await admin.createServer({ flavorRef, availability_zone: `nova:${host}` });
  await admin.waitForStatus(id, ["ACTIVE"]);
  return id;
}

const local = (host: string, what: "stop" | "start", c: Client = admin) =>
  c.post(`/local/hosts/${host}/${what}`, {});
const hostsOf = async (consumer: string) => (await consumerAllocations(consumer)).map((a) => a.host).sort();

describe("evacuate", () => {
  it("is refused while the host is up, rebuilds elsewhere once it is down, and the returning source cleans up", async () => {
    const id = await bootOn("host-1");
    const evacuate = (c: Client, body: unknown = {}) =>
      c.at("2.68").post(`/v2.1/servers/${id}/action`, { evacuate: body });
    // a member cannot see an admin's server: 404 before any policy (as Nova's get_instance)
    expect((await evacuate(client)).status).toBe(404);
    const inUse = await evacuate(admin);
    expect(inUse.status).toBe(400);
    expect(inUse.body.badRequest.message).toBe("Compute service of host-1 is still in use.");
    // the local runtime's routes: an admin's only
    expect((await local("host-1", "stop", client)).status).toBe(403);
    expect((await local("host-1", "stop")).status).toBe(202);
    await new Promise((r) => setTimeout(r, 4500));
    await runtime.runWatchdog();

    expect((await evacuate(admin)).status).toBe(200);
    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ACTIVE");
    const rec = (await getInstance(id))!;
    expect(rec.host).not.toBe("host-1");
    const [m] = await listInstanceMigrations(id);
    expect(m).toMatchObject({
      migration_type: "evacuation",
      status: "done",
      source_compute: "host-1",
      dest_compute: rec.host,
    });
    // the source's allocation stays with the evacuation until the source is back
    expect(await hostsOf(id)).toEqual([rec.host]);
    expect(await hostsOf(m!.uuid)).toEqual(["host-1"]);
    expect((await auditPlacement()).findings).toEqual([]);
    const actions = await admin.get(`/v2.1/servers/${id}/os-instance-actions`);
    expect(actions.body.instanceActions[0].action).toBe("evacuate");

    // Nova's _destroy_evacuated_instances: the source destroys its copy, then its claim goes
    expect((await local("host-1", "start")).status).toBe(202);
    const done = await eventually(
      async () => (await listInstanceMigrations(id))[0]!.status,
      (st) => st === "completed",
    );
    expect(done).toBe("completed");
    expect(await hostsOf(m!.uuid)).toEqual([]);
    expect(runtime.hosts.get("host-1")!.driver.has(id)).toBe(false);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("from 2.95 the evacuated server ends SHUTOFF", async () => {
    const id = await bootOn("host-3");
    expect((await local("host-3", "stop")).status).toBe(202);
    await new Promise((r) => setTimeout(r, 4500));
    await runtime.runWatchdog();
    expect((await admin.at("2.95").post(`/v2.1/servers/${id}/action`, { evacuate: {} })).status).toBe(200);
    const s = await admin.waitForStatus(id, ["SHUTOFF", "ACTIVE", "ERROR"]);
    expect(s.status).toBe("SHUTOFF");
    expect((await local("host-3", "start")).status).toBe(202);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });
});

describe("automatic evacuation", () => {
  it("fences an opted-in host that stays down and evacuates its servers; others are left alone", async () => {
    const agg = await admin.post("/v2.1/os-aggregates", { aggregate: { name: "ha" } });
    expect(agg.status).toBe(200);
    const aggId = agg.body.aggregate.id;
    expect(
      (await admin.post(`/v2.1/os-aggregates/${aggId}/action`, { add_host: { host: "host-2" } })).status,
    ).toBe(200);
    const meta = await admin.post(`/v2.1/os-aggregates/${aggId}/action`, {
      set_metadata: { metadata: { "novaless:auto_evacuate": "true" } },
    });
    expect(meta.status).toBe(200);
    const guarded = await bootOn("host-2");
    const unguarded = await bootOn("host-3");
    await local("host-2", "stop");
    await local("host-3", "stop");
    await new Promise((r) => setTimeout(r, 6500));
    const actions = await runtime.runWatchdog();
    expect(actions.filter((a) => a.action === "evacuated").map((a) => a.instance_uuid)).toEqual([guarded]);
    const s = await admin.waitForStatus(guarded, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ACTIVE");
    expect((await getInstance(guarded))!.host).toBe("host-1");
    expect((await getInstance(unguarded))!.host).toBe("host-3");
    // fenced: forced down, so it takes no work back without an operator
    const svc = await admin.at("2.53").get("/v2.1/os-services?host=host-2");
    expect(svc.body.services[0]).toMatchObject({ forced_down: true, state: "down" });
    const list = await admin.get(`/v2.1/servers/${guarded}/os-instance-actions`);
    const detail = await admin.get(
      `/v2.1/servers/${guarded}/os-instance-actions/${list.body.instanceActions[0].request_id}`,
    );
    expect(detail.body.instanceAction).toMatchObject({
      action: "evacuate",
      message: expect.stringContaining("host-2"),
    });
    await local("host-2", "start");
    await local("host-3", "start");
    for (const id of [guarded, unguarded])
      expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("leaves no claim behind", async () => {
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});
