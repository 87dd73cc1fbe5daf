// The request meter (lib/aws/meter.ts) on the clients of clients.ts, against dynalite and fauxqs
// through the real SDK: off, it changes nothing; on, it counts every call by caller and operation,
// the capacity units the answers report, refused conditional writes at their minimum charge, and
// empty long polls.
import { CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { dynamo, resetClients, sqsClient } from "../../lib/aws/clients.js";
import { runAs } from "../../lib/aws/identity.js";
import {
  meterReading,
  recordCapacity,
  SQS_BILLING_CHUNK_BYTES,
  sqsPayloadChunks,
  startMeter,
  stopMeter,
} from "../../lib/aws/meter.js";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";

const TABLE = "meter-test";
const ALICE = { accessKeyId: "LOCALALICE0000000000", secretAccessKey: "alice" };

describe("request meter", () => {
  let emulators: Emulators;
  let restore: () => void;
  let queueUrl: string;

  beforeAll(async () => {
    emulators = await startEmulators();
    restore = applyEnv(emulators.env);
    resetClients();
    await new DynamoDBClient({}).send(
      new CreateTableCommand({
        TableName: TABLE,
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    queueUrl = (await sqsClient().send(new CreateQueueCommand({ QueueName: "meter-test" }))).QueueUrl!;
  });

  afterAll(async () => {
    resetClients();
    restore();
    await emulators.stop();
  });

  afterEach(() => stopMeter());

  it("off: the answer carries no ConsumedCapacity and nothing is counted", async () => {
    startMeter();
    stopMeter();
    await dynamo().send(new PutCommand({ TableName: TABLE, Item: { pk: "off" } }));
    const got = await dynamo().send(new GetCommand({ TableName: TABLE, Key: { pk: "off" } }));
    expect(got.Item).toEqual({ pk: "off" });
    expect(got.ConsumedCapacity).toBeUndefined();
    expect(meterReading()).toEqual({});
  });

  it("on: counts calls and units by caller, refused writes at their minimum, empty polls", async () => {
    startMeter();
    await runAs(ALICE, async () => {
      await dynamo().send(new PutCommand({ TableName: TABLE, Item: { pk: "a", v: "x".repeat(1500) } }));
      const got = await dynamo().send(new GetCommand({ TableName: TABLE, Key: { pk: "a" } }));
      // The caller's own answer is untouched apart from the capacity it now carries.
      expect(got.Item?.pk).toBe("a");
      await expect(
        dynamo().send(
          new PutCommand({
            TableName: TABLE,
            Item: { pk: "a" },
            ConditionExpression: "attribute_not_exists(pk)",
          }),
        ),
      ).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
      await sqsClient().send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "m" }));
      const r = await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }));
      expect(r.Messages).toHaveLength(1);
      await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 }));
    });
    // Another identity's calls are counted apart.
    await dynamo().send(new GetCommand({ TableName: TABLE, Key: { pk: "a" } }));

    const reading = meterReading({ reset: true });
    const alice = reading[ALICE.accessKeyId]!;
    expect(alice.requests).toEqual({
      "dynamodb:PutItem": 2,
      "dynamodb:GetItem": 1,
      "sqs:SendMessage": 1,
      "sqs:ReceiveMessage": 2,
    });
    expect(alice.emptyReceives).toBe(1);
    // A 1.5 KB item: 2 write units to put; an eventually consistent read of it, half a unit.
    expect(alice.tables[TABLE]).toMatchObject({ write: 2, read: 0.5, indexRead: 0, indexWrite: 0 });
    expect(alice.conditionalFailures).toBe(1);
    expect(alice.failedWriteUnits[TABLE]).toBe(1);
    expect(reading[""]?.requests).toEqual({ "dynamodb:GetItem": 1 });
    expect(meterReading()).toEqual({});
  });

  it("bills an SQS payload a request per 64 KiB chunk, a send's and a receive's", async () => {
    startMeter();
    await runAs(ALICE, async () => {
      // 100 KiB: two chunks to send, two to receive; a small message is one request each way
      await sqsClient().send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "x".repeat(100 * 1024) }),
      );
      const r = await sqsClient().send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0, MaxNumberOfMessages: 10 }),
      );
      expect(r.Messages?.[0]?.Body).toHaveLength(100 * 1024);
      await sqsClient().send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "small" }));
    });
    const alice = meterReading({ reset: true })[ALICE.accessKeyId]!;
    expect(alice.requests).toEqual({ "sqs:SendMessage": 2, "sqs:ReceiveMessage": 1 });
    expect(alice.sqsExtraChunks).toBe(2);
    expect(
      sqsPayloadChunks("SendMessage", { MessageBody: "x".repeat(SQS_BILLING_CHUNK_BYTES) }, undefined),
    ).toBe(1);
    expect(
      sqsPayloadChunks(
        "SendMessageBatch",
        { Entries: [{ MessageBody: "x".repeat(SQS_BILLING_CHUNK_BYTES) }, { MessageBody: "y" }] },
        undefined,
      ),
    ).toBe(2);
    expect(sqsPayloadChunks("DeleteMessageBatch", { Entries: [] }, {})).toBe(1);
  });

  it("splits table and index units, with or without the Table breakdown", () => {
    startMeter();
    recordCapacity("c", "UpdateItem", {
      TableName: "t",
      CapacityUnits: 5,
      Table: { CapacityUnits: 1 },
      GlobalSecondaryIndexes: { g1: { CapacityUnits: 2 }, g2: { CapacityUnits: 2 } },
    });
    recordCapacity("c", "Query", {
      TableName: "t",
      CapacityUnits: 3,
      GlobalSecondaryIndexes: { g1: { CapacityUnits: 2.5 } },
    });
    const t = meterReading().c!.tables.t!;
    expect(t).toEqual({
      read: 0.5,
      write: 1,
      indexRead: 2.5,
      indexWrite: 4,
      indexes: { g1: { read: 2.5, write: 2 }, g2: { read: 0, write: 2 } },
    });
  });
});

// dynalite reports no index units and has no transactions: DynamoDB Local, when Java is here.
const java = javaAvailable();
describe.skipIf(!java.ok)("request meter on DynamoDB Local", () => {
  let stop: () => Promise<void>;
  let restore: () => void;

  beforeAll(async () => {
    const local = await startDynamoDbLocal();
    stop = local.stop;
    restore = applyEnv(local.env);
    resetClients();
    await new DynamoDBClient({}).send(
      new CreateTableCommand({
        TableName: TABLE,
        AttributeDefinitions: [
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "shard", AttributeType: "S" },
        ],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        GlobalSecondaryIndexes: [
          {
            IndexName: "by-shard",
            KeySchema: [{ AttributeName: "shard", KeyType: "HASH" }],
            Projection: { ProjectionType: "KEYS_ONLY" },
          },
        ],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
  }, 90_000);

  afterAll(async () => {
    resetClients();
    restore?.();
    await stop?.();
  });

  afterEach(() => stopMeter());

  it("counts index write units and a cancelled transaction's minimum charge", async () => {
    startMeter();
    await runAs(ALICE, async () => {
      await dynamo().send(new PutCommand({ TableName: TABLE, Item: { pk: "a", shard: "0" } }));
      await expect(
        dynamo().send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: { TableName: TABLE, Item: { pk: "a" }, ConditionExpression: "attribute_not_exists(pk)" },
              },
              { Put: { TableName: TABLE, Item: { pk: "b" } } },
            ],
          }),
        ),
      ).rejects.toMatchObject({ name: "TransactionCanceledException" });
    });
    const alice = meterReading()[ALICE.accessKeyId]!;
    expect(alice.tables[TABLE]).toMatchObject({
      write: 1,
      indexWrite: 1,
      indexes: { "by-shard": { write: 1 } },
    });
    expect(alice.conditionalFailures).toBe(1);
    expect(alice.failedWriteUnits[TABLE]).toBe(4);
  });

  it("charges a read that finds nothing its minimum, as AWS bills it (DynamoDB Local reports 0)", async () => {
    startMeter();
    await runAs(ALICE, async () => {
      for (const consistent of [true, false])
        await dynamo().send(
          new QueryCommand({
            TableName: TABLE,
            KeyConditionExpression: "pk = :p",
            ExpressionAttributeValues: { ":p": "nothing-here" },
            ConsistentRead: consistent,
          }),
        );
      await dynamo().send(
        new QueryCommand({
          TableName: TABLE,
          IndexName: "by-shard",
          KeyConditionExpression: "#s = :s",
          ExpressionAttributeNames: { "#s": "shard" },
          ExpressionAttributeValues: { ":s": "no-such-shard" },
        }),
      );
    });
    expect(meterReading()[ALICE.accessKeyId]!.tables[TABLE]).toMatchObject({
      read: 1.5,
      indexRead: 0.5,
      indexes: { "by-shard": { read: 0.5 } },
    });
  });

  it("bills a transaction as AWS does: 2 units per item, its index entries once", async () => {
    startMeter();
    await runAs(ALICE, async () => {
      // DynamoDB Local reports 2 table units for these three items and 2 for the one index entry
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: TABLE, Item: { pk: "t1", shard: "1" } } },
            { Put: { TableName: TABLE, Item: { pk: "t2" } } },
            {
              Update: {
                TableName: TABLE,
                Key: { pk: "t3" },
                UpdateExpression: "SET v = :v",
                ExpressionAttributeValues: { ":v": 1 },
              },
            },
          ],
        }),
      );
    });
    expect(meterReading()[ALICE.accessKeyId]!.tables[TABLE]).toMatchObject({
      write: 6,
      indexWrite: 1,
      indexes: { "by-shard": { write: 1 } },
    });
  });
});
