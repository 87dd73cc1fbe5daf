// The fleet simulator at a size one long-polling agent per host could not serve: hundreds of
// simulated hosts (1,000 with `npm run test:simulator`), each with its own queue and provider
// item, registered and heartbeating through compute-events as real agents do, build through the
// public API, and a host that dies mid-build is caught by the watchdog and its build lands
// elsewhere.

import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { computeQueueName } from "../../lib/compute/queue-name.js";
import { resources } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { getHost } from "../../lib/placement/hosts.js";
import { DLQ_SUFFIX } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { SimulatedAgent } from "../../local/simulator.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

// npm test runs 250 hosts (the suite's budget on 2 cores); `npm run test:simulator` runs 1,000 at
// a heartbeat every 20 s, the 50 reports a second one process carries (local/runtime/hosts.ts
// LOCAL_HEARTBEATS_PER_SECOND); bench:e2e goes to 10,000.
const HOSTS = Number(process.env.NOVALESS_SIMULATOR_HOSTS ?? 250);
// at most 50 heartbeats a second, and never more often than every 10 s (a loaded CI machine)
const HEARTBEAT_SECONDS = Math.max(10, Math.ceil(HOSTS / 50));
let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: HOSTS,
    buildMs: 3000,
    heartbeatSeconds: HEARTBEAT_SECONDS,
    watchdogIntervalMs: 0, // the test runs it when it means to
    // a host is down one and a half heartbeats after its last one
    env: { NOVALESS_SERVICE_DOWN_TIME: String(Math.ceil(HEARTBEAT_SECONDS * 1.5)) },
  }));
}, 600_000);
afterAll(async () => runtime?.stop(), 120_000);

it("every host is simulated and registered with its own queue", async () => {
  expect(runtime.hosts.size).toBe(HOSTS);
  expect(runtime.agents.every((a) => a instanceof SimulatedAgent)).toBe(true);
  // a host registers through compute-events: its provider item is written after its start
  const last = (await eventually(
    () => getHost(`host-${HOSTS}`),
    (h) => h !== undefined,
  ))!;
  expect(last.queue_url).toMatch(
    new RegExp(`/${computeQueueName(resources().computeQueuePrefix, last.host, DLQ_SUFFIX)}$`),
  );
});

it("builds an instance to ACTIVE through the API, on the host the record names", async () => {
  const id = await client.createServer({ name: "at-scale" });
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"], 120_000);
  expect(s.status).toBe("ACTIVE");
  const host = s["OS-EXT-SRV-ATTR:host"] as string;
  expect(runtime.hosts.get(host)!.driver.has(id)).toBe(true);
  expect(
    [...runtime.hosts.values()].reduce((n, h) => n + ((h.driver as FakeDriver).spawns.get(id) ?? 0), 0),
  ).toBe(1);
}, 180_000);

it("a simulated host killed mid-build: the watchdog fences it and the build lands elsewhere", async () => {
  const id = await client.createServer({ name: "orphan" });
  const rec = await eventually(
    () => getInstance(id),
    (r) => r?.task_state === "spawning",
    120_000,
  );
  expect(rec?.task_state).toBe("spawning");
  const dead = rec!.host!;
  await runtime.killHost(dead);

  // Down once service_down_time has passed since its last heartbeat; until then the watchdog
  // leaves the build alone. Each run reads the fleet, so it is not run back to back.
  let actions = await runtime.runWatchdog();
  for (const deadline = Date.now() + 180_000; actions.length === 0 && Date.now() < deadline; ) {
    await sleep(2000);
    actions = await runtime.runWatchdog();
  }
  expect(actions).toEqual([
    expect.objectContaining({ instance_uuid: id, host: dead, action: "fenced", attempt: 1 }),
  ]);
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"], 120_000);
  expect(s.status).toBe("ACTIVE");
  expect(s["OS-EXT-SRV-ATTR:host"]).not.toBe(dead);
  expect(runtime.hosts.get(dead)!.driver.has(id)).toBe(false);
}, 420_000);
