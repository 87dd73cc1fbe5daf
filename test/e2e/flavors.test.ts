// Flavors on the emulators: Nova's os-extra_specs paths, the 2.55 description, delete, and flavor
// access (the Catalog item's string set, added and removed by conditional updates).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, DEMO, startTestRuntime } from "./harness.js";

let runtime: Runtime;

beforeAll(async () => {
  ({ runtime } = await startTestRuntime({ hosts: 1 }));
});
afterAll(async () => runtime?.stop());

async function call(token: string, method: string, path: string, version = "2.1", body?: unknown) {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: {
      "content-type": "application/json",
      "x-auth-token": token,
      "openstack-api-version": `compute ${version}`,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const ids = async (token: string, q = "") =>
  (await call(token, "GET", `/v2.1/flavors${q}`)).body.flavors.map((f: { id: string }) => f.id);

describe("flavors on DynamoDB", () => {
  it("extra specs by key: set, read, replace, delete", async () => {
    await call(ADMIN, "POST", "/v2.1/flavors/3/os-extra_specs", "2.1", {
      extra_specs: { a: "1", "hw:b": "2" },
    });
    expect((await call(DEMO, "GET", "/v2.1/flavors/3/os-extra_specs/hw:b")).body).toEqual({ "hw:b": "2" });
    expect((await call(ADMIN, "PUT", "/v2.1/flavors/3/os-extra_specs/a", "2.1", { a: "3" })).body).toEqual({
      a: "3",
    });
    expect((await call(ADMIN, "DELETE", "/v2.1/flavors/3/os-extra_specs/a")).status).toBe(200);
    expect((await call(ADMIN, "DELETE", "/v2.1/flavors/3/os-extra_specs/a")).status).toBe(404);
    expect((await call(DEMO, "GET", "/v2.1/flavors/3", "2.61")).body.flavor.extra_specs).toEqual({
      "hw:b": "2",
    });
  });

  it("a private flavor shared with demo and unshared; its description; its delete", async () => {
    const made = await call(ADMIN, "POST", "/v2.1/flavors", "2.55", {
      flavor: {
        name: "private-1",
        id: "priv-1",
        ram: 128,
        vcpus: 1,
        disk: 1,
        "os-flavor-access:is_public": false,
      },
    });
    expect(made.status).toBe(200);
    expect(await ids(DEMO)).not.toContain("priv-1");
    const add = await call(ADMIN, "POST", "/v2.1/flavors/priv-1/action", "2.1", {
      addTenantAccess: { tenant: "demo" },
    });
    expect(add.body).toEqual({ flavor_access: [{ flavor_id: "priv-1", tenant_id: "demo" }] });
    const twice = await call(ADMIN, "POST", "/v2.1/flavors/priv-1/action", "2.1", {
      addTenantAccess: { tenant: "demo" },
    });
    expect(twice.status).toBe(409);
    await call(ADMIN, "POST", "/v2.1/flavors/priv-1/action", "2.1", { addTenantAccess: { tenant: "other" } });
    expect(
      (await call(ADMIN, "GET", "/v2.1/flavors/priv-1/os-flavor-access")).body.flavor_access,
    ).toHaveLength(2);
    expect(await ids(DEMO)).toContain("priv-1");
    const described = await call(ADMIN, "PUT", "/v2.1/flavors/priv-1", "2.55", {
      flavor: { description: "for demo" },
    });
    expect(described.body.flavor.description).toBe("for demo");
    expect((await call(DEMO, "GET", "/v2.1/flavors/priv-1", "2.55")).body.flavor.description).toBe(
      "for demo",
    );

    const rm = await call(ADMIN, "POST", "/v2.1/flavors/priv-1/action", "2.1", {
      removeTenantAccess: { tenant: "demo" },
    });
    expect(rm.body).toEqual({ flavor_access: [{ flavor_id: "priv-1", tenant_id: "other" }] });
    expect((await call(DEMO, "GET", "/v2.1/flavors/priv-1")).status).toBe(404);
    const rmAgain = await call(ADMIN, "POST", "/v2.1/flavors/priv-1/action", "2.1", {
      removeTenantAccess: { tenant: "demo" },
    });
    expect(rmAgain.status).toBe(404);

    expect((await call(ADMIN, "DELETE", "/v2.1/flavors/priv-1")).status).toBe(202);
    expect((await call(ADMIN, "GET", "/v2.1/flavors/priv-1")).status).toBe(404);
    expect(await ids(ADMIN, "?is_public=none")).not.toContain("priv-1");
  });
});
