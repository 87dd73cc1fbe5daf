// The request path (issue 35): every build request is one SendMessage to build-requests, counted
// here at the SQS endpoint (the IAM gateway sees every call), and build-intake's SQS event source
// alone starts the conductor: a create, a reschedule after a host's failure, a large create's
// delayed chunk (started after its DelaySeconds), a start that Step Functions throttles (it stays
// on the queue and starts later), a malformed request (the DLQ, with its reason).
import { ListExecutionsCommand } from "@aws-sdk/client-sfn";
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sfnClient, sqsClient } from "../../lib/aws/clients.js";
import { REASON_ATTRIBUTE } from "../../lib/aws/dead-letters.js";
import { executionName } from "../../lib/conductor/intake.js";
import { type BuildRequest, MAX_INSTANCES_PER_REQUEST } from "../../lib/messages/build-request.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, conductorExecutions, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
/** every message SQS accepted on build-requests since the runtime started, as sent */
const sent: { at: number; delaySeconds: number; request: BuildRequest | undefined }[] = [];

beforeAll(async () => {
  // host-1 and host-2 fail every build and weigh best while empty: builds are rescheduled
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    failHosts: ["host-1", "host-2"],
    watchdogIntervalMs: 0,
  }));
  const name = process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!.split("/").pop()!;
  runtime.emulators.gateway!.onMessageSent((m) => {
    if (m.queueUrl.split("/").pop() !== name) return;
    let request: BuildRequest | undefined;
    try {
      request = JSON.parse(m.body) as BuildRequest;
    } catch {
      request = undefined;
    }
    sent.push({ at: Date.now(), delaySeconds: m.delaySeconds, request });
  });
});
afterAll(async () => runtime?.stop());

/** the build requests sent for `id` */
const requestsFor = (id: string) => sent.filter((s) => s.request?.instance_uuids.includes(id));

/** the failed build attempts of `id` (its instance action's events) */
async function failedAttempts(id: string): Promise<number> {
  const admin = client.as(ADMIN);
  const actions = await admin.get(`/v2.1/servers/${id}/os-instance-actions`);
  const rid = actions.body.instanceActions.at(-1).request_id;
  const detail = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${rid}`);
  return (detail.body.instanceAction.events as { event: string; result: string }[]).filter(
    (e) => e.event === "compute_build_and_run_instance" && e.result === "Error",
  ).length;
}

it("every build sends a message to build-requests, and one more for each reschedule after a host's failure", async () => {
  const before = await conductorExecutions();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await client.createServer({ name: `queued-${i}` }));
  let rescheduled = 0;
  for (const id of ids) {
    const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
    expect(s["OS-EXT-SRV-ATTR:host"]).toBe("host-3");
    const failed = await failedAttempts(id);
    // the create's message, and each failed attempt's reschedule (compute-events sends it)
    const requests = requestsFor(id);
    expect(requests).toHaveLength(1 + failed);
    expect(requests.map((r) => r.request?.retry.num_attempts)).toEqual(
      Array.from({ length: 1 + failed }, (_, k) => k + 1),
    );
    rescheduled += failed;
  }
  expect(rescheduled).toBeGreaterThan(0);
  // one execution per message, each started by build-intake (no other role may)
  expect(await conductorExecutions()).toBe(before + ids.length + rescheduled);
  expect(await queueDepth()).toBe(0);
}, 180_000);

it("a large create's later chunk is sent with its delay and started after it", async () => {
  sent.length = 0;
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
  // one message per chunk, the second delayed (buildRequestDelaySeconds(1))
  const chunks = sent.filter((s) => s.request?.retry.num_attempts === 1);
  expect(chunks.map((s) => s.delaySeconds)).toEqual([0, 5]);
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
  // each chunk's execution, found by its deterministic name: the delayed one started after its
  // delay (and soon after it), the first at once
  const started = async (request: BuildRequest) => {
    const list = await sfnClient().send(
      new ListExecutionsCommand({ stateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN! }),
    );
    const e = list.executions?.find((x) => x.name === executionName(request));
    expect(e, executionName(request)).toBeDefined();
    return e!.startDate!.getTime();
  };
  const [first, delayed] = chunks;
  expect((await started(first!.request!)) - first!.at).toBeLessThan(5_000);
  const wait = (await started(delayed!.request!)) - delayed!.at;
  expect(wait).toBeGreaterThanOrEqual(5_000 - 50);
  expect(wait).toBeLessThan(15_000);
  expect(await queueDepth()).toBe(0);
}, 180_000);

it("a start that Step Functions throttles stays on build-requests and starts once it answers", async () => {
  const gateway = runtime.emulators.gateway!;
  const before = await conductorExecutions();
  gateway.setStartExecutionThrottleRate(1);
  let id: string;
  try {
    id = await client.createServer({ name: "throttled" });
    // received, its start throttled (after the SDK's retries), and hidden for its retry: on the
    // queue, not started
    await eventually(hiddenMessages, (n) => n === 1, 10_000);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await conductorExecutions()).toBe(before);
    expect(await queueDepth()).toBe(1);
  } finally {
    gateway.setStartExecutionThrottleRate(0);
  }
  const s = await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  // one message for the create: the retries were receives of it, not sends
  expect(requestsFor(id).filter((r) => r.request?.retry.num_attempts === 1)).toHaveLength(1);
  expect(await eventually(queueDepth, (d) => d === 0)).toBe(0);
}, 120_000);

it("a malformed request goes to the DLQ with its reason, and starts nothing", async () => {
  const before = await conductorExecutions();
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!,
      MessageBody: "{ not json",
    }),
  );
  const letters = await eventually(
    async () =>
      (
        await sqsClient().send(
          new ReceiveMessageCommand({
            QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_DLQ_URL!,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageAttributeNames: ["All"],
          }),
        )
      ).Messages ?? [],
    (m) => m.length > 0,
  );
  expect(letters.map((m) => [m.Body, m.MessageAttributes?.[REASON_ATTRIBUTE]?.StringValue])).toEqual([
    ["{ not json", expect.stringMatching(/not JSON/)],
  ]);
  expect(await eventually(queueDepth, (d) => d === 0)).toBe(0);
  expect(await conductorExecutions()).toBe(before);
});

/** build-requests' visible, hidden and delayed messages */
async function queueDepth(): Promise<number> {
  const a = await queueAttributes();
  return (
    Number(a.ApproximateNumberOfMessages ?? 0) +
    Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
    Number(a.ApproximateNumberOfMessagesDelayed ?? 0)
  );
}

async function hiddenMessages(): Promise<number> {
  return Number((await queueAttributes()).ApproximateNumberOfMessagesNotVisible ?? 0);
}

async function queueAttributes(): Promise<Record<string, string>> {
  const a = await sqsClient().send(
    new GetQueueAttributesCommand({
      QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!,
      AttributeNames: [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
      ],
    }),
  );
  return a.Attributes ?? {};
}
