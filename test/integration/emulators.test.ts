// The embedded emulators through the real SDK clients, configured only by the environment
// (AWS_ENDPOINT_URL_*), as lib/aws/clients.ts configures them.
import {
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from "@aws-sdk/client-dynamodb";
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ensureQueueWithDlq } from "../../lib/aws/queues.js";
import {
  BUILD_REQUESTS_QUEUE,
  COMPUTE_QUEUE,
  DLQ_RETENTION_SECONDS,
  DLQ_SUFFIX,
  INSTANCES_BY_PROJECT_INDEX,
} from "../../lib/resources.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";
import { createQueues, createTables, localTables, runSuffix } from "../../local/tables.js";

// NOVALESS_EXTERNAL_AWS=1: the DynamoDB and SQS outlive this file and serve other runs, so its
// tables and queues get names of their own, and what only the embedded servers promise is skipped.
const external = process.env.NOVALESS_EXTERNAL_AWS === "1";
if (external) {
  console.warn(
    "SKIPPED: the embedded emulators' binding and shutdown (NOVALESS_EXTERNAL_AWS=1: DynamoDB and SQS run elsewhere)",
  );
}
const suffix = runSuffix();
const tables = localTables(suffix);
const buildRequests = { ...BUILD_REQUESTS_QUEUE, localName: `${BUILD_REQUESTS_QUEUE.localName}${suffix}` };

describe("local emulators (dynalite, fauxqs)", () => {
  let emulators: Emulators;
  let restoreEnv: () => void;
  let ddb: DynamoDBClient;
  let sqs: SQSClient;

  beforeAll(async () => {
    emulators = await startEmulators();
    restoreEnv = applyEnv(emulators.env);
    ddb = new DynamoDBClient({});
    sqs = new SQSClient({});
  });

  afterAll(async () => {
    ddb?.destroy();
    sqs?.destroy();
    restoreEnv?.();
    await emulators?.stop();
  });

  it.skipIf(external)("listens on 127.0.0.1 only and exposes the SDK environment", () => {
    for (const url of [emulators.endpoints.dynamodb, emulators.endpoints.sqs]) {
      expect(new URL(url).hostname).toBe("127.0.0.1");
      expect(Number(new URL(url).port)).toBeGreaterThan(0);
    }
    expect(emulators.endpoints.sfn).toBeUndefined();
    expect(emulators.env).toMatchObject({
      AWS_ENDPOINT_URL_DYNAMODB: emulators.endpoints.dynamodb,
      AWS_ENDPOINT_URL_SQS: emulators.endpoints.sqs,
      AWS_REGION: "us-east-1",
    });
    expect(emulators.env.AWS_ACCESS_KEY_ID).toBeTruthy();
    expect(emulators.env.AWS_SECRET_ACCESS_KEY).toBeTruthy();
    expect(process.env.AWS_ENDPOINT_URL_SQS).toBe(emulators.endpoints.sqs);
  });

  it("creates every table of the stack, idempotently, and stores and queries items", async () => {
    await createTables(ddb, tables);
    await createTables(ddb, tables);
    for (const spec of tables) {
      const { Table } = await ddb.send(new DescribeTableCommand({ TableName: spec.localName }));
      expect(Table?.TableStatus).toBe("ACTIVE");
      expect(Table?.KeySchema).toEqual([
        { AttributeName: spec.partitionKey, KeyType: "HASH" },
        ...(spec.sortKey ? [{ AttributeName: spec.sortKey, KeyType: "RANGE" }] : []),
      ]);
      expect(Table?.BillingModeSummary?.BillingMode).toBe("PAY_PER_REQUEST");
      // A set: DynamoDB Local (LocalStack's) lists a table's indexes in an order of its own.
      expect(new Set((Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName))).toEqual(
        new Set(spec.gsis.map((g) => g.indexName)),
      );
    }

    const instances = tables.find((t) => t.id === "Instances")!.localName;
    const item = {
      id: { S: "3f1e7a52-9b0c-4d1e-8f2a-5c6b7d8e9f01" },
      project_id: { S: "p1" },
      created_at: { S: "2024-01-01T00:00:00Z" },
      vm_state: { S: "building" },
    };
    await ddb.send(new PutItemCommand({ TableName: instances, Item: item }));
    const got = await ddb.send(
      new GetItemCommand({ TableName: instances, Key: { id: item.id }, ConsistentRead: true }),
    );
    expect(got.Item).toEqual(item);
    const byProject = await ddb.send(
      new QueryCommand({
        TableName: instances,
        IndexName: INSTANCES_BY_PROJECT_INDEX,
        KeyConditionExpression: "project_id = :p",
        ExpressionAttributeValues: { ":p": { S: "p1" } },
      }),
    );
    expect(byProject.Items?.map((i) => i.id?.S)).toEqual([item.id.S]);
  });

  it("creates the build-requests queue and its DLQ with the stack's attributes", async () => {
    const first = await createQueues(sqs, buildRequests);
    const again = await createQueues(sqs, buildRequests);
    expect(again).toEqual(first);
    // Queue URLs point at the endpoint itself, so a client that sends calls to its QueueUrl's host
    // (the SDK's default) reaches fauxqs.
    expect(new URL(first.buildRequestsQueueUrl).origin).toBe(emulators.endpoints.sqs);
    expect(first.buildRequestsQueueUrl.endsWith(`/${buildRequests.localName}`)).toBe(true);
    expect(first.buildRequestsDlqUrl.endsWith(`/${buildRequests.localName}${DLQ_SUFFIX}`)).toBe(true);

    const attrs = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: first.buildRequestsQueueUrl, AttributeNames: ["All"] }),
    );
    const dlqAttrs = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: first.buildRequestsDlqUrl, AttributeNames: ["All"] }),
    );
    expect(attrs.Attributes?.VisibilityTimeout).toBe(String(BUILD_REQUESTS_QUEUE.visibilityTimeout));
    expect(JSON.parse(attrs.Attributes?.RedrivePolicy ?? "{}")).toEqual({
      deadLetterTargetArn: dlqAttrs.Attributes?.QueueArn,
      maxReceiveCount: BUILD_REQUESTS_QUEUE.maxReceiveCount,
    });
    expect(dlqAttrs.Attributes?.MessageRetentionPeriod).toBe(String(DLQ_RETENTION_SECONDS));
  });

  it("sends, receives and deletes a message without the SDK's QueueUrl/endpoint warning", async () => {
    const warn = vi.spyOn(console, "warn");
    try {
      const { buildRequestsQueueUrl: QueueUrl } = await createQueues(sqs, buildRequests);
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: JSON.stringify({ hello: "nova" }) }));
      const got = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1, MaxNumberOfMessages: 10 }),
      );
      expect(got.Messages?.map((m) => JSON.parse(m.Body!))).toEqual([{ hello: "nova" }]);
      await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: got.Messages![0]!.ReceiptHandle! }));
      const empty = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 0 }));
      expect(empty.Messages ?? []).toEqual([]);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it("moves a message to the DLQ after maxReceiveCount receives", async () => {
    const spec = { ...COMPUTE_QUEUE, visibilityTimeout: 1, maxReceiveCount: 2 };
    const { queueUrl, dlqUrl } = await ensureQueueWithDlq(
      `${COMPUTE_QUEUE.localName}redrive-host${suffix}`,
      spec,
      sqs,
    );
    expect(
      await ensureQueueWithDlq(`${COMPUTE_QUEUE.localName}redrive-host${suffix}`, spec, sqs),
    ).toMatchObject({
      queueUrl,
      dlqUrl,
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "poison" }));

    for (let receive = 1; receive <= spec.maxReceiveCount; receive++) {
      // Long polling sees the message again once its 1 s visibility timeout has passed.
      const got = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          WaitTimeSeconds: 3,
          MessageSystemAttributeNames: ["All"],
        }),
      );
      expect(got.Messages?.map((m) => m.Body)).toEqual(["poison"]);
      expect(got.Messages?.[0]?.Attributes?.ApproximateReceiveCount).toBe(String(receive));
    }
    // The receive past maxReceiveCount moves it instead of delivering it, as SQS does. When the
    // 1 s visibility timeout ends is the server's to say (LocalStack's timer ticks about once a
    // second), so receive until the DLQ holds it, within a deadline: the queue never delivers it.
    let dead: string[] = [];
    for (const deadline = Date.now() + 10_000; dead.length === 0 && Date.now() < deadline; ) {
      const past = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));
      expect(past.Messages ?? []).toEqual([]);
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl, WaitTimeSeconds: 0 }));
      dead = (got.Messages ?? []).map((m) => m.Body!);
    }
    expect(dead).toEqual(["poison"]);
  });
});

describe("startEmulators / stop", () => {
  it.skipIf(external)("stops every server it started, and a second stop is harmless", async () => {
    const emulators = await startEmulators();
    const ddb = new DynamoDBClient({
      endpoint: emulators.endpoints.dynamodb,
      region: "us-east-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      maxAttempts: 1,
    });
    try {
      await createTables(ddb);
      await emulators.stop();
      await emulators.stop();
      await expect(fetch(`${emulators.endpoints.sqs}/health`)).rejects.toThrow();
      await expect(fetch(emulators.endpoints.dynamodb)).rejects.toThrow();
    } finally {
      ddb.destroy();
      await emulators.stop();
    }
  });

  it("restores the previous environment", () => {
    const before = process.env.AWS_ENDPOINT_URL_SQS;
    const restore = applyEnv({ AWS_ENDPOINT_URL_SQS: "http://127.0.0.1:1" });
    expect(process.env.AWS_ENDPOINT_URL_SQS).toBe("http://127.0.0.1:1");
    restore();
    expect(process.env.AWS_ENDPOINT_URL_SQS).toBe(before);
  });
});
