// Who starts a build (issue 20: build-requests has no event source mapping, whose pollers cost
// about $0.26 a month idle): the sender itself, StartExecution as its own role, with no message
// on build-requests; the queue holds only what the sender could not start (a large create's
// delayed chunk, a start throttled), and build-intake's drain, on its schedule, starts it.
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { MAX_INSTANCES_PER_REQUEST } from "../../lib/messages/build-request.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, conductorExecutions, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
/** the messages SQS accepted on build-requests, with their delay, since the runtime started */
const queued: number[] = [];

beforeAll(async () => {
  // the drain every second, as the local runtime's default (every minute on AWS)
  ({ runtime, client } = await startTestRuntime({ hosts: 4, intakeIntervalMs: 1000, watchdogIntervalMs: 0 }));
  const name = process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!.split("/").pop()!;
  runtime.emulators.gateway!.onMessageSent((sent) => {
    if (sent.queueUrl.split("/").pop() === name) queued.push(sent.delaySeconds);
  });
});
afterAll(async () => runtime?.stop());

it("a create starts its conductor execution itself: nothing goes through build-requests", async () => {
  const before = await conductorExecutions();
  const id = await client.createServer({ name: "direct" });
  // started by the time the API answered (no drain in between)
  expect(await conductorExecutions()).toBe(before + 1);
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  expect(queued).toEqual([]);
});

it("a large create's delayed chunk waits in build-requests and the drain starts it: every server ACTIVE", async () => {
  const n = MAX_INSTANCES_PER_REQUEST + 1;
  const r = await client.post("/v2.1/servers", {
    server: {
      name: "wide",
      flavorRef: "1",
      imageRef: "cirros",
      min_count: n,
      max_count: n,
      return_reservation_id: true,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  // the first chunk started directly, the second queued with its delay (buildRequestDelaySeconds(1))
  expect(queued).toEqual([5]);
  const reservation = r.body.reservation_id as string;
  const servers = async () =>
    (await client.as(ADMIN).get(`/v2.1/servers/detail?all_tenants=1&reservation_id=${reservation}`)).body
      .servers as { status: string }[];
  const done = await eventually(
    servers,
    (s) => s.length === n && s.every((x) => x.status !== "BUILD"),
    120_000,
  );
  expect(done.map((s) => s.status)).toEqual(Array(n).fill("ACTIVE"));
  // the drain deleted what it started
  expect(await queueDepth()).toBe(0);
}, 180_000);

it("a start that is throttled is not lost: queued, then started by the drain once Step Functions answers", async () => {
  const gateway = runtime.emulators.gateway!;
  queued.length = 0;
  gateway.setStartExecutionThrottleRate(1);
  // throttled through the SDK's retries, then queued; Step Functions answers again as it lands
  const name = process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!.split("/").pop()!;
  gateway.onMessageSent((sent) => {
    if (sent.queueUrl.split("/").pop() === name) gateway.setStartExecutionThrottleRate(0);
  });
  const before = await conductorExecutions();
  let id: string;
  try {
    id = await client.createServer({ name: "overflow" });
  } finally {
    gateway.setStartExecutionThrottleRate(0);
  }
  expect(queued).toEqual([0]);
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  expect(await conductorExecutions()).toBe(before + 1);
  expect(await queueDepth()).toBe(0);
}, 120_000);

/** build-requests' visible and in-flight messages */
async function queueDepth(): Promise<number> {
  const a = await sqsClient().send(
    new GetQueueAttributesCommand({
      QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    }),
  );
  return (
    Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}
