// What a transaction consumes, as DynamoDB counts it: by table and secondary index.
import { db, type Item } from "./dynalite.js";

const kb = (item: Item | null | undefined, per: number) =>
  Math.max(1, Math.ceil((item ? db.itemSize(present(item)) : 0) / per));
/**
 * Its attributes that hold a value: dynalite's index projection (INCLUDE, KEYS_ONLY) names every
 * projected attribute, undefined where the item has none, which its size function cannot read.
 */
const present = (item: Item): Item =>
  Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as Item;
/** A transactional write: 2 units per KB of the larger of the item before and after. */
export const writeUnits = (before: Item | null | undefined, after: Item | null | undefined) =>
  2 * Math.max(kb(before, 1024), kb(after, 1024));
export const transactionalWriteUnits = (item: Item) => 2 * kb(item, 1024);
/** A transactional read: 2 units per 4 KB, a missing item too. */
export const readUnits = (item: Item | undefined) => 2 * kb(item, 4096);

/** ConsumedCapacity by table and secondary index, in the order tables first appear. */
export class Capacity {
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

/** JSON with every map's keys sorted: the same item whatever order its attributes came in. */
export const canonical = (item: Item) =>
  JSON.stringify(item, (_key, value: unknown) =>
    value && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
