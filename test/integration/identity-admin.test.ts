// Keystone v3's admin API over the real store (dynalite through the AWS SDK), through the API's
// HTTP entry: projects, users, grants, role assignments, application credentials, domains and
// token revocation, with Keystone's answers (201/204, 403, 404, 409 and their texts), and a token
// that stops validating — at /identity and at /v2.1 — when what it stands for changes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { seedCatalog } from "../../lib/catalog/repo.js";
import { seedIdentity } from "../../lib/identity/seed.js";
import { httpCaller } from "./http.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

let clock = new Date("2026-03-01T12:00:00.000Z");
const deps = { ...defaultDeps, now: () => clock };
const tick = () => {
  clock = new Date(clock.getTime() + 1000);
};
const BASE = "https://cloud.example.org";

const call = httpCaller(deps, BASE);

// biome-ignore lint/suspicious/noExplicitAny: Keystone's token body; the assertions check its shape
async function tokenFor(auth: unknown): Promise<{ status: number; token?: string; json: any }> {
  const r = await call("POST", "/identity/v3/auth/tokens", { body: { auth } });
  tick();
  return { status: r.status, token: r.headers["x-subject-token"], json: r.json };
}

const byPassword = (name: string, password: string, project?: string) => ({
  identity: { methods: ["password"], password: { user: { name, domain: { id: "default" }, password } } },
  ...(project ? { scope: { project: { name: project, domain: { id: "default" } } } } : {}),
});

async function login(name: string, password: string, project?: string): Promise<string> {
  const r = await tokenFor(byPassword(name, password, project));
  expect(r.status).toBe(201);
  return r.token!;
}

/** 200 when the token validates at /identity (as itself) and at /v2.1; else what each answered. */
async function works(token: string): Promise<[number, number]> {
  const identity = await call("GET", "/identity/v3/auth/tokens", { token: "admin-token", subject: token });
  const compute = await call("GET", "/v2.1/servers", { token });
  return [identity.status, compute.status];
}

let admin: string;
beforeAll(async () => {
  // every compute validation reads the store (no remembered answer between the steps below)
  process.env.NOVALESS_TOKEN_REVOCATION_CACHE_TIME = "0";
  await seedCatalog();
  await seedIdentity({ adminPassword: "admin-secret", demo: true });
  admin = await login("admin", "admin-secret", "admin");
}, 60_000);
afterAll(() => {
  delete process.env.NOVALESS_TOKEN_REVOCATION_CACHE_TIME;
});

async function createProject(name: string, extra: Record<string, unknown> = {}) {
  const r = await call("POST", "/identity/v3/projects", {
    token: admin,
    body: { project: { name, ...extra } },
  });
  expect(r.status).toBe(201);
  return r.json.project as { id: string; name: string; parent_id: string };
}

async function createUser(name: string, password: string, extra: Record<string, unknown> = {}) {
  const r = await call("POST", "/identity/v3/users", {
    token: admin,
    body: { user: { name, password, ...extra } },
  });
  expect(r.status).toBe(201);
  return r.json.user as { id: string; name: string };
}

const grant = (p: string, u: string, r: string, method = "PUT") =>
  call(method, `/identity/v3/projects/${p}/users/${u}/roles/${r}`, { token: admin });

describe("projects", () => {
  it("create (409 on a name taken in the domain), filters, a hierarchy deleted leaves first, disabled → its tokens fail", async () => {
    const p = await createProject("acme", { description: "ACME", tags: ["prod"] });
    expect(p).toMatchObject({ name: "acme", parent_id: "default" });
    const dup = await call("POST", "/identity/v3/projects", {
      token: admin,
      body: { project: { name: "acme" } },
    });
    expect(dup.status).toBe(409);
    expect(dup.json.error.message).toMatch(
      /^Conflict occurred attempting to store project - it is not permitted to have two projects with either the same name or same id in the same domain: name is acme/,
    );
    const child = await createProject("acme-dev", { parent_id: p.id });
    expect(child.parent_id).toBe(p.id);
    const kids = await call("GET", `/identity/v3/projects?parent_id=${p.id}`, { token: admin });
    expect(kids.json.projects.map((x: { name: string }) => x.name)).toEqual(["acme-dev"]);
    const named = await call("GET", "/identity/v3/projects?name=acme", { token: admin });
    expect(named.json.projects.map((x: { id: string }) => x.id)).toEqual([p.id]);

    const u = await createUser("wile", "coyote");
    expect((await grant(p.id, u.id, "member")).status).toBe(204);
    const token = await login("wile", "coyote", "acme");
    expect(await works(token)).toEqual([200, 200]);
    // a member reads its own project, not the list
    expect((await call("GET", `/identity/v3/projects/${p.id}`, { token })).status).toBe(200);
    const list = await call("GET", "/identity/v3/projects", { token });
    expect(list.status).toBe(403);
    expect(list.json.error.message).toBe(
      "You are not authorized to perform the requested action: identity:list_projects.",
    );

    const off = await call("PATCH", `/identity/v3/projects/${p.id}`, {
      token: admin,
      body: { project: { enabled: false } },
    });
    expect(off.json.project.enabled).toBe(false);
    expect(await works(token)).toEqual([404, 401]);
    expect((await tokenFor(byPassword("wile", "coyote", "acme"))).status).toBe(401);
    const disabled = await call("GET", "/identity/v3/projects?enabled=false", { token: admin });
    expect(disabled.json.projects.map((x: { name: string }) => x.name)).toEqual(["acme"]);
    await call("PATCH", `/identity/v3/projects/${p.id}`, {
      token: admin,
      body: { project: { enabled: true } },
    });

    const parent = await call("DELETE", `/identity/v3/projects/${p.id}`, { token: admin });
    expect(parent.status).toBe(403);
    expect(parent.json.error.message).toContain("since it is not a leaf in the hierarchy");
    expect((await call("DELETE", `/identity/v3/projects/${child.id}`, { token: admin })).status).toBe(204);
    expect((await call("DELETE", `/identity/v3/projects/${p.id}`, { token: admin })).status).toBe(204);
    const gone = await call("GET", `/identity/v3/projects/${p.id}`, { token: admin });
    expect(gone.status).toBe(404);
    expect(gone.json.error.message).toBe(`Could not find project: ${p.id}.`);
    // its assignments went with it; its name is free again
    const left = await call("GET", `/identity/v3/role_assignments?user.id=${u.id}`, { token: admin });
    expect(left.json.role_assignments).toEqual([]);
    await createProject("acme");
  });
});

describe("users, grants and role assignments", () => {
  it("a grant's roles are read at each validation: removing it fails the token; assignments with names and implied roles", async () => {
    const p = await createProject("grants");
    const u = await createUser("gina", "pw-1", { email: "gina@example.org", default_project_id: p.id });
    expect(u).toMatchObject({ name: "gina", email: "gina@example.org", default_project_id: p.id });
    const unknownRole = await grant(p.id, u.id, "nope");
    expect(unknownRole.status).toBe(404);
    expect(unknownRole.json.error.message).toBe("Could not find role: nope.");
    expect((await grant(p.id, u.id, "member")).status).toBe(204);
    expect((await grant(p.id, u.id, "member", "HEAD")).status).toBe(204);
    expect((await grant(p.id, u.id, "admin", "HEAD")).status).toBe(404);

    // no scope asked: the default project, where the user holds a role
    const scoped = await tokenFor(byPassword("gina", "pw-1"));
    expect(scoped.json.token.project.id).toBe(p.id);
    expect(scoped.json.token.roles.map((r: { name: string }) => r.name)).toEqual(["member", "reader"]);

    const rows = await call("GET", `/identity/v3/role_assignments?user.id=${u.id}&effective&include_names`, {
      token: admin,
    });
    expect(rows.json.role_assignments).toEqual([
      expect.objectContaining({
        role: { id: "member", name: "member" },
        user: { id: u.id, name: "gina", domain: { id: "default", name: "Default" } },
        scope: { project: { id: p.id, name: "grants", domain: { id: "default", name: "Default" } } },
      }),
      expect.objectContaining({
        role: { id: "reader", name: "reader" },
        links: expect.objectContaining({ prior_role: `${BASE}/identity/v3/roles/member` }),
      }),
    ]);
    const byProject = await call("GET", `/identity/v3/role_assignments?scope.project.id=${p.id}`, {
      token: admin,
    });
    expect(byProject.json.role_assignments.map((a: { user: { id: string } }) => a.user.id)).toEqual([u.id]);

    const token = scoped.token!;
    expect(await works(token)).toEqual([200, 200]);
    expect((await grant(p.id, u.id, "member", "DELETE")).status).toBe(204);
    expect(await works(token)).toEqual([404, 401]);
    const again = await grant(p.id, u.id, "member", "DELETE");
    expect(again.status).toBe(404);
    expect(again.json.error.message).toBe(
      `Could not find role assignment with role: member, user or group: ${u.id}, project, domain, or system: ${p.id}.`,
    );
  });

  it("names are unique in a domain (409), a member reads only itself, passwords change by the user (original checked) and by an admin, each revoking the old tokens; disable and delete", async () => {
    const p = await createProject("users");
    const u = await createUser("hal", "pw-1");
    await grant(p.id, u.id, "member");
    const dup = await call("POST", "/identity/v3/users", { token: admin, body: { user: { name: "hal" } } });
    expect(dup.status).toBe(409);
    expect(dup.json.error.message).toBe(
      "Conflict occurred attempting to store user - Duplicate entry found with name hal at domain ID default.",
    );
    const t1 = await login("hal", "pw-1", "users");
    expect((await call("GET", `/identity/v3/users/${u.id}`, { token: t1 })).status).toBe(200);
    expect((await call("GET", "/identity/v3/users/admin", { token: t1 })).status).toBe(403);
    expect((await call("GET", "/identity/v3/users", { token: t1 })).json.error.message).toBe(
      "You are not authorized to perform the requested action: identity:list_users.",
    );

    const wrong = await call("POST", `/identity/v3/users/${u.id}/password`, {
      body: { user: { original_password: "nope", password: "pw-2" } },
    });
    expect(wrong.status).toBe(401);
    tick();
    const changed = await call("POST", `/identity/v3/users/${u.id}/password`, {
      body: { user: { original_password: "pw-1", password: "pw-2" } },
    });
    expect(changed.status).toBe(204);
    tick();
    expect(await works(t1)).toEqual([404, 401]);
    expect((await tokenFor(byPassword("hal", "pw-1", "users"))).status).toBe(401);
    const t2 = await login("hal", "pw-2", "users");
    expect(await works(t2)).toEqual([200, 200]);

    await call("PATCH", `/identity/v3/users/${u.id}`, { token: admin, body: { user: { password: "pw-3" } } });
    tick();
    expect(await works(t2)).toEqual([404, 401]);
    const t3 = await login("hal", "pw-3", "users");
    await call("PATCH", `/identity/v3/users/${u.id}`, { token: admin, body: { user: { enabled: false } } });
    tick();
    expect(await works(t3)).toEqual([404, 401]);
    expect((await tokenFor(byPassword("hal", "pw-3", "users"))).status).toBe(401);
    // enabled again: new tokens work, the old ones stay revoked
    await call("PATCH", `/identity/v3/users/${u.id}`, { token: admin, body: { user: { enabled: true } } });
    tick();
    expect(await works(t3)).toEqual([404, 401]);
    const t4 = await login("hal", "pw-3", "users");
    expect((await call("DELETE", `/identity/v3/users/${u.id}`, { token: admin })).status).toBe(204);
    expect(await works(t4)).toEqual([404, 401]);
    expect((await call("GET", `/identity/v3/users/${u.id}`, { token: admin })).json.error.message).toBe(
      `Could not find user: ${u.id}.`,
    );
  });

  it("twenty concurrent creates of one user name give one user and nineteen 409s", async () => {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call("POST", "/identity/v3/users", {
          token: admin,
          body: { user: { name: "racer", password: `p${i}` } },
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array(19).fill(409)]);
    const listed = await call("GET", "/identity/v3/users?name=racer", { token: admin });
    expect(listed.json.users).toHaveLength(1);
    expect(listed.json.users[0].id).toBe(answers.find((a) => a.status === 201)!.json.user.id);
  });
});

describe("application credentials and token revocation", () => {
  it("a credential delegates the roles asked (implied ones added) on its project, is refused more than the token holds, cannot make another, and dies with the user's role there", async () => {
    const p = await createProject("automation");
    const u = await createUser("terra", "form");
    await grant(p.id, u.id, "member");
    const token = await login("terra", "form", "automation");
    const path = `/identity/v3/users/${u.id}/application_credentials`;
    const tooMuch = await call("POST", path, {
      token,
      body: { application_credential: { name: "x", roles: [{ name: "admin" }] } },
    });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.json.error.message).toBe(
      "Invalid application credential: Cannot create an application credential with unassigned role",
    );
    const past = await call("POST", path, {
      token,
      body: { application_credential: { name: "x", expires_at: "2020-01-01T00:00:00Z" } },
    });
    expect(past.status).toBe(400);
    const other = await call("POST", "/identity/v3/users/admin/application_credentials", {
      token,
      body: { application_credential: { name: "x" } },
    });
    expect(other.status).toBe(403);

    const made = await call("POST", path, {
      token,
      body: { application_credential: { name: "ro", roles: [{ name: "reader" }], secret: "s3cr3t" } },
    });
    expect(made.status).toBe(201);
    const cred = made.json.application_credential;
    expect(cred).toMatchObject({ name: "ro", project_id: p.id, secret: "s3cr3t", unrestricted: false });
    expect(cred.roles.map((r: { name: string }) => r.name)).toEqual(["reader"]);
    expect(
      (await call("POST", path, { token, body: { application_credential: { name: "ro" } } })).status,
    ).toBe(409);
    const shown = await call("GET", `${path}/${cred.id}`, { token });
    expect(shown.json.application_credential.secret).toBeUndefined();

    const wrongSecret = await tokenFor({
      identity: {
        methods: ["application_credential"],
        application_credential: { id: cred.id, secret: "nope" },
      },
    });
    expect(wrongSecret.status).toBe(401);
    const byName = await tokenFor({
      identity: {
        methods: ["application_credential"],
        application_credential: {
          name: "ro",
          user: { name: "terra", domain: { id: "default" } },
          secret: "s3cr3t",
        },
      },
    });
    expect(byName.status).toBe(201);
    expect(byName.json.token).toMatchObject({
      methods: ["application_credential"],
      project: { id: p.id },
      application_credential: { id: cred.id, name: "ro", restricted: true },
    });
    expect(byName.json.token.roles.map((r: { name: string }) => r.name)).toEqual(["reader"]);
    const ro = byName.token!;
    expect((await call("GET", "/v2.1/servers", { token: ro })).status).toBe(200);
    expect(
      (
        await call("POST", "/v2.1/servers", {
          token: ro,
          body: { server: { name: "x", imageRef: "x", flavorRef: "1" } },
        })
      ).status,
    ).toBe(403);
    const nested = await call("POST", path, {
      token: ro,
      body: { application_credential: { name: "more" } },
    });
    expect(nested.status).toBe(403);

    // the user loses its role on the project: the credential goes, and its tokens fail
    expect((await grant(p.id, u.id, "member", "DELETE")).status).toBe(204);
    expect(await works(ro)).toEqual([404, 401]);
    expect((await call("GET", path, { token: admin })).json.application_credentials).toEqual([]);
  });

  it("DELETE /v3/auth/tokens revokes that token only; validation and revocation are its user's or an admin's", async () => {
    const a = await login("demo", "demo-secret", "demo");
    const b = await login("demo", "demo-secret", "demo");
    const foreign = await call("GET", "/identity/v3/auth/tokens", { token: a, subject: admin });
    expect(foreign.status).toBe(403);
    expect((await call("DELETE", "/identity/v3/auth/tokens", { token: b, subject: a })).status).toBe(204);
    expect(await works(a)).toEqual([404, 401]);
    expect(await works(b)).toEqual([200, 200]);
  });

  it("validating a token reads by key (one BatchGetItem), and listings Query the by-kind index (no Scan)", async () => {
    const token = await login("demo", "demo-secret", "demo");
    startMeter();
    try {
      await call("GET", "/v2.1/servers", { token });
      await call("GET", "/identity/v3/users", { token: admin });
      await call("GET", "/identity/v3/role_assignments", { token: admin });
      const ops = Object.values(meterReading()).flatMap((c) => Object.keys(c.requests));
      expect(ops).toContain("dynamodb:BatchGetItem");
      expect(ops).toContain("dynamodb:Query");
      expect(ops).not.toContain("dynamodb:Scan");
    } finally {
      stopMeter();
    }
  });
});

describe("domains", () => {
  it("create (409 on a name), delete only when disabled, which fails its users' tokens, then takes its projects and users with it", async () => {
    const made = await call("POST", "/identity/v3/domains", {
      token: admin,
      body: { domain: { name: "east" } },
    });
    expect(made.status).toBe(201);
    const d = made.json.domain;
    expect(
      (await call("POST", "/identity/v3/domains", { token: admin, body: { domain: { name: "east" } } }))
        .status,
    ).toBe(409);
    const p = await createProject("ops", { domain_id: d.id });
    const u = await createUser("eve", "pw", { domain_id: d.id });
    await grant(p.id, u.id, "member");
    const r = await tokenFor({
      identity: {
        methods: ["password"],
        password: { user: { name: "eve", domain: { name: "east" }, password: "pw" } },
      },
      scope: { project: { name: "ops", domain: { name: "east" } } },
    });
    expect(r.status).toBe(201);
    const enabled = await call("DELETE", `/identity/v3/domains/${d.id}`, { token: admin });
    expect(enabled.status).toBe(403);
    expect(enabled.json.error.message).toBe(
      "Cannot delete a domain that is enabled, please disable it first.",
    );
    await call("PATCH", `/identity/v3/domains/${d.id}`, {
      token: admin,
      body: { domain: { enabled: false } },
    });
    expect(await works(r.token!)).toEqual([404, 401]);
    expect((await call("DELETE", `/identity/v3/domains/${d.id}`, { token: admin })).status).toBe(204);
    expect((await call("GET", `/identity/v3/projects/${p.id}`, { token: admin })).status).toBe(404);
    expect((await call("GET", `/identity/v3/users/${u.id}`, { token: admin })).status).toBe(404);
  });
});
