// BatchGetItem over any number of keys: at most 100 keys a request (DynamoDB's limit), and the
// keys it leaves unprocessed (throttling) asked again after a growing pause, as the SDK retries.
import { BatchGetCommand, type BatchGetCommandOutput } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "./clients.js";

/** BatchGetItem takes 100 keys at most. */
const BATCH_GET_MAX = 100;

/** What each request asks of the table besides its keys. */
export interface BatchGetOptions {
  ConsistentRead?: boolean;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
}

/**
 * The items of `table` with these keys (those that exist), in no particular order. `T` is what
 * the table holds; the items are not validated (they are our own writes).
 */
export async function batchGetAll<T = Record<string, unknown>>(
  table: string,
  keys: readonly Record<string, unknown>[],
  opts: BatchGetOptions = {},
): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_MAX) {
    let pending: Record<string, unknown>[] | undefined = keys.slice(i, i + BATCH_GET_MAX);
    for (let round = 0; pending?.length; round++) {
      if (round > 0) await new Promise((done) => setTimeout(done, Math.min(1000, 50 * 2 ** round)));
      const page: BatchGetCommandOutput = await dynamo().send(
        new BatchGetCommand({ RequestItems: { [table]: { ...opts, Keys: pending } } }),
      );
      out.push(...((page.Responses?.[table] ?? []) as T[]));
      pending = page.UnprocessedKeys?.[table]?.Keys;
    }
  }
  return out;
}
