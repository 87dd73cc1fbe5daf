// A compromised hypervisor cannot touch what is not its own: with the credentials a host gets
// (a session of ComputeHostRole named and tagged after it), host-a cannot receive from, peek at
// or find host-b's queue, cannot read or write any table, cannot create queues, and a report it
// sends speaking for host-b is refused by compute-events (the signer's session) and dead-lettered with
// why. Reports go to compute-events' function URL only, and only through it.
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  CreateQueueCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { dynamo, sqsClient } from "../../lib/aws/clients.js";
import { peekDeadLetters } from "../../lib/aws/dead-letters.js";
import { FunctionUrlError, postToFunctionUrl } from "../../lib/aws/function-url.js";
import { runAs } from "../../lib/aws/identity.js";
import { computeQueueName } from "../../lib/compute/queue-name.js";
import { resources } from "../../lib/config.js";
import { getHost } from "../../lib/placement/hosts.js";
import { DLQ_SUFFIX } from "../../lib/resources.js";
import { evaluate } from "../../local/iam/evaluate.js";
import { functionArnOf } from "../../local/iam/identities.js";
import { hostPrincipal } from "../../local/iam/policy.js";
import type { Runtime } from "../../local/runtime.js";
import { eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
beforeAll(async () => {
  ({ runtime } = await startTestRuntime({ hosts: ["host-a", "host-b"] }));
});
afterAll(async () => runtime?.stop());

const asHost = <T>(host: string, fn: () => Promise<T>) => runAs(runtime.hostCredentials(host), fn);
const denied = (p: Promise<unknown>) =>
  expect(p).rejects.toMatchObject({ name: expect.stringMatching(/AccessDenied/) });
const queueOf = (host: string) => computeQueueName(resources().computeQueuePrefix, host, DLQ_SUFFIX);

it("host-a reaches its own queue, and cannot receive from, find or create host-b's", async () => {
  const own = (await getHost("host-a"))!.queue_url;
  const other = (await getHost("host-b"))!.queue_url;
  await expect(
    asHost("host-a", () =>
      sqsClient().send(new ReceiveMessageCommand({ QueueUrl: own, WaitTimeSeconds: 0 })),
    ),
  ).resolves.toBeDefined();
  await denied(
    asHost("host-a", () =>
      sqsClient().send(new ReceiveMessageCommand({ QueueUrl: other, WaitTimeSeconds: 0 })),
    ),
  );
  await denied(
    asHost("host-a", () => sqsClient().send(new GetQueueUrlCommand({ QueueName: queueOf("host-b") }))),
  );
  await denied(
    asHost("host-a", () => sqsClient().send(new SendMessageCommand({ QueueUrl: other, MessageBody: "{}" }))),
  );
  await denied(
    asHost("host-a", () => sqsClient().send(new CreateQueueCommand({ QueueName: `${queueOf("host-a")}x` }))),
  );
});

it("host-a has no table at all", async () => {
  for (const table of [resources().hostsTable, resources().instancesTable, resources().allocationsTable]) {
    await denied(
      asHost("host-a", () =>
        dynamo().send(new GetItemCommand({ TableName: table, Key: { host: { S: "host-b" } } })),
      ),
    );
  }
});

it("a report speaking for host-b, sent by host-a, changes nothing and is dead-lettered with why", async () => {
  const before = (await getHost("host-b"))!;
  const forged = {
    version: 1,
    kind: "register",
    host: "host-b",
    sent_at: new Date().toISOString(),
    availability_zone: "evil",
    host_ip: "10.6.6.6",
    inventories: {},
    hypervisor_type: "fake",
    hypervisor_version: 1,
    facts: {},
    guests: [],
  };
  // refused with its reason (400), not retried: the same report would be refused again
  const refused = await asHost("host-a", () =>
    postToFunctionUrl(resources().computeEventsUrl, JSON.stringify(forged)).catch((e: unknown) => e),
  );
  expect(refused).toBeInstanceOf(FunctionUrlError);
  expect((refused as FunctionUrlError).status).toBe(400);
  expect((refused as FunctionUrlError).attempts).toBe(1);
  const letters = await eventually(
    () => peekDeadLetters(resources().computeEventsDlqUrl),
    (ls) => ls.some((l) => l.body.includes("10.6.6.6")),
  );
  const letter = letters.find((l) => l.body.includes("10.6.6.6"))!;
  expect(letter.reason).toMatch(
    /report for host host-b sent by AROA[A-Z2-7]{17}:host-a: a host may report only for itself/,
  );
  const after = (await getHost("host-b"))!;
  expect(after.availability_zone).toBe(before.availability_zone);
  expect(after.host_ip).toBe(before.host_ip);
});

it("a session not named after its tag cannot report at all", async () => {
  // Tagged host-a, but named host-b: IAM refuses the send (aws:userid must end with the tag).
  const [key, principal] = hostPrincipal("host-a", runtime.policies.identity["compute-host"]);
  const misnamed = { ...principal, sessionArn: principal.sessionArn.replace(/host-a$/, "host-b") };
  runtime.emulators.gateway!.addPrincipal(`${key}X`, misnamed);
  const refused = await runAs({ accessKeyId: `${key}X`, secretAccessKey: "x" }, () =>
    postToFunctionUrl(resources().computeEventsUrl, "{}").catch((e: unknown) => e),
  );
  expect(refused).toBeInstanceOf(FunctionUrlError);
  expect((refused as FunctionUrlError).status).toBe(403);
});

it("a host may reach compute-events only through its URL, and only compute-events", async () => {
  const fn = functionArnOf("compute-events");
  const can = (action: string, resource: string, context: Record<string, string>) =>
    evaluate(runtime.policies.identity["compute-host"], [], {
      action,
      resource,
      principalArn: "arn:aws:iam::000000000000:role/novaless-hosts/ComputeHostRole",
      context: { "aws:userid": "AROAEXAMPLE:host-a", "aws:PrincipalTag/novaless-host": "host-a", ...context },
    }).allowed;
  expect(can("lambda:InvokeFunctionUrl", fn, { "lambda:FunctionUrlAuthType": "AWS_IAM" })).toBe(true);
  expect(can("lambda:InvokeFunction", fn, { "lambda:InvokedViaFunctionUrl": "true" })).toBe(true);
  // a plain Invoke would not tell the function who called
  expect(can("lambda:InvokeFunction", fn, {})).toBe(false);
  expect(can("lambda:InvokeFunctionUrl", fn, { "lambda:FunctionUrlAuthType": "NONE" })).toBe(false);
  expect(
    can("lambda:InvokeFunctionUrl", functionArnOf("scheduler"), { "lambda:FunctionUrlAuthType": "AWS_IAM" }),
  ).toBe(false);
});
