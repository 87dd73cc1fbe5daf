// A zombie: the host is alive but its build overran the deadline. The watchdog moves the build;
// when the zombie finishes, its writes are fenced off and it destroys what it built.

import { afterAll, beforeAll, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, claimHosts, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    buildMs: 2500,
    watchdogIntervalMs: 0,
    env: { NOVALESS_INSTANCE_BUILD_TIMEOUT: "1" },
  }));
});
afterAll(async () => runtime?.stop());

it("the late host changes nothing and tears down its guest; the build lands elsewhere once", async () => {
  const admin = client.as(ADMIN);
  const id = await client.createServer({ name: "slow-host" });
  const first = await eventually(
    () => getInstance(id),
    (r) => r?.task_state === "spawning",
  );
  const zombie = first!.host!;
  await new Promise((r) => setTimeout(r, 1200));
  const actions = await runtime.runWatchdog();
  expect(actions).toEqual([expect.objectContaining({ instance_uuid: id, host: zombie, action: "fenced" })]);
  expect(actions[0]!.reason).toMatch(/deadline/);

  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status).toBe("ACTIVE");
  const home = s["OS-EXT-SRV-ATTR:host"];
  expect(home).not.toBe(zombie);

  // The zombie finished its spawn too, but could not record it: the guest is gone from it.
  const z = runtime.hosts.get(zombie)!;
  await eventually(
    async () => (z.driver as FakeDriver).spawns.get(id) ?? 0,
    (n) => n === 1,
  );
  await eventually(
    async () => z.agent.guests(),
    (g) => !g.includes(id),
  );
  expect(z.agent.guests()).not.toContain(id);
  expect(runtime.hosts.get(home)!.agent.guests()).toContain(id);
  const claims = await claimHosts(id);
  expect(claims).toEqual([home]);
  const rec = (await getInstance(id))!;
  expect(rec.vm_state).toBe("active");
  expect(rec.attempt).toBe(2);

  await client.delete(`/v2.1/servers/${id}`);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
});
