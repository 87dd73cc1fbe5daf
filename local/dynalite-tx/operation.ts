// One operation of a transaction: the TransactItems list and each entry through dynalite's
// validation of its single-item counterpart, with DynamoDB's own refusals of the request.
import {
  DYNAMODB,
  db,
  type Item,
  isServiceError,
  type Store,
  serviceError,
  type TableDescription,
  VALIDATION,
  validationError,
  validations,
} from "./dynalite.js";

const MAX_TRANSACT_ITEMS = 100;
export const WRITE_KINDS = ["ConditionCheck", "Put", "Delete", "Update"] as const;
type WriteKind = (typeof WRITE_KINDS)[number];

/** One operation of a transaction, validated, with its table and item key. */
export interface Operation {
  kind: WriteKind | "Get";
  /** the operation as dynalite's actions take it (expressions parsed) */
  data: Record<string, unknown>;
  table: TableDescription;
  key: string;
  returnOld: boolean;
  /** a ValidationError found before the item was read (a key of the wrong type) */
  invalid?: string;
}

/** The TransactItems list, with DynamoDB's checks of its length. */
export function transactItems(data: Record<string, unknown>): Record<string, unknown>[] {
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

export function refuseDuplicates(ops: Operation[]): void {
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

/** One operation through dynalite's validation of its single-item counterpart. */
export async function operationOf(
  store: Store,
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
  validations.checkValidations(data, v.types, v.custom, store);
  const table = await new Promise<TableDescription>((resolve, reject) =>
    store.getTable(String(data.TableName), (err, t) => {
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

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);
