// Deletes sent in DeleteMessageBatch requests (lib/aws/delete-batch.ts), against fauxqs through the
// real SDK, the requests counted by the meter: what is handled within the wait goes in one
// request, a full batch at once, a dropped delete leaves its message to come back, and a delete
// SQS refuses fails its caller with the queue and message named.
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { resetClients, sqsClient } from "../../lib/aws/clients.js";
import { DeleteBatch } from "../../lib/aws/delete-batch.js";
import { runAs } from "../../lib/aws/identity.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";

const HOST = { accessKeyId: "LOCALDELETEBATCH0000", secretAccessKey: "h" };

describe("DeleteBatch", () => {
  let emulators: Emulators;
  let restore: () => void;
  let n = 0;

  beforeAll(async () => {
    emulators = await startEmulators();
    restore = applyEnv(emulators.env);
    resetClients();
  });

  afterAll(async () => {
    resetClients();
    restore();
    await emulators.stop();
  });

  afterEach(() => stopMeter());

  /** A fresh queue holding `count` messages, received (hidden for `visibility` s). */
  async function received(count: number, visibility = 30) {
    const queueUrl = (
      await sqsClient().send(
        new CreateQueueCommand({
          QueueName: `delete-batch-${n++}`,
          Attributes: { VisibilityTimeout: String(visibility) },
        }),
      )
    ).QueueUrl!;
    for (let i = 0; i < count; i++)
      await sqsClient().send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `m${i}` }));
    const messages = [];
    while (messages.length < count) {
      const r = await sqsClient().send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      );
      messages.push(...(r.Messages ?? []));
    }
    return { queueUrl, messages };
  }

  const visible = async (queueUrl: string) =>
    (
      await sqsClient().send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      )
    ).Messages ?? [];

  it("deletes what comes within the wait in one request", async () => {
    const { queueUrl, messages } = await received(3, 1);
    const batch = new DeleteBatch(queueUrl, { maxWaitMs: 150 });
    startMeter();
    const started = Date.now();
    await runAs(HOST, async () => {
      const first = batch.delete(messages[0]!.ReceiptHandle!, messages[0]!.MessageId);
      await new Promise((r) => setTimeout(r, 50));
      await Promise.all([
        first,
        ...messages.slice(1).map((m) => batch.delete(m.ReceiptHandle!, m.MessageId)),
      ]);
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(meterReading({ reset: true })[HOST.accessKeyId]!.requests).toEqual({
      "sqs:DeleteMessageBatch": 1,
    });
    // deleted: nothing comes back after the visibility timeout
    await new Promise((r) => setTimeout(r, 1200));
    expect(await visible(queueUrl)).toEqual([]);
  });

  it("a delete allowed to wait longer goes with the next one due, in one request", async () => {
    const { queueUrl, messages } = await received(2);
    const batch = new DeleteBatch(queueUrl, { maxWaitMs: 100 });
    startMeter();
    const started = Date.now();
    await runAs(HOST, async () => {
      const patient = batch.delete(messages[0]!.ReceiptHandle!, messages[0]!.MessageId, 60_000);
      await new Promise((r) => setTimeout(r, 50));
      await Promise.all([patient, batch.delete(messages[1]!.ReceiptHandle!, messages[1]!.MessageId)]);
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(meterReading({ reset: true })[HOST.accessKeyId]!.requests).toEqual({
      "sqs:DeleteMessageBatch": 1,
    });
  });

  it("sends a full batch at once, and a flush sends what waits", async () => {
    const { queueUrl, messages } = await received(5);
    const batch = new DeleteBatch(queueUrl, { maxWaitMs: 60_000, maxEntries: 3 });
    startMeter();
    await runAs(HOST, async () => {
      await Promise.all(messages.slice(0, 3).map((m) => batch.delete(m.ReceiptHandle!, m.MessageId)));
      const rest = messages.slice(3).map((m) => batch.delete(m.ReceiptHandle!, m.MessageId));
      await batch.flush();
      await Promise.all(rest);
    });
    expect(meterReading({ reset: true })[HOST.accessKeyId]!.requests).toEqual({
      "sqs:DeleteMessageBatch": 2,
    });
  });

  it("a dropped delete is never sent: its message comes back", async () => {
    const { queueUrl, messages } = await received(1, 1);
    const batch = new DeleteBatch(queueUrl, { maxWaitMs: 60_000 });
    const pending = batch.delete(messages[0]!.ReceiptHandle!, messages[0]!.MessageId);
    batch.drop("host h died");
    await expect(pending).rejects.toThrow(
      `message ${messages[0]!.MessageId} of ${queueUrl} not deleted: host h died`,
    );
    await new Promise((r) => setTimeout(r, 1200));
    expect((await visible(queueUrl)).map((m) => m.Body)).toEqual(["m0"]);
  });

  it("a batch SQS refuses fails each caller, naming the host, queue and message", async () => {
    const { queueUrl, messages } = await received(1);
    await sqsClient().send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
    const batch = new DeleteBatch(queueUrl, { maxWaitMs: 10, owner: "compute-7" });
    const id = messages[0]!.MessageId!;
    await expect(batch.delete(messages[0]!.ReceiptHandle!, id)).rejects.toThrow(
      `delete of message ${id} from ${queueUrl} (host compute-7) failed`,
    );
  });
});
