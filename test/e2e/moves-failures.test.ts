// A move whose destination cannot finish it (a host whose fake driver fails every guest): it goes
// to the next alternate, as Nova's MigrationTask reschedules; with none left the server is back
// on its source, running, with a fault, the migration in error and no claim of the move left.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { getInstance } from "../../lib/instances/queries.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

const BROKEN = "host-3";
let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 3, failHosts: [BROKEN] }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

async function boot(hints?: Record<string, unknown>): Promise<{ id: string; host: string }> {
  const id = await client.createServer({ flavorRef: "1" }, hints);
  await client.waitForStatus(id, ["ACTIVE"]);
  return { id, host: (await getInstance(id))!.host! };
}

const hostsOf = async (consumer: string) => (await consumerAllocations(consumer)).map((a) => a.host).sort();

describe("a destination that fails to finish", () => {
  it("sends the resize to the next alternate", async () => {
    const x = await boot();
    // the other good host gets a server, so the empty broken one weighs best for the resize
    const y = await boot({ different_host: x.id });
    expect([x.host, y.host]).not.toContain(BROKEN);
    expect((await client.post(`/v2.1/servers/${x.id}/action`, { resize: { flavorRef: "2" } })).status).toBe(
      202,
    );
    await client.waitForStatus(x.id, ["VERIFY_RESIZE"]);
    const rec = (await getInstance(x.id))!;
    expect(rec.host).toBe(y.host);
    expect(rec.migration!.tried).toEqual([BROKEN]);
    const resizeAction = Object.values(rec.actions).find((a) => a.action === "resize")!;
    const actions = await admin.get(`/v2.1/servers/${x.id}/os-instance-actions/${resizeAction.request_id}`);
    const events = actions.body.instanceAction.events.map(
      (e: { event: string; result: string; host: string }) => `${e.event}:${e.result}:${e.host}`,
    );
    expect(events).toEqual(
      expect.arrayContaining([
        `compute_finish_resize:Error:${BROKEN}`,
        `compute_finish_resize:Success:${y.host}`,
      ]),
    );
    expect(await hostsOf(x.id)).toEqual([y.host]);
    expect(await hostsOf(rec.migration!.uuid)).toEqual([x.host]);
    expect((await client.post(`/v2.1/servers/${x.id}/action`, { confirmResize: null })).status).toBe(204);
    await client.waitForStatus(x.id, ["ACTIVE"]);
    for (const s of [x, y]) expect((await client.delete(`/v2.1/servers/${s.id}`)).status).toBe(204);
  });

  it("with no alternate left: back on the source, running, with a fault; the migration in error", async () => {
    const { id, host: source } = await boot();
    const r = await admin.at("2.56").post(`/v2.1/servers/${id}/action`, { migrate: { host: BROKEN } });
    expect(r.status).toBe(202);
    const after = await eventually(
      () => getInstance(id),
      (rec) => rec?.migration === undefined && rec?.task_state === null && rec?.power_state === 1,
      60_000,
    );
    expect(after).toMatchObject({ vm_state: "active", host: source, power_state: 1 });
    expect(after!.fault).not.toBeNull();
    expect(await hostsOf(id)).toEqual([source]);
    expect((await listInstanceMigrations(id))[0]!.status).toBe("error");
    // every step kept: the placement, the destination's failure, the NoValidHost of the reschedule
    const migrate = Object.values(after!.actions).find((a) => a.action === "migrate")!;
    const shown = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${migrate.request_id}`);
    const events = shown.body.instanceAction.events.map(
      (e: { event: string; result: string }) => `${e.event}:${e.result}`,
    );
    expect(events).toEqual(
      expect.arrayContaining(["cold_migrate:Success", "compute_finish_resize:Error", "cold_migrate:Error"]),
    );

    expect((await client.get(`/v2.1/servers/${id}`)).body.server.status).toBe("ACTIVE");
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("leaves no claim behind", async () => {
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});
