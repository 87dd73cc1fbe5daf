// Deleting while the host is spawning: the host finishes, finds itself fenced off, and destroys
// what it built; the claim comes back.
import { afterAll, beforeAll, expect, it } from "vitest";
import { getInstance } from "../../lib/instances/queries.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2, buildMs: 1500 }));
});
afterAll(async () => runtime?.stop());

it("delete during spawn: gone, guest destroyed, capacity back", async () => {
  const id = await client.createServer({ name: "slow", flavorRef: "4" });
  const spawning = await eventually(
    () => getInstance(id),
    (r) => r?.task_state === "spawning",
  );
  expect(spawning?.task_state).toBe("spawning");
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  expect((await client.as(ADMIN).get(`/v2.1/servers/${id}`)).status).toBe(404);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  // The spawn completes after the delete; the fenced agent must destroy the guest.
  await new Promise((r) => setTimeout(r, 2000));
  for (const a of runtime.agents) expect(a.guests()).not.toContain(id);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
});

it("delete after ACTIVE: the host tears the guest down", async () => {
  const id = await client.createServer({ name: "done", flavorRef: "1" });
  const s = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status).toBe("ACTIVE");
  const agent = runtime.agents.find((a) => a.guests().includes(id));
  expect(agent).toBeDefined();
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await eventually(
    async () => agent!.guests(),
    (g) => !g.includes(id),
  );
  expect(agent!.guests()).not.toContain(id);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
});
