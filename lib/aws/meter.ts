// A request meter at the SDK boundary, for the cost benchmark: every call a client of clients.ts
// makes, counted by caller (the access key id it signs with: one identity per component locally)
// and operation, with the DynamoDB capacity units each answer reports. Off unless a bench turns it
// on: its middleware then asks DynamoDB for ReturnConsumedCapacity INDEXES (table and each index)
// on every command that accepts it; while off it passes every call through untouched.

import { AsyncLocalStorage } from "node:async_hooks";
// The SDK clients' own stack type (@smithy/types, what every @aws-sdk client is built on).
import type { MiddlewareStack } from "@smithy/types";

export type MeteredService = "dynamodb" | "sqs" | "sfn";

/** Capacity units of one table (its indexes apart), as the answers report them. */
export interface TableUnits {
  read: number;
  write: number;
  indexRead: number;
  indexWrite: number;
  /** per index name: read and write units */
  indexes: Record<string, { read: number; write: number }>;
}

export interface CallerUsage {
  /** "dynamodb:PutItem", "sqs:ReceiveMessage"… → calls (the SDK's retries are not extra calls) */
  requests: Record<string, number>;
  /** SQS ReceiveMessage calls that returned no message (a long poll that found nothing) */
  emptyReceives: number;
  /**
   * SQS requests billed beyond one per call: AWS bills each 64 KiB chunk of a request's payload
   * as a request (a send's messages, a receive's answer; sqsPayloadChunks), so a 200 KB cast is 4.
   */
  sqsExtraChunks: number;
  /** by table name */
  tables: Record<string, TableUnits>;
  /** DynamoDB answers without ConsumedCapacity (an emulator that does not report it) */
  unreported: number;
  /** writes refused by their condition (ConditionalCheckFailed, or a transaction cancelled by one) */
  conditionalFailures: number;
  /**
   * Write units charged for those refusals: DynamoDB reports none in an error answer, yet bills
   * a failed conditional write as a write (at least 1 unit, 2 per action of a transaction); this
   * is that minimum, by table.
   */
  failedWriteUnits: Record<string, number>;
}

/** The meter's counts so far, by caller (access key id; "" for the SDK's default credentials). */
export type MeterReading = Record<string, CallerUsage>;

/** DynamoDB's data operations: those that take ReturnConsumedCapacity (and that the gateway throttles). */
export const DYNAMODB_DATA_OPERATIONS: ReadonlySet<string> = new Set([
  "GetItem",
  "PutItem",
  "UpdateItem",
  "DeleteItem",
  "Query",
  "Scan",
  "BatchGetItem",
  "BatchWriteItem",
  "TransactGetItems",
  "TransactWriteItems",
]);
const READ_COMMANDS = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]);

let enabled = false;
let usage = new Map<string, CallerUsage>();
/** the same counts again, of the calls made inside meterScope(name, …), by name (not by caller) */
let scoped = new Map<string, CallerUsage>();
const scope = new AsyncLocalStorage<string>();

/** Starts counting from zero. */
export function startMeter(): void {
  usage = new Map();
  scoped = new Map();
  enabled = true;
}

/** Stops counting; the counts stay readable. */
export function stopMeter(): void {
  enabled = false;
}

export function meterEnabled(): boolean {
  return enabled;
}

/** Counts so far, as a copy; `reset` starts the next window from zero. */
export function meterReading(opts: { reset?: boolean } = {}): MeterReading {
  const out = structuredClone(Object.fromEntries(usage)) as MeterReading;
  if (opts.reset) usage = new Map();
  return out;
}

/**
 * Runs `fn` with its calls (and those of everything it starts) counted a second time under
 * `name`, whoever makes them: what one step costs (a scheduler's cold start), apart from its
 * caller's other calls. meterReading's counts are unchanged by it.
 */
export function meterScope<T>(name: string, fn: () => T): T {
  return scope.run(name, fn);
}

/** The counts of each meterScope name so far, as a copy. */
export function meterScopeReading(): MeterReading {
  return structuredClone(Object.fromEntries(scoped)) as MeterReading;
}

/** where record() counts: `usage`, or `scoped` while it counts a call again for its scope */
let counting: "caller" | "scope" = "caller";

function callerUsage(caller: string): CallerUsage {
  const counts = counting === "caller" ? usage : scoped;
  let u = counts.get(caller);
  if (!u) {
    u = {
      requests: {},
      emptyReceives: 0,
      sqsExtraChunks: 0,
      tables: {},
      unreported: 0,
      conditionalFailures: 0,
      failedWriteUnits: {},
    };
    counts.set(caller, u);
  }
  return u;
}

function tableUnits(u: CallerUsage, table: string): TableUnits {
  u.tables[table] ??= { read: 0, write: 0, indexRead: 0, indexWrite: 0, indexes: {} };
  return u.tables[table];
}

interface Capacity {
  TableName?: string;
  CapacityUnits?: number;
  ReadCapacityUnits?: number;
  WriteCapacityUnits?: number;
  Table?: { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<
    string,
    { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number }
  >;
  LocalSecondaryIndexes?: Record<
    string,
    { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number }
  >;
}

/** Read and write units of one part (table or index): explicit fields when given, else by operation. */
function split(
  part: { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number },
  isRead: boolean,
): { read: number; write: number } {
  if (part.ReadCapacityUnits !== undefined || part.WriteCapacityUnits !== undefined) {
    return { read: part.ReadCapacityUnits ?? 0, write: part.WriteCapacityUnits ?? 0 };
  }
  const units = part.CapacityUnits ?? 0;
  return isRead ? { read: units, write: 0 } : { read: 0, write: units };
}

/** Adds one ConsumedCapacity entry to the caller's counts. */
export function recordCapacity(caller: string, operation: string, c: Capacity): void {
  const u = callerUsage(caller);
  const t = tableUnits(u, c.TableName ?? "?");
  const isRead = READ_COMMANDS.has(operation);
  let indexRead = 0;
  let indexWrite = 0;
  for (const [name, part] of Object.entries({ ...c.GlobalSecondaryIndexes, ...c.LocalSecondaryIndexes })) {
    const s = split(part, isRead);
    t.indexes[name] ??= { read: 0, write: 0 };
    t.indexes[name].read += s.read;
    t.indexes[name].write += s.write;
    indexRead += s.read;
    indexWrite += s.write;
  }
  t.indexRead += indexRead;
  t.indexWrite += indexWrite;
  // Without the Table breakdown, the total less the indexes is the table's share.
  const table = c.Table ? split(c.Table, isRead) : split(c, isRead);
  if (!c.Table) {
    table.read = Math.max(0, table.read - indexRead);
    table.write = Math.max(0, table.write - indexWrite);
  }
  t.read += table.read;
  t.write += table.write;
}

/** The tables a write request names, and how many actions touch each (for a refused one). */
function writeTargets(operation: string, input: Record<string, unknown>): Map<string, number> {
  const targets = new Map<string, number>();
  if (operation === "TransactWriteItems") {
    for (const item of (input.TransactItems ?? []) as Record<string, { TableName?: string }>[]) {
      for (const action of Object.values(item)) {
        const name = action?.TableName ?? "?";
        targets.set(name, (targets.get(name) ?? 0) + 1);
      }
    }
  } else if (typeof input.TableName === "string") {
    targets.set(input.TableName, 1);
  }
  return targets;
}

function recordFailure(
  caller: string,
  operation: string,
  input: Record<string, unknown>,
  error: unknown,
): void {
  const name = (error as { name?: string })?.name;
  const reasons = (error as { CancellationReasons?: { Code?: string }[] })?.CancellationReasons ?? [];
  const refused =
    name === "ConditionalCheckFailedException" ||
    (name === "TransactionCanceledException" && reasons.some((r) => r.Code === "ConditionalCheckFailed"));
  if (!refused) return;
  const u = callerUsage(caller);
  u.conditionalFailures++;
  const perAction = operation === "TransactWriteItems" ? 2 : 1;
  for (const [table, actions] of writeTargets(operation, input)) {
    u.failedWriteUnits[table] = (u.failedWriteUnits[table] ?? 0) + actions * perAction;
  }
}

/** Counts one answer (or one error) of `service` for `caller`. */
function record(
  service: MeteredService,
  caller: string,
  operation: string,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
  error?: unknown,
): void {
  const u = callerUsage(caller);
  const key = `${service}:${operation}`;
  u.requests[key] = (u.requests[key] ?? 0) + 1;
  if (
    service === "sqs" &&
    operation === "ReceiveMessage" &&
    output &&
    !(output.Messages as unknown[])?.length
  ) {
    u.emptyReceives++;
  }
  if (service === "sqs") u.sqsExtraChunks += Math.max(0, sqsPayloadChunks(operation, input, output) - 1);
  if (service !== "dynamodb" || !DYNAMODB_DATA_OPERATIONS.has(operation)) return;
  if (error !== undefined) {
    recordFailure(caller, operation, input, error);
    return;
  }
  const consumed = output?.ConsumedCapacity as Capacity | Capacity[] | undefined;
  if (consumed === undefined) {
    u.unreported++;
    return;
  }
  const entries = Array.isArray(consumed) ? consumed : [consumed];
  for (const c of operation === "TransactWriteItems" ? entries.map((e) => asBilled(e, input)) : entries)
    recordCapacity(caller, operation, c);
  if (operation === "BatchGetItem")
    recordBatchGetMisses(caller, input, Array.isArray(consumed) ? consumed : [consumed], output!);
  else if (READ_MINIMUM_OPERATIONS.has(operation)) recordReadMinimum(caller, input, entries);
}

const READ_MINIMUM_OPERATIONS = new Set(["GetItem", "Query", "Scan"]);

/**
 * A read that finds nothing is billed all the same: "If you perform a read operation on an item
 * that doesn't exist, DynamoDB will still consume read throughput … For Query/Scan operations,
 * you'll still be charged … even if no data exists" (the developer guide's "DynamoDB read and
 * write operations"): at least ½ unit eventually consistent, 1 strongly consistent (a global
 * secondary index is read eventually consistent). DynamoDB Local reports 0 for a Query or a Scan
 * that finds nothing, so the meter charges that minimum, to the index the request named.
 */
function recordReadMinimum(caller: string, input: Record<string, unknown>, entries: Capacity[]): void {
  const table = typeof input.TableName === "string" ? input.TableName : "?";
  const reported = entries
    .filter((c) => (c.TableName ?? "?") === table)
    .reduce((sum, c) => sum + (c.CapacityUnits ?? c.ReadCapacityUnits ?? 0), 0);
  const minimum = input.ConsistentRead === true && typeof input.IndexName !== "string" ? 1 : 0.5;
  if (reported >= minimum) return;
  const missing = minimum - reported;
  recordCapacity(
    caller,
    "Query",
    typeof input.IndexName === "string"
      ? {
          TableName: table,
          CapacityUnits: missing,
          Table: { CapacityUnits: 0 },
          GlobalSecondaryIndexes: { [input.IndexName]: { CapacityUnits: missing } },
        }
      : { TableName: table, CapacityUnits: missing },
  );
}

/** SQS's billing chunk: "each 64 KB chunk of a payload is billed as 1 request" (SQS pricing). */
export const SQS_BILLING_CHUNK_BYTES = 64 * 1024;

type SqsMessage = { MessageBody?: string; Body?: string; MessageAttributes?: Record<string, unknown> };

/** A message's payload: its body and its attributes' names and values. */
function messageBytes(m: SqsMessage): number {
  let n = Buffer.byteLength(m.MessageBody ?? m.Body ?? "");
  for (const [name, value] of Object.entries(m.MessageAttributes ?? {})) {
    const v = value as { DataType?: string; StringValue?: string; BinaryValue?: Uint8Array };
    n +=
      Buffer.byteLength(name) + Buffer.byteLength(v.DataType ?? "") + Buffer.byteLength(v.StringValue ?? "");
    n += v.BinaryValue?.byteLength ?? 0;
  }
  return n;
}

/**
 * The requests AWS bills for one SQS call: one per 64 KiB chunk of its payload, at least one. A
 * send's payload is its messages (a batch's together), a receive's the messages it returned;
 * every other call carries none of note.
 */
export function sqsPayloadChunks(
  operation: string,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
): number {
  let bytes = 0;
  if (operation === "SendMessage") bytes = messageBytes(input as SqsMessage);
  else if (operation === "SendMessageBatch")
    for (const e of (input.Entries ?? []) as SqsMessage[]) bytes += messageBytes(e);
  else if (operation === "ReceiveMessage")
    for (const m of (output?.Messages ?? []) as SqsMessage[]) bytes += messageBytes(m);
  return Math.max(1, Math.ceil(bytes / SQS_BILLING_CHUNK_BYTES));
}

/**
 * A TransactWriteItems answer's units as AWS bills them, where the local emulators report
 * otherwise (measured on DynamoDB Local 2026-01-16; local/dynalite-tx reports as it does):
 * - its table: two writes of every item, one to prepare and one to commit (the developer guide's
 *   "Capacity management for transactions"), so at least 2 units per action on the table.
 *   DynamoDB Local reports 2 for a transaction of 3 or 5 small Puts on one table (AWS: 6, 10;
 *   awslabs/amazon-dynamodb-local-samples#31: 2 where AWS answers 4 for two items);
 * - its indexes: once. The doubling is of the transaction's items; the indexes are written after
 *   it commits ("After a transaction completes in DynamoDB, its changes start propagating to
 *   global secondary indexes", the same guide), as for any write, and a capture against
 *   DynamoDB (nubo-db/dynoxide#188) found an index arm in a transaction costs what the same
 *   write costs outside one. Both local emulators report it doubled.
 */
function asBilled(c: Capacity, input: Record<string, unknown>): Capacity {
  const once = (arms: Capacity["GlobalSecondaryIndexes"]): Capacity["GlobalSecondaryIndexes"] | undefined =>
    arms &&
    Object.fromEntries(
      Object.entries(arms).map(([name, part]) => {
        const s = split(part, false);
        return [name, { CapacityUnits: (s.read + s.write) / 2 }];
      }),
    );
  const gsi = once(c.GlobalSecondaryIndexes);
  const lsi = once(c.LocalSecondaryIndexes);
  const indexUnits = [...Object.values(gsi ?? {}), ...Object.values(lsi ?? {})].reduce(
    (sum, part) => sum + (part.CapacityUnits ?? 0),
    0,
  );
  const reportedIndex = [
    ...Object.values(c.GlobalSecondaryIndexes ?? {}),
    ...Object.values(c.LocalSecondaryIndexes ?? {}),
  ].reduce((sum, part) => sum + split(part, false).read + split(part, false).write, 0);
  const reportedTable = c.Table
    ? split(c.Table, false).write + split(c.Table, false).read
    : Math.max(0, split(c, false).write + split(c, false).read - reportedIndex);
  const table = Math.max(
    reportedTable,
    2 * (writeTargets("TransactWriteItems", input).get(c.TableName ?? "?") ?? 0),
  );
  return {
    TableName: c.TableName,
    CapacityUnits: table + indexUnits,
    Table: { CapacityUnits: table },
    ...(gsi ? { GlobalSecondaryIndexes: gsi } : {}),
    ...(lsi ? { LocalSecondaryIndexes: lsi } : {}),
  };
}

/**
 * A key BatchGetItem does not find: AWS reads each key as a GetItem, and a read of an item that is
 * not there still costs its minimum (1 unit consistent, ½ eventually consistent), as dynalite
 * reports it; DynamoDB Local reports units for the items found only. So a table's units are at
 * least that minimum for every key it was asked (less those left unprocessed).
 */
function recordBatchGetMisses(
  caller: string,
  input: Record<string, unknown>,
  consumed: Capacity[],
  output: Record<string, unknown>,
): void {
  const asked = (input.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>;
  const left = (output.UnprocessedKeys ?? {}) as Record<string, { Keys?: unknown[] }>;
  for (const [table, request] of Object.entries(asked)) {
    const keys = (request.Keys?.length ?? 0) - (left[table]?.Keys?.length ?? 0);
    const minimum = keys * (request.ConsistentRead ? 1 : 0.5);
    const reported = consumed
      .filter((c) => c.TableName === table)
      .reduce((sum, c) => sum + (c.CapacityUnits ?? c.ReadCapacityUnits ?? 0), 0);
    if (reported < minimum)
      recordCapacity(caller, "BatchGetItem", { TableName: table, CapacityUnits: minimum - reported });
  }
}

/**
 * Puts the meter on a client's middleware stack (once per client). `caller` names who signs its
 * calls. While the meter is off the middleware only passes the call on.
 */
export function attachMeter(
  // biome-ignore lint/suspicious/noExplicitAny: any client's stack; the meter reads only top-level fields
  client: { middlewareStack: MiddlewareStack<any, any> },
  service: MeteredService,
  caller: string,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!enabled) return next(args);
      const operation = String(context.commandName ?? "").replace(/Command$/, "");
      const input = args.input as Record<string, unknown>;
      if (service === "dynamodb" && DYNAMODB_DATA_OPERATIONS.has(operation)) {
        // The caller's own input object is left as it was: a retry or a caller reading it back
        // sees what it built.
        args = { ...args, input: { ...input, ReturnConsumedCapacity: "INDEXES" } };
      }
      const within = scope.getStore();
      const count = (output: Record<string, unknown> | undefined, error?: unknown) => {
        record(service, caller, operation, input, output, error);
        if (within === undefined) return;
        counting = "scope";
        try {
          record(service, within, operation, input, output, error);
        } finally {
          counting = "caller";
        }
      };
      try {
        const result = await next(args);
        count(result.output as Record<string, unknown>);
        return result;
      } catch (e) {
        count(undefined, e);
        throw e;
      }
    },
    { step: "initialize", name: "novalessMeter", override: true },
  );
}
