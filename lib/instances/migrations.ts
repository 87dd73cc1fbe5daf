// Nova's migration records (os-migrations), in the Migrations table: one item per move, written
// by the API when it accepts the move and moved along by the conductor and compute-events. Every
// status change is conditioned on the status it expects, so a repeated step changes nothing.
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { unlessConditionFails } from "../aws/dynamo-errors.js";
import { queryAll, scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import { MIGRATIONS_BY_INSTANCE_INDEX } from "../resources.js";
import type { MigrationRecord, MigrationStatus } from "./types.js";

const table = () => resources().migrationsTable;

/** The item that holds the integer id counter (Nova's autoincrement); never listed. */
const COUNTER = "#counter";

/** The next integer id: one atomic ADD (a failed create leaves a gap, as an autoincrement does). */
export async function nextMigrationId(): Promise<number> {
  const r = await dynamo().send(
    new UpdateCommand({
      TableName: table(),
      Key: { uuid: COUNTER },
      UpdateExpression: "ADD next_id :one",
      ExpressionAttributeValues: { ":one": 1 },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  return Number(r.Attributes?.next_id);
}

export async function createMigration(m: MigrationRecord): Promise<void> {
  await unlessConditionFails(
    dynamo().send(
      new PutCommand({
        TableName: table(),
        Item: m,
        ConditionExpression: "attribute_not_exists(#u)",
        ExpressionAttributeNames: { "#u": "uuid" },
      }),
    ),
  );
}

export async function getMigration(uuid: string): Promise<MigrationRecord | undefined> {
  const r = await dynamo().send(new GetCommand({ TableName: table(), Key: { uuid }, ConsistentRead: true }));
  return r.Item && r.Item.uuid !== COUNTER ? (r.Item as MigrationRecord) : undefined;
}

/**
 * Move a migration to `status` (with `fields`), only from one of `from`; false when it was not
 * in one of them (a repeated step, or a move that ended otherwise).
 */
export async function updateMigration(
  uuid: string,
  from: readonly MigrationStatus[],
  status: MigrationStatus,
  fields: Partial<
    Pick<
      MigrationRecord,
      | "dest_compute"
      | "dest_node"
      | "dest_host"
      | "memory_total_bytes"
      | "memory_processed_bytes"
      | "memory_remaining_bytes"
    >
  > = {},
  now = new Date(),
): Promise<boolean> {
  const values: Record<string, unknown> = { ":s": status, ":now": now.toISOString() };
  const sets = ["#st = :s", "updated_at = :now"];
  for (const [k, v] of Object.entries(fields)) {
    sets.push(`${k} = :${k}`);
    values[`:${k}`] = v;
  }
  from.forEach((f, i) => {
    values[`:f${i}`] = f;
  });
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { uuid },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: `attribute_exists(#u) AND #st IN (${from.map((_, i) => `:f${i}`).join(", ")})`,
        ExpressionAttributeNames: { "#u": "uuid", "#st": "status" },
        ExpressionAttributeValues: values,
      }),
    ),
  );
  return r !== undefined;
}

/** One instance's migrations, oldest first (a consistent-enough index read: moves are rare). */
export async function listInstanceMigrations(instanceUuid: string): Promise<MigrationRecord[]> {
  return queryAll<MigrationRecord>({
    TableName: table(),
    IndexName: MIGRATIONS_BY_INSTANCE_INDEX,
    KeyConditionExpression: "instance_uuid = :i",
    ExpressionAttributeValues: { ":i": instanceUuid },
  });
}

/**
 * Every migration (GET /os-migrations, an admin's read), by id. A Scan: the table holds moves
 * only, and Nova's own list reads its whole migrations table the same way before filtering.
 */
export async function listMigrations(): Promise<MigrationRecord[]> {
  const items = await scanAll<MigrationRecord>({
    TableName: table(),
    FilterExpression: "#u <> :c",
    ExpressionAttributeNames: { "#u": "uuid" },
    ExpressionAttributeValues: { ":c": COUNTER },
    ConsistentRead: true,
  });
  return items.sort((a, b) => a.id - b.id);
}

/** The statuses of a move not over yet (the watchdog's to look after). */
export const OPEN_MIGRATION_STATUSES: readonly MigrationStatus[] = [
  "accepted",
  "queued",
  "preparing",
  "running",
  "pre-migrating",
  "migrating",
  "post-migrating",
  "finished",
  "confirming",
  "reverting",
];

/** Migrations not over yet (a Scan of the moves-only table, filtered: the watchdog's once a minute). */
export async function listOpenMigrations(): Promise<MigrationRecord[]> {
  const values: Record<string, unknown> = { ":c": COUNTER };
  OPEN_MIGRATION_STATUSES.forEach((s, i) => {
    values[`:s${i}`] = s;
  });
  return scanAll<MigrationRecord>({
    TableName: table(),
    FilterExpression: `#u <> :c AND #st IN (${OPEN_MIGRATION_STATUSES.map((_, i) => `:s${i}`).join(", ")})`,
    ExpressionAttributeNames: { "#u": "uuid", "#st": "status" },
    ExpressionAttributeValues: values,
    ConsistentRead: true,
  });
}

/**
 * Evacuations away from `host` that are done but whose source copy is not yet destroyed (Nova's
 * _destroy_evacuated_instances reads these when a compute service starts). A Scan of the
 * moves-only table, filtered: once per host registration.
 */
export async function listDoneEvacuationsFrom(host: string): Promise<MigrationRecord[]> {
  return scanAll<MigrationRecord>({
    TableName: table(),
    FilterExpression: "migration_type = :e AND source_compute = :h AND #st = :done",
    ExpressionAttributeNames: { "#st": "status" },
    ExpressionAttributeValues: { ":e": "evacuation", ":h": host, ":done": "done" },
    ConsistentRead: true,
  });
}
