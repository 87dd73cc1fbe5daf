// A malformed queue message goes to that queue's dead-letter queue with its reason; nothing else
// is dropped and nothing is built.
import { ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqsClient } from "../../lib/aws/clients.js";
import { DLQ_SUFFIX } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { type Client, registeredHost, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 1 }));
});
afterAll(async () => runtime?.stop());

async function deadLetters(dlqUrl: string): Promise<{ body: string; reason: string }[]> {
  const out: { body: string; reason: string }[] = [];
  for (let i = 0; i < 50 && out.length === 0; i++) {
    const r = await sqsClient().send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ["All"],
      }),
    );
    for (const m of r.Messages ?? []) {
      out.push({
        body: m.Body ?? "",
        reason: m.MessageAttributes?.["novaless.dead_letter_reason"]?.StringValue ?? "",
      });
    }
  }
  return out;
}

it("build-requests: not JSON, and JSON of the wrong shape, each dead-lettered with the reason", async () => {
  const queue = process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!;
  await sqsClient().send(new SendMessageCommand({ QueueUrl: queue, MessageBody: "not json {" }));
  const letters = await deadLetters(process.env.NOVALESS_BUILD_REQUESTS_DLQ_URL!);
  expect(letters).toEqual([{ body: "not json {", reason: expect.stringMatching(/not JSON/) }]);

  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: queue,
      MessageBody: JSON.stringify({ version: 1, instance_uuids: ["x"] }),
    }),
  );
  const [shape] = await deadLetters(process.env.NOVALESS_BUILD_REQUESTS_DLQ_URL!);
  expect(shape?.reason).toMatch(/request_id/);
  expect(shape?.reason).toMatch(/instance_uuids\.0: must be a UUID/);
});

it("a host queue: a malformed build is dead-lettered by the agent, and the host keeps working", async () => {
  const host = await registeredHost("host-1");
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: host.queue_url,
      MessageBody: JSON.stringify({ kind: "build_and_run_instance" }),
    }),
  );
  const [letter] = await deadLetters(`${host.queue_url}${DLQ_SUFFIX}`);
  expect(letter?.reason).toMatch(/version|instance_uuid/);

  const id = await client.createServer({ name: "after-poison" });
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
});
