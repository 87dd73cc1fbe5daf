// Bad input gets a clear 4xx in OpenStack's error shape, and nothing is created or enqueued.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listInstances } from "../../lib/instances/queries.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, conductorExecutions, DEMO, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 1 }));
});
afterAll(async () => runtime?.stop());

const good = { name: "vm", flavorRef: "1", imageRef: "cirros" };

const cases: [string, { raw?: string; body?: unknown }, number, string, RegExp][] = [
  ["malformed JSON", { raw: '{"server": {' }, 400, "badRequest", /malformed/i],
  ["a body that is not an object", { raw: "[1,2]" }, 400, "badRequest", /server/i],
  ["no server", { body: {} }, 400, "badRequest", /server/],
  ["server is a string", { body: { server: "x" } }, 400, "badRequest", /server/],
  ["no name", { body: { server: { flavorRef: "1", imageRef: "cirros" } } }, 400, "badRequest", /name/],
  ["empty name", { body: { server: { ...good, name: "" } } }, 400, "badRequest", /name/],
  ["name is a number", { body: { server: { ...good, name: 7 } } }, 400, "badRequest", /name/],
  ["no flavorRef", { body: { server: { name: "vm", imageRef: "cirros" } } }, 400, "badRequest", /flavorRef/],
  ["unknown flavor", { body: { server: { ...good, flavorRef: "99" } } }, 400, "badRequest", /[Ff]lavor 99/],
  ["unknown image", { body: { server: { ...good, imageRef: "nope" } } }, 400, "badRequest", /[Ii]mage nope/],
  [
    "min_count > max_count",
    { body: { server: { ...good, min_count: 3, max_count: 2 } } },
    400,
    "badRequest",
    /min_count/,
  ],
  [
    "min_count not a number",
    { body: { server: { ...good, min_count: "abc" } } },
    400,
    "badRequest",
    /min_count/,
  ],
  ["max_count zero", { body: { server: { ...good, max_count: 0 } } }, 400, "badRequest", /max_count/],
  [
    "metadata not a map of strings",
    { body: { server: { ...good, metadata: { a: 1 } } } },
    400,
    "badRequest",
    /metadata/,
  ],
  ["unknown attribute", { body: { server: { ...good, colour: "red" } } }, 400, "badRequest", /colour/],
  [
    "oversized body",
    { raw: JSON.stringify({ server: { ...good, metadata: { k: "x".repeat(200_000) } } }) },
    413,
    "overLimit",
    /.+/,
  ],
];

describe("POST /v2.1/servers rejects", () => {
  it.each(cases)("%s", async (_label, req, status, kind, message) => {
    const r = await client.call("POST", "/v2.1/servers", req.body, req.raw);
    expect(r.status).toBe(status);
    expect(r.body[kind], JSON.stringify(r.body)).toBeDefined();
    expect(r.body[kind].code).toBe(status);
    expect(r.body[kind].message).toMatch(message);
  });
});

describe("auth and policy", () => {
  it("no token and an unknown token → 401", async () => {
    expect((await client.as(undefined).get("/v2.1/servers")).status).toBe(401);
    expect((await client.as("forged").get("/v2.1/servers")).status).toBe(401);
  });

  it("admin-only endpoints → 403 for a member", async () => {
    const r = await client.as(DEMO).get("/v2.1/os-hypervisors/detail");
    expect(r.status).toBe(403);
    expect(r.body.forbidden.code).toBe(403);
    const f = await client
      .as(DEMO)
      .post("/v2.1/flavors", { flavor: { name: "x", ram: 1, vcpus: 1, disk: 1 } });
    expect(f.status).toBe(403);
  });

  it("an unknown server → 404 itemNotFound", async () => {
    const r = await client.get("/v2.1/servers/6a1f0b8e-0000-4000-8000-000000000000");
    expect(r.status).toBe(404);
    expect(r.body.itemNotFound.message).toMatch(/could not be found/);
  });

  it("GET / answers the versions document", async () => {
    const r = await client.as(undefined).get("/");
    expect(r.status).toBe(200);
    expect(r.body.versions.map((v: { id: string }) => v.id)).toEqual(["v2.0", "v2.1"]);
  });
});

it("nothing was created or enqueued by any of it", async () => {
  expect(await listInstances()).toEqual([]);
  expect(await conductorExecutions()).toBe(0);
  const all = await client.as(ADMIN).get("/v2.1/servers/detail?all_tenants=1");
  expect(all.body.servers).toEqual([]);
});
