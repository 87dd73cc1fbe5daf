// TransactWriteItems (ClientRequestToken idempotency included) and TransactGetItems, served from
// dynalite's store: all or none, isolated by its per-item locks.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Capacity, readUnits, writeUnits } from "./capacity.js";
import {
  DYNAMODB,
  db,
  isServiceError,
  type LevelBatchOp,
  type ServiceError,
  type Store,
  serviceError,
  validationError,
} from "./dynalite.js";
import { type Operation, operationOf, refuseDuplicates, transactItems, WRITE_KINDS } from "./operation.js";
import { getItem, locked, stage, writes } from "./staging.js";

const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
const IDEMPOTENCY_MS = 10 * 60 * 1000;

interface Remembered {
  request: string;
  answer: Record<string, unknown>;
  /** what a replay reads: (table, key) of each item */
  items: { table: string; key: string }[];
  expires: number;
}

export class Transactions {
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
      ops.push(await operationOf(this.store, kind, entry[kind] as Record<string, unknown>, i));
    }
    refuseDuplicates(ops);
    const capacity = data.ReturnConsumedCapacity;
    return locked(this.store, ops, async (current) => {
      const staged = await Promise.all(ops.map((op, i) => stage(this.store, op, current[i])));
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
        batch.push(...writes(op, before, after, units));
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
      ops.push(await operationOf(this.store, "Get", entry.Get as Record<string, unknown>, i));
    }
    refuseDuplicates(ops);
    return locked(this.store, ops, async (current) => {
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
