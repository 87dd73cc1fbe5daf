// Identity v3 and Image v2 over the real store (dynalite through the AWS SDK), through the API's
// HTTP entry: password and token authentication, scoping, the catalog, validation, Keystone's and
// Glance's refusals, and what an admin and a member may list.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { seedCatalog } from "../../lib/catalog/repo.js";
import { verifyPassword } from "../../lib/identity/password.js";
import { seedIdentity } from "../../lib/identity/seed.js";
import {
  assignmentsOf,
  findUserByName,
  getUser,
  indexNames,
  listProjects,
  listUsers,
  put,
  putIfAbsent,
} from "../../lib/identity/store.js";
import { httpCaller } from "./http.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

let clock = new Date("2026-03-01T12:00:00.000Z");
const deps = { ...defaultDeps, now: () => clock };
const BASE = "https://cloud.example.org";

const call = httpCaller(deps, BASE);

const password = (user: Record<string, unknown>, scope?: unknown) => ({
  auth: { identity: { methods: ["password"], password: { user } }, ...(scope ? { scope } : {}) },
});

async function login(name: string, pw: string, project: string): Promise<string> {
  const r = await call("POST", "/identity/v3/auth/tokens", {
    body: password(
      { name, domain: { name: "Default" }, password: pw },
      { project: { name: project, domain: { id: "default" } } },
    ),
  });
  expect(r.status).toBe(201);
  return r.headers["x-subject-token"]!;
}

beforeAll(async () => {
  await seedCatalog();
  await seedIdentity({ adminPassword: "admin-secret", demo: true });
}, 60_000);

describe("the store", () => {
  it("holds DevStack's users with scrypt hashes, and a reseed keeps them unless the admin's is reset", async () => {
    const admin = await getUser("admin");
    expect(admin?.password_hash).toMatch(/^scrypt\$/);
    expect(await verifyPassword("admin-secret", admin!.password_hash)).toBe(true);
    expect((await listProjects()).map((p) => p.id)).toEqual(["admin", "demo"]);
    expect((await seedIdentity({ adminPassword: "other", demo: true })).written).toBe(0);
    expect(await verifyPassword("admin-secret", (await getUser("admin"))!.password_hash)).toBe(true);
    await seedIdentity({ adminPassword: "rotated", resetAdminPassword: true });
    expect(await verifyPassword("rotated", (await getUser("admin"))!.password_hash)).toBe(true);
    await seedIdentity({ adminPassword: "admin-secret", resetAdminPassword: true });
  });

  it("a token by names reads by key (no Scan), and the user's projects too", async () => {
    startMeter();
    try {
      await login("demo", "demo-secret", "demo");
      const ops = Object.values(meterReading()).flatMap((c) => Object.keys(c.requests));
      expect(ops.length).toBeGreaterThan(0);
      expect(ops).not.toContain("dynamodb:Scan");
      expect((await assignmentsOf("admin")).map((a) => a.project_id)).toEqual(["admin"]);
      expect(Object.values(meterReading()).flatMap((c) => Object.keys(c.requests))).not.toContain(
        "dynamodb:Scan",
      );
    } finally {
      stopMeter();
    }
  });
});

describe("/identity", () => {
  it("answers keystoneauth's discovery: 300 with v3, and v3's own document", async () => {
    const all = await call("GET", "/identity");
    expect(all.status).toBe(300);
    expect(all.json.versions.values[0]).toMatchObject({
      id: "v3.14",
      status: "stable",
      links: [{ rel: "self", href: `${BASE}/identity/v3/` }],
    });
    const v3 = await call("GET", "/identity/v3");
    expect(v3.json.version.links[0].href).toBe(`${BASE}/identity/v3/`);
  });

  it("issues a project token by names: Keystone's body, roles and the catalog on the public base URL", async () => {
    const r = await call("POST", "/identity/v3/auth/tokens", {
      body: password(
        { name: "demo", domain: { name: "Default" }, password: "demo-secret" },
        { project: { name: "demo", domain: { name: "Default" } } },
      ),
    });
    expect(r.status).toBe(201);
    expect(r.headers["x-subject-token"]).toMatch(/^nl1\./);
    const t = r.json.token;
    expect(t).toMatchObject({
      methods: ["password"],
      user: { id: "demo", name: "demo", domain: { id: "default", name: "Default" } },
      project: { id: "demo", name: "demo", domain: { id: "default", name: "Default" } },
      roles: [
        { id: "member", name: "member" },
        { id: "reader", name: "reader" },
      ],
      issued_at: "2026-03-01T12:00:00.000000Z",
      expires_at: "2026-03-01T13:00:00.000000Z",
    });
    expect(t.audit_ids).toHaveLength(1);
    const urls = Object.fromEntries(
      t.catalog.map(
        (s: { type: string; endpoints: { interface: string; url: string; region: string }[] }) => [
          s.type,
          s.endpoints.map((e) => `${e.interface} ${e.region} ${e.url}`),
        ],
      ),
    );
    expect(urls).toEqual({
      compute: ["public", "internal", "admin"].map((i) => `${i} RegionOne ${BASE}/v2.1`),
      image: ["public", "internal", "admin"].map((i) => `${i} RegionOne ${BASE}/image`),
      network: ["public", "internal", "admin"].map((i) => `${i} RegionOne ${BASE}/networking`),
      identity: ["public", "internal", "admin"].map((i) => `${i} RegionOne ${BASE}/identity`),
    });
  });

  it("takes the user and project by id, and an unscoped token with no catalog", async () => {
    const byId = await call("POST", "/identity/v3/auth/tokens", {
      body: password({ id: "admin", password: "admin-secret" }, { project: { id: "admin" } }),
    });
    expect(byId.status).toBe(201);
    expect(byId.json.token.roles.map((r: { name: string }) => r.name)).toEqual(["admin", "member", "reader"]);
    const unscoped = await call("POST", "/identity/v3/auth/tokens", {
      body: password({ id: "demo", password: "demo-secret" }),
    });
    expect(unscoped.status).toBe(201);
    expect(unscoped.json.token.project).toBeUndefined();
    expect(unscoped.json.token.catalog).toBeUndefined();
    // an unscoped token is nobody to the Compute API, but lists the user's projects
    const token = unscoped.headers["x-subject-token"]!;
    expect((await call("GET", "/v2.1/flavors", { token })).status).toBe(401);
    const mine = await call("GET", "/identity/v3/auth/projects", { token });
    expect(mine.json.projects.map((p: { id: string }) => p.id)).toEqual(["demo"]);
  });

  it("answers a wrong password, an unknown user and a foreign project with Keystone's 401", async () => {
    const refused = {
      error: {
        code: 401,
        title: "Unauthorized",
        message: "The request you have made requires authentication.",
      },
    };
    for (const body of [
      password({ name: "admin", domain: { id: "default" }, password: "wrong" }),
      password({ name: "nobody", domain: { id: "default" }, password: "admin-secret" }),
      password({ id: "demo", password: "demo-secret" }, { project: { id: "admin" } }),
    ]) {
      const r = await call("POST", "/identity/v3/auth/tokens", { body });
      expect(r.status).toBe(401);
      expect(r.json).toEqual(refused);
      expect(r.headers["x-subject-token"]).toBeUndefined();
    }
    const malformed = await call("POST", "/identity/v3/auth/tokens", { body: { auth: {} } });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error).toMatchObject({ code: 400, title: "Bad Request" });
  });

  it("validates (GET, HEAD), rescopes by the token method, and a token works on /v2.1 until it expires", async () => {
    const token = await login("admin", "admin-secret", "admin");
    const shown = await call("GET", "/identity/v3/auth/tokens", { token, subject: token });
    expect(shown.status).toBe(200);
    expect(shown.json.token.project.id).toBe("admin");
    expect((await call("HEAD", "/identity/v3/auth/tokens", { token, subject: token })).status).toBe(200);
    const forged = `${token.slice(0, -4)}AAAA`;
    const missing = await call("GET", "/identity/v3/auth/tokens", { token, subject: forged });
    expect(missing.status).toBe(404);
    expect(missing.json.error.title).toBe("Not Found");

    const rescoped = await call("POST", "/identity/v3/auth/tokens", {
      body: {
        auth: {
          identity: { methods: ["token"], token: { id: token } },
          scope: { project: { name: "admin", domain: { id: "default" } } },
        },
      },
    });
    expect(rescoped.status).toBe(201);
    expect(rescoped.json.token.methods).toEqual(["token"]);
    expect(rescoped.json.token.expires_at).toBe(shown.json.token.expires_at);

    // keystoneauth's token plugin with a static token (`--os-token admin-token`)
    const fromStatic = await call("POST", "/identity/v3/auth/tokens", {
      body: {
        auth: {
          identity: { methods: ["token"], token: { id: "admin-token" } },
          scope: { project: { id: "admin" } },
        },
      },
    });
    expect(fromStatic.status).toBe(201);
    expect(fromStatic.json.token).toMatchObject({
      methods: ["token"],
      user: { name: "admin" },
      project: { id: "admin" },
    });
    expect(fromStatic.json.token.audit_ids).toHaveLength(1);
    expect(rescoped.json.token.audit_ids).toEqual([expect.any(String), shown.json.token.audit_ids[0]]);

    expect((await call("GET", "/v2.1/flavors", { token })).status).toBe(200);
    const saved = clock;
    clock = new Date(clock.getTime() + 3600_000);
    try {
      const expired = await call("GET", "/v2.1/flavors", { token });
      expect(expired.status).toBe(401);
      expect(expired.json.error.code).toBe(401);
      expect((await call("GET", "/identity/v3/auth/projects", { token })).status).toBe(401);
    } finally {
      clock = saved;
    }
  });

  it("lets the admin list projects (and by name), users, roles and domains; a member only their own", async () => {
    const admin = await login("admin", "admin-secret", "admin");
    const demo = await login("demo", "demo-secret", "demo");
    const names = (r: { json: Record<string, { name: string }[]> }, k: string) =>
      r.json[k]!.map((x) => x.name);
    expect(names(await call("GET", "/identity/v3/projects", { token: admin }), "projects")).toEqual([
      "admin",
      "demo",
    ]);
    const byName = await call("GET", "/identity/v3/projects?name=demo", { token: admin });
    expect(byName.json.projects).toEqual([
      expect.objectContaining({
        id: "demo",
        domain_id: "default",
        links: { self: `${BASE}/identity/v3/projects/demo` },
      }),
    ]);
    expect(names(await call("GET", "/identity/v3/users", { token: admin }), "users")).toEqual([
      "admin",
      "demo",
    ]);
    expect(names(await call("GET", "/identity/v3/roles", { token: admin }), "roles")).toEqual([
      "admin",
      "member",
      "reader",
    ]);
    expect(names(await call("GET", "/identity/v3/domains", { token: admin }), "domains")).toEqual([
      "Default",
    ]);
    expect(
      (await call("GET", "/identity/v3/users/demo/projects", { token: admin })).json.projects[0].id,
    ).toBe("demo");
    // the static admin token is an admin here too
    expect((await call("GET", "/identity/v3/projects", { token: "admin-token" })).status).toBe(200);

    const denied = await call("GET", "/identity/v3/projects", { token: demo });
    expect(denied.status).toBe(403);
    expect(denied.json).toEqual({
      error: {
        code: 403,
        title: "Forbidden",
        message: "You are not authorized to perform the requested action: identity:list_projects.",
      },
    });
    expect((await call("GET", "/identity/v3/users", { token: demo })).status).toBe(403);
    expect((await call("GET", "/identity/v3/projects/admin", { token: demo })).status).toBe(403);
    expect((await call("GET", "/identity/v3/users/admin", { token: demo })).status).toBe(403);
    expect((await call("GET", "/identity/v3/projects/demo", { token: demo })).json.project.name).toBe("demo");
    expect((await call("GET", "/identity/v3/users/demo/projects", { token: demo })).status).toBe(200);
    const none = await call("GET", "/identity/v3/projects/nope", { token: admin });
    expect(none.status).toBe(404);
    expect(none.json.error.message).toBe("Could not find project: nope.");
    expect((await call("GET", "/identity/v3/projects")).status).toBe(401);
  });
});

describe("/image", () => {
  it("answers Glance's versions document and lists the catalog's images in Glance's shape, paged", async () => {
    const versions = await call("GET", "/image");
    expect(versions.status).toBe(300);
    expect(versions.json.versions[0]).toEqual({
      id: "v2.16",
      status: "CURRENT",
      links: [{ rel: "self", href: `${BASE}/image/v2/` }],
    });
    const all = await call("GET", "/image/v2/images", { token: "demo-token" });
    expect(all.json).toMatchObject({ first: "/v2/images", schema: "/v2/schemas/images" });
    expect(all.json.images.map((i: { name: string }) => i.name)).toEqual([
      "broken",
      "cirros",
      "sleeper",
      "ubuntu",
    ]);
    expect(all.json.next).toBeUndefined();
    expect(all.json.images[1]).toMatchObject({
      id: "a1b2c3d4-0000-4000-8000-000000000001",
      status: "active",
      visibility: "public",
      disk_format: "qcow2",
      container_format: "bare",
      architecture: "x86_64",
      self: "/v2/images/a1b2c3d4-0000-4000-8000-000000000001",
      file: "/v2/images/a1b2c3d4-0000-4000-8000-000000000001/file",
      schema: "/v2/schemas/image",
    });
    const page = await call("GET", "/image/v2/images?limit=2", { token: "demo-token" });
    expect(page.json.images).toHaveLength(2);
    expect(page.json.next).toBe(`/v2/images?marker=${page.json.images[1].id}&limit=2`);
    const rest = await call("GET", page.json.next.replace("/v2", "/image/v2"), { token: "demo-token" });
    expect(rest.json.images.map((i: { name: string }) => i.name)).toEqual(["sleeper", "ubuntu"]);
    const named = await call("GET", "/image/v2/images?name=cirros", { token: "demo-token" });
    expect(named.json.images.map((i: { name: string }) => i.name)).toEqual(["cirros"]);
    expect(named.json.first).toBe("/v2/images?name=cirros");
    expect((await call("GET", "/image/v2/images")).status).toBe(401);
  });

  it("shows by id only (404 by name, as Glance), and lets the admin and a member create a record (queued until its data comes, shared unless asked)", async () => {
    const token = await login("admin", "admin-secret", "admin");
    expect(
      (await call("GET", "/image/v2/images/a1b2c3d4-0000-4000-8000-000000000002", { token })).json.name,
    ).toBe("ubuntu");
    const byName = await call("GET", "/image/v2/images/ubuntu", { token });
    expect(byName.status).toBe(404);
    expect(byName.body).toContain("No image found with ID ubuntu");

    const body = {
      name: "fedora",
      disk_format: "raw",
      container_format: "bare",
      min_ram: 512,
      os_distro: "fedora",
    };
    const member = await call("POST", "/image/v2/images", { token: "demo-token", body });
    expect(member.status).toBe(201);
    expect(member.json).toMatchObject({ owner: "demo", visibility: "shared", status: "queued" });
    const created = await call("POST", "/image/v2/images", { token, body });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      name: "fedora",
      status: "queued",
      owner: "admin",
      visibility: "shared",
      disk_format: "raw",
      min_ram: 512,
      os_distro: "fedora",
    });
    const id = created.json.id as string;
    expect(created.headers.location).toBe(`${BASE}/image/v2/images/${id}`);
    // in the catalog: Nova's image proxy and the compute API see it
    expect((await call("GET", `/v2.1/images/${id}`, { token })).json.image.name).toBe("fedora");
    const again = await call("POST", "/image/v2/images", { token, body: { ...body, id } });
    expect(again.status).toBe(409);
    expect(
      (await call("POST", "/image/v2/images", { token, body: { ...body, disk_format: "floppy" } })).status,
    ).toBe(400);
    expect((await call("POST", "/image/v2/images", { token, body: { ...body, hw_x: 3 } })).status).toBe(400);
    // its data is application/octet-stream (Glance's 415 otherwise; the upload itself: e2e/image-upload)
    expect((await call("PUT", `/image/v2/images/${id}/file`, { token, body: "x" })).status).toBe(415);
    expect((await call("DELETE", `/image/v2/images/${member.json.id}`, { token: "demo-token" })).status).toBe(
      204,
    );
  });

  it("a member's own images, as Glance's default policy has them: private, shared or community (public is the admin's), changed by PATCH and Nova's metadata proxy (up to 2.38), seen by another project as their visibility says, deleted by their owner", async () => {
    const demo = "demo-token";
    // a member of another project
    const admin = await login("admin", "admin-secret", "admin");
    const project = await call("POST", "/identity/v3/projects", {
      token: admin,
      body: { project: { name: "glance-other", domain_id: "default" } },
    });
    const user = await call("POST", "/identity/v3/users", {
      token: admin,
      body: { user: { name: "glance-carol", password: "carol-secret", domain_id: "default" } },
    });
    const role = (await call("GET", "/identity/v3/roles?name=member", { token: admin })).json.roles[0];
    await call(
      "PUT",
      `/identity/v3/projects/${project.json.project.id}/users/${user.json.user.id}/roles/${role.id}`,
      { token: admin },
    );
    const other = await login("glance-carol", "carol-secret", "glance-other");

    const make = async (body: Record<string, unknown>) => {
      const r = await call("POST", "/image/v2/images", {
        token: demo,
        body: { disk_format: "raw", container_format: "bare", ...body },
      });
      expect(r.status).toBe(201);
      return r.json;
    };
    const mine = await make({ name: "g-private", visibility: "private", os_distro: "cirros" });
    const ours = await make({ name: "g-shared" });
    const anyones = await make({ name: "g-community", visibility: "community" });
    expect([mine.visibility, ours.visibility, anyones.visibility, mine.owner]).toEqual([
      "private",
      "shared",
      "community",
      "demo",
    ]);
    const publicized = await call("POST", "/image/v2/images", {
      token: demo,
      body: { visibility: "public" },
    });
    expect([publicized.status, publicized.body.split("\n")[2]]).toEqual([
      403,
      "You are not authorized to complete publicize_image action.",
    ]);

    const names = async (token: string, q = "") =>
      (await call("GET", `/image/v2/images${q}`, { token })).json.images
        .map((i: { name: string }) => i.name)
        .filter((n: string) => n.startsWith("g-"));
    expect(await names(demo)).toEqual(["g-community", "g-private", "g-shared"]);
    // another project: a community image only when it asks for community ones; the others hidden
    expect(await names(other)).toEqual([]);
    expect(await names(other, "?visibility=community")).toEqual(["g-community"]);
    expect((await call("GET", `/image/v2/images/${anyones.id}`, { token: other })).status).toBe(200);
    expect((await call("GET", `/image/v2/images/${mine.id}`, { token: other })).status).toBe(404);
    expect((await call("GET", `/v2.1/images/${anyones.id}`, { token: other })).status).toBe(200);
    expect(
      (await call("GET", "/v2.1/images", { token: other })).json.images.map((i: { id: string }) => i.id),
    ).not.toContain(anyones.id);

    // PATCH, Glance's JSON patch
    const patch = (token: string, id: string, ops: unknown) =>
      call("PATCH", `/image/v2/images/${id}`, {
        token,
        body: ops,
        headers: { "content-type": "application/openstack-images-v2.1-json-patch" },
      });
    const patched = await patch(demo, mine.id, [
      { op: "add", path: "/os_version", value: "1" },
      { op: "replace", path: "/os_distro", value: "ubuntu" },
      { op: "replace", path: "/name", value: "g-renamed" },
      { op: "replace", path: "/min_ram", value: 128 },
      { op: "replace", path: "/disk_format", value: "qcow2" },
    ]);
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({
      name: "g-renamed",
      os_version: "1",
      os_distro: "ubuntu",
      min_ram: 128,
      disk_format: "qcow2",
      updated_at: "2026-03-01T12:00:00Z",
    });
    const refusals: [string, unknown, number, string][] = [
      [demo, [{ op: "replace", path: "/nothing", value: "1" }], 409, "Property nothing does not exist."],
      [demo, [{ op: "remove", path: "/nothing" }], 409, "Property nothing does not exist."],
      [demo, [{ op: "remove", path: "/name" }], 403, "Property name may not be removed."],
      [demo, [{ op: "replace", path: "/owner", value: "x" }], 403, "Owner can't be updated by non admin."],
      [
        demo,
        [{ op: "replace", path: "/visibility", value: "public" }],
        403,
        "You are not authorized to complete publicize_image action.",
      ],
      [other, [{ op: "add", path: "/a", value: "1" }], 404, `No image found with ID ${mine.id}`],
    ];
    for (const [token, ops, status, message] of refusals) {
      const r = await patch(token, mine.id, ops);
      expect([r.status, r.body.split("\n")[2]]).toEqual([status, message]);
    }
    // another project sees the community image, but may not change it
    const theirs = await patch(other, anyones.id, [{ op: "add", path: "/a", value: "1" }]);
    expect([theirs.status, theirs.body.split("\n")[2]]).toEqual([
      403,
      "You are not authorized to complete modify_image action.",
    ]);
    expect((await patch(demo, mine.id, [{ op: "remove", path: "/os_version" }])).json).not.toHaveProperty(
      "os_version",
    );
    expect(
      (await patch(demo, ours.id, [{ op: "replace", path: "/visibility", value: "private" }])).json
        .visibility,
    ).toBe("private");

    // Nova's image metadata proxy: the extra properties (not Glance's own attributes)
    const nova = (method: string, path: string, body?: unknown, token = demo, version = "2.38") =>
      call(method, `/v2.1/images/${mine.id}${path}`, {
        token,
        body,
        headers: { "openstack-api-version": `compute ${version}` },
      });
    expect((await nova("GET", "/metadata")).json).toEqual({ metadata: { os_distro: "ubuntu" } });
    expect((await nova("PUT", "/metadata", { metadata: { a: "1", b: "2" } })).json).toEqual({
      metadata: { a: "1", b: "2" },
    });
    expect((await nova("POST", "/metadata", { metadata: { b: "3", c: "4" } })).json).toEqual({
      metadata: { a: "1", b: "3", c: "4" },
    });
    expect((await nova("PUT", "/metadata/a", { meta: { a: "5" } })).json).toEqual({ meta: { a: "5" } });
    expect((await nova("GET", "/metadata/a")).json).toEqual({ meta: { a: "5" } });
    expect((await nova("DELETE", "/metadata/c")).status).toBe(204);
    expect((await nova("GET", "/metadata")).json).toEqual({ metadata: { a: "5", b: "3" } });
    expect((await nova("DELETE", "/metadata/c")).json).toEqual({
      itemNotFound: { code: 404, message: "Invalid metadata key" },
    });
    expect((await nova("PUT", "/metadata/a", { meta: { b: "1" } })).json).toEqual({
      badRequest: { code: 400, message: "Request body and URI mismatch" },
    });
    // Glance's refusals as Nova's: a read-only attribute, another project's image
    expect((await nova("POST", "/metadata", { metadata: { status: "x" } })).json).toEqual({
      forbidden: { code: 403, message: `Not authorized for image ${mine.id}.` },
    });
    expect((await nova("GET", "/metadata", undefined, other)).status).toBe(404);
    const community = await call("PUT", `/v2.1/images/${anyones.id}/metadata`, {
      token: other,
      body: { metadata: { a: "1" } },
      headers: { "openstack-api-version": "compute 2.38" },
    });
    expect(community.json).toEqual({
      forbidden: { code: 403, message: `Not authorized for image ${anyones.id}.` },
    });
    // gone at 2.39, as in Nova
    expect((await nova("GET", "/metadata", undefined, demo, "2.39")).status).toBe(404);
    // the proxy's view: the same metadata, Glance's attributes apart
    expect((await call("GET", `/v2.1/images/${mine.id}`, { token: demo })).json.image.metadata).toEqual({
      a: "5",
      b: "3",
    });

    // deleted by their owner only
    const refused = await call("DELETE", `/image/v2/images/${anyones.id}`, { token: other });
    expect([refused.status, refused.body.split("\n")[2]]).toEqual([
      403,
      "You are not authorized to complete delete_image action.",
    ]);
    expect((await call("DELETE", `/v2.1/images/${anyones.id}`, { token: other })).json).toEqual({
      forbidden: { code: 403, message: "You are not allowed to delete the image." },
    });
    for (const i of [mine, ours, anyones])
      expect((await call("DELETE", `/image/v2/images/${i.id}`, { token: demo })).status).toBe(204);
  });
});

// last: it leaves users behind that the listings above would see
describe("the store, after the API tests", () => {
  it("a name is unique in its domain under concurrent creates, and names stored before the index are found after a reseed", async () => {
    const user = (id: string, name: string) => ({
      id,
      name,
      domain_id: "default",
      enabled: true,
      password_hash: "scrypt$x",
      password_expires_at: null,
    });
    const wins = await Promise.all(
      ["u-1", "u-2", "u-3", "u-4"].map((id) => putIfAbsent("user", id, user(id, "racer"))),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    const winner = ["u-1", "u-2", "u-3", "u-4"][wins.indexOf(true)];
    expect((await findUserByName("racer", "default"))?.id).toBe(winner);
    // the losers left nothing behind
    expect((await listUsers()).filter((u) => u.name === "racer").map((u) => u.id)).toEqual([winner]);

    // a user written as an older release did (no name item): found once the seed indexes it
    await put("user", "old-timer", user("old-timer", "old-timer"));
    expect(await findUserByName("old-timer", "default")).toBeUndefined();
    expect(await indexNames()).toBe(1);
    expect((await findUserByName("old-timer", "default"))?.id).toBe("old-timer");
  });
});
