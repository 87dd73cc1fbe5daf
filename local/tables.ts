// The tables and queues the stack creates, created the same way against the local emulators (or
// LocalStack), from the same specs in lib/resources.ts. Everything here is idempotent.
import {
  type AttributeDefinition,
  CreateTableCommand,
  type DynamoDBClient,
  type Projection,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { ensureQueueWithDlq } from "../lib/aws/queues.js";
import {
  BUILD_REQUESTS_QUEUE,
  type Projection as ProjectionSpec,
  type QueueSpec,
  TABLES,
  type TableSpec,
} from "../lib/resources.js";

/** A spec's projection in DynamoDB's terms (a list of attributes is INCLUDE). */
export function projectionOf(p: ProjectionSpec): Projection {
  if (p === "ALL" || p === "KEYS_ONLY") return { ProjectionType: p };
  return { ProjectionType: "INCLUDE", NonKeyAttributes: p };
}

/** Every table in TABLES under its local name: string keys, on-demand, each GSI's projection. */
export async function createTables(client: DynamoDBClient, tables: TableSpec[] = TABLES): Promise<void> {
  await Promise.all(tables.map((spec) => createTable(client, spec)));
}

async function createTable(client: DynamoDBClient, spec: TableSpec): Promise<void> {
  const keys = new Set([spec.partitionKey, ...(spec.sortKey ? [spec.sortKey] : [])]);
  for (const gsi of spec.gsis) {
    keys.add(gsi.partitionKey);
    if (gsi.sortKey) keys.add(gsi.sortKey);
  }
  const attributes: AttributeDefinition[] = [...keys].map((name) => ({
    AttributeName: name,
    AttributeType: "S",
  }));
  try {
    await client.send(
      new CreateTableCommand({
        TableName: spec.localName,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: attributes,
        KeySchema: [
          { AttributeName: spec.partitionKey, KeyType: "HASH" },
          ...(spec.sortKey ? [{ AttributeName: spec.sortKey, KeyType: "RANGE" as const }] : []),
        ],
        ...(spec.gsis.length > 0
          ? {
              GlobalSecondaryIndexes: spec.gsis.map((gsi) => ({
                IndexName: gsi.indexName,
                KeySchema: [
                  { AttributeName: gsi.partitionKey, KeyType: "HASH" as const },
                  ...(gsi.sortKey ? [{ AttributeName: gsi.sortKey, KeyType: "RANGE" as const }] : []),
                ],
                Projection: projectionOf(gsi.projection),
              })),
            }
          : {}),
      }),
    );
  } catch (e) {
    if ((e as { name?: string }).name !== "ResourceInUseException") throw e;
  }
  // dynalite is ACTIVE at once; DynamoDB Local and LocalStack may take a moment.
  await waitUntilTableExists(
    { client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 },
    { TableName: spec.localName },
  );
}

/** The build-requests queue and its DLQ, as the stack makes them. */
export async function createQueues(
  client: SQSClient,
  spec: QueueSpec = BUILD_REQUESTS_QUEUE,
): Promise<{ buildRequestsQueueUrl: string; buildRequestsDlqUrl: string }> {
  const { queueUrl, dlqUrl } = await ensureQueueWithDlq(spec.localName, spec, client);
  return { buildRequestsQueueUrl: queueUrl, buildRequestsDlqUrl: dlqUrl };
}

/**
 * Table specs under names unique to this run when the AWS is shared (NOVALESS_EXTERNAL_AWS=1,
 * e.g. LocalStack), so parallel test files and earlier runs never see each other's items.
 */
export function localTables(suffix = runSuffix()): TableSpec[] {
  return TABLES.map((t) => ({ ...t, localName: `${t.localName}${suffix}` }));
}

export function runSuffix(): string {
  return process.env.NOVALESS_EXTERNAL_AWS === "1" ? `-${Math.random().toString(36).slice(2, 8)}` : "";
}
