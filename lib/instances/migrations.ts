// Nova's migration records (os-migrations), in the Migrations table: one item per move, written
// by the API when it accepts the move and moved along by the conductor and compute-events. Every
// status change is conditioned on the status it expects, so a repeated step changes nothing.
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { inState } from "../aws/dynamo-conditions.js";
import { unlessConditionFails } from "../aws/dynamo-errors.js";
import { queryAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import {
  MIGRATIONS_BY_CREATED_INDEX,
  MIGRATIONS_BY_INSTANCE_INDEX,
  MIGRATIONS_BY_SOURCE_INDEX,
  MIGRATIONS_OPEN_INDEX,
} from "../resources.js";
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
        // listed: the key of the by-created index (os-migrations' pages); open: of the open index
        Item: { ...m, listed: MIGRATIONS_LISTED, ...openKey(m.status) },
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
  // the open index holds the moves not over yet
  const open = isOpen(status);
  if (open) {
    sets.push("#open = :open");
    values[":open"] = OPEN;
  }
  for (const [k, v] of Object.entries(fields)) {
    sets.push(`${k} = :${k}`);
    values[`:${k}`] = v;
  }
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { uuid },
        UpdateExpression: `SET ${sets.join(", ")}${open ? "" : " REMOVE #open"}`,
        ConditionExpression: `attribute_exists(#u) AND ${inState(values, "#st", from, "f")}`,
        ExpressionAttributeNames: { "#u": "uuid", "#st": "status", "#open": "open" },
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

/** The `by-created` index's one partition key: every migration carries it (see lib/resources.ts). */
export const MIGRATIONS_LISTED = "migration";

/**
 * Every migration (GET /os-migrations before 2.59, an admin's read), by id; one instance's by its
 * index. By index, never a Scan: the counter item is not read.
 */
export async function listMigrations(opts: { instanceUuid?: string } = {}): Promise<MigrationRecord[]> {
  const items = opts.instanceUuid
    ? await listInstanceMigrations(opts.instanceUuid)
    : await queryAll<MigrationRecord>({
        TableName: table(),
        IndexName: MIGRATIONS_BY_CREATED_INDEX,
        KeyConditionExpression: "listed = :l",
        ExpressionAttributeValues: { ":l": MIGRATIONS_LISTED },
      });
  return items.sort((a, b) => a.id - b.id);
}

/** Migrations one page request reads at most (2 × Nova's max_limit), as the servers listing. */
export const MIGRATION_READ_BUDGET = 2000;

export interface MigrationListing {
  /** instance_uuid: that instance's index, else every migration's */
  instanceUuid?: string;
  /** the filters no index answers */
  match: (m: MigrationRecord) => boolean;
  /** the migration the page starts after (Nova looks it up among every migration) */
  after?: MigrationRecord;
  limit: number;
  /** items this request may read (MIGRATION_READ_BUDGET unless a test says otherwise) */
  readBudget?: number;
}

/** 2.59's order: created_at, then id, both descending. */
function newestFirst(a: MigrationRecord, b: MigrationRecord): number {
  return b.created_at.localeCompare(a.created_at) || b.id - a.id;
}

/**
 * One page of os-migrations from 2.59 (Nova's order, limit, marker), read from the index in that
 * order: `by-instance` for one instance's (read whole: a server has few), else `by-created`, in
 * pages, until the page is full or the read budget is spent. `next`: the uuid the next page
 * starts after, when the budget cut the page short (the last one read, matching or not).
 */
export async function pageMigrations(
  q: MigrationListing,
): Promise<{ migrations: MigrationRecord[]; next?: string }> {
  const after = q.after;
  const isAfter = (m: MigrationRecord) => !after || newestFirst(after, m) < 0;
  if (q.instanceUuid) {
    const all = (await listInstanceMigrations(q.instanceUuid)).filter((m) => isAfter(m) && q.match(m));
    return { migrations: all.sort(newestFirst).slice(0, q.limit) };
  }
  const budget = q.readBudget ?? MIGRATION_READ_BUDGET;
  const out: MigrationRecord[] = [];
  let read = 0;
  let lastRead: string | undefined;
  let start: Record<string, unknown> | undefined;
  // entries of equal created_at come in no documented order: a run is held until it is complete
  let held: MigrationRecord[] = [];
  do {
    const r = await dynamo().send(
      new QueryCommand({
        TableName: table(),
        IndexName: MIGRATIONS_BY_CREATED_INDEX,
        KeyConditionExpression: `listed = :l${after ? " AND created_at <= :c" : ""}`,
        ExpressionAttributeValues: { ":l": MIGRATIONS_LISTED, ...(after ? { ":c": after.created_at } : {}) },
        ScanIndexForward: false,
        Limit: Math.min(1000, q.limit + 1),
        ExclusiveStartKey: start,
      }),
    );
    start = r.LastEvaluatedKey;
    held.push(...((r.Items ?? []) as MigrationRecord[]).filter(isAfter));
    held.sort(newestFirst);
    const last = held[held.length - 1]?.created_at;
    const done = start ? held.filter((m) => m.created_at !== last) : held;
    held = start ? held.filter((m) => m.created_at === last) : [];
    for (const m of done) {
      if (out.length === q.limit) return { migrations: out };
      if (read >= budget) return { migrations: out, next: lastRead };
      read++;
      lastRead = m.uuid;
      if (q.match(m)) out.push(m);
    }
  } while (start);
  return { migrations: out };
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

/** The open index's key: present while a move is not over. */
const OPEN = "open";

function isOpen(status: MigrationStatus): boolean {
  return OPEN_MIGRATION_STATUSES.includes(status);
}

function openKey(status: MigrationStatus): { open?: string } {
  return isOpen(status) ? { open: OPEN } : {};
}

/** These migrations, read whole and consistently (those that exist). */
async function migrationsOf(keys: { uuid: string }[]): Promise<MigrationRecord[]> {
  const uuids = [...new Set(keys.map((k) => k.uuid))];
  return batchGetAll<MigrationRecord>(
    table(),
    uuids.map((uuid) => ({ uuid })),
    { ConsistentRead: true },
  );
}

/**
 * Migrations not over yet (the watchdog's, once a minute): the open index's keys, then the items
 * (whose status decides: the index may lag a write).
 */
export async function listOpenMigrations(): Promise<MigrationRecord[]> {
  const keys = await queryAll<{ uuid: string }>({
    TableName: table(),
    IndexName: MIGRATIONS_OPEN_INDEX,
    KeyConditionExpression: "#o = :o",
    ExpressionAttributeNames: { "#o": "open" },
    ExpressionAttributeValues: { ":o": OPEN },
  });
  return (await migrationsOf(keys)).filter((m) => isOpen(m.status));
}

/**
 * Evacuations away from `host` that are done but whose source copy is not yet destroyed (Nova's
 * _destroy_evacuated_instances reads these when a compute service starts): the host's evacuations
 * from the by-source index, then the items.
 */
export async function listDoneEvacuationsFrom(host: string): Promise<MigrationRecord[]> {
  const keys = await queryAll<{ uuid: string }>({
    TableName: table(),
    IndexName: MIGRATIONS_BY_SOURCE_INDEX,
    KeyConditionExpression: "source_compute = :h",
    FilterExpression: "migration_type = :e",
    ExpressionAttributeValues: { ":h": host, ":e": "evacuation" },
  });
  return (await migrationsOf(keys)).filter(
    (m) => m.migration_type === "evacuation" && m.source_compute === host && m.status === "done",
  );
}
