// Claims and releases: each ONE conditional UpdateItem on the host item. The condition is the
// lock: DynamoDB evaluates, for every requested class, `free >= requested` and the inventory's
// unit rules atomically with the write, so two claimers can never both take the last slot, a
// concurrent inventory change is seen by the same evaluation, and no transaction is needed.
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { resources as resourceNames } from "../config.js";
import { metrics } from "../metrics.js";
import { invalidAmount, unitViolation } from "./capacity.js";
import { getHost, listHosts } from "./hosts.js";
import { type Allocation, capacity, type HostRecord, type Inventory, type Resources } from "./types.js";

export type ClaimResult =
  | { claimed: true; host: string; duplicate: boolean }
  | { claimed: false; host: string; reason: string };

/** Placeholders for one expression; equal numbers share one value placeholder. */
class Expr {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  name(key: string, value: string): string {
    this.names[`#${key}`] = value;
    return `#${key}`;
  }
  num(n: number): string {
    const key = `:n${n}`;
    this.values[key] = n;
    return key;
  }
  value(key: string, v: unknown): string {
    this.values[`:${key}`] = v;
    return `:${key}`;
  }
}

interface Term {
  /** `#rN`: the class's name placeholder */
  rc: string;
  name: string;
  amount: number;
}

function classTerms(res: Resources, e: Expr): Term[] {
  return Object.entries(res)
    .filter(([, amount]) => (amount ?? 0) > 0)
    .map(([name, amount], i) => ({ rc: e.name(`r${i}`, name), name, amount: amount as number }));
}

/**
 * One class's unit rules as a condition. Without a read: `claim_limit` (max_unit, present only
 * when min_unit and step_size are 1) covers them all in one comparison. With the inventory we
 * read: min_unit and step_size (a condition has no modulo) were checked here, and the condition
 * insists the inventory still says what we checked.
 */
function unitCondition(t: Term, e: Expr, read: Inventory | undefined): string {
  const a = e.num(t.amount);
  if (!read) return `claim_limit.${t.rc} >= ${a}`;
  const inv = `inventories.${t.rc}`;
  return `${inv}.max_unit >= ${a} AND ${inv}.min_unit = ${e.num(read.min_unit)} AND ${inv}.step_size = ${e.num(read.step_size)}`;
}

/** The claim's one conditional write; false when its condition did not hold. */
async function writeClaim(
  host: string,
  consumer: string,
  res: Resources,
  attempt: number,
  now: Date,
  read: HostRecord | undefined,
): Promise<boolean> {
  const e = new Expr();
  const c = e.name("c", consumer);
  const terms = classTerms(res, e);
  const alloc: Allocation = { resources: res, attempt, claimed_at: now.toISOString() };
  const sets = [
    `allocations.${c} = ${e.value("alloc", alloc)}`,
    `generation = generation + ${e.num(1)}`,
    ...terms.flatMap((t) => [
      `#usage.${t.rc} = #usage.${t.rc} + ${e.num(t.amount)}`,
      `#free.${t.rc} = #free.${t.rc} - ${e.num(t.amount)}`,
    ]),
  ];
  const conditions = [
    // `free >= x` already fails on a missing item; an empty request still needs the host
    ...(terms.length ? [] : ["attribute_exists(host)"]),
    `attribute_not_exists(allocations.${c})`,
    ...terms.flatMap((t) => [
      `#free.${t.rc} >= ${e.num(t.amount)}`,
      unitCondition(
        t,
        e,
        read?.claim_limit?.[t.name as keyof Resources] === undefined
          ? read?.inventories[t.name as keyof Resources]
          : undefined,
      ),
    ]),
  ];
  if (terms.length) {
    e.name("usage", "usage");
    e.name("free", "free");
  }
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
    return true;
  } catch (err) {
    if (isConditionalCheckFailed(err)) return false;
    throw err;
  }
}

/**
 * Claim `res` on `host` for `consumer` (an instance id) as its attempt `attempt`. Idempotent: the
 * same consumer and attempt claiming again succeeds without counting twice. A claim that does not
 * fit is `{claimed: false, reason}` (a conflict, never a throw).
 *
 * One write when every requested class has min_unit and step_size 1 (Nova's standard classes
 * do). Otherwise, or when that write fails, the item is read: to say why, or, for a class with
 * unit rules that the request satisfies, to write again conditioned on those rules being the ones
 * checked.
 */
export async function claim(
  host: string,
  consumer: string,
  res: Resources,
  attempt: number,
  now = new Date(),
): Promise<ClaimResult> {
  const bad = invalidAmount(res);
  if (bad) return { claimed: false, host, reason: bad };
  if (await writeClaim(host, consumer, res, attempt, now, undefined))
    return { claimed: true, host, duplicate: false };
  metrics.claimConflict();
  const current = await getHost(host);
  const why = explainFailedClaim(current, host, consumer, res, attempt);
  const needsRules = Object.entries(res).some(
    ([rc, amount]) => amount && current?.claim_limit?.[rc as keyof Resources] === undefined,
  );
  if (why.claimed || !current || !needsRules || !/^concurrent update/.test(why.reason)) return why;
  // It fits by the rules read just now: write again, conditioned on those rules.
  if (await writeClaim(host, consumer, res, attempt, now, current))
    return { claimed: true, host, duplicate: false };
  return explainFailedClaim(await getHost(host), host, consumer, res, attempt);
}

function refuseByUnits(current: HostRecord, host: string, res: Resources): string | undefined {
  for (const [rc, amount] of Object.entries(res)) {
    if (!amount) continue;
    const why = unitViolation(rc, amount, current.inventories[rc as keyof Resources]);
    if (why) return `${why} on ${host}`;
  }
  return undefined;
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
  const units = refuseByUnits(current, host, res);
  if (units) return { claimed: false, host, reason: units };
  for (const [rc, amount] of Object.entries(res)) {
    if (!amount) continue;
    const inv = current.inventories[rc as keyof HostRecord["inventories"]] as Inventory;
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
  // or an inventory change landed). Report a conflict; the caller's claim loop moves on or retries.
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
    const e = new Expr();
    const c = e.name("c", consumer);
    const terms = classTerms(alloc.resources, e);
    const sets = [
      `generation = generation + ${e.num(1)}`,
      ...terms.flatMap((t) => [
        `#usage.${t.rc} = #usage.${t.rc} - ${e.num(t.amount)}`,
        `#free.${t.rc} = #free.${t.rc} + ${e.num(t.amount)}`,
      ]),
    ];
    if (terms.length) {
      e.name("usage", "usage");
      e.name("free", "free");
    }
    try {
      await dynamo().send(
        new UpdateCommand({
          TableName: resourceNames().hostsTable,
          Key: { host },
          UpdateExpression: `REMOVE allocations.${c} SET ${sets.join(", ")}`,
          // exactly the allocation we read: its amounts are what we subtract
          ConditionExpression: `allocations.${c}.claimed_at = ${e.value("claimed_at", alloc.claimed_at)} AND allocations.${c}.attempt = ${e.num(alloc.attempt)}`,
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

/**
 * Which of `hosts` already holds `consumer`'s claim for `attempt` (consistent reads). A step
 * re-run after it claimed (a retried Lambda whose first answer was lost) must reuse that claim:
 * claiming another host would count the consumer twice, and the first claim would leak.
 */
export async function findClaim(
  hosts: readonly string[],
  consumer: string,
  attempt: number,
): Promise<string | undefined> {
  const records = await Promise.all([...new Set(hosts)].map((h) => getHost(h)));
  return records.find((h) => h?.allocations[consumer]?.attempt === attempt)?.host;
}

/**
 * Releases every claim of these consumers for `attempt`, wherever it is, reading every host
 * (consistently): for a step that failed after claiming but before its answer was recorded, a
 * scheduler past its timeout say. A failure path only; the claim loop never needs it.
 */
export async function releaseAttemptClaims(consumers: readonly string[], attempt: number): Promise<string[]> {
  const wanted = new Set(consumers);
  const released: string[] = [];
  for (const h of await listHosts({ consistent: true })) {
    for (const [consumer, a] of Object.entries(h.allocations)) {
      if (wanted.has(consumer) && a.attempt === attempt && (await release(h.host, consumer, attempt)))
        released.push(`${consumer}@${h.host}`);
    }
  }
  return released;
}
