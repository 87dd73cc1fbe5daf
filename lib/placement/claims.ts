// Claims and releases: each ONE TransactWriteItems over the provider item and the allocation item.
// The provider's condition is the lock: DynamoDB evaluates, for every requested class,
// `free >= requested` and the inventory's unit rules atomically with the write, so two claimers
// can never both take the last slot and a concurrent inventory change is seen by the same
// evaluation; the allocation's `attribute_not_exists` makes a consumer's claim on a host count once.
// A member of an affinity or anti-affinity server group adds a third item, its group's ledger,
// judged and written in the same transaction (group-claims.ts): the late check Nova's compute
// runs, without its race.
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { resources as resourceNames } from "../config.js";
import { metrics } from "../metrics.js";
import { consumerAllocations, getAllocation } from "./allocations.js";
import { invalidAmount, unitViolation } from "./capacity.js";
import { logClaimChange } from "./change-log.js";
import { stamp } from "./feed.js";
import {
  type ClaimGroup,
  groupRefusal,
  type Ledger,
  ledgerKey,
  ledgerTouch,
  ledgerUpdate,
  readLedger,
  withAllocation,
} from "./group-claims.js";
import { getHost } from "./hosts.js";
import { type AllocationRecord, capacity, type HostRecord, type Inventory, type Resources } from "./types.js";

export type ClaimResult =
  | { claimed: true; host: string; duplicate: boolean }
  | {
      claimed: false;
      host: string;
      reason: string;
      /** the provider item as read to explain the refusal (a scheduler's cache takes it) */
      current?: HostRecord;
    };

/** Writes after the first that a claim tries while a re-read says it still fits. */
const CLAIM_RETRIES = 2;
/**
 * ...for a member of a group: its ledger is one item per group (affinity) or per group and host
 * (anti-affinity), which a group's concurrent claims contend for by design, each losing write
 * re-judged on a fresh read.
 */
const GROUP_CLAIM_RETRIES = 8;

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
  const terms = Object.entries(res)
    .filter(([, amount]) => (amount ?? 0) > 0)
    .map(([name, amount], i) => ({ rc: e.name(`r${i}`, name), name, amount: amount as number }));
  if (terms.length) {
    e.name("usage", "usage");
    e.name("free", "free");
  }
  return terms;
}

/**
 * The transaction's idempotency token (at most 36 characters): the operation, consumer, host,
 * attempt and the claim's time. A call repeated with the same arguments within DynamoDB's ten
 * minutes is applied once; a later claim of the same consumer, host and attempt (after its
 * release) has another time, hence another token, and is not mistaken for the first.
 */
function requestToken(op: "claim" | "release", a: AllocationRecord, ledger?: Ledger): string {
  // a group's ledger is part of the write: another version read is another request
  const parts = [op, a.consumer, a.host, String(a.attempt), a.claimed_at];
  if (ledger) parts.push(ledger.pk, String(ledger.version));
  return createHash("sha256").update(parts.join("\n")).digest("hex").slice(0, 36);
}

/** A transaction DynamoDB refused as a whole: every failure here means nothing was written. */
function isRefused(err: unknown): boolean {
  const name = (err as { name?: string })?.name;
  return (
    name === "TransactionCanceledException" ||
    name === "IdempotentParameterMismatchException" ||
    name === "TransactionInProgressException"
  );
}

/** Per item of a cancelled transaction, why (`None`, `ConditionalCheckFailed`, `TransactionConflict`…). */
function cancellationCodes(err: unknown): (string | undefined)[] {
  return ((err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? []).map(
    (r) => r.Code,
  );
}

/** A claim's transaction: written, or refused with the codes of its items (provider, allocation, ledger). */
type ClaimWrite =
  | { written: true }
  | { written: false; provider?: string; allocation?: string; ledger?: string };

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

/** The claim's transaction; refused when a condition failed or a concurrent transaction held an item. */
async function writeClaim(
  alloc: AllocationRecord,
  read: HostRecord | undefined,
  ledger?: Ledger,
): Promise<ClaimWrite> {
  const e = new Expr();
  const terms = classTerms(alloc.resources, e);
  const one = e.num(1);
  const sets = [
    `generation = generation + ${one}`,
    `num_instances = num_instances + ${one}`,
    `num_io_ops = num_io_ops + ${one}`,
    ...terms.flatMap((t) => [
      `#usage.${t.rc} = #usage.${t.rc} + ${e.num(t.amount)}`,
      `#free.${t.rc} = #free.${t.rc} - ${e.num(t.amount)}`,
    ]),
    stamp(e.values),
  ];
  const conditions = [
    // `free >= x` already fails on a missing item; an empty request still needs the host
    ...(terms.length ? [] : ["attribute_exists(host)"]),
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
  const names = resourceNames();
  try {
    await dynamo().send(
      new TransactWriteCommand({
        ClientRequestToken: requestToken("claim", alloc, ledger),
        TransactItems: [
          {
            Update: {
              TableName: names.hostsTable,
              Key: { host: alloc.host },
              UpdateExpression: `SET ${sets.join(", ")}`,
              ConditionExpression: conditions.join(" AND "),
              ...(Object.keys(e.names).length ? { ExpressionAttributeNames: e.names } : {}),
              ExpressionAttributeValues: e.values,
            },
          },
          {
            Put: {
              TableName: names.allocationsTable,
              Item: alloc,
              ConditionExpression: "attribute_not_exists(#c)",
              ExpressionAttributeNames: { "#c": "consumer" },
            },
          },
          ...(ledger && alloc.group
            ? [
                ledgerUpdate(
                  ledger.pk,
                  ledger.version,
                  withAllocation(ledger.members, alloc.group.instance, alloc.host, 1),
                ),
              ]
            : []),
        ],
      }),
    );
    await logClaimChange(alloc.host, e.values);
    return { written: true };
  } catch (err) {
    if (!isRefused(err)) throw err;
    const [provider, allocation, ledgerCode] = cancellationCodes(err);
    return { written: false, provider, allocation, ...(ledgerCode ? { ledger: ledgerCode } : {}) };
  }
}

/** A claim's options: its time, and the server group whose policy it must hold. */
export interface ClaimOptions {
  now?: Date;
  /** the instance's group when its policy is affinity or anti-affinity (claimGroupOf) */
  group?: ClaimGroup;
}

/**
 * Claim `res` on `host` for `consumer` (an instance id) as its attempt `attempt`. Idempotent: the
 * same consumer and attempt claiming again succeeds without counting twice. A claim that does not
 * fit is `{claimed: false, reason}` (a conflict, never a throw).
 *
 * One transaction when every requested class has min_unit and step_size 1 (Nova's standard
 * classes do). When it is refused, the provider and the allocation are read to say why (a
 * duplicate, held for another attempt, insufficient or against the unit rules); if by that read
 * the claim fits (a concurrent write or transaction was in the way, or a class has unit rules
 * that the request satisfies), it is written again, conditioned on the rules read.
 *
 * With `group` (`consumer` being the instance), the group's ledger is read first and the policy
 * judged on it; a host it refuses is `{claimed: false}` with the group's reason, as any claim
 * that does not fit (Nova's late check fails the build into a reschedule). A claim without a
 * group reads and writes nothing more.
 */
export async function claim(
  host: string,
  consumer: string,
  res: Resources,
  attempt: number,
  opts: Date | ClaimOptions = {},
): Promise<ClaimResult> {
  const { now = new Date(), group } = opts instanceof Date ? { now: opts } : opts;
  const bad = invalidAmount(res);
  if (bad) return { claimed: false, host, reason: bad };
  const alloc: AllocationRecord = {
    consumer,
    host,
    attempt,
    resources: res,
    claimed_at: now.toISOString(),
    ...(group ? { group: { id: group.id, policy: group.policy, instance: consumer } } : {}),
  };
  const retries = group ? GROUP_CLAIM_RETRIES : CLAIM_RETRIES;
  let read: HostRecord | undefined;
  for (let tries = 0; ; tries++) {
    let ledger: Ledger | undefined;
    if (group) {
      ledger = await readLedger(ledgerKey(group, host));
      const refused = groupRefusal(group, ledger.members, consumer, host);
      if (refused) return { claimed: false, host, reason: refused };
    }
    const w = await writeClaim(alloc, read, ledger);
    if (w.written) return { claimed: true, host, duplicate: false };
    if (tries === 0) metrics.claimConflict();
    // Both items are read: a refused transaction need not evaluate every condition, so its
    // reasons alone cannot tell a duplicate on a full host from a new claim that does not fit.
    const [current, held] = await Promise.all([getHost(host), getAllocation(consumer, host)]);
    const why = explainFailedClaim(current, held, host, consumer, res, attempt);
    if (why.claimed) return why;
    if (!/^concurrent update/.test(why.reason)) return { ...why, ...(current ? { current } : {}) };
    if (tries >= retries) {
      const conflicted = [w.provider, w.allocation, w.ledger].includes("TransactionConflict");
      const reason = conflicted ? `${why.reason} (another transaction held it)` : why.reason;
      return { ...why, reason, ...(current ? { current } : {}) };
    }
    read = current;
    // the group's claimers contend for its ledger: spread their next reads
    if (group) await sleep(5 + Math.random() * 20 * (tries + 1));
  }
}

function refuseByUnits(current: HostRecord, host: string, res: Resources): string | undefined {
  for (const [rc, amount] of Object.entries(res)) {
    if (!amount) continue;
    const why = unitViolation(rc, amount, current.inventories[rc as keyof Resources]);
    if (why) return `${why} on ${host}`;
  }
  return undefined;
}

/** Why a claim was refused, from the provider and the consumer's allocation on it read after. */
export function explainFailedClaim(
  current: HostRecord | undefined,
  held: AllocationRecord | undefined,
  host: string,
  consumer: string,
  res: Resources,
  attempt: number,
): ClaimResult {
  if (!current) return { claimed: false, host, reason: `host ${host} is not registered` };
  if (held) {
    if (held.attempt === attempt && sameResources(held.resources, res)) {
      return { claimed: true, host, duplicate: true };
    }
    return {
      claimed: false,
      host,
      reason: `consumer ${consumer} already holds an allocation on ${host} for attempt ${held.attempt}`,
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
  // It fits by the read: the host changed between our write and the read (a release or an
  // inventory change landed), or another transaction held it. The claim writes again, or reports
  // the conflict and the caller's claim loop moves on.
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
 * what is not there is a no-op. Returns whether the allocation was removed by this call, or by
 * an identical one running at the same time (both read it, so both carry its request token, and
 * DynamoDB answers every copy as the first while applying it once).
 */
export async function release(host: string, consumer: string, attempt?: number): Promise<boolean> {
  const names = resourceNames();
  for (;;) {
    const alloc = await getAllocation(consumer, host);
    if (!alloc) return false;
    if (attempt !== undefined && alloc.attempt !== attempt) return false;
    // the group's ledger stops counting this allocation in the same transaction
    const ledger = alloc.group ? await readLedger(ledgerKey(alloc.group, host)) : undefined;
    const e = new Expr();
    const terms = classTerms(alloc.resources, e);
    const one = e.num(1);
    const sets = [
      `generation = generation + ${one}`,
      `num_instances = num_instances - ${one}`,
      ...terms.flatMap((t) => [
        `#usage.${t.rc} = #usage.${t.rc} - ${e.num(t.amount)}`,
        `#free.${t.rc} = #free.${t.rc} + ${e.num(t.amount)}`,
      ]),
      stamp(e.values),
    ];
    try {
      await dynamo().send(
        new TransactWriteCommand({
          ClientRequestToken: requestToken("release", alloc, ledger),
          TransactItems: [
            {
              // exactly the allocation we read: its amounts are what we subtract
              Delete: {
                TableName: names.allocationsTable,
                Key: { consumer, host },
                ConditionExpression: "attempt = :a AND claimed_at = :t",
                ExpressionAttributeValues: { ":a": alloc.attempt, ":t": alloc.claimed_at },
              },
            },
            {
              Update: {
                TableName: names.hostsTable,
                Key: { host },
                UpdateExpression: `SET ${sets.join(", ")}`,
                ConditionExpression: "attribute_exists(host)",
                ...(Object.keys(e.names).length ? { ExpressionAttributeNames: e.names } : {}),
                ExpressionAttributeValues: e.values,
              },
            },
            ...(ledger && alloc.group
              ? [
                  ledgerUpdate(
                    ledger.pk,
                    ledger.version,
                    withAllocation(ledger.members, alloc.group.instance, host, -1),
                  ),
                ]
              : []),
          ],
        }),
      );
      await logClaimChange(host, e.values);
      return true;
    } catch (err) {
      if (!isRefused(err)) throw err;
      if (!(await getHost(host))) {
        throw new Error(
          `release of ${consumer} (attempt ${alloc.attempt}) on ${host}: host ${host} is not registered`,
        );
      }
      // released or replaced concurrently (or the group's ledger moved on): look again
      if (alloc.group) await sleep(5 + Math.random() * 20);
    }
  }
}

/**
 * Where `consumer`'s claim for `attempt` is held (consistent Query of its allocations), among
 * `hosts` when given. A step re-run after it claimed (a retried Lambda whose first answer was
 * lost) must reuse that claim: claiming another host would count the consumer twice, and the
 * first claim would leak.
 */
export async function findClaim(
  consumer: string,
  attempt: number,
  hosts?: readonly string[],
): Promise<string | undefined> {
  const held = await consumerAllocations(consumer);
  return held.find((a) => a.attempt === attempt && (!hosts || hosts.includes(a.host)))?.host;
}

/**
 * Releases every claim of these consumers for `attempt`, wherever it is (one consistent Query per
 * consumer): for a step that failed after claiming but before its answer was recorded, a
 * scheduler past its timeout say. A failure path only; the claim loop never needs it.
 */
export async function releaseAttemptClaims(consumers: readonly string[], attempt: number): Promise<string[]> {
  const released = await Promise.all(
    [...new Set(consumers)].map(async (consumer) =>
      (await revertClaims(consumer, { above: attempt - 1, upTo: attempt })).map((h) => `${consumer}@${h}`),
    ),
  );
  return released.flat();
}

/**
 * Unreserve (kube-scheduler's, Nova's revert_allocation_for_migration): release every claim of
 * `consumer` whose attempt is above `above` and at most `upTo`, wherever it is (one consistent
 * Query). Every workflow's rollback gives its claims back through this one helper; each release is
 * idempotent, so a repeated rollback finishes what a dead one began. Answers the hosts released.
 */
export async function revertClaims(
  consumer: string,
  attempts: { above: number; upTo?: number },
): Promise<string[]> {
  const upTo = attempts.upTo ?? Number.POSITIVE_INFINITY;
  const released: string[] = [];
  for (const a of await consumerAllocations(consumer)) {
    if (a.attempt > attempts.above && a.attempt <= upTo && (await release(a.host, consumer, a.attempt)))
      released.push(a.host);
  }
  return released;
}

/**
 * Hand `from`'s allocation on `host` to `to`, unchanged in amount (Placement's move of
 * allocations between consumers, which Nova's conductor makes before it schedules a move: the
 * migration's consumer holds the source while the instance's claims the destination). The
 * provider's usage does not change, so only the two allocation items are written, in one
 * transaction. `attempt` is the attempt the new holder's allocation carries (the old one's when
 * absent); with `fromAttempt`, only an allocation of that attempt is moved (a later claim of the
 * same consumer on the same host, a same-host resize's, stays). Idempotent: true when `to`
 * holds it now, by this call or an earlier one; false when neither holds one.
 */
export async function moveAllocation(
  host: string,
  from: string,
  to: string,
  opts: { attempt?: number; fromAttempt?: number } = {},
  now = new Date(),
): Promise<boolean> {
  const table = resourceNames().allocationsTable;
  const { attempt, fromAttempt } = opts;
  for (let tries = 0; ; tries++) {
    const found = await getAllocation(from, host);
    const held = found && (fromAttempt === undefined || found.attempt === fromAttempt) ? found : undefined;
    if (!held) return (await getAllocation(to, host)) !== undefined;
    const moved: AllocationRecord = {
      consumer: to,
      host,
      attempt: attempt ?? held.attempt,
      resources: held.resources,
      claimed_at: now.toISOString(),
      // the group's ledger counts the instance whichever consumer holds it: nothing to write there
      ...(held.group ? { group: held.group } : {}),
    };
    try {
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: table,
                Key: { consumer: from, host },
                ConditionExpression: "attempt = :a AND claimed_at = :t",
                ExpressionAttributeValues: { ":a": held.attempt, ":t": held.claimed_at },
              },
            },
            {
              Put: {
                TableName: table,
                Item: moved,
                ConditionExpression: "attribute_not_exists(#c)",
                ExpressionAttributeNames: { "#c": "consumer" },
              },
            },
            // the ledger's count is unchanged, its version is not: an audit that read the
            // ledger before this write must not repair it from the allocations it reads after
            ...(held.group ? [ledgerTouch(ledgerKey(held.group, host))] : []),
          ],
        }),
      );
      return true;
    } catch (err) {
      if (!isRefused(err)) throw err;
      // moved by a concurrent copy of this step, or `to` holds another allocation here already
      if (tries >= CLAIM_RETRIES) {
        throw new Error(
          `moving the allocation of ${from} on ${host} to ${to}: refused ${tries + 1} times (${cancellationCodes(err).join(", ")})`,
        );
      }
    }
  }
}
