// Compute agents register through compute-events only: named as Nova hosts usually are (FQDNs up
// to 255 characters) they get queues SQS accepts, one per host, created and tagged by the
// consumer under the longest prefix the stack allows; a restart reporting less than is
// allocated keeps Placement's inventory (Nova's resource tracker logs InventoryInUse and carries
// on) and never clears an operator's forced_down.
import { GetQueueAttributesCommand, ListQueueTagsCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { runAs } from "../../lib/aws/identity.js";
import { ComputeAgent } from "../../lib/compute/agent.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { COMPUTE_QUEUE_PREFIX_MAX_LENGTH, hostSessionName } from "../../lib/compute/queue-name.js";
import { resources } from "../../lib/config.js";
import { claim } from "../../lib/placement/claims.js";
import { getHost } from "../../lib/placement/hosts.js";
import { setServiceStatus } from "../../lib/placement/services.js";
import { DLQ_SUFFIX, HOST_TAG } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { startTestRuntime } from "./harness.js";

const SQS_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const label = (c: string) => c.repeat(63);
const HOSTS = [
  "compute-1.example.org",
  "Compute-1.example.org",
  "compute-1-example-org",
  [label("a"), label("b"), label("c"), label("d")].join("."), // 255 characters
  "shrinking",
];

let runtime: Runtime;
beforeAll(async () => {
  ({ runtime } = await startTestRuntime({
    hosts: HOSTS,
    transport: "long-poll",
    computeQueuePrefix: "novaless-agents-".padEnd(COMPUTE_QUEUE_PREFIX_MAX_LENGTH, "p"),
  }));
});
afterAll(async () => runtime?.stop());

it("registers every host with a queue of its own whose name, and its DLQ's, SQS accepts, tagged with the host", async () => {
  const urls: string[] = [];
  for (const host of HOSTS) {
    const url = (await getHost(host))?.queue_url ?? "";
    const name = url.slice(url.lastIndexOf("/") + 1);
    expect(name, host).toMatch(SQS_NAME);
    expect(`${name}${DLQ_SUFFIX}`, host).toMatch(SQS_NAME);
    expect(name.startsWith(resources().computeQueuePrefix)).toBe(true);
    const dlq = await sqsClient().send(
      new GetQueueAttributesCommand({ QueueUrl: `${url}${DLQ_SUFFIX}`, AttributeNames: ["QueueArn"] }),
    );
    expect(dlq.Attributes?.QueueArn).toMatch(new RegExp(`:${name}${DLQ_SUFFIX}$`));
    const tags = await sqsClient().send(new ListQueueTagsCommand({ QueueUrl: url }));
    expect(tags.Tags?.[HOST_TAG]).toBe(hostSessionName(host));
    urls.push(url);
  }
  expect(new Set(urls).size).toBe(HOSTS.length);
});

it("a message sent to one host's queue is on that queue only", async () => {
  const [first, ...others] = await Promise.all(HOSTS.map(async (h) => (await getHost(h))!.queue_url));
  // Stopped, so no agent takes the message before the test looks.
  await Promise.all(runtime.agents.map((a) => a.stop()));
  await sqsClient().send(
    new SendMessageCommand({ QueueUrl: first!, MessageBody: "for compute-1.example.org" }),
  );
  // Counted, not received: a stopping agent's aborted long poll may still take it on the
  // emulator's side (hidden for the visibility timeout, as SQS does), but it is on that queue.
  const count = async (url: string) => {
    const a = await sqsClient().send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    return (
      Number(a.Attributes?.ApproximateNumberOfMessages) +
      Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible)
    );
  };
  expect(await count(first!)).toBe(1);
  for (const url of others) expect(await count(url)).toBe(0);
});

it("a restart reporting less than is allocated keeps Placement's inventory and forced_down", async () => {
  const host = "shrinking";
  expect((await claim(host, "vm-1", { VCPU: 10 }, 1)).claimed).toBe(true);
  await setServiceStatus(host, { forced_down: true });
  const before = (await getHost(host))!;
  const smaller = new ComputeAgent({
    host,
    availability_zone: "az1",
    inventories: inventoriesFor({ vcpus: 1, memory_mb: 8192, local_gb: 100, cpu_allocation_ratio: 1 }),
    host_ip: "10.0.0.9",
    driver: new FakeDriver({ host, buildMs: 0, failAll: false }),
    eventsUrl: resources().computeEventsUrl,
    computeQueuePrefix: resources().computeQueuePrefix,
    waitTimeSeconds: 1,
  });
  await runAs(runtime.hostCredentials(host), () => smaller.start());
  const h = (await getHost(host))!;
  expect(h.inventories.VCPU?.total).toBe(before.inventories.VCPU?.total);
  expect(h.usage.VCPU).toBe(10);
  expect(h.service.forced_down).toBe(true);
  await runAs(runtime.hostCredentials(host), () => smaller.stop());
});
