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
//
// dynalite-tx/: transactions.ts (the two operations), operation.ts (validation), staging.ts (locks
// and staged writes), capacity.ts (ConsumedCapacity), dynalite.ts (its modules and shapes).
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { type DynaliteOptions, db, dynalite, type Store } from "./dynalite-tx/dynalite.js";
import { Transactions } from "./dynalite-tx/transactions.js";

export type { DynaliteOptions } from "./dynalite-tx/dynalite.js";

const TARGETS = new Set(["DynamoDB_20120810.TransactWriteItems", "DynamoDB_20120810.TransactGetItems"]);

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
