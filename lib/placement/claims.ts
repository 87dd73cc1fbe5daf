// Claims and releases: each ONE conditional UpdateItem on the host item. The condition is the
// lock: DynamoDB evaluates `free >= requested` for every class atomically, so two claimers can
// never both take the last slot, and no transaction is needed.
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { resources as resourceNames } from "../config.js";
import { getHost } from "./hosts.js";
import { type Allocation, capacity, type HostRecord, type Inventory, type Resources } from "./types.js";

export type ClaimResult =
  | { claimed: true; host: string; duplicate: boolean }
  | { claimed: false; host: string; reason: string };

interface Expr {
  names: Record<string, string>;
  values: Record<string, unknown>;
}

function classTerms(res: Resources, e: Expr): { key: string; rc: string; amount: number }[] {
  return Object.entries(res)
    .filter(([, amount]) => (amount ?? 0) > 0)
    .map(([rc, amount], i) => {
      const key = `r${i}`;
      e.names[`#${key}`] = rc;
      e.values[`:${key}`] = amount;
      return { key, rc, amount: amount as number };
    });
}

/**
 * Claim `res` on `host` for `consumer` (an instance id) as its attempt `attempt`. Idempotent: the
 * same consumer and attempt claiming again succeeds without counting twice.
 */
export async function claim(
  host: string,
  consumer: string,
  res: Resources,
  attempt: number,
  now = new Date(),
): Promise<ClaimResult> {
  const e: Expr = { names: { "#c": consumer }, values: { ":one": 1 } };
  const terms = classTerms(res, e);
  const alloc: Allocation = { resources: res, attempt, claimed_at: now.toISOString() };
  e.values[":alloc"] = alloc;
  const sets = [
    "allocations.#c = :alloc",
    "generation = generation + :one",
    ...terms.flatMap((t) => [
      `#usage.#${t.key} = #usage.#${t.key} + :${t.key}`,
      `#free.#${t.key} = #free.#${t.key} - :${t.key}`,
    ]),
  ];
  const conditions = [
    "attribute_exists(host)",
    "attribute_not_exists(allocations.#c)",
    ...terms.flatMap((t) => [`#free.#${t.key} >= :${t.key}`, `inventories.#${t.key}.max_unit >= :${t.key}`]),
  ];
  e.names["#usage"] = "usage";
  e.names["#free"] = "free";
  try {
    await dynamo().send(
      new UpdateCommand({
        TableName: resourceNames().hostsTable,
        Key: { host },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: conditions.join(" AND "),
        ExpressionAttributeNames: e.names,
        ExpressionAttributeValues: e.values,
      }),
    );
    return { claimed: true, host, duplicate: false };
  } catch (err) {
    if (!isConditionalCheckFailed(err)) throw err;
  }
  // The condition failed: find out why, for the caller and the operator.
  const current = await getHost(host);
  return explainFailedClaim(current, host, consumer, res, attempt);
}

export function explainFailedClaim(
  current: HostRecord | undefined,
  host: string,
  consumer: string,
  res: Resources,
  attempt: number,
): ClaimResult {
  if (!current) return { claimed: false, host, reason: `host ${host} is not registered` };
  const existing = current.allocations[consumer];
  if (existing) {
    if (existing.attempt === attempt && sameResources(existing.resources, res)) {
      return { claimed: true, host, duplicate: true };
    }
    return {
      claimed: false,
      host,
      reason: `consumer ${consumer} already holds an allocation on ${host} for attempt ${existing.attempt}`,
    };
  }
  for (const [rc, amount] of Object.entries(res)) {
    if (!amount) continue;
    const inv = current.inventories[rc as keyof HostRecord["inventories"]] as Inventory | undefined;
    if (!inv) return { claimed: false, host, reason: `${host} has no ${rc} inventory` };
    if (amount > inv.max_unit) {
      return {
        claimed: false,
        host,
        reason: `${rc} request ${amount} exceeds max_unit ${inv.max_unit} on ${host}`,
      };
    }
    const free = current.free[rc as keyof HostRecord["free"]] ?? 0;
    if (amount > free) {
      return {
        claimed: false,
        host,
        reason: `insufficient ${rc} on ${host}: needs ${amount}, free ${free} of capacity ${capacity(inv)}`,
      };
    }
  }
  // Capacity looked fine on re-read: the host changed between our write and the read (a release
  // landed). Report a conflict; the caller's claim loop moves on or retries.
  return { claimed: false, host, reason: `concurrent update on ${host}` };
}

function sameResources(a: Resources, b: Resources): boolean {
  const x = a as Record<string, number>;
  const y = b as Record<string, number>;
  for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
    if ((x[k] ?? 0) !== (y[k] ?? 0)) return false;
  }
  return true;
}

/**
 * Release `consumer`'s allocation on `host`. With `attempt`, only that attempt's claim is released
 * (a late release from a fenced-off attempt must not free a newer claim). Idempotent: releasing
 * what is not there is a no-op. Returns whether this call removed an allocation.
 */
export async function release(host: string, consumer: string, attempt?: number): Promise<boolean> {
  for (;;) {
    const current = await getHost(host);
    const alloc = current?.allocations[consumer];
    if (!current || !alloc) return false;
    if (attempt !== undefined && alloc.attempt !== attempt) return false;
    const e: Expr = { names: { "#c": consumer, "#usage": "usage", "#free": "free" }, values: { ":one": 1 } };
    const terms = classTerms(alloc.resources, e);
    e.values[":claimed_at"] = alloc.claimed_at;
    const sets = [
      "generation = generation + :one",
      ...terms.flatMap((t) => [
        `#usage.#${t.key} = #usage.#${t.key} - :${t.key}`,
        `#free.#${t.key} = #free.#${t.key} + :${t.key}`,
      ]),
    ];
    try {
      await dynamo().send(
        new UpdateCommand({
          TableName: resourceNames().hostsTable,
          Key: { host },
          UpdateExpression: `REMOVE allocations.#c SET ${sets.join(", ")}`,
          // exactly the allocation we read: its amounts are what we subtract
          ConditionExpression: "allocations.#c.claimed_at = :claimed_at",
          ExpressionAttributeNames: e.names,
          ExpressionAttributeValues: e.values,
        }),
      );
      return true;
    } catch (err) {
      if (!isConditionalCheckFailed(err)) throw err;
      // released or replaced concurrently: look again
    }
  }
}
