// Per-host queues at fleet size, on the local SQS held to SQS's limits (local/sqs-limits.ts):
// every host DLQ is found past 1,000 queues, and a host registers again whatever SQS stored.
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetClients, sqsClient } from "../../lib/aws/clients.js";
import { listDeadLetterQueues } from "../../lib/aws/dead-letters.js";
import {
  deleteQueueWithDlq,
  ensureQueueWithDlq,
  queuedMessages,
  redrivePolicy,
} from "../../lib/aws/queues.js";
import { computeQueueName } from "../../lib/compute/queue-name.js";
import { COMPUTE_QUEUE, DLQ_SUFFIX } from "../../lib/resources.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";
import { runSuffix } from "../../local/tables.js";
import { operatorOnly } from "./local-aws.js";

const principals = operatorOnly();
const PREFIX = `fleet${runSuffix()}-compute-`;
// 1,200 queues: past what one ListQueues answers without MaxResults (the fleet the LocalStack issue
// saw os-dead-letters list 505 of, against an SQS that pages as AWS does)
const HOSTS = 600;
const queueOf = (host: string) => computeQueueName(PREFIX, host, DLQ_SUFFIX);

let emulators: Emulators;
let restore: (() => void) | undefined;
beforeAll(async () => {
  emulators = await startEmulators({ iam: { policy: { principals, resource: [] } } });
  restore = applyEnv({ ...emulators.env, NOVALESS_COMPUTE_QUEUE_PREFIX: PREFIX });
  resetClients();
});
afterAll(async () => {
  resetClients();
  restore?.();
  await emulators?.stop();
});

const attributesOf = async (url: string) =>
  (await sqsClient().send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["All"] })))
    .Attributes!;

describe("a fleet's queues", () => {
  it("os-dead-letters (and novaless-dlq) see every host's DLQ past 1,000 queues", async () => {
    const hosts = Array.from({ length: HOSTS }, (_, i) => `cn-${String(i).padStart(4, "0")}.example.org`);
    for (let i = 0; i < hosts.length; i += 40) {
      await Promise.all(hosts.slice(i, i + 40).map((h) => ensureQueueWithDlq(queueOf(h), COMPUTE_QUEUE)));
    }
    // the hosts' DLQs only: against an external AWS the flow's own DLQs are listed too
    const dlqs = (await listDeadLetterQueues()).filter((q) => q.name.startsWith(PREFIX));
    expect(dlqs.map((q) => q.name)).toEqual(
      hosts.map((h) => `${queueOf(h)}${DLQ_SUFFIX}`).sort((a, b) => a.localeCompare(b)),
    );
    expect(dlqs.every((q) => q.sourceUrl === q.url.slice(0, -DLQ_SUFFIX.length))).toBe(true);
  }, 120_000);

  it("a restarting host registers again: the same queues, the redrive policy in SQS's own form", async () => {
    const name = queueOf("again.example.org");
    const first = await ensureQueueWithDlq(name, COMPUTE_QUEUE);
    const again = await ensureQueueWithDlq(name, COMPUTE_QUEUE);
    expect(again).toEqual(first);
    // what GetQueueAttributes answers, character for character (local/sqs-limits.ts cites AWS)
    expect(redrivePolicy(first.dlqArn, 5)).toBe(
      `{"deadLetterTargetArn":"${first.dlqArn}","maxReceiveCount":5}`,
    );
  });

  it("a host whose queues drifted from the spec (an upgrade, an operator) registers, and they are set back", async () => {
    const name = queueOf("drifted.example.org");
    // as an older release left them: a longer visibility timeout, another maxReceiveCount sent as
    // a string, a shorter DLQ retention
    const dlq = await sqsClient().send(
      new CreateQueueCommand({
        QueueName: `${name}${DLQ_SUFFIX}`,
        Attributes: { MessageRetentionPeriod: "86400" },
      }),
    );
    const dlqArn = (await attributesOf(dlq.QueueUrl!)).QueueArn!;
    await sqsClient().send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: {
          VisibilityTimeout: "45",
          RedrivePolicy: `{"maxReceiveCount":"3", "deadLetterTargetArn":"${dlqArn}"}`,
        },
      }),
    );
    const q = await ensureQueueWithDlq(name, COMPUTE_QUEUE, undefined, {
      "novaless-host": "drifted.example.org",
    });
    expect(q.dlqUrl).toBe(dlq.QueueUrl);
    const a = await attributesOf(q.queueUrl);
    expect(a.VisibilityTimeout).toBe(String(COMPUTE_QUEUE.visibilityTimeout));
    expect(JSON.parse(a.RedrivePolicy!)).toEqual({ deadLetterTargetArn: dlqArn, maxReceiveCount: 5 });
    expect((await attributesOf(q.dlqUrl)).MessageRetentionPeriod).toBe("1209600");
    // and from then on the plain path: CreateQueue matches again
    expect(await ensureQueueWithDlq(name, COMPUTE_QUEUE)).toEqual(q);
  });

  it("a host's queues are counted (queue and DLQ, visible or not) and deleted together", async () => {
    const q = await ensureQueueWithDlq(queueOf("leaving.example.org"), COMPUTE_QUEUE);
    expect(await queuedMessages(q.queueUrl)).toBe(0);
    await sqsClient().send(new SendMessageCommand({ QueueUrl: q.queueUrl, MessageBody: "a" }));
    await sqsClient().send(
      new SendMessageCommand({ QueueUrl: q.dlqUrl, MessageBody: "b", DelaySeconds: 60 }),
    );
    expect(await queuedMessages(q.queueUrl)).toBe(2);
    await deleteQueueWithDlq(q.queueUrl);
    for (const QueueName of [
      queueOf("leaving.example.org"),
      `${queueOf("leaving.example.org")}${DLQ_SUFFIX}`,
    ]) {
      await expect(sqsClient().send(new GetQueueUrlCommand({ QueueName }))).rejects.toThrow(/does not exist/);
    }
    // gone already: counted as empty, deleted again without error (a retried delete)
    expect(await queuedMessages(q.queueUrl)).toBe(0);
    await deleteQueueWithDlq(q.queueUrl);
  });
});
