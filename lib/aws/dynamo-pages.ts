// Every item of a Query or Scan, across pages, through the SDK's own paginators.
import {
  paginateQuery,
  paginateScan,
  type QueryCommandInput,
  type ScanCommandInput,
} from "@aws-sdk/lib-dynamodb";
import { dynamo } from "./clients.js";

type Item = Record<string, unknown>;

/** `T` is what the table holds; the items are not validated (they are our own writes). */
async function collect<T>(pages: AsyncIterable<{ Items?: Item[] }>): Promise<T[]> {
  const out: T[] = [];
  for await (const page of pages) out.push(...((page.Items ?? []) as T[]));
  return out;
}

export function queryAll<T = Item>(input: QueryCommandInput): Promise<T[]> {
  return collect<T>(paginateQuery({ client: dynamo() }, input));
}

export function scanAll<T = Item>(input: ScanCommandInput): Promise<T[]> {
  return collect<T>(paginateScan({ client: dynamo() }, input));
}
