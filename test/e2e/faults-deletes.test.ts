// Delete at every phase of a build: the server disappears, its claim comes back, the host tears
// down anything it built, and a late message for it changes nothing.

import { afterAll, beforeAll, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, claimHosts, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  // The scheduler answers 1.5 s after it claimed, so a delete can land "while scheduling".
  ({ runtime, client } = await startTestRuntime({
    hosts: 2,
    buildMs: 1500,
    faults: { random: () => 1, schedulerDelayMs: 1500 },
  }));
});
afterAll(async () => runtime?.stop());

async function expectGone(id: string): Promise<void> {
  expect((await client.as(ADMIN).get(`/v2.1/servers/${id}`)).status).toBe(404);
  expect(await eventually(leakedClaims, (l) => l.length === 0, 15_000)).toEqual([]);
  // Whatever was built is torn down, whenever the host gets to it.
  await eventually(
    async () => runtime.agents.flatMap((a) => a.guests()),
    (g) => !g.includes(id),
    15_000,
  );
  for (const a of runtime.agents) expect(a.guests()).not.toContain(id);
}

it("while scheduling: the scheduler's claim is handed back when the conductor finds it deleted", async () => {
  const id = await client.createServer({ name: "del-scheduling" });
  // The claim exists before the placement is recorded: that is the window.
  await eventually(
    async () => (await claimHosts(id)).length > 0,
    (claimed) => claimed,
  );
  expect((await getInstance(id))!.host).toBeNull();
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await expectGone(id);
});

it("after the host message was sent, before the agent took it", async () => {
  await Promise.all(runtime.agents.map((a) => a.stop()));
  const id = await client.createServer({ name: "del-cast" });
  const placed = await eventually(
    () => getInstance(id),
    (r) => Boolean(r?.host),
  );
  expect(placed?.task_state).toBe("scheduling");
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  for (const name of runtime.hosts.keys()) await runtime.restartHost(name);
  await expectGone(id);
  expect(
    [...runtime.hosts.values()].reduce((n, h) => n + ((h.driver as FakeDriver).spawns.get(id) ?? 0), 0),
  ).toBe(0);
});

it("while spawning", async () => {
  const id = await client.createServer({ name: "del-spawning" });
  await eventually(
    () => getInstance(id),
    (r) => r?.task_state === "spawning",
  );
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await expectGone(id);
});

it("when ACTIVE", async () => {
  const id = await client.createServer({ name: "del-active" });
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await expectGone(id);
});

it("when ERROR", async () => {
  const id = await client.createServer({ name: "del-error", imageRef: "broken" });
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ERROR");
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await expectGone(id);
});

it("deleting twice is a 404 the second time, and changes nothing", async () => {
  const id = await client.createServer({ name: "del-twice" });
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(404);
  await expectGone(id);
});

it("when ACTIVE on a live host: the claim stays until that host has destroyed the guest (Nova's order)", async () => {
  const id = await client.createServer({ name: "del-order" });
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  const host: string = s["OS-EXT-SRV-ATTR:host"];
  await runtime.hosts.get(host)!.agent.stop(); // alive by its heartbeat, but not reading its queue
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  expect(await claimHosts(id)).toContain(host);
  expect(runtime.hosts.get(host)!.driver.has(id)).toBe(true);
  await runtime.restartHost(host);
  await expectGone(id);
  expect(runtime.hosts.get(host)!.driver.has(id)).toBe(false);
});

it("when ACTIVE on a host that is down: the claim goes at once", async () => {
  const id = await client.createServer({ name: "del-down" });
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  const host: string = s["OS-EXT-SRV-ATTR:host"];
  await runtime.hosts.get(host)!.agent.stop();
  await client.as(ADMIN).at("2.53").call("PUT", `/v2.1/os-services/${host}`, { forced_down: true });
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  expect(await claimHosts(id)).not.toContain(host);
  await client.as(ADMIN).at("2.53").call("PUT", `/v2.1/os-services/${host}`, { forced_down: false });
  // Back up, it reads the terminate and destroys the guest it still had.
  await runtime.restartHost(host);
  await expectGone(id);
});
