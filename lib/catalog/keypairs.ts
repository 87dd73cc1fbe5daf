// Keypairs in the Catalog table, per user as Nova keeps them: one item per key
// (pk `keypair#<user>#<name>`; a name never holds `#`, so the last `#` splits them) and one index
// item per user (pk `keypairs#<user>`: the set of names and a serial). The table has no sort key,
// so the index is how a user's keys are listed without a Scan. Create and delete write both items
// in one transaction; a create is conditioned on the serial it read, so two concurrent creates
// cannot both pass the key_pairs quota (the loser re-reads and counts again).
import { GetCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { resources } from "../config.js";

/** Nova's default key_pairs quota, per user. */
export const KEY_PAIRS_QUOTA = 100;

export type KeypairType = "ssh" | "x509";

export interface Keypair {
  /** the user's serial (Nova's is a database row id; clients only read it as an integer) */
  id: number;
  name: string;
  user_id: string;
  type: KeypairType;
  public_key: string;
  fingerprint: string;
  created_at: string;
}

function table(): string {
  return resources().catalogTable;
}

const keyOf = (userId: string, name: string) => `keypair#${userId}#${name}`;
const indexOf = (userId: string) => `keypairs#${userId}`;

interface IndexItem {
  names: string[];
  serial: number;
}

async function readIndex(userId: string): Promise<IndexItem> {
  const r = await dynamo().send(
    new GetCommand({ TableName: table(), Key: { pk: indexOf(userId) }, ConsistentRead: true }),
  );
  const names = r.Item?.names as Set<string> | undefined;
  return { names: names ? [...names] : [], serial: (r.Item?.serial as number | undefined) ?? 0 };
}

function toKeypair(item: Record<string, unknown>): Keypair {
  const { pk: _pk, kind: _kind, ...rest } = item;
  return rest as unknown as Keypair;
}

export async function getKeypair(userId: string, name: string): Promise<Keypair | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: table(), Key: { pk: keyOf(userId, name) }, ConsistentRead: true }),
  );
  return r.Item ? toKeypair(r.Item) : undefined;
}

/** How many keypairs a user holds (the key_pairs quota's usage). */
export async function countKeypairs(userId: string): Promise<number> {
  return (await readIndex(userId)).names.length;
}

export type ListKeypairsResult =
  | { ok: true; keypairs: Keypair[] }
  | { ok: false; reason: "marker-not-found" };

/** A user's keypairs by name, after `marker` (a name), at most `limit`. */
export async function listKeypairs(
  userId: string,
  page: { limit?: number; marker?: string } = {},
): Promise<ListKeypairsResult> {
  let names = (await readIndex(userId)).names.sort();
  if (page.marker !== undefined) {
    const i = names.indexOf(page.marker);
    if (i === -1) return { ok: false, reason: "marker-not-found" };
    names = names.slice(i + 1);
  }
  if (page.limit !== undefined) names = names.slice(0, page.limit);
  const found = await Promise.all(names.map((n) => getKeypair(userId, n)));
  // a name whose item a concurrent delete just removed is simply absent from the page
  return { ok: true, keypairs: found.filter((k): k is Keypair => k !== undefined) };
}

export type CreateKeypairResult =
  | { ok: true; keypair: Keypair }
  | { ok: false; reason: "exists" | "over-quota" };

const CREATE_ATTEMPTS = 5;

function cancellationCodes(err: unknown): (string | undefined)[] {
  return ((err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? []).map(
    (r) => r.Code,
  );
}

/** Store a new keypair unless the user has one of that name or is at the quota. */
export async function createKeypair(
  kp: Omit<Keypair, "id">,
  quota: number = KEY_PAIRS_QUOTA,
): Promise<CreateKeypairResult> {
  for (let attempt = 0; ; attempt++) {
    const index = await readIndex(kp.user_id);
    if (index.names.includes(kp.name)) return { ok: false, reason: "exists" };
    if (index.names.length + 1 > quota) return { ok: false, reason: "over-quota" };
    const keypair: Keypair = { ...kp, id: index.serial + 1 };
    try {
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: table(),
                Item: { ...keypair, pk: keyOf(kp.user_id, kp.name), kind: "keypair" },
                ConditionExpression: "attribute_not_exists(pk)",
              },
            },
            {
              Update: {
                TableName: table(),
                Key: { pk: indexOf(kp.user_id) },
                UpdateExpression: "SET serial = :next, kind = :kind ADD #names :name",
                ConditionExpression: index.serial === 0 ? "attribute_not_exists(serial)" : "serial = :serial",
                ExpressionAttributeNames: { "#names": "names" },
                ExpressionAttributeValues: {
                  ":next": keypair.id,
                  ":kind": "keypair-index",
                  ":name": new Set([kp.name]),
                  ...(index.serial === 0 ? {} : { ":serial": index.serial }),
                },
              },
            },
          ],
        }),
      );
      return { ok: true, keypair };
    } catch (e) {
      const [item, idx] = cancellationCodes(e);
      if (item === "ConditionalCheckFailed") return { ok: false, reason: "exists" };
      // the index moved (another create or a delete): count again
      if ((idx === "ConditionalCheckFailed" || idx === "TransactionConflict") && attempt < CREATE_ATTEMPTS)
        continue;
      throw e;
    }
  }
}

/** Remove a keypair and its name from the user's index; false if there was none. */
export async function deleteKeypair(userId: string, name: string): Promise<boolean> {
  try {
    await dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: table(),
              Key: { pk: keyOf(userId, name) },
              ConditionExpression: "attribute_exists(pk)",
            },
          },
          {
            Update: {
              TableName: table(),
              Key: { pk: indexOf(userId) },
              UpdateExpression: "DELETE #names :name",
              ExpressionAttributeNames: { "#names": "names" },
              ExpressionAttributeValues: { ":name": new Set([name]) },
            },
          },
        ],
      }),
    );
    return true;
  } catch (e) {
    if (cancellationCodes(e)[0] === "ConditionalCheckFailed") return false;
    throw e;
  }
}
