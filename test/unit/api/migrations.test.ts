import { beforeEach, describe, expect, it } from "vitest";
import type { MigrationRecord } from "../../../lib/instances/types.js";
import { apiCall, type FakeWorld, fakeWorld } from "./fakes.js";
import { record } from "./records.js";

let world: FakeWorld;

const call = (path: string, version?: string, token = "admin-token") =>
  apiCall(world.deps, "GET", path, token, undefined, version);

const SERVER = "6a1f0b8e-1111-4000-8000-000000000001";
const OTHER = "6a1f0b8e-1111-4000-8000-000000000002";

function migration(id: number, over: Partial<MigrationRecord> = {}): MigrationRecord {
  return {
    uuid: `00000000-0000-4000-8000-${String(id).padStart(12, "0")}`,
    id,
    instance_uuid: SERVER,
    project_id: "demo",
    user_id: "demo",
    migration_type: "resize",
    status: "finished",
    source_compute: "host-1",
    source_node: "host-1",
    dest_compute: "host-2",
    dest_node: "host-2",
    dest_host: "host-2",
    old_instance_type_id: "1",
    new_instance_type_id: "2",
    created_at: `2026-03-01T12:0${id}:00.123Z`,
    updated_at: `2026-03-01T12:0${id}:30.456Z`,
    ...over,
  };
}

function seed(...ms: MigrationRecord[]) {
  for (const m of ms) world.migrations.set(m.uuid, m);
}

const ids = (r: { json: { migrations: { id: number }[] } }) => r.json.migrations.map((m) => m.id);

beforeEach(() => {
  world = fakeWorld();
  world.instances.set(SERVER, record({ id: SERVER, vm_state: "active", task_state: null, host: "host-1" }));
  world.instances.set(OTHER, record({ id: OTHER, project_id: "other", user_id: "other" }));
});

const BASE_FIELDS = [
  "created_at",
  "dest_compute",
  "dest_host",
  "dest_node",
  "id",
  "instance_uuid",
  "new_instance_type_id",
  "old_instance_type_id",
  "source_compute",
  "source_node",
  "status",
  "updated_at",
];

describe("GET /os-migrations: the fields of each microversion", () => {
  it("2.1: Nova's base fields; timestamps with microseconds and no zone; flavor ids as integers", async () => {
    seed(migration(1));
    const r = await call("/v2.1/os-migrations");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      migrations: [
        {
          created_at: "2026-03-01T12:01:00.123000",
          dest_compute: "host-2",
          dest_host: "host-2",
          dest_node: "host-2",
          id: 1,
          instance_uuid: SERVER,
          new_instance_type_id: 2,
          old_instance_type_id: 1,
          source_compute: "host-1",
          source_node: "host-1",
          status: "finished",
          updated_at: "2026-03-01T12:01:30.456000",
        },
      ],
    });
  });

  it("a flavor id that is not all digits prints as a stable integer of its own, at or above 2^31 (Nova's field is an integer)", async () => {
    seed(
      migration(1, { new_instance_type_id: "m1.custom" }),
      migration(2, { new_instance_type_id: "m1.other" }),
    );
    const [a, b] = (await call("/v2.1/os-migrations")).json.migrations;
    expect(Number.isSafeInteger(a.new_instance_type_id)).toBe(true);
    expect(a.new_instance_type_id).toBeGreaterThanOrEqual(2 ** 31);
    expect(b.new_instance_type_id).not.toBe(a.new_instance_type_id);
    expect((await call("/v2.1/os-migrations")).json.migrations[0].new_instance_type_id).toBe(
      a.new_instance_type_id,
    );
    expect(a.old_instance_type_id).toBe(1);
  });

  it("2.23: migration_type; links only for an in-progress live migration", async () => {
    seed(
      migration(1),
      migration(2, { migration_type: "live-migration", status: "running" as MigrationRecord["status"] }),
      migration(3, { migration_type: "live-migration", status: "error" }),
    );
    const r = await call("/v2.1/os-migrations", "2.23");
    const [m1, m2, m3] = r.json.migrations;
    expect(Object.keys(m1).sort()).toEqual([...BASE_FIELDS, "migration_type"].sort());
    expect(m1.migration_type).toBe("resize");
    expect(m2.links).toEqual([
      { rel: "self", href: `http://localhost/v2.1/servers/${SERVER}/migrations/2` },
      { rel: "bookmark", href: `http://localhost/servers/${SERVER}/migrations/2` },
    ]);
    expect(m3).not.toHaveProperty("links");
    expect(Object.keys((await call("/v2.1/os-migrations", "2.22")).json.migrations[0])).not.toContain(
      "migration_type",
    );
  });

  it("2.59: uuid; 2.80: user_id and project_id", async () => {
    seed(migration(1, { user_id: "u1", project_id: "p1" }));
    const at259 = (await call("/v2.1/os-migrations", "2.59")).json.migrations[0];
    expect(Object.keys(at259).sort()).toEqual([...BASE_FIELDS, "migration_type", "uuid"].sort());
    expect(at259.uuid).toBe(migration(1).uuid);
    const at280 = (await call("/v2.1/os-migrations", "2.80")).json.migrations[0];
    expect(Object.keys(at280).sort()).toEqual(
      [...BASE_FIELDS, "migration_type", "uuid", "user_id", "project_id"].sort(),
    );
    expect(at280).toMatchObject({ user_id: "u1", project_id: "p1" });
    expect(Object.keys((await call("/v2.1/os-migrations", "2.79")).json.migrations[0])).not.toContain(
      "user_id",
    );
  });

  it("an empty table lists nothing, with no links", async () => {
    expect((await call("/v2.1/os-migrations", "latest")).json).toEqual({ migrations: [] });
  });
});

describe("GET /os-migrations: policy and order", () => {
  it("is admin only: Nova's 403 for a member", async () => {
    seed(migration(1));
    for (const v of ["2.1", "2.59", "2.80"]) {
      const r = await call("/v2.1/os-migrations", v, "demo-token");
      expect(r.status).toBe(403);
      expect(r.json.forbidden.message).toBe(
        "Policy doesn't allow os_compute_api:os-migrations:index to be performed.",
      );
    }
  });

  it("before 2.59 by id; from 2.59 newest first (created_at, then id)", async () => {
    seed(
      migration(1),
      migration(2, { created_at: "2026-03-01T12:05:00Z" }),
      migration(3, { created_at: "2026-03-01T12:05:00Z" }),
    );
    expect(ids(await call("/v2.1/os-migrations"))).toEqual([1, 2, 3]);
    expect(ids(await call("/v2.1/os-migrations", "2.59"))).toEqual([3, 2, 1]);
  });
});

describe("GET /os-migrations: filters", () => {
  beforeEach(() => {
    seed(
      migration(1),
      migration(2, {
        instance_uuid: OTHER,
        source_compute: "host-2",
        source_node: "host-2",
        dest_compute: "host-3",
        dest_node: "host-3",
        dest_host: "host-3",
        migration_type: "migration",
        status: "confirmed",
        user_id: "other",
        project_id: "other",
      }),
      migration(3, { status: "error", dest_compute: null, dest_node: null, dest_host: null }),
    );
  });

  it("host matches the source or the destination; source_compute the source (ignored with host)", async () => {
    expect(ids(await call("/v2.1/os-migrations?host=host-2"))).toEqual([1, 2]);
    expect(ids(await call("/v2.1/os-migrations?host=host-3"))).toEqual([2]);
    expect(ids(await call("/v2.1/os-migrations?host="))).toEqual([]);
    expect(ids(await call("/v2.1/os-migrations?source_compute=host-1"))).toEqual([1, 3]);
    expect(ids(await call("/v2.1/os-migrations?source_compute=host-1&host=host-3"))).toEqual([2]);
  });

  it("status, instance_uuid, migration_type; several at once", async () => {
    expect(ids(await call("/v2.1/os-migrations?status=error"))).toEqual([3]);
    expect(ids(await call(`/v2.1/os-migrations?instance_uuid=${OTHER}`))).toEqual([2]);
    expect(ids(await call("/v2.1/os-migrations?migration_type=resize", "2.23"))).toEqual([1, 3]);
    expect(ids(await call("/v2.1/os-migrations?migration_type=live-migration"))).toEqual([]);
    expect(ids(await call(`/v2.1/os-migrations?instance_uuid=${SERVER}&status=finished`))).toEqual([1]);
    // one value each, the last, as Nova's dict.update(req.GET)
    expect(ids(await call("/v2.1/os-migrations?status=error&status=confirmed"))).toEqual([2]);
  });

  it("hidden: no record is hidden here, so false keeps all and true none", async () => {
    expect(ids(await call("/v2.1/os-migrations?hidden=0"))).toEqual([1, 2, 3]);
    expect(ids(await call("/v2.1/os-migrations?hidden=false", "2.80"))).toEqual([3, 2, 1]);
    expect(ids(await call("/v2.1/os-migrations?hidden=1"))).toEqual([]);
  });

  it("user_id and project_id from 2.80; before 2.59 they reach the filters too, as in Nova", async () => {
    expect(ids(await call("/v2.1/os-migrations?user_id=other", "2.80"))).toEqual([2]);
    expect(ids(await call("/v2.1/os-migrations?project_id=demo", "2.80"))).toEqual([3, 1]);
    expect(ids(await call("/v2.1/os-migrations?project_id=demo"))).toEqual([1, 3]);
    const r = await call("/v2.1/os-migrations?project_id=demo", "2.79");
    expect(r.status).toBe(400);
    expect(r.json.badRequest.message).toBe(
      "Additional properties are not allowed ('project_id' was unexpected)",
    );
  });

  it("changes-since (2.59) and changes-before (2.66) on updated_at; ignored before", async () => {
    world.migrations.get(migration(2).uuid)!.updated_at = "2026-03-01T13:00:00Z";
    const since = "/v2.1/os-migrations?changes-since=2026-03-01T12:02:00Z";
    expect(ids(await call(since, "2.59"))).toEqual([3, 2]);
    expect(ids(await call(since))).toEqual([1, 2, 3]);
    const before = "/v2.1/os-migrations?changes-before=2026-03-01T12:30:00Z";
    expect(ids(await call(before, "2.66"))).toEqual([3, 1]);
    expect((await call(before, "2.65")).status).toBe(400);
    const both = await call(
      "/v2.1/os-migrations?changes-since=2026-03-01T12:30:00Z&changes-before=2026-03-01T12:00:00Z",
      "2.66",
    );
    expect(both.status).toBe(400);
    expect(both.json.badRequest.message).toBe(
      "The value of changes-since must be less than or equal to changes-before.",
    );
  });
});

describe("GET /os-migrations: paging (2.59)", () => {
  beforeEach(() => {
    for (let i = 1; i <= 5; i++) seed(migration(i));
  });

  it("limit and marker (a uuid) walk the list newest first, with Nova's next link", async () => {
    const first = await call("/v2.1/os-migrations?limit=2&status=finished", "2.59");
    expect(ids(first)).toEqual([5, 4]);
    expect(first.json.migrations_links).toEqual([
      {
        rel: "next",
        // Nova's OrderedDict of the sorted parameters: a new marker goes last
        href: `http://localhost/v2.1/os-migrations?limit=2&status=finished&marker=${migration(4).uuid}`,
      },
    ]);
    const second = await call(
      `/v2.1/os-migrations?limit=2&status=finished&marker=${migration(4).uuid}`,
      "2.59",
    );
    expect(ids(second)).toEqual([3, 2]);
    // a marker already given keeps its sorted place
    expect(second.json.migrations_links[0].href).toBe(
      `http://localhost/v2.1/os-migrations?limit=2&marker=${migration(2).uuid}&status=finished`,
    );
    const last = await call(`/v2.1/os-migrations?limit=2&marker=${migration(2).uuid}`, "2.59");
    expect(ids(last)).toEqual([1]);
    expect(last.json).not.toHaveProperty("migrations_links");
  });

  it("a full page has a next link even when nothing follows (Nova's rule); limit=0 lists none", async () => {
    const r = await call("/v2.1/os-migrations?limit=5", "2.59");
    expect(ids(r)).toEqual([5, 4, 3, 2, 1]);
    expect(r.json.migrations_links[0].href).toContain(`marker=${migration(1).uuid}`);
    const zero = await call("/v2.1/os-migrations?limit=0", "2.59");
    expect(zero.json).toEqual({ migrations: [] });
  });

  it("a marker is found whatever the filters; an unknown one is 400", async () => {
    seed(migration(6, { status: "error" }));
    const r = await call(`/v2.1/os-migrations?status=finished&marker=${migration(6).uuid}`, "2.59");
    expect(ids(r)).toEqual([5, 4, 3, 2, 1]);
    const bad = await call("/v2.1/os-migrations?marker=nope", "2.59");
    expect(bad.status).toBe(400);
    expect(bad.json.badRequest.message).toBe("Marker nope could not be found.");
  });

  it("before 2.59 limit and marker are ignored (no paging, no links)", async () => {
    const r = await call("/v2.1/os-migrations?limit=1&marker=nope", "2.58");
    expect(ids(r)).toEqual([1, 2, 3, 4, 5]);
    expect(r.json).not.toHaveProperty("migrations_links");
  });
});

describe("GET /os-migrations: Nova's query schema", () => {
  it("before 2.59 any parameter is allowed; from 2.59 an unknown one is 400", async () => {
    expect((await call("/v2.1/os-migrations?foo=1&node=x", "2.58")).status).toBe(200);
    const r = await call("/v2.1/os-migrations?foo=1&bar=2", "2.59");
    expect(r.status).toBe(400);
    expect(r.json.badRequest.message).toBe(
      "Additional properties are not allowed ('foo', 'bar' were unexpected)",
    );
  });

  it("before 2.59 the database's other filters (node, uuid) apply", async () => {
    seed(migration(1), migration(2, { source_node: "n9" }));
    expect(ids(await call("/v2.1/os-migrations?node=n9"))).toEqual([2]);
    expect(ids(await call(`/v2.1/os-migrations?uuid=${migration(1).uuid}`))).toEqual([1]);
  });

  it("limit: a non-negative integer, once; changes-since a date-time", async () => {
    const cases: [string, string][] = [
      ["limit=x", "Invalid input for query parameters limit. Value: x. 'x' does not match '^[0-9]*$'"],
      ["limit=-1", "Invalid input for query parameters limit. Value: -1. '-1' does not match '^[0-9]*$'"],
      [
        "limit=1&limit=2",
        "Invalid input for query parameters limit. Value: ['1', '2']. ['1', '2'] is too long",
      ],
      [
        "changes-since=wrong_time",
        "Invalid input for query parameters changes-since. Value: wrong_time. 'wrong_time' is not a 'date-time'",
      ],
    ];
    for (const [q, message] of cases) {
      const r = await call(`/v2.1/os-migrations?${q}`, "2.59");
      expect(r.status, q).toBe(400);
      expect(r.json.badRequest.message).toBe(message);
    }
  });

  it("a bad parameter is 400 before the policy's 403, as Nova's schema runs first", async () => {
    expect((await call("/v2.1/os-migrations?foo=1", "2.59", "demo-token")).status).toBe(400);
  });
});

describe("GET /servers/{id}/migrations[/{migration_id}]", () => {
  it("404 below 2.23, as Nova's version-gated route", async () => {
    expect((await call(`/v2.1/servers/${SERVER}/migrations`, "2.22")).status).toBe(404);
    expect((await call(`/v2.1/servers/${SERVER}/migrations/1`, "2.22")).status).toBe(404);
  });

  it("lists only the in-progress live migrations: none for a resize", async () => {
    seed(migration(1), migration(2, { status: "migrating" }));
    const r = await call(`/v2.1/servers/${SERVER}/migrations`, "2.23");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ migrations: [] });
  });

  it("an in-progress live migration, with Nova's server_migrations fields at 2.23, 2.59, 2.80", async () => {
    const live = migration(7, {
      migration_type: "live-migration",
      status: "running" as MigrationRecord["status"],
    });
    seed(live, migration(8, { migration_type: "live-migration", status: "error" }));
    const r = await call(`/v2.1/servers/${SERVER}/migrations`, "2.23");
    expect(r.json.migrations).toEqual([
      {
        created_at: "2026-03-01T12:07:00.123000",
        dest_compute: "host-2",
        dest_host: "host-2",
        dest_node: "host-2",
        disk_processed_bytes: null,
        disk_remaining_bytes: null,
        disk_total_bytes: null,
        id: 7,
        memory_processed_bytes: null,
        memory_remaining_bytes: null,
        memory_total_bytes: null,
        server_uuid: SERVER,
        source_compute: "host-1",
        source_node: "host-1",
        status: "running",
        updated_at: "2026-03-01T12:07:30.456000",
      },
    ]);
    const shown = await call(`/v2.1/servers/${SERVER}/migrations/7`, "2.80");
    expect(shown.status).toBe(200);
    expect(shown.json.migration).toMatchObject({
      id: 7,
      uuid: live.uuid,
      user_id: "demo",
      project_id: "demo",
    });
    expect((await call(`/v2.1/servers/${SERVER}/migrations/7`, "2.58")).json.migration).not.toHaveProperty(
      "uuid",
    );
    const ended = await call(`/v2.1/servers/${SERVER}/migrations/8`, "2.23");
    expect(ended.status).toBe(404);
    expect(ended.json.itemNotFound.message).toBe(`Live migration 8 for server ${SERVER} is not in progress.`);
  });

  it("show: Nova's 404 for an unknown migration and for one that is no live migration", async () => {
    seed(migration(1));
    const unknown = await call(`/v2.1/servers/${SERVER}/migrations/99`, "2.23");
    expect(unknown.status).toBe(404);
    expect(unknown.json.itemNotFound.message).toBe(
      `In-progress live migration 99 is not found for server ${SERVER}.`,
    );
    expect((await call(`/v2.1/servers/${SERVER}/migrations/abc`, "2.23")).status).toBe(404);
    const resize = await call(`/v2.1/servers/${SERVER}/migrations/1`, "2.23");
    expect(resize.status).toBe(404);
    expect(resize.json.itemNotFound.message).toBe(`Migration 1 for server ${SERVER} is not live-migration.`);
  });

  it("admin only: a member's own server is 403, another project's or an unknown one 404", async () => {
    const own = await call(`/v2.1/servers/${SERVER}/migrations`, "2.23", "demo-token");
    expect(own.status).toBe(403);
    expect(own.json.forbidden.message).toBe(
      "Policy doesn't allow os_compute_api:servers:migrations:index to be performed.",
    );
    const show = await call(`/v2.1/servers/${SERVER}/migrations/1`, "2.23", "demo-token");
    expect(show.json.forbidden.message).toBe(
      "Policy doesn't allow os_compute_api:servers:migrations:show to be performed.",
    );
    expect((await call(`/v2.1/servers/${OTHER}/migrations`, "2.23", "demo-token")).status).toBe(404);
    const missing = await call("/v2.1/servers/6a1f0b8e-1111-4000-8000-00000000dead/migrations", "2.23");
    expect(missing.status).toBe(404);
    expect(missing.json.itemNotFound.message).toBe(
      "Instance 6a1f0b8e-1111-4000-8000-00000000dead could not be found.",
    );
    expect((await call(`/v2.1/servers/${OTHER}/migrations`, "2.23")).json).toEqual({ migrations: [] });
  });
});
