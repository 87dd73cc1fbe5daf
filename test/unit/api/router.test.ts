// The whole API through handleHttp, with in-memory I/O (no DynamoDB, no SQS).

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { handler as lambdaHandler } from "../../../functions/api/handler.js";
import { allowedMethods } from "../../../lib/api/app.js";
import { nodeNumber } from "../../../lib/api/host-ids.js";
import type { HttpRequest } from "../../../lib/api/request.js";
import { handleHttp } from "../../../lib/api/router.js";
import { MAX_REQUEST_BODY_BYTES } from "../../../lib/config.js";
import { buildRequestV2, MAX_INSTANCES_PER_REQUEST } from "../../../lib/messages/build-request.js";
import { type FakeWorld, fakeWorld, NOW, sentSpec } from "./fakes.js";

const ADMIN = "admin-token";
const DEMO = "demo-token";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let w: FakeWorld;
let logLines: Record<string, unknown>[];

beforeEach(() => {
  w = fakeWorld();
  logLines = [];
  const capture = (chunk: string | Uint8Array) => {
    for (const l of String(chunk).split("\n").filter(Boolean)) logLines.push(JSON.parse(l));
    return true;
  };
  vi.spyOn(process.stdout, "write").mockImplementation(capture);
  vi.spyOn(process.stderr, "write").mockImplementation(capture);
});
afterEach(() => {
  vi.restoreAllMocks();
  delete process.env.NOVALESS_AUTH_TOKENS;
});

async function call(
  method: string,
  path: string,
  opts: { token?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { host: "api.test", ...opts.headers };
  const token = opts.token === undefined ? DEMO : opts.token;
  if (token) headers["x-auth-token"] = token;
  const req: HttpRequest = {
    method,
    path,
    headers,
    body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
  };
  const res = await handleHttp(req, w.deps);
  return { ...res, json: res.body ? JSON.parse(res.body) : undefined };
}

const server = (over: Record<string, unknown> = {}) => ({
  server: { name: "vm", flavorRef: "1", imageRef: "cirros", ...over },
});

describe("plumbing", () => {
  it("GET /, GET /v2.1 and GET /v2 need no token; each version's self link is its document", async () => {
    const r = await call("GET", "/", { token: null });
    expect(r.status).toBe(200);
    expect(r.json.versions.map((v: { id: string; status: string }) => [v.id, v.status])).toEqual([
      ["v2.0", "SUPPORTED"],
      ["v2.1", "CURRENT"],
    ]);
    expect(r.json.versions[1].links[0].href).toBe("http://api.test/v2.1/");
    for (const version of r.json.versions) {
      const self = version.links[0].href.replace("http://api.test", "");
      const v = await call("GET", self, { token: null });
      expect(v.status).toBe(200);
      expect(v.json.version.id).toBe(version.id);
      expect(v.json.version.links[0]).toEqual(version.links[0]);
    }
    // the legacy endpoint's API itself is not served
    expect((await call("GET", "/v2/servers")).status).toBe(404);
  });

  it("GET /os-simple-tenant-usage/ is no route (Nova's 404), /os-simple-tenant-usage the index; elsewhere a trailing slash is read as none", async () => {
    const slash = await call("GET", "/v2.1/os-simple-tenant-usage/", { token: ADMIN });
    expect([slash.status, slash.json]).toEqual([
      404,
      { itemNotFound: { code: 404, message: "The resource could not be found." } },
    ]);
    expect((await call("GET", "/v2.1/os-simple-tenant-usage", { token: ADMIN })).json).toHaveProperty(
      "tenant_usages",
    );
    expect((await call("GET", "/v2.1/os-simple-tenant-usage/demo", { token: ADMIN })).status).toBe(200);
    expect((await call("GET", "/v2.1/flavors/")).status).toBe(200);
  });

  it("every response carries the request id in both headers; a given one is used", async () => {
    const r = await call("GET", "/");
    expect(r.headers["x-openstack-request-id"]).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(r.headers["x-compute-request-id"]).toBe(r.headers["x-openstack-request-id"]);
    const given = await handleHttp(
      { method: "GET", path: "/", headers: {}, body: undefined, requestId: "req-x" },
      w.deps,
    );
    expect(given.headers["x-openstack-request-id"]).toBe("req-x");
  });

  it("a missing or unknown token → 401 in Keystone's shape", async () => {
    for (const token of [null, "forged"]) {
      const r = await call("GET", "/v2.1/servers", { token });
      expect(r.status).toBe(401);
      expect(r.json).toEqual({
        error: {
          code: 401,
          title: "Unauthorized",
          message: "The request you have made requires authentication.",
        },
      });
      expect(r.headers["x-openstack-request-id"]).toMatch(/^req-/);
    }
  });

  it("tokens come from NOVALESS_AUTH_TOKENS when set", async () => {
    process.env.NOVALESS_AUTH_TOKENS = JSON.stringify({
      t1: { user_id: "u", project_id: "p", roles: ["admin"] },
    });
    expect((await call("GET", "/v2.1/servers", { token: DEMO })).status).toBe(401);
    expect((await call("GET", "/v2.1/os-hypervisors", { token: "t1" })).status).toBe(200);
  });

  it("a broken NOVALESS_AUTH_TOKENS is a 500 computeFault, logged", async () => {
    process.env.NOVALESS_AUTH_TOKENS = "{nope";
    const r = await call("GET", "/v2.1/servers");
    expect(r.status).toBe(500);
    expect(r.json.computeFault.code).toBe(500);
    expect(logLines.at(-1)).toMatchObject({ level: "error", event: "api.request", status: 500 });
  });

  it("unknown route → 404 itemNotFound; wrong method → 405 badMethod with Allow", async () => {
    const r = await call("GET", "/v2.1/nothing-here");
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ itemNotFound: { code: 404, message: "The resource could not be found." } });
    expect((await call("GET", "/elsewhere")).status).toBe(404);
    const m = await call("PUT", "/v2.1/servers");
    expect(m.status).toBe(405);
    expect(m.json.badMethod.code).toBe(405);
    expect(m.headers.allow).toBe("GET, POST");
    expect((await call("PATCH", "/v2.1/flavors/1")).status).toBe(405);
    expect((await call("POST", "/", { token: null })).status).toBe(405);
  });

  it("routes static paths before parameters, and tolerates a trailing slash and a project in the URL", async () => {
    expect(allowedMethods("/servers/detail")).toEqual(["GET", "PUT", "DELETE"]);
    expect((await call("GET", "/v2.1/servers/detail")).json.servers).toBeDefined();
    expect((await call("GET", "/v2.1/servers/")).status).toBe(200);
    expect((await call("GET", "/v2.1/demo/flavors/1")).status).toBe(200);
  });

  it("a body over MAX_REQUEST_BODY_BYTES → 413 overLimit, before anything else", async () => {
    const r = await call("POST", "/v2.1/servers", {
      raw: "x".repeat(MAX_REQUEST_BODY_BYTES + 1),
      token: null,
    });
    expect(r.status).toBe(413);
    expect(r.json.overLimit).toEqual({ code: 413, message: "Request is too large." });
  });

  it("malformed JSON → 400 'Malformed request body'", async () => {
    const r = await call("POST", "/v2.1/servers", { raw: '{"server": {' });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ badRequest: { code: 400, message: "Malformed request body" } });
  });

  it("logs one line per request with method, path, status, request id, duration and instance", async () => {
    vi.stubEnv("NOVALESS_LOG_LEVEL", "info");
    const r = await call("POST", "/v2.1/servers", { body: server() });
    vi.unstubAllEnvs();
    const lines = logLines.filter((l) => l.event === "api.request");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "info",
      method: "POST",
      path: "/v2.1/servers",
      status: 202,
      request_id: r.headers["x-openstack-request-id"],
      instance_uuid: r.json.server.id,
      user_id: "demo",
      project_id: "demo",
    });
    expect(typeof lines[0]!.duration_ms).toBe("number");
  });
});

describe("POST /v2.1/servers", () => {
  it("writes the record, then one valid build request, and answers 202 with Nova's body", async () => {
    const r = await call("POST", "/v2.1/servers", {
      body: {
        ...server({ metadata: { role: "web" }, availability_zone: "az2" }),
        "os:scheduler_hints": { x: 1 },
      },
    });
    expect(r.status).toBe(202);
    const id = r.json.server.id;
    expect(id).toMatch(UUID);
    expect(r.json.server).toEqual({
      id,
      links: [
        { rel: "self", href: `http://api.test/v2.1/servers/${id}` },
        { rel: "bookmark", href: `http://api.test/servers/${id}` },
      ],
      "OS-DCF:diskConfig": "MANUAL",
      security_groups: [{ name: "default" }],
      adminPass: expect.stringMatching(/^[2-9A-HJ-NP-Za-km-z]{12}$/),
    });
    expect(r.json.reservation_id).toBeUndefined();
    expect(r.headers.location).toBe(`http://api.test/v2.1/servers/${id}`);

    const requestId = r.headers["x-openstack-request-id"]!;
    const rec = w.instances.get(id)!;
    expect(rec).toMatchObject({
      name: "vm",
      project_id: "demo",
      user_id: "demo",
      request_id: requestId,
      vm_state: "building",
      task_state: "scheduling",
      attempt: 0,
      spawn_attempt: 0,
      retry_hosts: [],
      host: null,
      node: null,
      deleted: false,
      fault: null,
      requested_availability_zone: "az2",
      availability_zone: null,
      metadata: { role: "web" },
      flavor: {
        id: "1",
        name: "m1.tiny",
        vcpus: 1,
        memory_mb: 512,
        root_gb: 1,
        ephemeral_gb: 0,
        swap: 0,
        extra_specs: {},
      },
      image: { id: "a1b2c3d4-0000-4000-8000-000000000001", name: "cirros" },
      created_at: NOW.toISOString(),
    });
    expect(rec.reservation_id).toMatch(/^r-[a-z0-9]{8}$/);
    expect(rec.actions[requestId]).toEqual({
      action: "create",
      request_id: requestId,
      user_id: "demo",
      project_id: "demo",
      start_time: NOW.toISOString(),
      message: null,
      events: {},
    });

    expect(w.sent).toHaveLength(1);
    const msg = w.sent[0]!;
    expect(buildRequestV2.safeParse(msg).success).toBe(true);
    // Ids only: the request spec is on the record, where the scheduler reads it.
    expect(msg).toEqual({
      version: 2,
      request_id: requestId,
      reservation_id: rec.reservation_id,
      project_id: "demo",
      user_id: "demo",
      instance_uuids: [id],
      retry: { num_attempts: 1, hosts: [] },
    });
    expect(rec.request_spec).toEqual({
      project_id: "demo",
      user_id: "demo",
      flavor: rec.flavor,
      image: rec.image,
      availability_zone: "az2",
      scheduler_hints: { x: 1 },
      num_instances: 1,
    });
  });

  it("several: names -1…-n, one request for all, one reservation, the first server answered (as Nova)", async () => {
    const r = await call("POST", "/v2.1/servers", {
      body: server({ name: "batch", min_count: 2, max_count: "3" }),
    });
    expect(r.status).toBe(202);
    expect(Object.keys(r.json)).toEqual(["server"]);
    expect(w.sent).toHaveLength(1);
    const ids = w.sent[0]!.instance_uuids;
    expect(ids).toHaveLength(3);
    for (const i of ids) expect(w.instances.get(i)!.request_spec).toEqual(sentSpec(w, w.sent[0]));
    expect(r.json.server.id).toBe(ids[0]);
    expect(ids.map((i) => w.instances.get(i)!.name)).toEqual(["batch-1", "batch-2", "batch-3"]);
    const reservation = w.instances.get(ids[0]!)!.reservation_id;
    expect(reservation).toMatch(/^r-/);
    expect(new Set(ids.map((i) => w.instances.get(i)!.reservation_id))).toEqual(new Set([reservation]));
  });

  it("return_reservation_id: true answers only the reservation id", async () => {
    const r = await call("POST", "/v2.1/servers", { body: server({ return_reservation_id: true }) });
    expect(r.status).toBe(202);
    expect(r.json).toEqual({ reservation_id: w.sent[0]!.reservation_id });
  });

  it("the image may be named; the caller's adminPass is echoed", async () => {
    const r = await call("POST", "/v2.1/servers", {
      body: server({ imageRef: "a1b2c3d4-0000-4000-8000-000000000002", adminPass: "pw" }),
    });
    expect(r.json.server.adminPass).toBe("pw");
    expect(sentSpec(w, w.sent[0]).image.name).toBe("ubuntu");
  });

  it.each<[string, Record<string, unknown>, string]>([
    ["unknown flavor", { flavorRef: "99" }, "Flavor 99 could not be found."],
    ["unknown image", { imageRef: "nope" }, "Image nope could not be found."],
    ["unknown zone", { availability_zone: "az9" }, "The requested availability zone is not available"],
  ])("%s → 400", async (_l, over, message) => {
    const r = await call("POST", "/v2.1/servers", { body: server(over) });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ badRequest: { code: 400, message } });
    expect(w.instances.size).toBe(0);
    expect(w.sent).toHaveLength(0);
  });

  it("a disabled flavor, or a private one for a member → 400", async () => {
    w.flavors.get("2")!.disabled = true;
    w.flavors.set("p", { ...w.flavors.get("1")!, id: "p", name: "private", is_public: false });
    const d = await call("POST", "/v2.1/servers", { body: server({ flavorRef: "2" }) });
    expect(d.status).toBe(400);
    expect(d.json.badRequest.message).toMatch(/Flavor 2 is disabled/);
    expect(
      (await call("POST", "/v2.1/servers", { body: server({ flavorRef: "p" }) })).json.badRequest.message,
    ).toBe("Flavor p could not be found.");
    expect(
      (await call("POST", "/v2.1/servers", { token: ADMIN, body: server({ flavorRef: "p" }) })).status,
    ).toBe(202);
  });

  it("an image larger than the flavor → 400, with Nova's texts (min_ram, then its data's size, then min_disk)", async () => {
    const image = w.images.get("a1b2c3d4-0000-4000-8000-000000000001")!;
    const message = async () =>
      (await call("POST", "/v2.1/servers", { body: server() })).json.badRequest.message;
    image.min_ram = 1024;
    expect(await message()).toBe("Flavor's memory is too small for requested image.");
    // m1.tiny: 512 MB, a 1 GB root disk
    image.min_ram = 512;
    image.size = 2 * 1024 ** 3;
    image.min_disk = 2;
    expect(await message()).toBe(
      "Flavor's disk is too small for requested image. Flavor disk is 1073741824 bytes, image is 2147483648 bytes.",
    );
    image.size = 1024;
    expect(await message()).toBe(
      "Flavor's disk is smaller than the minimum size specified in image metadata. Flavor disk is 1073741824 bytes, minimum size is 2147483648 bytes.",
    );
    image.min_disk = 1;
    expect((await call("POST", "/v2.1/servers", { body: server() })).status).toBe(202);
  });

  it("a forced host skips the zone check (admin only)", async () => {
    const r = await call("POST", "/v2.1/servers", {
      token: ADMIN,
      body: server({ availability_zone: "nowhere:host-1" }),
    });
    expect(r.status).toBe(202);
    // Nova's split: the zone stays a zone, the host becomes a forced host (which skips filters).
    expect(sentSpec(w, w.sent[0]).availability_zone).toBe("nowhere");
    expect(sentSpec(w, w.sent[0]).force_hosts).toEqual(["host-1"]);
    expect(sentSpec(w, w.sent[0]).force_nodes).toBeUndefined();
    const node = await call("POST", "/v2.1/servers", {
      token: ADMIN,
      body: server({ availability_zone: "nova::node-7" }),
    });
    expect(node.status).toBe(202);
    expect(sentSpec(w, w.sent[1])).toMatchObject({ availability_zone: "nova", force_nodes: ["node-7"] });
    expect(sentSpec(w, w.sent[1]).force_hosts).toBeUndefined();
    expect(
      (await call("POST", "/v2.1/servers", { body: server({ availability_zone: "nova:host-1" }) })).status,
    ).toBe(403);
  });

  it("max_count is bounded by quota only; past MAX_INSTANCES_PER_REQUEST the create is several build requests", async () => {
    const n = 2 * MAX_INSTANCES_PER_REQUEST + 7;
    await w.deps.quotas.setDefaultLimits({ instances: -1, cores: -1, ram: -1 });
    const r = await call("POST", "/v2.1/servers", {
      body: server({ min_count: n, max_count: n, return_reservation_id: true }),
    });
    expect(r.status).toBe(202);
    expect(w.sent.map((m) => m.instance_uuids.length)).toEqual([
      MAX_INSTANCES_PER_REQUEST,
      MAX_INSTANCES_PER_REQUEST,
      7,
    ]);
    const sent = w.sent.flatMap((m) => m.instance_uuids);
    expect(new Set(sent).size).toBe(n);
    expect(sent.map((id) => w.instances.get(id)!.launch_index)).toEqual([...Array(n).keys()]);
    expect(new Set(w.sent.map((m) => m.request_id)).size).toBe(1);
    // one after the other, about as fast as one is scheduled, not all at once
    expect(w.sentDelays).toEqual([0, 5, 10]);
  });

  it("if a record cannot be written: 500, nothing enqueued, the others soft-deleted", async () => {
    w.failWriteOf = "vm-2";
    const r = await call("POST", "/v2.1/servers", { body: server({ max_count: 3 }) });
    expect(r.status).toBe(500);
    expect(r.json.computeFault.message).toMatch(/could not be written/);
    expect(w.sent).toHaveLength(0);
    expect(w.instances.size).toBe(2);
    for (const rec of w.instances.values()) expect(rec.deleted).toBe(true);
  });

  it("if the enqueue fails: 500 computeFault, and the records are soft-deleted, not left in BUILD", async () => {
    w.failEnqueue = true;
    const r = await call("POST", "/v2.1/servers", { body: server({ max_count: 2 }) });
    expect(r.status).toBe(500);
    expect(r.json.computeFault.code).toBe(500);
    expect(w.instances.size).toBe(2);
    for (const rec of w.instances.values()) expect(rec).toMatchObject({ deleted: true, vm_state: "deleted" });
    expect((await call("GET", "/v2.1/servers")).json.servers).toEqual([]);
    expect(logLines.find((l) => l.method === "POST")).toMatchObject({
      level: "error",
      status: 500,
      error: { message: "queue unavailable" },
    });
  });
});

describe("reading and deleting servers", () => {
  async function create(token: string, name: string): Promise<string> {
    const r = await call("POST", "/v2.1/servers", { token, body: server({ name }) });
    return r.json.server.id;
  }

  it("members see their project's servers only; admins use all_tenants", async () => {
    const mine = await create(DEMO, "mine");
    const theirs = await create(ADMIN, "theirs");
    const list = await call("GET", "/v2.1/servers");
    expect(list.json.servers.map((s: { id: string }) => s.id)).toEqual([mine]);
    expect(Object.keys(list.json.servers[0]).sort()).toEqual(["id", "links", "name"]);
    expect((await call("GET", `/v2.1/servers/${theirs}`)).status).toBe(404);
    expect((await call("DELETE", `/v2.1/servers/${theirs}`)).status).toBe(404);
    expect((await call("GET", `/v2.1/servers/${theirs}/os-instance-actions`)).status).toBe(404);
    expect((await call("GET", "/v2.1/servers/detail?all_tenants=1")).status).toBe(403);

    const all = await call("GET", "/v2.1/servers/detail?all_tenants=1", { token: ADMIN });
    expect(all.json.servers.map((s: { name: string }) => s.name).sort()).toEqual(["mine", "theirs"]);
    expect(all.json.servers[0]).toHaveProperty("OS-EXT-SRV-ATTR:host");
    const own = await call("GET", "/v2.1/servers/detail", { token: ADMIN });
    expect(own.json.servers.map((s: { name: string }) => s.name)).toEqual(["theirs"]);
    expect((await call("GET", `/v2.1/servers/${mine}`, { token: ADMIN })).status).toBe(200);
  });

  it("show: Nova's view; a bad uuid or unknown id → 404 'Instance … could not be found.'", async () => {
    const id = await create(DEMO, "one");
    const r = await call("GET", `/v2.1/servers/${id}`);
    expect(r.json.server).toMatchObject({ id, name: "one", status: "BUILD", tenant_id: "demo" });
    expect(r.json.server).not.toHaveProperty("OS-EXT-SRV-ATTR:host");
    for (const bad of ["not-a-uuid", "6a1f0b8e-0000-4000-8000-000000000000"]) {
      const n = await call("GET", `/v2.1/servers/${bad}`);
      expect(n.status).toBe(404);
      expect(n.json).toEqual({ itemNotFound: { code: 404, message: `Instance ${bad} could not be found.` } });
    }
  });

  it("delete → 204 via deleteServer with the request id; then 404; actions stay visible to admins", async () => {
    const id = await create(DEMO, "gone");
    const d = await call("DELETE", `/v2.1/servers/${id}`);
    expect(d.status).toBe(204);
    expect(d.body).toBe("");
    expect(w.deleted).toEqual([{ id, requestId: d.headers["x-openstack-request-id"] }]);
    expect((await call("GET", `/v2.1/servers/${id}`)).status).toBe(404);
    expect((await call("DELETE", `/v2.1/servers/${id}`)).status).toBe(404);
    expect((await call("GET", `/v2.1/servers/${id}/os-instance-actions`)).status).toBe(404);
    const a = await call("GET", `/v2.1/servers/${id}/os-instance-actions`, { token: ADMIN });
    expect(a.status).toBe(200);
    expect(a.json.instanceActions).toHaveLength(1);
    // from 2.21 its own project reads a deleted server's actions too (Nova reads deleted ones)
    const mine = await call("GET", `/v2.1/servers/${id}/os-instance-actions`, {
      headers: { "openstack-api-version": "compute 2.21" },
    });
    expect(mine.status).toBe(200);
    expect(mine.json.instanceActions.map((x: { action: string }) => x.action)).toContain("create");
  });

  it("os-instance-actions list and show", async () => {
    const r = await call("POST", "/v2.1/servers", { body: server() });
    const id = r.json.server.id;
    const rid = r.headers["x-openstack-request-id"];
    // 2.58: updated_at; a member sees the events from 2.51
    const at = { headers: { "openstack-api-version": "compute 2.58" } };
    const list = await call("GET", `/v2.1/servers/${id}/os-instance-actions`, at);
    expect(list.json.instanceActions).toEqual([
      {
        action: "create",
        instance_uuid: id,
        request_id: rid,
        user_id: "demo",
        project_id: "demo",
        start_time: "2026-03-01T12:00:00.123000",
        message: null,
        updated_at: "2026-03-01T12:00:00.123000",
      },
    ]);
    const one = await call("GET", `/v2.1/servers/${id}/os-instance-actions/${rid}`, at);
    expect(one.json.instanceAction).toMatchObject({ action: "create", request_id: rid, events: [] });
    const missing = await call("GET", `/v2.1/servers/${id}/os-instance-actions/req-nope`);
    expect(missing.status).toBe(404);
    expect(missing.json.itemNotFound.message).toBe(
      `Action for request_id req-nope on instance ${id} not found`,
    );
  });

  it("list filters and pagination links", async () => {
    for (const n of ["a", "b", "c"]) await create(DEMO, n);
    const page = await call("GET", "/v2.1/servers?limit=2&name=.");
    expect(page.json.servers).toHaveLength(2);
    const next = new URL(page.json.servers_links[0].href);
    expect(next.pathname).toBe("/v2.1/servers");
    expect(next.searchParams.get("marker")).toBe(page.json.servers[1].id);
    expect(next.searchParams.get("name")).toBe(".");
    const rest = await call("GET", `/v2.1/servers${next.search}`);
    expect(rest.json.servers).toHaveLength(1);
    expect(rest.json.servers_links).toBeUndefined();
    expect((await call("GET", "/v2.1/servers/detail?status=ACTIVE")).json.servers).toEqual([]);
    expect((await call("GET", "/v2.1/servers/detail?status=BUILD")).json.servers).toHaveLength(3);
  });
});

describe("flavors, images, hypervisors", () => {
  it("flavors list, detail and show", async () => {
    const l = await call("GET", "/v2.1/flavors");
    expect(l.json.flavors.map((f: { id: string }) => f.id)).toEqual(["1", "2", "3", "4", "5"]);
    const d = await call("GET", "/v2.1/flavors/detail?minRam=8192");
    expect(d.json.flavors.map((f: { name: string }) => f.name)).toEqual(["m1.large", "m1.xlarge"]);
    const s = await call("GET", "/v2.1/flavors/1");
    expect(s.json.flavor).toMatchObject({ id: "1", name: "m1.tiny", ram: 512, swap: "" });
    const n = await call("GET", "/v2.1/flavors/99");
    expect(n.json).toEqual({ itemNotFound: { code: 404, message: "Flavor 99 could not be found." } });
  });

  it("POST /flavors: admin only, 200 with the view, 409 on a duplicate id or name", async () => {
    const body = { flavor: { name: "m1.huge", ram: 65536, vcpus: 16, disk: 320 } };
    const m = await call("POST", "/v2.1/flavors", { body });
    expect(m.status).toBe(403);
    expect(m.json.forbidden.message).toBe(
      "Policy doesn't allow os_compute_api:os-flavor-manage:create to be performed.",
    );
    const r = await call("POST", "/v2.1/flavors", { token: ADMIN, body });
    expect(r.status).toBe(200);
    expect(r.json.flavor).toMatchObject({ name: "m1.huge", ram: 65536, vcpus: 16, disk: 320 });
    expect(r.json.flavor.id).toMatch(UUID);
    expect((await call("GET", `/v2.1/flavors/${r.json.flavor.id}`)).status).toBe(200);
    const dupName = await call("POST", "/v2.1/flavors", { token: ADMIN, body });
    expect(dupName.status).toBe(409);
    expect(dupName.json.conflictingRequest.message).toBe("Flavor with name m1.huge already exists.");
    const dupId = await call("POST", "/v2.1/flavors", {
      token: ADMIN,
      body: { flavor: { ...body.flavor, name: "other", id: "1" } },
    });
    expect(dupId.json).toEqual({
      conflictingRequest: { code: 409, message: "Flavor with ID 1 already exists." },
    });
    const bad = await call("POST", "/v2.1/flavors", {
      token: ADMIN,
      body: { flavor: { name: "x", ram: 0, vcpus: 1, disk: 0 } },
    });
    expect(bad.status).toBe(400);
  });

  it("os-extra_specs: anyone reads, admin sets", async () => {
    const body = { extra_specs: { "hw:cpu_policy": "dedicated" } };
    expect((await call("POST", "/v2.1/flavors/1/os-extra_specs", { body })).status).toBe(403);
    const r = await call("POST", "/v2.1/flavors/1/os-extra_specs", { token: ADMIN, body });
    expect(r.json).toEqual(body);
    expect((await call("GET", "/v2.1/flavors/1/os-extra_specs")).json).toEqual(body);
    expect((await call("POST", "/v2.1/flavors/99/os-extra_specs", { token: ADMIN, body })).status).toBe(404);
  });

  it("images list, detail, show", async () => {
    const l = await call("GET", "/v2.1/images");
    expect(l.json.images.map((i: { name: string }) => i.name).sort()).toEqual([
      "broken",
      "cirros",
      "sleeper",
      "ubuntu",
    ]);
    const d = await call("GET", "/v2.1/images/detail");
    expect(d.json.images[0]).toHaveProperty("minRam");
    const s = await call("GET", "/v2.1/images/a1b2c3d4-0000-4000-8000-000000000001");
    expect(s.json.image).toMatchObject({ name: "cirros", status: "ACTIVE" });
    expect((await call("GET", "/v2.1/images/nope")).json).toEqual({
      itemNotFound: { code: 404, message: "Image not found." },
    });
  });

  it("os-hypervisors: admin only", async () => {
    const m = await call("GET", "/v2.1/os-hypervisors/detail");
    expect(m.status).toBe(403);
    expect(m.json.forbidden.message).toBe(
      "Policy doesn't allow os_compute_api:os-hypervisors:list-detail to be performed.",
    );
    const l = await call("GET", "/v2.1/os-hypervisors", { token: ADMIN });
    expect(l.json.hypervisors).toEqual([
      { id: nodeNumber("host-1"), hypervisor_hostname: "host-1", state: "up", status: "enabled" },
      { id: nodeNumber("host-2"), hypervisor_hostname: "host-2", state: "up", status: "enabled" },
    ]);
    const d = await call("GET", "/v2.1/os-hypervisors/detail", { token: ADMIN });
    expect(d.json.hypervisors[0]).toMatchObject({ vcpus: 8, memory_mb_used: 4608, running_vms: 2 });
    expect((await call("GET", "/v2.1/os-hypervisors/host-2", { token: ADMIN })).json.hypervisor.id).toBe(
      nodeNumber("host-2"),
    );
    expect((await call("GET", "/v2.1/os-hypervisors/nope", { token: ADMIN })).status).toBe(404);
  });
});

describe("the Lambda handler (hono/aws-lambda)", () => {
  const event = (over: Record<string, unknown> = {}) =>
    ({
      version: "2.0",
      routeKey: "$default",
      rawPath: "/",
      rawQueryString: "",
      headers: { host: "abc.execute-api.test", "x-forwarded-proto": "https" },
      requestContext: { stage: "$default", http: { method: "GET" }, domainName: "abc.execute-api.test" },
      isBase64Encoded: false,
      ...over,
    }) as never;

  it("answers the version document with links on the public host", async () => {
    const r = (await lambdaHandler(event())) as {
      statusCode: number;
      body: string;
      headers: Record<string, string>;
    };
    expect(r.statusCode).toBe(200);
    expect(JSON.parse(r.body).versions[1].links[0].href).toBe("https://abc.execute-api.test/v2.1/");
    expect(r.headers["x-openstack-request-id"]).toMatch(/^req-/);
  });

  it("decodes a base64 body and refuses a request without a token in Keystone's shape", async () => {
    const r = (await lambdaHandler(
      event({
        rawPath: "/v2.1/servers",
        body: Buffer.from('{"server":{}}').toString("base64"),
        isBase64Encoded: true,
        requestContext: { stage: "$default", http: { method: "POST" }, domainName: "abc.execute-api.test" },
      }),
    )) as { statusCode: number; body: string };
    expect(r.statusCode).toBe(401);
    expect(JSON.parse(r.body).error.code).toBe(401);
  });
});

describe("microversions", () => {
  const at = (version: Record<string, string>) => call("GET", "/v2.1/flavors", { headers: version });

  it("2.1 when no header asks; the answer says which, and varies on it", async () => {
    const r = await call("GET", "/v2.1/flavors");
    expect(r.headers["openstack-api-version"]).toBe("compute 2.1");
    expect(r.headers["x-openstack-nova-api-version"]).toBe("2.1");
    expect(r.headers.vary).toContain("OpenStack-API-Version");
  });

  it("reads the new header before the legacy one, among other services, and resolves latest", async () => {
    expect(
      (await at({ "openstack-api-version": "volume 3.0, compute 2.60" })).headers[
        "x-openstack-nova-api-version"
      ],
    ).toBe("2.60");
    expect(
      (await at({ "openstack-api-version": "compute 2.47", "x-openstack-nova-api-version": "2.3" })).headers[
        "openstack-api-version"
      ],
    ).toBe("compute 2.47");
    expect((await at({ "x-openstack-nova-api-version": "2.3" })).headers["openstack-api-version"]).toBe(
      "compute 2.3",
    );
    expect((await at({ "openstack-api-version": "compute latest" })).headers["openstack-api-version"]).toBe(
      "compute 2.96",
    );
  });

  it("406 out of range and 400 malformed, in Nova's words, still carrying the headers", async () => {
    const high = await at({ "openstack-api-version": "compute 2.97" });
    expect(high.status).toBe(406);
    expect(high.json.computeFault.message).toBe(
      "Version 2.97 is not supported by the API. Minimum is 2.1 and maximum is 2.96.",
    );
    expect((await at({ "openstack-api-version": "compute 3.0" })).status).toBe(406);
    expect((await at({ "openstack-api-version": "compute 2.0" })).status).toBe(406);
    const bad = await at({ "openstack-api-version": "compute 2.x" });
    expect(bad.status).toBe(400);
    expect(bad.json.badRequest.message).toMatch(/2\.x is of invalid format/);
    expect((await at({ "x-openstack-nova-api-version": "2.05" })).status).toBe(400);
  });
});
