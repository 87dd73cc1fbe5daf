// Compute agents named as Nova hosts usually are (FQDNs, up to 255 characters) get queues SQS
// accepts, one per host, under the longest prefix the stack allows, and casts reach them.
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { ComputeAgent } from "../../lib/compute/agent.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { COMPUTE_QUEUE_PREFIX_MAX_LENGTH } from "../../lib/compute/queue-name.js";
import { getHost } from "../../lib/placement/hosts.js";
import { DLQ_SUFFIX } from "../../lib/resources.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const SQS_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const label = (c: string) => c.repeat(63);
const HOSTS = [
  "compute-1.example.org",
  "Compute-1.example.org",
  "compute-1-example-org",
  [label("a"), label("b"), label("c"), label("d")].join("."), // 255 characters
];

const agents: ComputeAgent[] = [];
let restorePrefix: string | undefined;

beforeAll(async () => {
  // The longest prefix the stack accepts, still unique to this run (useLocalAws set its own).
  restorePrefix = process.env.NOVALESS_COMPUTE_QUEUE_PREFIX;
  process.env.NOVALESS_COMPUTE_QUEUE_PREFIX = restorePrefix!.padEnd(COMPUTE_QUEUE_PREFIX_MAX_LENGTH, "p");
  for (const host of HOSTS) {
    const agent = new ComputeAgent({
      host,
      availability_zone: "az1",
      inventories: inventoriesFor({ vcpus: 4, memory_mb: 8192, local_gb: 100 }),
      host_ip: "10.0.0.9",
      driver: new FakeDriver({ host, buildMs: 0, failAll: false }),
      waitTimeSeconds: 1,
    });
    agents.push(agent);
    await agent.start();
  }
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  process.env.NOVALESS_COMPUTE_QUEUE_PREFIX = restorePrefix;
});

it("registers every host with a queue of its own whose name, and its DLQ's, SQS accepts", async () => {
  const urls: string[] = [];
  for (const host of HOSTS) {
    const url = (await getHost(host))?.queue_url ?? "";
    const name = url.slice(url.lastIndexOf("/") + 1);
    expect(name, host).toMatch(SQS_NAME);
    expect(`${name}${DLQ_SUFFIX}`, host).toMatch(SQS_NAME);
    expect(name.startsWith(process.env.NOVALESS_COMPUTE_QUEUE_PREFIX!)).toBe(true);
    const dlq = await sqsClient().send(
      new GetQueueAttributesCommand({ QueueUrl: `${url}${DLQ_SUFFIX}`, AttributeNames: ["QueueArn"] }),
    );
    expect(dlq.Attributes?.QueueArn).toMatch(new RegExp(`:${name}${DLQ_SUFFIX}$`));
    urls.push(url);
  }
  expect(new Set(urls).size).toBe(HOSTS.length);
});

it("a message sent to one host's queue is on that queue only", async () => {
  const [first, ...others] = await Promise.all(HOSTS.map(async (h) => (await getHost(h))!.queue_url));
  // Stopped, so no agent takes the message before the test looks.
  await Promise.all(agents.map((a) => a.stop()));
  await sqsClient().send(
    new SendMessageCommand({ QueueUrl: first!, MessageBody: "for compute-1.example.org" }),
  );
  const got = await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: first!, WaitTimeSeconds: 1 }));
  expect(got.Messages?.map((m) => m.Body)).toEqual(["for compute-1.example.org"]);
  for (const url of others) {
    const none = await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 0 }));
    expect(none.Messages ?? []).toEqual([]);
  }
});
