// A compute host's queues follow its service: created at registration (and set back to the spec
// when they drifted), deleted with the service once empty or when it is forced down. Each step
// runs as the component that does it in AWS, held to its role by the local IAM gateway.
import {
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { computeQueueName } from "../../lib/compute/queue-name.js";
import { resources } from "../../lib/config.js";
import { COMPUTE_QUEUE, DLQ_SUFFIX } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, hostsByName, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let admin: Client;

beforeAll(async () => {
  let client: Client;
  ({ runtime, client } = await startTestRuntime({ hosts: 3 }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const queueOf = (host: string) => computeQueueName(resources().computeQueuePrefix, host, DLQ_SUFFIX);
const exists = async (QueueName: string) =>
  sqsClient()
    .send(new GetQueueUrlCommand({ QueueName }))
    .then(
      () => true,
      (e: Error) => {
        if (/QueueDoesNotExist|NonExistentQueue/.test(e.name)) return false;
        throw e;
      },
    );
const visibilityOf = async (QueueUrl: string) =>
  (await sqsClient().send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["VisibilityTimeout"] })))
    .Attributes?.VisibilityTimeout;

it("deleting an idle service deletes its queue and DLQ; its agent's next registration creates them again", async () => {
  expect(await exists(queueOf("host-3"))).toBe(true);
  expect((await admin.delete("/v2.1/os-services/host-3")).status).toBe(204);
  expect(await exists(queueOf("host-3"))).toBe(false);
  expect(await exists(`${queueOf("host-3")}${DLQ_SUFFIX}`)).toBe(false);

  await runtime.restartHost("host-3");
  const back = await eventually(
    async () => (await admin.get("/v2.1/os-services?host=host-3")).body.services,
    (s) => s.length === 1,
  );
  expect(back[0]).toMatchObject({ host: "host-3", status: "enabled" });
  expect(await exists(queueOf("host-3"))).toBe(true);
  expect(await exists(`${queueOf("host-3")}${DLQ_SUFFIX}`)).toBe(true);
});

it("409 while the host's queues hold messages; forced down, the service goes with its queues", async () => {
  // a dead host: what is cast to it stays in its queue
  await runtime.killHost("host-1");
  const queueUrl = (await hostsByName()).get("host-1")!.queue_url;
  await sqsClient().send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "{}" }));
  const refused = await admin.delete("/v2.1/os-services/host-1");
  expect(refused.status).toBe(409);
  expect(refused.body.conflictingRequest.message).toMatch(
    /^Unable to delete compute service whose queues still hold 1 message\(s\)\. .*force the service down/,
  );
  expect(await exists(queueOf("host-1"))).toBe(true);
  // still a service, in its aggregates and zones as before
  expect((await admin.get("/v2.1/os-services?host=host-1")).body.services).toHaveLength(1);

  const forced = await admin.at("2.11").call("PUT", "/v2.1/os-services/force-down", {
    host: "host-1",
    binary: "nova-compute",
    forced_down: true,
  });
  expect(forced.status).toBe(200);
  expect((await admin.delete("/v2.1/os-services/host-1")).status).toBe(204);
  expect(await exists(queueOf("host-1"))).toBe(false);
  expect(await exists(`${queueOf("host-1")}${DLQ_SUFFIX}`)).toBe(false);
});

it("a host whose queue drifted from the spec registers, and compute-events sets it back", async () => {
  const queueUrl = (await hostsByName()).get("host-2")!.queue_url;
  await sqsClient().send(
    new SetQueueAttributesCommand({ QueueUrl: queueUrl, Attributes: { VisibilityTimeout: "45" } }),
  );
  await runtime.restartHost("host-2");
  expect(
    await eventually(
      () => visibilityOf(queueUrl),
      (v) => v === String(COMPUTE_QUEUE.visibilityTimeout),
    ),
  ).toBe(String(COMPUTE_QUEUE.visibilityTimeout));
  const id = await admin.createServer({ name: "after-drift", availability_zone: "nova:host-2" });
  expect((await admin.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
});
