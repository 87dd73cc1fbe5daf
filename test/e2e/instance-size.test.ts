// What one instance costs to keep: its item as the build leaves it (ACTIVE through the whole
// runtime, 8 hosts), measured with the emulator's own item-size rule, against the same instance
// as the previous model stored it (the explanation, a whole request spec and every repeated field
// on the item, the building index projecting everything). Every UpdateItem costs 1 write unit per KB of the item,
// and every write to an indexed item as much again per index entry it rewrites.
import { createRequire } from "node:module";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { marshall, type NativeAttributeValue, unmarshall } from "@aws-sdk/util-dynamodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { resources } from "../../lib/config.js";
import { getInstance } from "../../lib/instances/queries.js";
import { requestSpecOf } from "../../lib/instances/request-spec.js";
import { getSchedulingDecision } from "../../lib/instances/scheduling-decisions.js";
import { WATCHED_ATTRIBUTES } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

/** dynalite's DynamoDB item size (attribute names + values, as DynamoDB counts them). */
const { itemSize } = createRequire(import.meta.url)("dynalite/db/index.js") as {
  itemSize: (item: Record<string, unknown>) => number;
};
const sizeOf = (item: Record<string, NativeAttributeValue>) =>
  itemSize(marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: true }));
const units = (bytes: number) => Math.ceil(bytes / 1024);

let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  // a build long enough to read its item while spawning
  ({ runtime, client } = await startTestRuntime({ hosts: 8, buildMs: 1000 }));
});
afterAll(async () => runtime?.stop());

async function raw(table: string, id: string): Promise<Record<string, NativeAttributeValue>> {
  const r = await new DynamoDBClient({}).send(
    new GetItemCommand({ TableName: table, Key: { id: { S: id } }, ConsistentRead: true }),
  );
  return unmarshall(r.Item!);
}

it("an instance item is small; the explanation and the index entries are apart", async () => {
  const id = await client.createServer({ name: "sized" });
  const spawning = await eventually(
    () => raw(resources().instancesTable, id),
    (i) => i.task_state === "spawning",
  );
  expect(spawning.task_state).toBe("spawning");
  expect((await client.as(ADMIN).waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");

  const item = await raw(resources().instancesTable, id);
  const rec = (await getInstance(id))!;
  const decision = (await getSchedulingDecision(id))!;
  const stored = await raw(resources().schedulingTable, id);
  // The same instance as the previous model kept it.
  const before = { ...rec, request_spec: requestSpecOf(rec), scheduling: decision };
  // While in BUILD, what the watchdog reads of it: the whole item before, these attributes now.
  const watched = ["id", "build_deadline", ...WATCHED_ATTRIBUTES];
  const entryNow = Object.fromEntries(
    Object.entries({ ...item, build_deadline: item.updated_at }).filter(([k]) => watched.includes(k)),
  );
  const sizes = {
    before: sizeOf(before),
    after: sizeOf(item),
    explanation_json: Buffer.byteLength(JSON.stringify(decision.explanation)),
    scheduling_item: sizeOf(stored),
    building_entry_before: sizeOf(before),
    building_entry_after: sizeOf(entryNow),
  };
  console.log(
    `instance item: ${sizes.before} B before (${units(sizes.before)} WCU per UpdateItem, as much again ` +
      `per index entry rewritten), ${sizes.after} B now (${units(sizes.after)} WCU); explanation ` +
      `${sizes.explanation_json} B as JSON, its own item ${sizes.scheduling_item} B (gzip, written once per ` +
      `decision); building index entry ${sizes.building_entry_before} B before, ${sizes.building_entry_after} B now`,
  );
  const largest = Object.entries(item)
    .map(([k, v]) => [k, sizeOf({ [k]: v })] as const)
    .sort((a, b) => b[1] - a[1]);
  console.log(`by attribute: ${largest.map(([k, n]) => `${k} ${n}`).join(", ")}`);
  expect(sizes.after).toBeLessThan(sizes.before / 4);
  // Under 1 KB at its largest (spawning: the alternates and the deadline) and after: each write of
  // the build is one unit (null attributes left out: at 1,029 bytes, two).
  console.log(`while spawning: ${sizeOf(spawning)} B`);
  expect(sizeOf(spawning)).toBeLessThan(1024);
  expect(sizes.after).toBeLessThan(1024);
  expect(sizes.building_entry_after).toBeLessThan(512);
});
