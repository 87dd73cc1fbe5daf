// dynalite with DynamoDB's transactions. dynalite 4 answers TransactWriteItems and TransactGetItems
// with UnknownOperationException; the claim model (one TransactWriteItems: Update the provider +
// Put the allocation) needs them. This wraps dynalite's own server: those two targets are served
// here, against dynalite's store, and every other request goes to dynalite's handler unchanged.
//
// How a transaction stays DynamoDB's:
// - isolation: the per-item locks dynalite's PutItem/UpdateItem/DeleteItem take (db/index.js keeps
//   one `lock` per table) are taken for every item of the transaction, tables in name order, so a
//   transaction and any single-item write to one of its items are serialized, never interleaved;
// - DynamoDB's own rules, evaluated by dynalite's code: each operation is run through dynalite's
//   validation (expressions parsed, unused names/values refused) and then through dynalite's
//   PutItem/UpdateItem/DeleteItem action against a staged view of the locked items that records
//   the item the action would write instead of writing it. Conditions, update expressions and the
//   item-size rule are thus dynalite's, not a second implementation;
// - all or none: only when every operation passed are the new items and their index entries
//   written, in one batch of the underlying LevelDB.
// Errors and CancellationReasons have the shapes and texts Amazon's DynamoDB Local gives (checked
// by test/integration/dynamo-transactions.test.ts against it).
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** An AttributeValue map, as DynamoDB's JSON protocol carries it. */
type Item = Record<string, Record<string, unknown>>;

interface KeySchemaElement {
  AttributeName: string;
  KeyType: "HASH" | "RANGE";
}
interface IndexDescription {
  IndexName: string;
  KeySchema: KeySchemaElement[];
  Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
}
interface TableDescription {
  TableName: string;
  KeySchema: KeySchemaElement[];
  AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
  GlobalSecondaryIndexes?: IndexDescription[];
  LocalSecondaryIndexes?: IndexDescription[];
}

/** An error as dynalite's code makes them: the HTTP status and body DynamoDB would answer. */
interface ServiceError extends Error {
  statusCode: number;
  body: Record<string, unknown>;
}
type Callback<T> = (err: ServiceError | Error | null, value?: T) => void;
type Release = <F extends (...args: never[]) => void>(fn: F) => F;

interface ItemDb {
  lock(keys: string | string[], exec: (release: Release) => void): void;
  get(key: string, cb: (err: (Error & { name: string }) | null, item?: Item) => void): void;
  put(key: string, item: Item, cb: (err: Error | null) => void): void;
  del(key: string, cb: (err: Error | null) => void): void;
}
interface LevelBatchOp {
  type: "put" | "del";
  key: string;
  value?: Item;
}
/** dynalite's store (db/index.js create()). */
interface Store {
  options: { maxItemSize: number };
  db: { batch(ops: LevelBatchOp[], cb: (err: Error | null) => void): void };
  getTable(name: string, cb: Callback<TableDescription>): void;
  getItemDb(name: string): ItemDb;
  getIndexDb(type: string, table: string, index: string): unknown;
}

interface DynaliteDb {
  create(options: object): Store;
  createKey(item: Item, table: TableDescription, keySchema?: KeySchemaElement[]): string;
  itemSize(item: Item): number;
  mapPaths(paths: unknown, item: Item): Item;
  getIndexActions(
    indexes: IndexDescription[],
    existing: Item | null | undefined,
    item: Item | null | undefined,
    table: TableDescription,
  ): { puts: { index: string; key: string; item: Item }[]; deletes: { index: string; key: string }[] };
  validationError(message: string): ServiceError;
}
interface Validation {
  types: Record<string, unknown>;
  custom: (data: Record<string, unknown>, store: Store) => string | undefined;
}
interface Validations {
  checkTypes(data: Record<string, unknown>, types: Record<string, unknown>): Record<string, unknown>;
  checkValidations(
    data: Record<string, unknown>,
    types: Record<string, unknown>,
    custom: Validation["custom"],
    store: Store,
  ): void;
}
type Action = (store: Store, data: Record<string, unknown>, cb: Callback<unknown>) => void;

export interface DynaliteOptions {
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
  maxItemSizeKb?: number;
}

// dynalite's modules, from the same module cache as dynalite's own requires, so `db` is the very
// module its server uses.
const dynalite = require("dynalite") as (options: DynaliteOptions) => Server;
const db = require("dynalite/db") as DynaliteDb;
const validations = require("dynalite/validations") as Validations;
const VALIDATION: Record<"Put" | "Update" | "Delete" | "ConditionCheck" | "Get", Validation> = {
  Put: require("dynalite/validations/putItem"),
  Update: require("dynalite/validations/updateItem"),
  Delete: require("dynalite/validations/deleteItem"),
  // A ConditionCheck has a DeleteItem's shape (TableName, Key, condition, names, values).
  ConditionCheck: require("dynalite/validations/deleteItem"),
  Get: require("dynalite/validations/getItem"),
};
const ACTION: Record<"Put" | "Update" | "Delete", Action> = {
  Put: require("dynalite/actions/putItem"),
  Update: require("dynalite/actions/updateItem"),
  Delete: require("dynalite/actions/deleteItem"),
};

const MAX_TRANSACT_ITEMS = 100;
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
const IDEMPOTENCY_MS = 10 * 60 * 1000;
const DYNAMODB = "com.amazonaws.dynamodb.v20120810";
const WRITE_KINDS = ["ConditionCheck", "Put", "Delete", "Update"] as const;
type WriteKind = (typeof WRITE_KINDS)[number];
const TARGETS = new Set(["DynamoDB_20120810.TransactWriteItems", "DynamoDB_20120810.TransactGetItems"]);

function serviceError(type: string, message: string): ServiceError {
  const e = new Error(message) as ServiceError;
  e.statusCode = 400;
  // DynamoDB's transaction errors carry `Message` (the SDK reads either case).
  e.body = { __type: type, Message: message };
  return e;
}
const validationError = (message: string) =>
  serviceError("com.amazon.coral.validate#ValidationException", message);
const isServiceError = (e: unknown): e is ServiceError =>
  e instanceof Error && typeof (e as ServiceError).statusCode === "number";

/**
 * A dynalite server (not yet listening) that also serves TransactWriteItems and
 * TransactGetItems. close() is dynalite's: it waits for the store's pending writes.
 */
export function createDynalite(options: DynaliteOptions = {}): Server {
  const store = captureStore(() => dynalite(options));
  const server = store.server;
  const transactions = new Transactions(store.store);
  const [dynaliteHandler] = server.listeners("request") as ((
    req: IncomingMessage,
    res: ServerResponse,
  ) => void)[];
  if (!dynaliteHandler) throw new Error("dynalite created its server without a request handler");
  server.removeAllListeners("request");
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const target = req.headers["x-amz-target"];
    if (typeof target === "string" && TARGETS.has(target)) transactions.serve(target, req, res);
    else dynaliteHandler(req, res);
  });
  return server;
}

/** dynalite keeps its store private; catch it as its server creates it. */
function captureStore(create: () => Server): { server: Server; store: Store } {
  const original = db.create;
  let store: Store | undefined;
  db.create = (options) => {
    store = original(options);
    return store;
  };
  try {
    const server = create();
    if (!store) throw new Error("dynalite did not create its store through db.create");
    return { server, store };
  } finally {
    db.create = original;
  }
}

/** One operation of a transaction, validated, with its table and item key. */
interface Operation {
  kind: WriteKind | "Get";
  /** the operation as dynalite's actions take it (expressions parsed) */
  data: Record<string, unknown>;
  table: TableDescription;
  key: string;
  returnOld: boolean;
  /** a ValidationError found before the item was read (a key of the wrong type) */
  invalid?: string;
}

interface Reason {
  Code: string;
  Message?: string;
  Item?: Item;
}

interface Remembered {
  request: string;
  answer: Record<string, unknown>;
  /** what a replay reads: (table, key) of each item */
  items: { table: string; key: string }[];
  expires: number;
}

class Transactions {
  /** ClientRequestToken → the first successful answer, for 10 minutes */
  private readonly tokens = new Map<string, Remembered>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly store: Store) {}

  serve(target: string, req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        req.removeAllListeners();
        res.statusCode = 413;
        res.end();
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (res.writableEnded) return;
      const answer = (status: number, body: unknown) => {
        const text = JSON.stringify(body);
        res.writeHead(status, {
          "content-type": "application/x-amz-json-1.0",
          "content-length": Buffer.byteLength(text),
          "x-amzn-requestid": randomUUID(),
        });
        res.end(text);
      };
      const refused = refuseRequest(req);
      if (refused) return answer(refused.statusCode, refused.body);
      let data: unknown;
      try {
        data = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        data = undefined;
      }
      if (data == null || typeof data !== "object" || Array.isArray(data)) {
        return answer(400, { __type: "com.amazon.coral.service#SerializationException" });
      }
      const request = data as Record<string, unknown>;
      const run = target.endsWith("TransactWriteItems") ? this.write(request) : this.get(request);
      run.then(
        (body) => answer(200, body),
        (e: unknown) => {
          if (isServiceError(e)) answer(e.statusCode, e.body);
          else answer(500, { __type: "com.amazon.coral.service#InternalFailure", message: String(e) });
        },
      );
    });
  }

  /** TransactWriteItems, with ClientRequestToken idempotency. */
  async write(data: Record<string, unknown>): Promise<Record<string, unknown>> {
    const token = typeof data.ClientRequestToken === "string" ? data.ClientRequestToken : undefined;
    if (token === undefined) return (await this.writeOnce(data)).answer;
    const { ClientRequestToken: _, ...rest } = data;
    // The request a token stands for is its operations: as in DynamoDB Local, a repeat that asks
    // for the consumed capacity (or not) is the same request.
    const request = JSON.stringify(rest.TransactItems);
    const now = Date.now();
    for (const [t, r] of this.tokens) {
      if (r.expires > now) break; // insertion order is (all but) expiry order
      this.tokens.delete(t);
    }
    const remembered = this.tokens.get(token);
    if (remembered && remembered.expires > now) {
      if (remembered.request !== request) {
        throw serviceError(`${DYNAMODB}#IdempotentParameterMismatchException`, "");
      }
      return this.replay(remembered, rest.ReturnConsumedCapacity);
    }
    if (this.inFlight.has(token)) {
      throw serviceError(
        `${DYNAMODB}#TransactionInProgressException`,
        "The transaction with the given request token is already in progress.",
      );
    }
    this.inFlight.add(token);
    try {
      const done = await this.writeOnce(rest);
      // Only a transaction that committed is remembered: a cancelled one may be retried.
      this.tokens.set(token, {
        request,
        answer: done.answer,
        items: done.items,
        // valid for 10 minutes after the request that used it first completed
        expires: Date.now() + IDEMPOTENCY_MS,
      });
      return done.answer;
    } finally {
      this.inFlight.delete(token);
    }
  }

  /**
   * The answer to a repeated token: nothing is written again, and the consumed capacity is what
   * reading the items costs (DynamoDB's documented behaviour for an idempotent retry).
   */
  private async replay(r: Remembered, returnCapacity: unknown): Promise<Record<string, unknown>> {
    if (returnCapacity !== "TOTAL" && returnCapacity !== "INDEXES") return {};
    const units = new Capacity();
    for (const { table, key } of r.items) {
      const item = await getItem(this.store.getItemDb(table), key);
      units.addTable(table, readUnits(item));
    }
    return { ConsumedCapacity: units.toResponse(returnCapacity) };
  }

  private async writeOnce(
    data: Record<string, unknown>,
  ): Promise<{ answer: Record<string, unknown>; items: { table: string; key: string }[] }> {
    const entries = transactItems(data);
    const ops: Operation[] = [];
    for (const [i, entry] of entries.entries()) {
      const kinds = WRITE_KINDS.filter((k) => entry[k] != null);
      if (kinds.length > 1)
        throw validationError("TransactItems can only contain one of Check, Put, Update or Delete");
      const kind = kinds[0];
      if (!kind)
        throw validationError(
          "Invalid Request: TransactWriteRequest should contain Delete or Put or Update request",
        );
      ops.push(await this.operation(kind, entry[kind] as Record<string, unknown>, i));
    }
    refuseDuplicates(ops);
    const capacity = data.ReturnConsumedCapacity;
    return this.locked(ops, async (current) => {
      const staged = await Promise.all(ops.map((op, i) => this.stage(op, current[i])));
      const reasons = staged.map((s) => s.reason);
      if (reasons.some((r) => r.Code !== "None")) {
        const codes = reasons.map((r) => r.Code).join(", ");
        const e = serviceError(
          `${DYNAMODB}#TransactionCanceledException`,
          `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes}]`,
        );
        e.body.CancellationReasons = reasons;
        throw e;
      }
      const batch: LevelBatchOp[] = [];
      const units = new Capacity();
      for (const [i, op] of ops.entries()) {
        const before = current[i];
        const after = staged[i]!.after;
        units.addTable(op.table.TableName, writeUnits(before, after));
        if (op.kind === "ConditionCheck") continue;
        batch.push(...this.writes(op, before, after, units));
      }
      await new Promise<void>((resolve, reject) =>
        this.store.db.batch(batch, (err) => (err ? reject(err) : resolve())),
      );
      const answer: Record<string, unknown> =
        capacity === "TOTAL" || capacity === "INDEXES"
          ? { ConsumedCapacity: units.toResponse(capacity) }
          : {};
      return { answer, items: ops.map((op) => ({ table: op.table.TableName, key: op.key })) };
    });
  }

  /** TransactGetItems: every item read under its lock, so no transaction is seen half done. */
  async get(data: Record<string, unknown>): Promise<Record<string, unknown>> {
    const entries = transactItems(data);
    const ops: Operation[] = [];
    for (const [i, entry] of entries.entries()) {
      const keys = Object.keys(entry).filter((k) => entry[k] != null);
      if (keys.length !== 1 || keys[0] !== "Get") {
        throw validationError("Invalid Request: TransactGetRequest should contain Get request");
      }
      ops.push(await this.operation("Get", entry.Get as Record<string, unknown>, i));
    }
    refuseDuplicates(ops);
    return this.locked(ops, async (current) => {
      const units = new Capacity();
      const responses = ops.map((op, i) => {
        const item = current[i];
        units.addTable(op.table.TableName, readUnits(item));
        if (!item) return {};
        const paths = (op.data._projection as { paths?: unknown } | undefined)?.paths;
        return { Item: paths ? db.mapPaths(paths, item) : item };
      });
      const capacity = data.ReturnConsumedCapacity;
      return {
        ...(capacity === "TOTAL" || capacity === "INDEXES"
          ? { ConsumedCapacity: units.toResponse(capacity) }
          : {}),
        Responses: responses,
      };
    });
  }

  /** One operation through dynalite's validation of its single-item counterpart. */
  private async operation(
    kind: Operation["kind"],
    raw: Record<string, unknown>,
    index: number,
  ): Promise<Operation> {
    if (kind === "ConditionCheck" && raw.ConditionExpression == null) {
      throw validationError(
        `Value null at 'transactItems.${index + 1}.member.conditionCheck.conditionExpression' failed to satisfy constraint: Member must not be null`,
      );
    }
    const returnOld = raw.ReturnValuesOnConditionCheckFailure;
    if (returnOld != null && returnOld !== "ALL_OLD" && returnOld !== "NONE") {
      throw validationError(
        `1 validation error detected: Value '${String(returnOld)}' at 'transactItems.${index + 1}.member.${lowerFirst(kind)}.returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must satisfy enum value set: [ALL_OLD, NONE]`,
      );
    }
    const v = VALIDATION[kind];
    const data = validations.checkTypes(structuredClone(raw), v.types);
    validations.checkValidations(data, v.types, v.custom, this.store);
    const table = await new Promise<TableDescription>((resolve, reject) =>
      this.store.getTable(String(data.TableName), (err, t) => {
        if (err) {
          reject(
            isServiceError(err) && err.body.__type === `${DYNAMODB}#ResourceNotFoundException`
              ? serviceError(`${DYNAMODB}#ResourceNotFoundException`, "Requested resource not found")
              : err,
          );
        } else resolve(t!);
      }),
    );
    const key = (kind === "Put" ? data.Item : data.Key) as Item;
    const invalid = keyProblem(key, table, kind === "Put");
    return {
      kind,
      data,
      table,
      // A key of the wrong type still names one item (for locks and duplicates) by its text.
      key: invalid ? `invalid:${JSON.stringify(key)}` : db.createKey(key, table),
      returnOld: returnOld === "ALL_OLD",
      ...(invalid ? { invalid } : {}),
    };
  }

  /**
   * Takes the locks dynalite's single-item writes take for every item, tables in name order (so
   * two transactions never wait on each other in a circle), reads the items, runs `body`, releases.
   */
  private locked<T>(ops: Operation[], body: (current: (Item | undefined)[]) => Promise<T>): Promise<T> {
    const byTable = new Map<string, string[]>();
    for (const op of ops) {
      const keys = byTable.get(op.table.TableName) ?? [];
      keys.push(op.key);
      byTable.set(op.table.TableName, keys);
    }
    const tables = [...byTable.keys()].sort();
    const releases: Release[] = [];
    const acquire = (i: number): Promise<void> => {
      const table = tables[i];
      if (table === undefined) return Promise.resolve();
      return new Promise<void>((resolve) =>
        this.store.getItemDb(table).lock(byTable.get(table)!, (release) => {
          releases.push(release);
          resolve();
        }),
      ).then(() => acquire(i + 1));
    };
    const releaseAll = () => {
      for (const release of releases.reverse()) release(() => {})();
    };
    return acquire(0)
      .then(() =>
        Promise.all(
          ops.map((op) =>
            op.invalid ? undefined : getItem(this.store.getItemDb(op.table.TableName), op.key),
          ),
        ),
      )
      .then(body)
      .finally(releaseAll);
  }

  /**
   * Runs the operation through dynalite's own action against a view of the store in which the
   * (already locked) item is `current` and writes are recorded, not made: the action's
   * condition, update expression and size rules decide, and `after` is the item it would write.
   */
  private stage(
    op: Operation,
    current: Item | undefined,
  ): Promise<{ reason: Reason; after: Item | null | undefined }> {
    if (op.invalid)
      return Promise.resolve({ reason: { Code: "ValidationError", Message: op.invalid }, after: undefined });
    let after: Item | null | undefined = current;
    const view: ItemDb = {
      lock: (_key, exec) => exec(((fn: unknown) => fn) as Release),
      get: (_key, cb) => {
        if (current) setImmediate(cb, null, structuredClone(current));
        else setImmediate(cb, Object.assign(new Error("NotFound"), { name: "NotFoundError" }));
      },
      put: (_key, item, cb) => {
        after = item;
        setImmediate(cb, null);
      },
      del: (_key, cb) => {
        after = null;
        setImmediate(cb, null);
      },
    };
    const noIndexWrites = {
      put: (_k: string, _v: Item, cb: () => void) => cb(),
      del: (_k: string, cb: () => void) => cb(),
    };
    const staged: Store = {
      ...this.store,
      getItemDb: () => view,
      getIndexDb: () => noIndexWrites,
    };
    // A ConditionCheck is a DeleteItem whose result is dropped.
    const action = ACTION[op.kind === "Put" || op.kind === "Update" ? op.kind : "Delete"];
    return new Promise((resolve, reject) =>
      action(staged, op.data, (err) => {
        if (!err) return resolve({ reason: { Code: "None" }, after });
        const type = isServiceError(err) ? String(err.body.__type) : "";
        if (type.endsWith("#ConditionalCheckFailedException")) {
          const reason: Reason = {
            Code: "ConditionalCheckFailed",
            // DynamoDB's text for a ConditionCheck ends with a period; for a write it does not.
            Message:
              op.kind === "ConditionCheck"
                ? "The conditional request failed."
                : "The conditional request failed",
          };
          if (op.returnOld && current) reason.Item = current;
          return resolve({ reason, after: undefined });
        }
        const message = isServiceError(err) ? String(err.body.message ?? err.body.Message ?? "") : "";
        const itemProblem = itemValidationError(message);
        if (itemProblem)
          return resolve({ reason: { Code: "ValidationError", Message: itemProblem }, after: undefined });
        reject(isServiceError(err) ? validationError(message) : err);
      }),
    );
  }

  /** The LevelDB writes of one committed operation: the item and its index entries. */
  private writes(
    op: Operation,
    before: Item | undefined,
    after: Item | null | undefined,
    units: Capacity,
  ): LevelBatchOp[] {
    const name = op.table.TableName;
    // dynalite's key layout (db/index.js getSubDb): "<sub-db name>~<key>".
    const out: LevelBatchOp[] = [
      after
        ? { type: "put", key: `item-${name}~${op.key}`, value: after }
        : { type: "del", key: `item-${name}~${op.key}` },
    ];
    for (const type of ["Global", "Local"] as const) {
      for (const index of op.table[`${type}SecondaryIndexes`] ?? []) {
        const prefix = `index-${type.toLowerCase()}~${name}~${index.IndexName}~`;
        const actions = db.getIndexActions([index], before, after, op.table);
        const old = db.getIndexActions([index], null, before, op.table).puts[0];
        let indexUnits = 0;
        for (const d of actions.deletes) {
          out.push({ type: "del", key: prefix + d.key });
          if (old) indexUnits += transactionalWriteUnits(old.item);
        }
        for (const p of actions.puts) {
          out.push({ type: "put", key: prefix + p.key, value: p.item });
          // An index entry that neither moved nor changed is not written by DynamoDB.
          const unchanged = old && old.key === p.key && canonical(old.item) === canonical(p.item);
          if (!unchanged) indexUnits += transactionalWriteUnits(p.item);
        }
        if (indexUnits > 0) units.addIndex(name, type, index.IndexName, indexUnits);
      }
    }
    return out;
  }
}

/** The TransactItems list, with DynamoDB's checks of its length. */
function transactItems(data: Record<string, unknown>): Record<string, unknown>[] {
  const items = data.TransactItems;
  if (items == null) {
    throw validationError(
      "Value null at 'transactItems' failed to satisfy constraint: Member must not be null",
    );
  }
  if (!Array.isArray(items)) throw serviceError("com.amazon.coral.service#SerializationException", "");
  if (items.length === 0) {
    throw validationError(
      "Value [] at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1",
    );
  }
  if (items.length > MAX_TRANSACT_ITEMS) {
    throw validationError(
      `1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to ${MAX_TRANSACT_ITEMS}`,
    );
  }
  // An entry that is not an object holds no operation: the caller's checks refuse it as such.
  return items.map((entry: unknown) =>
    entry != null && typeof entry === "object" && !Array.isArray(entry)
      ? (entry as Record<string, unknown>)
      : {},
  );
}

function refuseDuplicates(ops: Operation[]): void {
  const seen = new Set<string>();
  for (const op of ops) {
    const id = `${op.table.TableName}\u0000${op.key}`;
    if (seen.has(id))
      throw validationError("Transaction request cannot include multiple operations on one item");
    seen.add(id);
  }
}

/**
 * DynamoDB's checks of a key against the table: a missing or extra key attribute refuses the
 * whole request; a key of the wrong type is the operation's ValidationError reason (returned).
 */
function keyProblem(key: Item, table: TableDescription, isItem: boolean): string | undefined {
  const schema = table.KeySchema.map((k) => k.AttributeName);
  if (!isItem && Object.keys(key).length !== schema.length) {
    throw validationError("The number of conditions on the keys is invalid");
  }
  for (const attr of schema) {
    if (key[attr] == null) throw validationError("One of the required keys was not given a value");
  }
  for (const attr of schema) {
    const type = table.AttributeDefinitions.find((d) => d.AttributeName === attr)?.AttributeType;
    if (type && key[attr]?.[type] == null) {
      return "One or more parameter values were invalid: Type mismatch for key";
    }
    if (type && (type === "S" || type === "B") && key[attr]?.[type] === "") {
      throw validationError(
        `One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty ${type === "S" ? "string" : "binary"} value. Key: ${attr}`,
      );
    }
  }
  return undefined;
}

/**
 * Of dynalite's errors for one item, those DynamoDB reports as the operation's cancellation
 * reason (Code ValidationError) rather than refusing the request, with DynamoDB's text.
 */
function itemValidationError(message: string): string | undefined {
  if (message === "Item size to update has exceeded the maximum allowed size") return message;
  if (/This attribute is part of the key$/.test(message)) return message;
  if (/^One or more parameter values were invalid: Type mismatch for Index Key /.test(message)) {
    return "One or more parameter values were invalid: Type mismatch for Index Key";
  }
  return undefined;
}

/** Basic checks dynalite makes of every request before its operation (index.js httpHandler). */
function refuseRequest(req: IncomingMessage): ServiceError | undefined {
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
  if (
    req.method !== "POST" ||
    (contentType !== "application/json" && contentType !== "application/x-amz-json-1.0")
  ) {
    return serviceError("com.amazon.coral.service#UnknownOperationException", "");
  }
  const auth = req.headers.authorization;
  if (!auth?.trim().startsWith("AWS4-")) {
    return serviceError(
      "com.amazon.coral.service#MissingAuthenticationTokenException",
      "Request is missing Authentication Token",
    );
  }
  return undefined;
}

function getItem(itemDb: ItemDb, key: string): Promise<Item | undefined> {
  return new Promise((resolve, reject) =>
    itemDb.get(key, (err, item) => {
      if (err && err.name !== "NotFoundError") reject(err);
      else resolve(err ? undefined : item);
    }),
  );
}

const kb = (item: Item | null | undefined, per: number) =>
  Math.max(1, Math.ceil((item ? db.itemSize(present(item)) : 0) / per));
/**
 * Its attributes that hold a value: dynalite's index projection (INCLUDE, KEYS_ONLY) names every
 * projected attribute, undefined where the item has none, which its size function cannot read.
 */
const present = (item: Item): Item =>
  Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as Item;
/** A transactional write: 2 units per KB of the larger of the item before and after. */
const writeUnits = (before: Item | null | undefined, after: Item | null | undefined) =>
  2 * Math.max(kb(before, 1024), kb(after, 1024));
const transactionalWriteUnits = (item: Item) => 2 * kb(item, 1024);
/** A transactional read: 2 units per 4 KB, a missing item too. */
const readUnits = (item: Item | undefined) => 2 * kb(item, 4096);

/** ConsumedCapacity by table and secondary index, in the order tables first appear. */
class Capacity {
  private readonly tables = new Map<
    string,
    { table: number; indexes: Record<"Global" | "Local", Map<string, number>> }
  >();

  private of(table: string) {
    let t = this.tables.get(table);
    if (!t) {
      t = { table: 0, indexes: { Global: new Map(), Local: new Map() } };
      this.tables.set(table, t);
    }
    return t;
  }

  addTable(table: string, units: number): void {
    this.of(table).table += units;
  }

  addIndex(table: string, type: "Global" | "Local", index: string, units: number): void {
    const indexes = this.of(table).indexes[type];
    indexes.set(index, (indexes.get(index) ?? 0) + units);
  }

  toResponse(mode: "TOTAL" | "INDEXES"): Record<string, unknown>[] {
    return [...this.tables].map(([name, t]) => {
      const all = [...t.indexes.Global.values(), ...t.indexes.Local.values()];
      const entry: Record<string, unknown> = {
        TableName: name,
        CapacityUnits: all.reduce((sum, units) => sum + units, t.table),
      };
      if (mode === "INDEXES") {
        entry.Table = { CapacityUnits: t.table };
        for (const type of ["Global", "Local"] as const) {
          if (t.indexes[type].size === 0) continue;
          entry[`${type}SecondaryIndexes`] = Object.fromEntries(
            [...t.indexes[type]].map(([index, units]) => [index, { CapacityUnits: units }]),
          );
        }
      }
      return entry;
    });
  }
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

/** JSON with every map's keys sorted: the same item whatever order its attributes came in. */
const canonical = (item: Item) =>
  JSON.stringify(item, (_key, value: unknown) =>
    value && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
