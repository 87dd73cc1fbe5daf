// The HostChanges table: the hosts' change feed (lib/placement/feed.ts). A writer of a host item
// appends its entry once the write has landed; a reader asks which hosts changed since a stamp.
// An entry lost between the two (a crash) leaves schedulers a stale host until its next write:
// the cache is never the authority (a claim is a conditional write), and a claim conflict reads
// the host again (lib/scheduler/host-manager.ts).
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { queryAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import { log } from "../log.js";
import { changeItem, entriesAfter, FEED_SHARDS, type HostChange, stampOf } from "./feed.js";

/** The feed's entry for a write to `host` that carried `stamp(values)`. One write unit. */
export async function logChange(host: string, values: Record<string, unknown>): Promise<void> {
  await dynamo().send(
    new PutCommand({
      TableName: resources().hostChangesTable,
      Item: changeItem({ host, changed_at: stampOf(values) }),
    }),
  );
}

/**
 * logChange for a claim or a release, whose write is done whatever befalls its entry: a lost
 * entry costs other schedulers a claim conflict or a host seen fuller than it is until its next
 * write, never the claim. Failing the claim for it would be worse: its caller would try again,
 * and a release tried again finds nothing to release, so logs nothing.
 */
export async function logClaimChange(host: string, values: Record<string, unknown>): Promise<void> {
  await logChange(host, values).catch((err: unknown) =>
    log.warn("placement.feed_entry_lost", {
      host,
      changed_at: stampOf(values),
      error: err instanceof Error ? err.message : String(err),
    }),
  );
}

/** Every entry written after `since` (ISO-8601): one Query per shard, in parallel. */
export async function readChanges(since: string): Promise<HostChange[]> {
  const table = resources().hostChangesTable;
  const parts = await Promise.all(
    FEED_SHARDS.map((feed) =>
      queryAll<HostChange>({
        TableName: table,
        KeyConditionExpression: "#feed = :feed AND #at > :since",
        ProjectionExpression: "host, changed_at",
        ExpressionAttributeNames: { "#feed": "feed", "#at": "at" },
        ExpressionAttributeValues: { ":feed": feed, ":since": entriesAfter(since) },
      }),
    ),
  );
  return parts.flat();
}
