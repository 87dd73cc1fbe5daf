// The watchdog looks after moves: a move left in VERIFY_RESIZE past resize_confirm_window is
// confirmed as Nova's _poll_unconfirmed_resizes does, and a move whose destination dies while
// finishing fails back to its source (running again, the destination's claim released, the
// source's whole).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { getInstance } from "../../lib/instances/queries.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

const SLOW = "host-3";
let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    // host-3's guests take 15 s to come up: a move there is still finishing when it dies
    slowHosts: { [SLOW]: 15_000 },
    heartbeatSeconds: 1,
    watchdogIntervalMs: 0, // the tests run it when they mean to
    env: { NOVALESS_SERVICE_DOWN_TIME: "4", NOVALESS_RESIZE_CONFIRM_WINDOW: "1" },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

async function boot(): Promise<{ id: string; host: string }> {
  // anywhere but the slow host, so the boot itself is quick
  const id = await admin.createServer({ flavorRef: "1", availability_zone: "nova:host-1" });
  const s = await admin.waitForStatus(id, ["ACTIVE"]);
  return { id, host: s["OS-EXT-SRV-ATTR:host"] as string };
}

describe("the watchdog and moves", () => {
  it("confirms a move left in VERIFY_RESIZE past resize_confirm_window", async () => {
    const { id } = await boot();
    const target = "host-2";
    expect(
      (await admin.at("2.56").post(`/v2.1/servers/${id}/action`, { migrate: { host: target } })).status,
    ).toBe(202);
    await admin.waitForStatus(id, ["VERIFY_RESIZE"]);
    await new Promise((r) => setTimeout(r, 1200));
    const actions = await runtime.runWatchdog();
    expect(actions).toEqual([expect.objectContaining({ instance_uuid: id, action: "confirmed" })]);
    await admin.waitForStatus(id, ["ACTIVE"]);
    expect((await listInstanceMigrations(id))[0]!.status).toBe("confirmed");
    expect((await consumerAllocations(id)).map((a) => a.host)).toEqual([target]);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("fails a move whose destination died while finishing back to its source", async () => {
    const { id, host: source } = await boot();
    expect(source).not.toBe(SLOW);
    expect(
      (await admin.at("2.56").post(`/v2.1/servers/${id}/action`, { migrate: { host: SLOW } })).status,
    ).toBe(202);
    // the source handed over; the destination is creating the guest
    await eventually(
      () => getInstance(id),
      (r) => r?.task_state === "resize_migrated",
    );
    await runtime.killHost(SLOW);
    await new Promise((r) => setTimeout(r, 4500));
    const actions = await runtime.runWatchdog();
    expect(actions).toEqual(
      expect.arrayContaining([expect.objectContaining({ instance_uuid: id, action: "failed" })]),
    );
    const back = await eventually(
      () => getInstance(id),
      (r) => r?.task_state === null && r.power_state === 1,
    );
    expect(back).toMatchObject({ host: source, vm_state: "active" });
    expect(back!.fault!.message).toContain("its host is down");
    expect((await consumerAllocations(id)).map((a) => a.host)).toEqual([source]);
    expect((await listInstanceMigrations(id))[0]!.status).toBe("error");
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});
