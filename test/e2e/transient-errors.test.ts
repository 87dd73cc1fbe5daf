// AWS's real transient errors reach the conductor under their real names and are retried with
// backoff; only when retries are exhausted does a build go to ERROR, and its fault names the error.
import { afterEach, expect, it } from "vitest";
import { seededRandom } from "../../lib/scheduler/scenario.js";
import type { Runtime, RuntimeOptions } from "../../local/runtime.js";
import { ADMIN, type Client, DEMO, startTestRuntime } from "./harness.js";

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
});

async function start(opts: RuntimeOptions): Promise<Client> {
  const started = await startTestRuntime({ hosts: 2, retryIntervalMs: 10, watchdogIntervalMs: 0, ...opts });
  runtime = started.runtime;
  return started.client;
}

it("a throttled scheduler invocation (Lambda.TooManyRequestsException) is retried: builds go ACTIVE", async () => {
  // Only the throttle draws from `random` here: count the draws that throttle.
  const draw = seededRandom(3);
  let throttled = 0;
  const random = () => {
    const x = draw();
    if (x < 0.3) throttled++;
    return x;
  };
  const client = await start({ faults: { random, schedulerFailureRate: 0.3 } });
  const ids = await Promise.all([1, 2, 3, 4].map((i) => client.createServer({ name: `busy-${i}` })));
  for (const id of ids) {
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.fault?.details ?? server.status).toBe("ACTIVE");
  }
  expect(throttled).toBeGreaterThan(0);
});

it("a scheduler that is always throttled: ERROR once retries are exhausted, the fault names the error", async () => {
  const client = await start({ faults: { random: seededRandom(4), schedulerFailureRate: 1 } });
  const id = await client.as(DEMO).createServer({ name: "never" });
  await client.waitForStatus(id, ["ERROR"]);
  const member = (await client.as(DEMO).get(`/v2.1/servers/${id}`)).body.server;
  expect(member.fault.message).toContain("Lambda.TooManyRequestsException");
  const admin = (await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server;
  expect(admin.fault.details).toContain("Rate Exceeded");
});

it("a scheduler past its timeout fails as Sandbox.Timedout, is retried, then the build goes to ERROR", async () => {
  const client = await start({
    lambdaTimeouts: { scheduler: 1 },
    faults: { random: seededRandom(5), schedulerDelayMs: 1_500 },
  });
  const id = await client.as(DEMO).createServer({ name: "slow" });
  await client.waitForStatus(id, ["ERROR"], 30_000);
  const admin = (await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server;
  expect(admin.fault.message).toContain("Sandbox.Timedout");
  expect(admin.fault.details).toContain("Task timed out after 1.00 seconds");
  // the scheduler's claims of the timed-out attempts were given back
  const hv = (await client.as(ADMIN).get("/v2.1/os-hypervisors/detail")).body.hypervisors as {
    running_vms: number;
    vcpus_used: number;
  }[];
  expect(hv.every((h) => h.vcpus_used === 0)).toBe(true);
});
