// Reads of the Allocations table (pk consumer, sk host): one item per claim. Writes are in
// claims.ts and audit.ts, always in one transaction with the provider item they count on.
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { queryAll, scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import type { AllocationRecord } from "./types.js";

export async function getAllocation(consumer: string, host: string): Promise<AllocationRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({
      TableName: resources().allocationsTable,
      Key: { consumer, host },
      ConsistentRead: true,
    }),
  );
  return r.Item as AllocationRecord | undefined;
}

/** Every claim of one consumer, on any host (consistent): one Query. */
export function consumerAllocations(consumer: string): Promise<AllocationRecord[]> {
  return queryAll<AllocationRecord>({
    TableName: resources().allocationsTable,
    KeyConditionExpression: "#c = :c",
    ExpressionAttributeNames: { "#c": "consumer" },
    ExpressionAttributeValues: { ":c": consumer },
    ConsistentRead: true,
  });
}

/**
 * Every allocation, or one host's (consistent Scan; the table has no index by host, so this is
 * for the audit and the admin's os-hypervisors, never for a build's path).
 */
export function listAllocations(opts: { host?: string } = {}): Promise<AllocationRecord[]> {
  return scanAll<AllocationRecord>({
    TableName: resources().allocationsTable,
    ConsistentRead: true,
    ...(opts.host
      ? {
          FilterExpression: "#h = :h",
          ExpressionAttributeNames: { "#h": "host" },
          ExpressionAttributeValues: { ":h": opts.host },
        }
      : {}),
  });
}
