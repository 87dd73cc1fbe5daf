// A transaction's items under their locks, and each operation staged through dynalite's own
// single-item action: what it would write is recorded, not written, until every one has passed.
import { type Capacity, canonical, transactionalWriteUnits } from "./capacity.js";
import {
  ACTION,
  db,
  type Item,
  type ItemDb,
  isServiceError,
  type LevelBatchOp,
  type Release,
  type Store,
  validationError,
} from "./dynalite.js";
import type { Operation } from "./operation.js";

export interface Reason {
  Code: string;
  Message?: string;
  Item?: Item;
}

/**
 * Takes the locks dynalite's single-item writes take for every item, tables in name order (so
 * two transactions never wait on each other in a circle), reads the items, runs `body`, releases.
 */
export function locked<T>(
  store: Store,
  ops: Operation[],
  body: (current: (Item | undefined)[]) => Promise<T>,
): Promise<T> {
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
      store.getItemDb(table).lock(byTable.get(table)!, (release) => {
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
        ops.map((op) => (op.invalid ? undefined : getItem(store.getItemDb(op.table.TableName), op.key))),
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
export function stage(
  store: Store,
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
    ...store,
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
export function writes(
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

export function getItem(itemDb: ItemDb, key: string): Promise<Item | undefined> {
  return new Promise((resolve, reject) =>
    itemDb.get(key, (err, item) => {
      if (err && err.name !== "NotFoundError") reject(err);
      else resolve(err ? undefined : item);
    }),
  );
}
