import { describe, expect, it } from "vitest";
import { ApiVersion } from "../../../lib/api/microversion.js";
import { flavorSummaryView, flavorView } from "../../../lib/api/views/flavors.js";
import { SEED_FLAVORS } from "../../../lib/catalog/seed.js";
import { apiCall, fakeWorld } from "./fakes.js";

const v = (s: string) => ApiVersion.parse(s);
let world = fakeWorld();

const call = (method: string, path: string, token: string, version?: string, body?: unknown) =>
  apiCall(world.deps, method, path, token, body, version);

describe("flavor views per microversion", () => {
  const f = { ...SEED_FLAVORS[0]!, description: "tiny", extra_specs: { "hw:cpu_policy": "shared" } };
  const c = { baseUrl: "http://x", extraSpecs: true };
  it("2.1 and 2.47: no description, no extra_specs, swap ''", () => {
    for (const s of ["2.1", "2.47"]) {
      const d = flavorView(f, c, v(s));
      expect(d).not.toHaveProperty("description");
      expect(d).not.toHaveProperty("extra_specs");
      expect(d.swap).toBe("");
      expect(flavorSummaryView(f, c, v(s))).not.toHaveProperty("description");
    }
  });
  it("2.55 description; 2.61 extra_specs; 2.75 swap 0 (2.79 and latest as 2.75)", () => {
    expect(flavorView(f, c, v("2.55"))).toMatchObject({ description: "tiny", swap: "" });
    expect(flavorSummaryView(f, c, v("2.55")).description).toBe("tiny");
    expect(flavorView(f, c, v("2.61")).extra_specs).toEqual({ "hw:cpu_policy": "shared" });
    expect(flavorView(f, c, v("2.79")).swap).toBe(0);
    expect(flavorView(f, c, v("2.96"))).toMatchObject({ swap: 0, description: "tiny", rxtx_factor: 1 });
  });
});

describe("/flavors", () => {
  it("os-extra_specs: list, create, show one, update one, delete one; members read only", async () => {
    world = fakeWorld();
    const set = await call("POST", "/v2.1/flavors/1/os-extra_specs", "admin-token", undefined, {
      extra_specs: { "hw:cpu_policy": "dedicated", trait: "x" },
    });
    expect(set).toEqual({ status: 200, json: { extra_specs: { "hw:cpu_policy": "dedicated", trait: "x" } } });
    expect((await call("GET", "/v2.1/flavors/1/os-extra_specs", "demo-token")).json.extra_specs).toEqual({
      "hw:cpu_policy": "dedicated",
      trait: "x",
    });
    expect((await call("GET", "/v2.1/flavors/1/os-extra_specs/trait", "demo-token")).json).toEqual({
      trait: "x",
    });
    const put = await call("PUT", "/v2.1/flavors/1/os-extra_specs/trait", "admin-token", undefined, {
      trait: "y",
    });
    expect(put).toEqual({ status: 200, json: { trait: "y" } });
    const mismatch = await call("PUT", "/v2.1/flavors/1/os-extra_specs/trait", "admin-token", undefined, {
      other: "y",
    });
    expect(mismatch.json.badRequest.message).toBe("Request body and URI mismatch");
    expect((await call("DELETE", "/v2.1/flavors/1/os-extra_specs/trait", "admin-token")).status).toBe(200);
    expect(await call("GET", "/v2.1/flavors/1/os-extra_specs/trait", "demo-token")).toEqual({
      status: 404,
      json: { itemNotFound: { code: 404, message: "Flavor 1 has no extra specs with key trait." } },
    });
    expect((await call("DELETE", "/v2.1/flavors/1/os-extra_specs/hw:cpu_policy", "demo-token")).status).toBe(
      403,
    );
  });

  it("PUT description from 2.55 (404 before); DELETE is 202 and admin only", async () => {
    world = fakeWorld();
    expect(
      (await call("PUT", "/v2.1/flavors/2", "admin-token", "2.54", { flavor: { description: "d" } })).status,
    ).toBe(404);
    const u = await call("PUT", "/v2.1/flavors/2", "admin-token", "2.55", {
      flavor: { description: "small one" },
    });
    expect(u.json.flavor).toMatchObject({ id: "2", description: "small one" });
    expect(
      (await call("PUT", "/v2.1/flavors/2", "admin-token", "2.55", { flavor: { name: "x" } })).status,
    ).toBe(400);
    expect((await call("DELETE", "/v2.1/flavors/2", "demo-token")).status).toBe(403);
    expect((await call("DELETE", "/v2.1/flavors/2", "admin-token")).status).toBe(202);
    expect((await call("GET", "/v2.1/flavors/2", "admin-token")).status).toBe(404);
    expect((await call("DELETE", "/v2.1/flavors/2", "admin-token")).status).toBe(404);
  });

  it("a description on create only from 2.55", async () => {
    world = fakeWorld();
    const body = { flavor: { name: "d1", ram: 64, vcpus: 1, disk: 1, description: "x" } };
    const old = await call("POST", "/v2.1/flavors", "admin-token", "2.54", body);
    expect(old.json.badRequest.message).toContain("'description' was unexpected");
    expect((await call("POST", "/v2.1/flavors", "admin-token", "2.55", body)).json.flavor.description).toBe(
      "x",
    );
  });

  it("an integer id is taken as Nova does (tempest sends one) and kept as a string", async () => {
    world = fakeWorld();
    const body = { flavor: { name: "int-id", ram: 64, vcpus: 1, disk: 1, id: 4242 } };
    const r = await call("POST", "/v2.1/flavors", "admin-token", "2.1", body);
    expect(r.status).toBe(200);
    expect(r.json.flavor.id).toBe("4242");
    expect((await call("GET", "/v2.1/flavors/4242", "admin-token", "2.1")).status).toBe(200);
    const negative = { flavor: { ...body.flavor, name: "neg", id: -1 } };
    expect((await call("POST", "/v2.1/flavors", "admin-token", "2.1", negative)).status).toBe(400);
  });

  it("private flavors: shared with a project by addTenantAccess, seen by it only; removeTenantAccess", async () => {
    world = fakeWorld();
    const made = await call("POST", "/v2.1/flavors", "admin-token", undefined, {
      flavor: { name: "secret", id: "p1", ram: 64, vcpus: 1, disk: 1, "os-flavor-access:is_public": false },
    });
    expect(made.status).toBe(200);
    const ids = async (token: string, q = "") =>
      (await call("GET", `/v2.1/flavors${q}`, token)).json.flavors.map((f: { id: string }) => f.id);
    expect(await ids("demo-token")).not.toContain("p1");
    expect((await call("GET", "/v2.1/flavors/p1", "demo-token")).status).toBe(404);

    const add = await call("POST", "/v2.1/flavors/p1/action", "admin-token", undefined, {
      addTenantAccess: { tenant: "demo" },
    });
    expect(add).toEqual({ status: 200, json: { flavor_access: [{ flavor_id: "p1", tenant_id: "demo" }] } });
    expect(await ids("demo-token")).toContain("p1");
    expect((await call("GET", "/v2.1/flavors/p1", "demo-token")).status).toBe(200);
    const again = await call("POST", "/v2.1/flavors/p1/action", "admin-token", undefined, {
      addTenantAccess: { tenant: "demo" },
    });
    expect(again.json.conflictingRequest.message).toBe(
      "Flavor access already exists for flavor p1 and project demo combination.",
    );
    expect((await call("GET", "/v2.1/flavors/p1/os-flavor-access", "admin-token")).json).toEqual({
      flavor_access: [{ flavor_id: "p1", tenant_id: "demo" }],
    });
    expect(
      (await call("GET", "/v2.1/flavors/1/os-flavor-access", "admin-token")).json.itemNotFound.message,
    ).toBe("Access list not available for public flavors.");
    const pub = await call("POST", "/v2.1/flavors/1/action", "admin-token", "2.7", {
      addTenantAccess: { tenant: "demo" },
    });
    expect(pub.json.conflictingRequest.message).toBe("Can not add access to a public flavor.");
    expect(
      (
        await call("POST", "/v2.1/flavors/p1/action", "demo-token", undefined, {
          removeTenantAccess: { tenant: "demo" },
        })
      ).status,
    ).toBe(403);
    const rm = await call("POST", "/v2.1/flavors/p1/action", "admin-token", undefined, {
      removeTenantAccess: { tenant: "demo" },
    });
    expect(rm.json).toEqual({ flavor_access: [] });
    expect(await ids("demo-token")).not.toContain("p1");
    const gone = await call("POST", "/v2.1/flavors/p1/action", "admin-token", undefined, {
      removeTenantAccess: { tenant: "demo" },
    });
    expect(gone.json.itemNotFound.message).toBe("Flavor access not found for p1 / demo combination.");
    // admins: public only by default, ?is_public=false for the private ones
    expect(await ids("admin-token")).not.toContain("p1");
    expect(await ids("admin-token", "?is_public=false")).toEqual(["p1"]);
  });

  it("sort_key/sort_dir, limit and marker with a next link", async () => {
    world = fakeWorld();
    const r = await call("GET", "/v2.1/flavors?sort_key=memory_mb&sort_dir=desc&limit=2", "demo-token");
    expect(r.json.flavors.map((f: { id: string }) => f.id)).toEqual(["5", "4"]);
    expect(r.json.flavors_links[0].href).toContain("marker=4");
    const next = await call(
      "GET",
      "/v2.1/flavors?sort_key=memory_mb&sort_dir=desc&limit=2&marker=4",
      "demo-token",
    );
    expect(next.json.flavors.map((f: { id: string }) => f.id)).toEqual(["3", "2"]);
    expect(
      (await call("GET", "/v2.1/flavors?minRam=4096&minDisk=80", "demo-token")).json.flavors,
    ).toHaveLength(2);
    expect((await call("GET", "/v2.1/flavors?sort_key=colour", "demo-token")).status).toBe(400);
    expect((await call("GET", "/v2.1/flavors?marker=nope", "demo-token")).json.badRequest.message).toBe(
      "marker [nope] not found",
    );
  });
});
