// Dead letters are listed with their reason and can be redriven once the cause is fixed.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { listDeadLetterQueues, peekDeadLetters, redrive } from "../../lib/aws/dead-letters.js";
import { computeQueueName } from "../../lib/compute/queue-name.js";
import { resources } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { requestSpecOf } from "../../lib/instances/request-spec.js";
import { createInstances } from "../../lib/instances/server-writes.js";
import { DLQ_SUFFIX } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2, buildMs: 50 }));
});
afterAll(async () => runtime?.stop());

/** The runtime names its queues per run when the AWS is shared (NOVALESS_EXTERNAL_AWS=1). */
function buildRequestsDlqName(): string {
  const url = resources().buildRequestsDlqUrl;
  return url.slice(url.lastIndexOf("/") + 1);
}
function computeEventsDlqName(): string {
  const url = resources().computeEventsDlqUrl;
  return url.slice(url.lastIndexOf("/") + 1);
}
const hostDlqName = (host: string) =>
  `${computeQueueName(resources().computeQueuePrefix, host, DLQ_SUFFIX)}${DLQ_SUFFIX}`;

it("lists every DLQ (build-requests, compute-events and each host's) with the reason, via the CLI too", async () => {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!,
      MessageBody: "{oops",
    }),
  );
  const dlqs = await eventually(listDeadLetterQueues, (qs) => qs.some((q) => q.approximateMessages > 0));
  expect(dlqs.map((q) => q.name)).toEqual(
    [buildRequestsDlqName(), computeEventsDlqName(), hostDlqName("host-1"), hostDlqName("host-2")].sort(
      (a, b) => a.localeCompare(b),
    ),
  );
  const parked = dlqs.find((q) => q.name === buildRequestsDlqName())!;
  const [letter] = await peekDeadLetters(parked.url);
  expect(letter).toMatchObject({ body: "{oops", reason: expect.stringMatching(/not JSON/) });
  // Peeking took nothing away.
  expect(await peekDeadLetters(parked.url)).toHaveLength(1);

  // Asynchronously: the emulators the CLI talks to run in this very process.
  const cli = await promisify(execFile)("npx", ["tsx", "bin/novaless-dlq.ts", "list", "--json"], {
    env: process.env,
  });
  const report = JSON.parse(cli.stdout);
  const listed = report.find((q: { queue: string }) => q.queue === buildRequestsDlqName());
  expect(listed).toMatchObject({ messages: 1 });
  expect(listed.letters[0].reason).toMatch(/not JSON/);
  // compute-events' DLQ has no source queue (reports come through its function URL): the CLI
  // says so and moves nothing
  const refused = await promisify(execFile)(
    "npx",
    ["tsx", "bin/novaless-dlq.ts", "redrive", computeEventsDlqName()],
    {
      env: process.env,
    },
  ).catch((e: { code?: number; stderr?: string }) => e);
  expect(refused).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/not redrivable: it has no source queue/),
  });
});

it("a build request parked before the conductor saw it is built once redriven", async () => {
  // An instance whose request SQS parked (the conductor unreachable for 5 receives, say): the
  // records exist, the request sits in the DLQ.
  const template = await client.createServer({ name: "template" });
  await client.waitForStatus(template, ["ACTIVE", "ERROR"]);
  const t = (await getInstance(template))!;
  const id = randomUUID();
  const requestId = `req-${randomUUID()}`;
  await createInstances([
    {
      ...t,
      id,
      name: "parked",
      request_id: requestId,
      vm_state: "building",
      task_state: "scheduling",
      host: null,
      node: null,
      attempt: 0,
      spawn_attempt: 0,
      availability_zone: null,
      launched_at: null,
      actions: { [requestId]: { ...Object.values(t.actions)[0]!, request_id: requestId, events: {} } },
    },
  ]);
  const dlq = (await listDeadLetterQueues()).find((q) => q.name === buildRequestsDlqName())!;
  const body = JSON.stringify({
    version: 1,
    request_id: requestId,
    reservation_id: t.reservation_id,
    project_id: t.project_id,
    user_id: t.user_id,
    instance_uuids: [id],
    request_spec: requestSpecOf(t),
    retry: { num_attempts: 1, hosts: [] },
  });
  await sqsClient().send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: body }));
  expect((await getInstance(id))!.vm_state).toBe("building");

  // The poison from the first test goes back too, and the intake parks it again with its reason.
  expect(await redrive(dlq)).toBe(2);
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
  const again = await eventually(
    () => peekDeadLetters(dlq.url),
    (l) => l.length === 1,
  );
  expect(again[0]!.body).toBe("{oops");
  expect(runtime.agents.flatMap((a) => a.guests()).filter((g) => g === id)).toHaveLength(1);
});

it("os-dead-letters: admins list every DLQ with its reasons and redrive one through the API (the API role's IAM)", async () => {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!,
      MessageBody: "[api-poison",
    }),
  );
  const admin = client.as(ADMIN);
  const listed = await eventually(
    () => admin.get("/v2.1/os-dead-letters"),
    (r) =>
      r.status !== 200 ||
      r.body.dead_letter_queues.some((q: { name: string; messages: { body: string }[] }) =>
        q.messages.some((m) => m.body === "[api-poison"),
      ),
  );
  expect(listed.status).toBe(200);
  const queues = listed.body.dead_letter_queues as {
    name: string;
    source: string;
    redrivable: boolean;
    not_redrivable_reason?: string;
    messages: { body: string; reason: string }[];
  }[];
  expect(queues.map((q) => q.name)).toEqual(
    expect.arrayContaining([buildRequestsDlqName(), computeEventsDlqName(), hostDlqName("host-1")]),
  );
  const build = queues.find((q) => q.name === buildRequestsDlqName())!;
  expect(build.source).toBe(buildRequestsDlqName().slice(0, -DLQ_SUFFIX.length));
  expect(build.messages.find((m) => m.body === "[api-poison")?.reason).toMatch(/not JSON/);
  const events = queues.find((q) => q.name === computeEventsDlqName())!;
  expect(events).toMatchObject({
    redrivable: false,
    not_redrivable_reason: expect.stringMatching(/the host whose session signed them/),
  });

  // members: Nova's policy refusal; a bad body, an unknown queue, compute-events: OpenStack's 4xx
  expect((await client.get("/v2.1/os-dead-letters")).status).toBe(403);
  const action = (name: string, body: unknown) => admin.post(`/v2.1/os-dead-letters/${name}/action`, body);
  expect((await action(buildRequestsDlqName(), { redrive: { max: 0 } })).body.badRequest.message).toMatch(
    /max/,
  );
  expect((await action("nope", { redrive: {} })).status).toBe(404);
  const refused = await action(computeEventsDlqName(), { redrive: {} });
  expect(refused.status).toBe(409);
  expect(refused.body.conflictingRequest.message).toMatch(/the host whose session signed them/);

  const moved = await action(buildRequestsDlqName(), { redrive: {} });
  expect(moved.status).toBe(200);
  expect(moved.body.redrive.moved).toBeGreaterThanOrEqual(1);
  // still poison: the intake parks it again, with its reason
  await eventually(
    async () =>
      peekDeadLetters((await listDeadLetterQueues()).find((q) => q.name === buildRequestsDlqName())!.url),
    (l) => l.some((m) => m.body === "[api-poison"),
  );
});
