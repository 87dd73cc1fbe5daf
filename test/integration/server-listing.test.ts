// The servers listings on the embedded DynamoDB through the real SDK clients: each selection is a
// Query of its index (never a Scan), pages follow Nova's limit/marker in Nova's order across pages,
// and deleted servers show only with changes-since or `deleted`, as in Nova.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo, resetClients } from "../../lib/aws/clients.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { resources } from "../../lib/config.js";
import {
  createMigration,
  listDoneEvacuationsFrom,
  listMigrations,
  listOpenMigrations,
  MIGRATION_READ_BUDGET,
  OPEN_MIGRATION_STATUSES,
  pageMigrations,
  updateMigration,
} from "../../lib/instances/migrations.js";
import {
  CHANGE_SHARDS,
  changeShard,
  LIST_READ_BUDGET,
  listInstances,
  listServerPage,
  MarkerNotFound,
  type ServerListing,
} from "../../lib/instances/queries.js";
import { createInstances, markDeleted } from "../../lib/instances/server-writes.js";
import type { InstanceRecord, MigrationRecord, VmState } from "../../lib/instances/types.js";
import { javaAvailable, startDynamoDbLocal } from "../../local/dynamodb-local.js";
import { applyEnv, startEmulators } from "../../local/emulators.js";
import { createTables, localTables } from "../../local/tables.js";
import { record } from "../unit/api/records.js";
import type { DynamoBackend } from "./placement-suite.js";

const uuid = (n: number) => `7b2e0c9f-3333-4000-8000-${n.toString().padStart(12, "0")}`;

/** 30 servers: 3 projects, 2 hosts, every live vm_state; runs of equal created_at; 6 deleted. */
const records: InstanceRecord[] = Array.from({ length: 30 }, (_, n) =>
  record({
    id: uuid(n),
    name: `vm-${n}`,
    project_id: `p${n % 3}`,
    host: n % 4 === 0 ? null : `host-${n % 2}`,
    vm_state: (["building", "active", "active", "stopped", "error", "resized"] as VmState[])[n % 6]!,
    // every third one shares its time with the next: Nova's order breaks the tie by id
    created_at: `2026-03-01T12:00:${String(Math.floor(n / 2)).padStart(2, "0")}.000Z`,
    updated_at: `2026-03-01T12:00:${String(Math.floor(n / 2)).padStart(2, "0")}.000Z`,
  }),
);
const deletedIds = new Set([uuid(1), uuid(7), uuid(12), uuid(20), uuid(25), uuid(29)]);
let deletedAt = "";

/** 12 migrations of 3 instances; runs of equal created_at (ordered by id, descending). */
const migrations: MigrationRecord[] = Array.from({ length: 12 }, (_, n) => ({
  uuid: uuid(500 + n),
  id: n + 1,
  instance_uuid: uuid(n % 3),
  project_id: "p0",
  user_id: "u",
  migration_type: n % 2 ? "migration" : "resize",
  status: n % 4 ? "confirmed" : "finished",
  source_compute: "host-0",
  source_node: "host-0",
  dest_compute: "host-1",
  dest_node: "host-1",
  dest_host: "host-1",
  old_instance_type_id: "1",
  new_instance_type_id: "2",
  created_at: `2026-03-02T12:00:0${Math.floor(n / 3)}.000Z`,
  updated_at: `2026-03-02T12:00:0${Math.floor(n / 3)}.000Z`,
}));
// and two evacuations from host-0, one done (its source copy to destroy), one just accepted
for (const [n, status] of [
  [12, "done"],
  [13, "accepted"],
] as const) {
  migrations.push({
    ...migrations[0]!,
    uuid: uuid(500 + n),
    id: n + 1,
    instance_uuid: uuid(900 + n),
    migration_type: "evacuation",
    status,
    created_at: "2026-03-02T12:00:05.000Z",
    updated_at: "2026-03-02T12:00:05.000Z",
  });
}

async function seed(): Promise<void> {
  for (const m of [...migrations].reverse()) await createMigration(m);
  // newest last, so the writes' own order does not give the listing's
  await createInstances(records);
  deletedAt = new Date().toISOString();
  for (const id of deletedIds) await markDeleted(id);
  // a console output is another kind of item in the table: no listing reads it
  await dynamo().send(
    new PutCommand({
      TableName: resources().instancesTable,
      Item: { id: `console#${uuid(3)}`, output: "x" },
    }),
  );
}

const live = records.filter((r) => !deletedIds.has(r.id));
const newest = (a: InstanceRecord, b: InstanceRecord) =>
  b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id);
const ids = (rs: InstanceRecord[]) => rs.map((r) => r.id);

/** Every page of a listing, following `next`, with the DynamoDB operations it made. */
async function allPages(q: Omit<ServerListing, "match" | "limit"> & Partial<ServerListing>, limit: number) {
  startMeter();
  meterReading({ reset: true });
  const out: string[] = [];
  const sizes: number[] = [];
  let marker: string | undefined;
  for (let n = 0; n < 100; n++) {
    const page = await listServerPage({ match: () => true, ...q, limit, marker });
    out.push(...ids(page.records));
    sizes.push(page.records.length);
    if (!page.next) break;
    marker = page.next;
  }
  const ops: Record<string, number> = {};
  for (const u of Object.values(meterReading({ reset: true }))) {
    for (const [op, n] of Object.entries(u.requests)) ops[op] = (ops[op] ?? 0) + n;
  }
  stopMeter();
  return { ids: out, sizes, ops };
}

const java = javaAvailable();
if (!java.ok) console.warn(`SKIPPED: servers listings on DynamoDB Local: ${java.reason} (install Java 17)`);
describe("servers listings by index, on dynalite", () => suite({ name: "dynalite", start: startEmulators }));
describe.skipIf(!java.ok)("servers listings by index, on DynamoDB Local", () =>
  suite({ name: "DynamoDB Local", start: () => startDynamoDbLocal() }),
);

function suite(backend: DynamoBackend): void {
  let stopBackend: (() => Promise<void>) | undefined;
  let restore: (() => void) | undefined;
  beforeAll(async () => {
    const started = await backend.start();
    stopBackend = started.stop;
    const tables = localTables();
    restore = applyEnv({ ...started.env, ...Object.fromEntries(tables.map((t) => [t.env, t.localName])) });
    resetClients();
    await createTables(new DynamoDBClient({}), tables);
    await seed();
  });
  afterAll(async () => {
    resetClients();
    restore?.();
    await stopBackend?.();
  });

  const cases: [string, Omit<ServerListing, "match" | "limit">, (r: InstanceRecord) => boolean][] = [
    ["every project's live servers", { deleted: false }, (r) => !deletedIds.has(r.id)],
    [
      "one project's",
      { project: "p1", deleted: false },
      (r) => !deletedIds.has(r.id) && r.project_id === "p1",
    ],
    ["one host's", { host: "host-1", deleted: false }, (r) => !deletedIds.has(r.id) && r.host === "host-1"],
    [
      "by status (vm_state)",
      { vmStates: ["active", "error"], deleted: false },
      (r) => !deletedIds.has(r.id) && ["active", "error"].includes(r.vm_state),
    ],
    ["deleted ones (Nova's `deleted`)", { deleted: true }, (r) => deletedIds.has(r.id)],
  ];
  for (const [what, q, expected] of cases) {
    it(`${what}: Query, never Scan, paged in Nova's order`, async () => {
      const want = ids(records.filter(expected).sort(newest));
      expect(want.length).toBeGreaterThan(2);
      const paged = await allPages(q, 4);
      expect(paged.ids).toEqual(want);
      expect(paged.ops["dynamodb:Query"]).toBeGreaterThan(0);
      expect(paged.ops["dynamodb:Scan"]).toBeUndefined();
      // one request's page: the same servers
      expect((await allPages(q, 1000)).ids).toEqual(want);
    });
  }

  it("changes-since: only what changed since, deleted ones included, from the changes index", async () => {
    const since = await allPages({ changesSince: deletedAt }, 2);
    expect(new Set(since.ids)).toEqual(deletedIds);
    expect(since.ids).toEqual(ids(records.filter((r) => deletedIds.has(r.id)).sort(newest)));
    expect(since.ops["dynamodb:Scan"]).toBeUndefined();
    // one Query per shard of the changes index and one of the builds in flight (each page again)
    expect(since.ops["dynamodb:Query"]).toBe((CHANGE_SHARDS + 1) * since.sizes.length);
    // with a project, and with changes-before only
    expect((await allPages({ changesSince: deletedAt, project: "p2" }, 10)).ids).toEqual(
      ids(records.filter((r) => deletedIds.has(r.id) && r.project_id === "p2").sort(newest)),
    );
    const before = await allPages({ changesBefore: "2026-03-01T12:00:03.000Z" }, 10);
    expect(before.ids).toEqual(
      ids(
        records
          .filter((r) => r.created_at <= "2026-03-01T12:00:03.000Z")
          .sort(newest)
          .filter((r) => !deletedIds.has(r.id)),
      ),
    );
  });

  it("an instance enters the changes index when it leaves BUILD; a build in flight is found all the same", async () => {
    const raw = async (id: string) =>
      (await dynamo().send(new GetCommand({ TableName: resources().instancesTable, Key: { id } }))).Item!;
    const building = records.find((r) => r.vm_state === "building" && !deletedIds.has(r.id))!;
    expect((await raw(building.id)).change_shard).toBeUndefined();
    expect((await raw(records[3]!.id)).change_shard).toBe(changeShard(records[3]!.id));
    expect((await raw(uuid(12))).change_shard).toBe(changeShard(uuid(12)));
    expect(new Set(records.map((r) => changeShard(r.id))).size).toBeGreaterThan(1);
    // the builds in flight answer changes-since from their own partition
    const since = await allPages({ changesSince: building.updated_at, vmStates: ["building"] }, 10);
    expect(since.ids).toContain(building.id);
    expect(since.ids).toEqual(
      ids(
        records
          .filter(
            (r) => r.vm_state === "building" && !deletedIds.has(r.id) && r.updated_at >= building.updated_at,
          )
          .sort(newest),
      ),
    );
  });

  it("a marker that is no instance is MarkerNotFound; a deleted one still places the page", async () => {
    await expect(listServerPage({ match: () => true, limit: 5, marker: uuid(999) })).rejects.toBeInstanceOf(
      MarkerNotFound,
    );
    const after = await listServerPage({ match: () => true, limit: 3, deleted: false, marker: uuid(25) });
    const want = ids(live.filter((r) => newest(r, records[25]!) > 0).sort(newest)).slice(0, 3);
    expect(ids(after.records)).toEqual(want);
  });

  it("a filter no index answers pages on until the page is full", async () => {
    const odd = (r: InstanceRecord) => Number(r.name.slice(3)) % 2 === 1;
    const paged = await allPages({ deleted: false, match: odd }, 3);
    expect(paged.ids).toEqual(ids(live.filter(odd).sort(newest)));
    expect(paged.sizes.slice(0, -1).every((n) => n === 3)).toBe(true);
  });

  it("reads at most LIST_READ_BUDGET items per request; the next link then follows the last read", async () => {
    expect(LIST_READ_BUDGET).toBe(2000);
    const none = await listServerPage({ match: () => false, limit: 5, deleted: false, readBudget: 4 });
    expect(none.records).toEqual([]);
    expect(none.next).toBe(live.sort(newest)[3]!.id);
    // following the links reaches the end and finds what matches
    const last = live.sort(newest).at(-1)!;
    const found = await allPages({ deleted: false, match: (r) => r.id === last.id, readBudget: 4 }, 5);
    expect(found.ids).toEqual([last.id]);
  });

  it("listInstances reads by index: every project's, one project's, with the deleted ones", async () => {
    startMeter();
    meterReading({ reset: true });
    expect(ids(await listInstances())).toEqual(ids(live.sort(newest)));
    expect(ids(await listInstances("p0"))).toEqual(
      ids(live.filter((r) => r.project_id === "p0").sort(newest)),
    );
    expect(ids(await listInstances(undefined, { withDeleted: true }))).toEqual(
      ids([...records].sort(newest)),
    );
    const ops = Object.values(meterReading({ reset: true })).flatMap((u) => Object.keys(u.requests));
    stopMeter();
    expect(ops).not.toContain("dynamodb:Scan");
  });

  describe("os-migrations by index", () => {
    const newestMigration = (a: MigrationRecord, b: MigrationRecord) =>
      b.created_at.localeCompare(a.created_at) || b.id - a.id;
    const uuids = (ms: MigrationRecord[]) => ms.map((m) => m.uuid);

    it("pages in 2.59's order with a marker, filters on the items, and never Scans", async () => {
      startMeter();
      meterReading({ reset: true });
      const all: string[] = [];
      let after: MigrationRecord | undefined;
      for (let n = 0; n < 10; n++) {
        const page = await pageMigrations({ match: (m) => m.status === "confirmed", after, limit: 2 });
        all.push(...uuids(page.migrations));
        if (page.migrations.length < 2) break;
        after = page.migrations.at(-1);
      }
      expect(all).toEqual(uuids(migrations.filter((m) => m.status === "confirmed").sort(newestMigration)));
      // one instance's, from its own index
      const one = await pageMigrations({ instanceUuid: uuid(1), match: () => true, limit: 10 });
      expect(uuids(one.migrations)).toEqual(
        uuids(migrations.filter((m) => m.instance_uuid === uuid(1)).sort(newestMigration)),
      );
      // before 2.59: every one, by id
      expect((await listMigrations()).map((m) => m.id)).toEqual(migrations.map((m) => m.id));
      expect((await listMigrations({ instanceUuid: uuid(2) })).map((m) => m.id)).toEqual([3, 6, 9, 12]);
      const ops = Object.values(meterReading({ reset: true })).flatMap((u) => Object.keys(u.requests));
      stopMeter();
      expect(ops).toContain("dynamodb:Query");
      expect(ops).not.toContain("dynamodb:Scan");
    });

    it("the watchdog's open moves and a registering host's done evacuations: by index, never Scan", async () => {
      startMeter();
      meterReading({ reset: true });
      const open = (await listOpenMigrations()).map((m) => m.id).sort((a, b) => a - b);
      expect(open).toEqual(
        migrations.filter((m) => OPEN_MIGRATION_STATUSES.includes(m.status)).map((m) => m.id),
      );
      expect(open).toEqual([1, 5, 9, 14]);
      expect((await listDoneEvacuationsFrom("host-0")).map((m) => m.id)).toEqual([13]);
      expect(await listDoneEvacuationsFrom("host-1")).toEqual([]);
      // a move that ends leaves the open index; one that goes on stays
      expect(await updateMigration(uuid(500), ["finished"], "confirmed")).toBe(true);
      expect(await updateMigration(uuid(513), ["accepted"], "pre-migrating")).toBe(true);
      const ops = Object.values(meterReading({ reset: true })).flatMap((u) => Object.keys(u.requests));
      stopMeter();
      expect(ops).not.toContain("dynamodb:Scan");
      const raw = async (u: string) =>
        (await dynamo().send(new GetCommand({ TableName: resources().migrationsTable, Key: { uuid: u } })))
          .Item!;
      expect((await raw(uuid(500))).open).toBeUndefined();
      expect((await raw(uuid(513))).open).toBe("open");
      expect((await listOpenMigrations()).map((m) => m.id).sort((a, b) => a - b)).toEqual([5, 9, 14]);
    });

    it(`reads at most MIGRATION_READ_BUDGET (${MIGRATION_READ_BUDGET}) migrations a page; next follows the last read`, async () => {
      const r = await pageMigrations({ match: () => false, limit: 5, readBudget: 3 });
      expect(r.migrations).toEqual([]);
      expect(r.next).toBe([...migrations].sort(newestMigration)[2]!.uuid);
    });
  });
}
