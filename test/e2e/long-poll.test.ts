// The runtime with real agents' transport: one long-polling ComputeAgent per host, as
// `novaless-compute` runs on a host, going through the same build path as the simulator's hosts.
import { afterAll, beforeAll, expect, it } from "vitest";
import { ComputeAgent } from "../../lib/compute/agent.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2, transport: "long-poll" }));
});
afterAll(async () => runtime?.stop());

it("long-polling agents build to ACTIVE", async () => {
  expect(runtime.agents.every((a) => a instanceof ComputeAgent)).toBe(true);
  const id = await client.createServer({ name: "polled" });
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status).toBe("ACTIVE");
  expect(runtime.hosts.get(s["OS-EXT-SRV-ATTR:host"])!.agent.guests()).toContain(id);
});
