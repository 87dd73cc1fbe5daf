// DynamoDB transactions on the embedded dynalite (local/dynalite-tx.ts), through the real SDK:
// the same scenarios against Amazon's DynamoDB Local give the same outcomes, errors and reasons;
// concurrent claims of the last unit leave exactly one winner; a transaction is isolated from
// single-item writes to its items; the IAM gateway refuses a whole transaction for one item; and
// the separate dynalite process of test/external/run.ts serves transactions too.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import {
  type AttributeValue,
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactGetItemsCommand,
  type TransactGetItemsCommandInput,
  TransactWriteItemsCommand,
  type TransactWriteItemsCommandInput,
  UpdateItemCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { type Emulators, startEmulators } from "../../local/emulators.js";
import type { GatewayPrincipal } from "../../local/iam/gateway.js";
import { identityOf } from "../../local/iam/identities.js";

const CREDENTIALS = { accessKeyId: "novalesslocal", secretAccessKey: "novalesslocal" };
const clientOf = (endpoint: string, credentials = CREDENTIALS) =>
  new DynamoDBClient({ endpoint, region: "us-east-1", credentials, maxAttempts: 1 });

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

/**
 * A provider table with a GSI keyed by a write's time (as the Hosts table's change feed was until
 * 2026-11-27: the emulators must still keep any index in step with a transaction) and an
 * allocations table.
 */
async function createTables(
  client: DynamoDBClient,
  suffix: string,
): Promise<{ hosts: string; allocs: string }> {
  const hosts = `tx-hosts${suffix}`;
  const allocs = `tx-allocations${suffix}`;
  await client.send(
    new CreateTableCommand({
      TableName: hosts,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: "host", AttributeType: "S" },
        { AttributeName: "feed", AttributeType: "S" },
        { AttributeName: "changed_at", AttributeType: "S" },
      ],
      KeySchema: [{ AttributeName: "host", KeyType: "HASH" }],
      GlobalSecondaryIndexes: [
        {
          IndexName: "host-changes",
          KeySchema: [
            { AttributeName: "feed", KeyType: "HASH" },
            { AttributeName: "changed_at", KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "ALL" },
        },
      ],
    }),
  );
  await client.send(
    new CreateTableCommand({
      TableName: allocs,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: "consumer", AttributeType: "S" },
        { AttributeName: "host", AttributeType: "S" },
      ],
      KeySchema: [
        { AttributeName: "consumer", KeyType: "HASH" },
        { AttributeName: "host", KeyType: "RANGE" },
      ],
    }),
  );
  await Promise.all([tableActive(client, hosts), tableActive(client, allocs)]);
  return { hosts, allocs };
}

/**
 * A table takes writes once ACTIVE: DynamoDB answers ResourceNotFoundException while it is
 * CREATING, and dynalite does too for a tick (its CREATING ends on a timer, even at 0 ms).
 */
function tableActive(client: DynamoDBClient, TableName: string) {
  return waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName });
}

/** The claim of common.md: take `units` from the provider, Put the allocation if it is new. */
function claim(
  t: { hosts: string; allocs: string },
  host: string,
  consumer: string,
  units = 1,
  at = "2026-11-23T20:00:00.000Z",
): TransactWriteItemsCommandInput {
  return {
    TransactItems: [
      {
        Update: {
          TableName: t.hosts,
          Key: { host: S(host) },
          UpdateExpression: "SET #free = #free - :units, #changed = :at ADD #n :one",
          ConditionExpression: "#free >= :units",
          ExpressionAttributeNames: { "#free": "free", "#changed": "changed_at", "#n": "num_instances" },
          ExpressionAttributeValues: { ":units": N(units), ":at": S(at), ":one": N(1) },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        },
      },
      {
        Put: {
          TableName: t.allocs,
          Item: { consumer: S(consumer), host: S(host), attempt: N(1) },
          ConditionExpression: "attribute_not_exists(#c)",
          ExpressionAttributeNames: { "#c": "consumer" },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        },
      },
    ],
  };
}

type Step =
  | { write: TransactWriteItemsCommandInput; note: string; sameAnswerOnly?: "name" | "capacity" }
  | { get: TransactGetItemsCommandInput; note: string; sameAnswerOnly?: "name" | "capacity" };

/** What a call came to, in terms both databases can be compared on. */
interface Outcome {
  note: string;
  ok?: { ConsumedCapacity?: unknown; Responses?: unknown };
  error?: { name: string; message?: string; reasons?: unknown };
}

async function outcome(client: DynamoDBClient, step: Step): Promise<Outcome> {
  try {
    const r =
      "write" in step
        ? await client.send(new TransactWriteItemsCommand(step.write))
        : await client.send(new TransactGetItemsCommand(step.get));
    const ok: Outcome["ok"] = {};
    // By table name: DynamoDB does not order the tables of ConsumedCapacity.
    if (r.ConsumedCapacity) {
      ok.ConsumedCapacity =
        step.sameAnswerOnly === "capacity"
          ? "(not compared)"
          : [...r.ConsumedCapacity].sort((a, b) => String(a.TableName).localeCompare(String(b.TableName)));
    }
    if ("Responses" in r) ok.Responses = r.Responses;
    return { note: step.note, ok };
  } catch (e) {
    const err = e as Error & { CancellationReasons?: unknown; $fault?: string };
    if (!err.$fault) throw e;
    return {
      note: step.note,
      error: {
        name: err.name,
        ...(step.sameAnswerOnly === "name" ? {} : { message: err.message }),
        ...(err.CancellationReasons ? { reasons: err.CancellationReasons } : {}),
      },
    };
  }
}

/**
 * The scenarios, in order, on fresh tables. `sameAnswerOnly` marks where dynalite follows
 * DynamoDB's documentation or its own wording rather than DynamoDB Local:
 * - "name": a missing table is "Requested resource not found" (DynamoDB's and dynalite's text;
 *   DynamoDB Local says "Cannot do operations on a non-existent table"); more than 100 items
 *   carries DynamoDB's "1 validation error detected: ..." prefix, which DynamoDB Local drops;
 * - "capacity": a Delete of a missing item costs 2 units, as every transactional write per KB
 *   (DynamoDB Local charges 1); a repeated ClientRequestToken costs the read units DynamoDB
 *   documents for it (DynamoDB Local reports the write units again).
 */
function scenarios(t: { hosts: string; allocs: string }): Step[] {
  const put = (host: string, free: number): Step => ({
    note: `seed ${host}`,
    write: {
      TransactItems: [
        {
          Put: {
            TableName: t.hosts,
            Item: { host: S(host), free: N(free), feed: S("0"), changed_at: S("2026-11-23T19:00:00.000Z") },
          },
        },
      ],
    },
  });
  return [
    put("node-1", 2),
    put("node-2", 1),
    { note: "claim 1 of 2", write: { ...claim(t, "node-1", "vm-a"), ReturnConsumedCapacity: "INDEXES" } },
    { note: "same consumer again: the Put's condition fails", write: claim(t, "node-1", "vm-a") },
    { note: "claim 1 of 1 left", write: { ...claim(t, "node-1", "vm-b"), ReturnConsumedCapacity: "TOTAL" } },
    {
      note: "no unit left: the Update's condition fails, old item returned",
      write: claim(t, "node-1", "vm-c"),
    },
    { note: "two units asked of one", write: claim(t, "node-2", "vm-c", 2) },
    {
      note: "ConditionCheck + Delete (release)",
      sameAnswerOnly: "capacity",
      write: {
        ReturnConsumedCapacity: "INDEXES",
        TransactItems: [
          {
            ConditionCheck: {
              TableName: t.hosts,
              Key: { host: S("node-1") },
              ConditionExpression: "attribute_exists(#h)",
              ExpressionAttributeNames: { "#h": "host" },
            },
          },
          { Delete: { TableName: t.allocs, Key: { consumer: S("vm-b"), host: S("node-1") } } },
          { Delete: { TableName: t.allocs, Key: { consumer: S("vm-never"), host: S("node-1") } } },
        ],
      },
    },
    {
      note: "failing ConditionChecks: both reasons, one with the item",
      write: {
        TransactItems: [
          {
            ConditionCheck: {
              TableName: t.hosts,
              Key: { host: S("node-1") },
              ConditionExpression: "attribute_not_exists(#h)",
              ExpressionAttributeNames: { "#h": "host" },
              ReturnValuesOnConditionCheckFailure: "ALL_OLD",
            },
          },
          {
            ConditionCheck: {
              TableName: t.hosts,
              Key: { host: S("node-9") },
              ConditionExpression: "attribute_exists(#h)",
              ExpressionAttributeNames: { "#h": "host" },
              ReturnValuesOnConditionCheckFailure: "ALL_OLD",
            },
          },
        ],
      },
    },
    {
      note: "key attribute updated: ValidationError reason",
      write: {
        TransactItems: [
          {
            Update: {
              TableName: t.hosts,
              Key: { host: S("node-2") },
              UpdateExpression: "SET #h = :h",
              ExpressionAttributeNames: { "#h": "host" },
              ExpressionAttributeValues: { ":h": S("node-3") },
            },
          },
        ],
      },
    },
    {
      note: "key of the wrong type: ValidationError reason",
      write: { TransactItems: [{ Put: { TableName: t.hosts, Item: { host: N(4) } } }] },
    },
    {
      note: "an allocation grows to 300 KB",
      write: {
        TransactItems: [
          {
            Update: {
              TableName: t.allocs,
              Key: { consumer: S("vm-a"), host: S("node-1") },
              UpdateExpression: "SET #p = :p",
              ExpressionAttributeNames: { "#p": "padding" },
              ExpressionAttributeValues: { ":p": S("x".repeat(300_000)) },
            },
          },
        ],
      },
    },
    {
      note: "and past 400 KB: ValidationError reason",
      write: {
        TransactItems: [
          {
            Update: {
              TableName: t.allocs,
              Key: { consumer: S("vm-a"), host: S("node-1") },
              UpdateExpression: "SET #p = :p",
              ExpressionAttributeNames: { "#p": "more" },
              ExpressionAttributeValues: { ":p": S("x".repeat(200_000)) },
            },
          },
        ],
      },
    },
    { note: "empty list", write: { TransactItems: [] } },
    {
      note: "101 items",
      sameAnswerOnly: "name",
      write: {
        TransactItems: Array.from({ length: 101 }, (_, i) => ({
          Put: { TableName: t.allocs, Item: { consumer: S(`vm-${i}`), host: S("node-1") } },
        })),
      },
    },
    {
      note: "two operations on one item",
      write: {
        TransactItems: [
          { Put: { TableName: t.allocs, Item: { consumer: S("vm-d"), host: S("node-1") } } },
          { Delete: { TableName: t.allocs, Key: { consumer: S("vm-d"), host: S("node-1") } } },
        ],
      },
    },
    {
      note: "Put of an item over 400 KB",
      write: {
        TransactItems: [
          {
            Put: {
              TableName: t.allocs,
              Item: { consumer: S("vm-big"), host: S("node-1"), padding: S("x".repeat(410_000)) },
            },
          },
        ],
      },
    },
    {
      note: "missing table",
      sameAnswerOnly: "name",
      write: { TransactItems: [{ Put: { TableName: `${t.hosts}-none`, Item: { host: S("x") } } }] },
    },
    {
      note: "an unused expression value",
      write: {
        TransactItems: [
          {
            ConditionCheck: {
              TableName: t.hosts,
              Key: { host: S("node-1") },
              ConditionExpression: "attribute_exists(#h)",
              ExpressionAttributeNames: { "#h": "host" },
              ExpressionAttributeValues: { ":unused": N(1) },
            },
          },
        ],
      },
    },
    {
      note: "a key attribute missing",
      write: { TransactItems: [{ Delete: { TableName: t.allocs, Key: { consumer: S("vm-a") } } }] },
    },
    {
      note: "TransactGetItems: present, missing, projected",
      get: {
        ReturnConsumedCapacity: "TOTAL",
        TransactItems: [
          { Get: { TableName: t.hosts, Key: { host: S("node-1") } } },
          { Get: { TableName: t.allocs, Key: { consumer: S("vm-zz"), host: S("node-1") } } },
          {
            Get: {
              TableName: t.allocs,
              Key: { consumer: S("vm-a"), host: S("node-1") },
              ProjectionExpression: "#c, attempt",
              ExpressionAttributeNames: { "#c": "consumer" },
            },
          },
        ],
      },
    },
    {
      note: "TransactGetItems: one item twice",
      get: {
        TransactItems: [
          { Get: { TableName: t.hosts, Key: { host: S("node-1") } } },
          { Get: { TableName: t.hosts, Key: { host: S("node-1") } } },
        ],
      },
    },
    {
      note: "TransactGetItems: capacity by table",
      get: {
        ReturnConsumedCapacity: "INDEXES",
        TransactItems: [{ Get: { TableName: t.hosts, Key: { host: S("node-2") } } }],
      },
    },
    {
      note: "Delete with a key of the wrong type: ValidationError reason",
      write: { TransactItems: [{ Delete: { TableName: t.hosts, Key: { host: N(1) } } }] },
    },
    {
      note: "Delete with an extra key attribute",
      write: {
        TransactItems: [{ Delete: { TableName: t.hosts, Key: { host: S("node-1"), other: S("x") } } }],
      },
    },
    {
      note: "an index key of the wrong type: ValidationError reason",
      write: {
        TransactItems: [
          { Put: { TableName: t.hosts, Item: { host: S("node-5"), feed: S("0"), changed_at: N(5) } } },
        ],
      },
    },
    {
      note: "ConditionCheck without a condition",
      write: {
        TransactItems: [
          { Put: { TableName: t.allocs, Item: { consumer: S("vm-e"), host: S("node-1") } } },
          { ConditionCheck: { TableName: t.hosts, Key: { host: S("node-1") } } } as never,
        ],
      },
    },
    {
      note: "Update of a missing item creates it; ReturnValues NONE on a passing Put",
      write: {
        ReturnConsumedCapacity: "INDEXES",
        TransactItems: [
          {
            Update: {
              TableName: t.hosts,
              Key: { host: S("node-6") },
              UpdateExpression: "SET #free = :f, feed = :feed, changed_at = :at",
              ConditionExpression: "attribute_not_exists(#h)",
              ExpressionAttributeNames: { "#free": "free", "#h": "host" },
              ExpressionAttributeValues: {
                ":f": N(3),
                ":feed": S("2"),
                ":at": S("2026-11-23T21:00:00.000Z"),
              },
            },
          },
          {
            Put: {
              TableName: t.allocs,
              Item: { consumer: S("vm-f"), host: S("node-6") },
              ReturnValuesOnConditionCheckFailure: "NONE",
            },
          },
        ],
      },
    },
    {
      note: "a failing Delete without ALL_OLD: no item in the reason",
      write: {
        TransactItems: [
          {
            Delete: {
              TableName: t.allocs,
              Key: { consumer: S("vm-f"), host: S("node-6") },
              ConditionExpression: "attempt = :two",
              ExpressionAttributeValues: { ":two": N(2) },
            },
          },
        ],
      },
    },
    { note: "token: first", write: { ...claim(t, "node-6", "vm-g"), ClientRequestToken: "vm-g-1" } },
    {
      note: "token: repeated (DynamoDB documents read units for the repeat)",
      sameAnswerOnly: "capacity",
      write: { ...claim(t, "node-6", "vm-g"), ClientRequestToken: "vm-g-1", ReturnConsumedCapacity: "TOTAL" },
    },
    {
      note: "token: the same token, another request",
      write: { ...claim(t, "node-6", "vm-h"), ClientRequestToken: "vm-g-1" },
    },
    {
      note: "token: a cancelled one",
      write: { ...claim(t, "node-6", "vm-i", 9), ClientRequestToken: "vm-i-1" },
    },
    {
      note: "token: the cancelled one again, passing now",
      write: { ...claim(t, "node-6", "vm-i", 1), ClientRequestToken: "vm-i-1" },
    },
  ];
}

/** Runs the scenarios, then reads both tables whole (sorted), for comparison. */
async function runScenarios(client: DynamoDBClient, suffix: string) {
  const t = await createTables(client, suffix);
  const outcomes: Outcome[] = [];
  for (const step of scenarios(t)) outcomes.push(await outcome(client, step));
  const scan = async (table: string) =>
    ((await client.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? [])
      .map((i) =>
        JSON.stringify(Object.fromEntries(Object.entries(i).sort(([a], [b]) => a.localeCompare(b)))),
      )
      .sort();
  return { outcomes, hosts: await scan(t.hosts), allocs: await scan(t.allocs) };
}

const suffix = () =>
  process.env.NOVALESS_EXTERNAL_AWS === "1" ? `-${Math.random().toString(36).slice(2, 8)}` : "";

let emulators: Emulators;
let client: DynamoDBClient;
beforeAll(async () => {
  emulators = await startEmulators();
  client = clientOf(emulators.endpoints.dynamodb);
});
afterAll(async () => {
  client?.destroy();
  await emulators?.stop();
});

describe("transactions on dynalite", () => {
  it("a claim and its conflict, as the SDK parses them", async () => {
    const t = await createTables(client, `-sdk${suffix()}`);
    await client.send(new PutItemCommand({ TableName: t.hosts, Item: { host: S("node-1"), free: N(1) } }));
    await client.send(new TransactWriteItemsCommand(claim(t, "node-1", "vm-1")));
    const e = await client.send(new TransactWriteItemsCommand(claim(t, "node-1", "vm-2"))).then(
      () => undefined,
      (err: Error & { CancellationReasons?: unknown }) => err,
    );
    expect(e?.name).toBe("TransactionCanceledException");
    expect(e?.CancellationReasons).toEqual([
      {
        Code: "ConditionalCheckFailed",
        Message: "The conditional request failed",
        Item: {
          host: S("node-1"),
          free: N(0),
          num_instances: N(1),
          changed_at: S("2026-11-23T20:00:00.000Z"),
        },
      },
      { Code: "None" },
    ]);
    // Nothing of the cancelled transaction was written.
    const vm2 = await client.send(
      new GetItemCommand({ TableName: t.allocs, Key: { consumer: S("vm-2"), host: S("node-1") } }),
    );
    expect(vm2.Item).toBeUndefined();
  });

  it("20 concurrent claims of the last unit: exactly one wins", async () => {
    const t = await createTables(client, `-race${suffix()}`);
    await client.send(new PutItemCommand({ TableName: t.hosts, Item: { host: S("node-1"), free: N(1) } }));
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        client.send(new TransactWriteItemsCommand(claim(t, "node-1", `vm-${i}`))),
      ),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.flatMap((r) =>
      r.status === "rejected" ? [r.reason as Error & { CancellationReasons?: { Code: string }[] }] : [],
    );
    console.log(
      `race: ${won.length} won, ${lost.length} cancelled (${lost[0]?.CancellationReasons?.map((r) => r.Code).join(", ")})`,
    );
    expect(won).toHaveLength(1);
    for (const e of lost) {
      expect(e.name).toBe("TransactionCanceledException");
      expect(e.CancellationReasons?.map((r) => r.Code)).toEqual(["ConditionalCheckFailed", "None"]);
    }
    const host = await client.send(
      new GetItemCommand({ TableName: t.hosts, Key: { host: S("node-1") }, ConsistentRead: true }),
    );
    expect(host.Item?.free).toEqual(N(0));
    expect(host.Item?.num_instances).toEqual(N(1));
    const allocations = await client.send(new ScanCommand({ TableName: t.allocs, ConsistentRead: true }));
    expect(allocations.Items).toHaveLength(1);
  });

  it("is isolated from single-item writes to its items (no lost update)", async () => {
    const t = await createTables(client, `-iso${suffix()}`);
    await client.send(new PutItemCommand({ TableName: t.hosts, Item: { host: S("node-1"), free: N(0) } }));
    const add = {
      TableName: t.hosts,
      Key: { host: S("node-1") },
      UpdateExpression: "SET #free = #free + :one",
      ExpressionAttributeNames: { "#free": "free" },
      ExpressionAttributeValues: { ":one": N(1) },
    };
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 25; i++) {
      calls.push(client.send(new UpdateItemCommand(add)));
      calls.push(
        client.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              { Update: add },
              { Put: { TableName: t.allocs, Item: { consumer: S(`vm-${i}`), host: S("node-1") } } },
            ],
          }),
        ),
      );
    }
    await Promise.all(calls);
    const host = await client.send(
      new GetItemCommand({ TableName: t.hosts, Key: { host: S("node-1") }, ConsistentRead: true }),
    );
    expect(host.Item?.free).toEqual(N(50));
  });

  it("keeps the indexes: a time-keyed index shows the item at its new sort key only", async () => {
    const t = await createTables(client, `-gsi${suffix()}`);
    await client.send(
      new PutItemCommand({
        TableName: t.hosts,
        Item: { host: S("node-1"), free: N(2), feed: S("1"), changed_at: S("2026-11-23T19:00:00.000Z") },
      }),
    );
    await client.send(
      new TransactWriteItemsCommand(claim(t, "node-1", "vm-1", 1, "2026-11-23T20:00:00.000Z")),
    );
    const changed = await client.send(
      new QueryCommand({
        TableName: t.hosts,
        IndexName: "host-changes",
        KeyConditionExpression: "#feed = :feed AND #at > :since",
        ExpressionAttributeNames: { "#feed": "feed", "#at": "changed_at" },
        ExpressionAttributeValues: { ":feed": S("1"), ":since": S("2026-11-23T18:00:00.000Z") },
      }),
    );
    expect(changed.Items?.map((i) => [i.changed_at?.S, i.free?.N])).toEqual([
      ["2026-11-23T20:00:00.000Z", "1"],
    ]);
  });

  it("an INCLUDE index whose projected attribute the item lacks: written and counted", async () => {
    const table = `tx-include${suffix()}`;
    await client.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [
          { AttributeName: "id", AttributeType: "S" },
          { AttributeName: "shard", AttributeType: "S" },
          { AttributeName: "at", AttributeType: "S" },
        ],
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
        GlobalSecondaryIndexes: [
          {
            IndexName: "changes",
            KeySchema: [
              { AttributeName: "shard", KeyType: "HASH" },
              { AttributeName: "at", KeyType: "RANGE" },
            ],
            Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: ["host", "deleted"] },
          },
        ],
      }),
    );
    await tableActive(client, table);
    // no host: dynalite's projection names it, undefined (the Instances table's `changes` index)
    const put = (at: string) => ({
      Put: { TableName: table, Item: { id: S("vm-1"), shard: S("3"), at: S(at), deleted: { BOOL: false } } },
    });
    const r = await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [put("2026-11-26T07:00:00Z")],
        ReturnConsumedCapacity: "INDEXES",
      }),
    );
    expect(r.ConsumedCapacity?.[0]?.GlobalSecondaryIndexes?.changes?.CapacityUnits).toBe(2);
    await client.send(new TransactWriteItemsCommand({ TransactItems: [put("2026-11-26T07:01:00Z")] }));
    const found = await client.send(
      new QueryCommand({
        TableName: table,
        IndexName: "changes",
        KeyConditionExpression: "#shard = :s",
        ExpressionAttributeNames: { "#shard": "shard" },
        ExpressionAttributeValues: { ":s": S("3") },
      }),
    );
    expect(found.Items?.map((i) => i.at?.S)).toEqual(["2026-11-26T07:01:00Z"]);
  });

  it("ClientRequestToken: a repeat is answered without writing again; a changed request is refused", async () => {
    const t = await createTables(client, `-token${suffix()}`);
    await client.send(new PutItemCommand({ TableName: t.hosts, Item: { host: S("node-1"), free: N(5) } }));
    const first = { ...claim(t, "node-1", "vm-1"), ClientRequestToken: "claim-vm-1-attempt-1" };
    await client.send(new TransactWriteItemsCommand(first));
    // The Put's condition would cancel a second execution: the repeat must not execute.
    await client.send(new TransactWriteItemsCommand(first));
    const host = await client.send(
      new GetItemCommand({ TableName: t.hosts, Key: { host: S("node-1") }, ConsistentRead: true }),
    );
    expect(host.Item?.free).toEqual(N(4));
    const changed = { ...claim(t, "node-1", "vm-2"), ClientRequestToken: "claim-vm-1-attempt-1" };
    await expect(client.send(new TransactWriteItemsCommand(changed))).rejects.toMatchObject({
      name: "IdempotentParameterMismatchException",
    });
    // A cancelled transaction is not remembered: its token may be used again once it can pass.
    const tooMuch = { ...claim(t, "node-1", "vm-3", 9), ClientRequestToken: "claim-vm-3" };
    await expect(client.send(new TransactWriteItemsCommand(tooMuch))).rejects.toMatchObject({
      name: "TransactionCanceledException",
    });
    await client.send(
      new UpdateItemCommand({
        TableName: t.hosts,
        Key: { host: S("node-1") },
        UpdateExpression: "SET #free = :nine",
        ExpressionAttributeNames: { "#free": "free" },
        ExpressionAttributeValues: { ":nine": N(9) },
      }),
    );
    await client.send(new TransactWriteItemsCommand(tooMuch));
  });
});

describe("transactions through the IAM gateway", () => {
  let gated: Emulators;
  afterAll(async () => {
    await gated?.stop();
  });

  it("one refused item refuses the whole transaction with AccessDeniedException", async () => {
    const ACCOUNT = "000000000000";
    const scheduler = identityOf("scheduler");
    const operator = identityOf("operator");
    const arn = (table: string) => `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/${table}`;
    const principals = new Map<string, GatewayPrincipal>([
      [
        scheduler.accessKeyId,
        {
          name: "scheduler",
          roleArn: `arn:aws:iam::${ACCOUNT}:role/novaless-scheduler`,
          sessionArn: `arn:aws:sts::${ACCOUNT}:assumed-role/novaless-scheduler/novaless-scheduler`,
          // May update providers, but not Put allocations.
          statements: [
            { Effect: "Allow", Action: ["dynamodb:UpdateItem", "dynamodb:GetItem"], Resource: ["*"] },
          ],
        },
      ],
      [
        operator.accessKeyId,
        {
          name: "operator",
          roleArn: `arn:aws:iam::${ACCOUNT}:role/novaless-operator`,
          sessionArn: `arn:aws:sts::${ACCOUNT}:assumed-role/novaless-operator/operator`,
          statements: [{ Effect: "Allow", Action: ["*"], Resource: ["*"] }],
        },
      ],
    ]);
    gated = await startEmulators({ iam: { policy: { principals, resource: [] } } });
    const admin = clientOf(gated.gateway!.endpoint, operator);
    const t = await createTables(admin, `-iam${suffix()}`);
    await admin.send(new PutItemCommand({ TableName: t.hosts, Item: { host: S("node-1"), free: N(1) } }));
    const refused = await clientOf(gated.gateway!.endpoint, scheduler)
      .send(new TransactWriteItemsCommand(claim(t, "node-1", "vm-1")))
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(refused?.name).toBe("AccessDeniedException");
    expect(refused?.message).toContain(`dynamodb:PutItem on resource: ${arn(t.allocs)}`);
    const host = await admin.send(new GetItemCommand({ TableName: t.hosts, Key: { host: S("node-1") } }));
    expect(host.Item?.free).toEqual(N(1));
    // The operator, allowed both, claims through the same gateway.
    await admin.send(new TransactWriteItemsCommand(claim(t, "node-1", "vm-1")));
    admin.destroy();
  });
});

describe("dynalite as a separate process (test/external/run.ts)", () => {
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("serves transactions", async () => {
    const server = fileURLToPath(new URL("../../local/dynalite-server.ts", import.meta.url));
    child = spawn(process.execPath, ["--import", "tsx", server], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    const endpoint = await new Promise<string>((resolve, reject) => {
      child!.stdout!.on("data", (d: Buffer) => {
        output += d.toString();
        const m = /Dynalite listening at: (\S+)/.exec(output);
        if (m?.[1]) resolve(m[1]);
      });
      child!.once("exit", (code) => reject(new Error(`dynalite-server exited (${code}): ${output}`)));
    });
    const external = clientOf(endpoint);
    const t = await createTables(external, "");
    await external.send(new PutItemCommand({ TableName: t.hosts, Item: { host: S("node-1"), free: N(1) } }));
    await external.send(new TransactWriteItemsCommand(claim(t, "node-1", "vm-1")));
    await expect(
      external.send(new TransactWriteItemsCommand(claim(t, "node-1", "vm-2"))),
    ).rejects.toMatchObject({
      name: "TransactionCanceledException",
    });
    external.destroy();
  }, 30_000);
});

const java = javaAvailable();
if (!java.ok) {
  console.warn(
    `SKIPPED: transactions, dynalite against DynamoDB Local: ${java.reason} (install Java 17 to run it)`,
  );
}

describe.skipIf(!java.ok)("transactions: dynalite and DynamoDB Local agree", () => {
  it("same outcomes, errors, cancellation reasons and final items", async () => {
    const local = await startDynamoDbLocal();
    const reference = clientOf(local.endpoint);
    try {
      const expected = await runScenarios(reference, "");
      const actual = await runScenarios(client, `-diff${suffix()}`);
      const renamed = (o: Awaited<ReturnType<typeof runScenarios>>) =>
        JSON.parse(
          JSON.stringify(o).replace(/tx-(hosts|allocations)-diff(-[a-z0-9]+)?/g, "tx-$1"),
        ) as typeof o;
      const got = renamed(actual);
      for (const [i, want] of expected.outcomes.entries()) expect(got.outcomes[i], want.note).toEqual(want);
      expect(got.hosts).toEqual(expected.hosts);
      expect(got.allocs).toEqual(expected.allocs);
      console.log(`differential: ${expected.outcomes.length} scenarios agree with DynamoDB Local`);
    } finally {
      reference.destroy();
      await local.stop();
    }
  }, 120_000);
});
