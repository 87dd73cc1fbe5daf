// DynamoDB throttling injected at the gateway reaches the handlers as DynamoDB's own
// ProvisionedThroughputExceededException; the SDK's retries absorb an occasional one.
import { afterAll, beforeAll, expect, it } from "vitest";
import { seededRandom } from "../../lib/scheduler/scenario.js";
import type { Runtime } from "../../local/runtime.js";
import { type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 2,
    faults: { random: seededRandom(8), dynamodbThrottleRate: 0.05 },
  }));
});
afterAll(async () => runtime?.stop());

it("handlers meet real throttles and builds still go ACTIVE", async () => {
  const ids = await Promise.all([1, 2, 3].map((i) => client.createServer({ name: `throttled-${i}` })));
  for (const id of ids) expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
  expect(runtime.emulators.gateway!.throttled).toBeGreaterThan(0);
});
