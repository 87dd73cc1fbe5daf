// dynalite's own modules and the shapes of what they take and give, for the transactions
// (../dynalite-tx.ts) that run DynamoDB's rules through dynalite's code.
import type { Server } from "node:http";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** An AttributeValue map, as DynamoDB's JSON protocol carries it. */
export type Item = Record<string, Record<string, unknown>>;

interface KeySchemaElement {
  AttributeName: string;
  KeyType: "HASH" | "RANGE";
}
interface IndexDescription {
  IndexName: string;
  KeySchema: KeySchemaElement[];
  Projection: { ProjectionType: string; NonKeyAttributes?: string[] };
}
export interface TableDescription {
  TableName: string;
  KeySchema: KeySchemaElement[];
  AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
  GlobalSecondaryIndexes?: IndexDescription[];
  LocalSecondaryIndexes?: IndexDescription[];
}

/** An error as dynalite's code makes them: the HTTP status and body DynamoDB would answer. */
export interface ServiceError extends Error {
  statusCode: number;
  body: Record<string, unknown>;
}
type Callback<T> = (err: ServiceError | Error | null, value?: T) => void;
export type Release = <F extends (...args: never[]) => void>(fn: F) => F;

export interface ItemDb {
  lock(keys: string | string[], exec: (release: Release) => void): void;
  get(key: string, cb: (err: (Error & { name: string }) | null, item?: Item) => void): void;
  put(key: string, item: Item, cb: (err: Error | null) => void): void;
  del(key: string, cb: (err: Error | null) => void): void;
}
export interface LevelBatchOp {
  type: "put" | "del";
  key: string;
  value?: Item;
}
/** dynalite's store (db/index.js create()). */
export interface Store {
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
}
export interface Validation {
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
export type Action = (store: Store, data: Record<string, unknown>, cb: Callback<unknown>) => void;

export interface DynaliteOptions {
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
  maxItemSizeKb?: number;
}

// dynalite's modules, from the same module cache as dynalite's own requires, so `db` is the very
// module its server uses.
export const dynalite = require("dynalite") as (options: DynaliteOptions) => Server;
export const db = require("dynalite/db") as DynaliteDb;
export const validations = require("dynalite/validations") as Validations;
export const VALIDATION: Record<"Put" | "Update" | "Delete" | "ConditionCheck" | "Get", Validation> = {
  Put: require("dynalite/validations/putItem"),
  Update: require("dynalite/validations/updateItem"),
  Delete: require("dynalite/validations/deleteItem"),
  // A ConditionCheck has a DeleteItem's shape (TableName, Key, condition, names, values).
  ConditionCheck: require("dynalite/validations/deleteItem"),
  Get: require("dynalite/validations/getItem"),
};
export const ACTION: Record<"Put" | "Update" | "Delete", Action> = {
  Put: require("dynalite/actions/putItem"),
  Update: require("dynalite/actions/updateItem"),
  Delete: require("dynalite/actions/deleteItem"),
};

export const DYNAMODB = "com.amazonaws.dynamodb.v20120810";

export function serviceError(type: string, message: string): ServiceError {
  const e = new Error(message) as ServiceError;
  e.statusCode = 400;
  // DynamoDB's transaction errors carry `Message` (the SDK reads either case).
  e.body = { __type: type, Message: message };
  return e;
}
export const validationError = (message: string) =>
  serviceError("com.amazon.coral.validate#ValidationException", message);
export const isServiceError = (e: unknown): e is ServiceError =>
  e instanceof Error && typeof (e as ServiceError).statusCode === "number";
