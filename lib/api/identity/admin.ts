// Keystone v3's admin API on /identity/v3: domains, projects, users (and a user's own password and
// application credentials), roles, grants and role assignments, with Keystone's default policies:
// managing and listing is the admin's (an `admin` role on a project-scoped token); a user reads
// itself, its projects and its domain, changes its own password with the original one, and
// manages its own application credentials.
import type { Context, Hono, MiddlewareHandler } from "hono";
import { z } from "zod";
import * as appCreds from "../../identity/app-creds.js";
import * as manage from "../../identity/manage.js";
import { impliedBy } from "../../identity/roles.js";
import * as store from "../../identity/store.js";
import type { TokenPayload } from "../../identity/token.js";
import { rolesOf } from "../../identity/validate.js";
import type { BodyRules } from "../body.js";
import { Refusal } from "../errors.js";
import { type FrontVariables, jsonBody, queryOf } from "../front.js";
import {
  applicationCredentialCreate,
  checked,
  domainCreate,
  domainUpdate,
  keystoneRefusal,
  passwordChange,
  patchOf,
  projectCreate,
  projectUpdate,
  roleCreate,
  userCreate,
  userUpdate,
} from "./bodies.js";
import {
  applicationCredentialView,
  collection,
  domainView,
  projectView,
  roleAssignmentView,
  roleView,
  userView,
} from "./views.js";

/**
 * What the parent app puts in the context (the public base URL, lib/api/app.ts's observe), and
 * the caller's token where a route checked it before reading the body.
 */
export type IdentityEnv = { Variables: FrontVariables & { token?: TokenPayload } };
type C = Context<IdentityEnv>;

/** How Keystone reads a body: anything but JSON (an empty body too) is its 400. */
export const KEYSTONE_BODY: BodyRules = { malformedBody: () => new Refusal(400, "Malformed request body") };

export const isAdmin = (p: TokenPayload) => !!p.project && p.roles.some((r) => r.name === "admin");

export const forbidden = (action: string) =>
  new Refusal(403, `You are not authorized to perform the requested action: identity:${action}.`);

export interface AdminDeps {
  caller: (c: C) => Promise<TokenPayload>;
  self: (c: C) => string;
  base: (c: C) => string;
  now: () => Date;
}

/** A body checked by one of ./bodies.ts's schemas, read by Keystone's rules. */
const body = <S extends Parameters<typeof jsonBody>[1]>(schema: S) =>
  jsonBody<S, IdentityEnv>(KEYSTONE_BODY, schema, keystoneRefusal);

/**
 * Keystone's list queries, through Hono's validator: each parameter's first value (a filter it
 * does not know matches as Keystone's does, by what the route reads); no value is refused.
 */
const keystoneQuery = queryOf(
  z
    .record(z.string(), z.array(z.string()))
    .transform(
      (q): Record<string, string | undefined> =>
        Object.fromEntries(Object.entries(q).map(([k, v]) => [k, v[0]])),
    ),
  (f) => new Refusal(400, f.issue.message),
);

/** Keystone's boolean query values: "0", "false", "no", "off" (any case) are false. */
const truthy = (v: string | undefined): boolean | undefined =>
  v === undefined ? undefined : !["0", "false", "no", "off", "n", "f"].includes(v.toLowerCase());

/** A query flag present without a value (`?effective`) is set, as Keystone reads it. */
const flag = (v: string | undefined): boolean => v !== undefined && v !== "0" && v.toLowerCase() !== "false";

/**
 * A listing filtered by name reads the name items by key (strongly consistent) rather than the
 * by-kind index (eventually consistent): `openstack role add --project acme` right after `project
 * create acme` looks the project up by name and must find it.
 */
async function byName<T>(
  name: string,
  domainId: string | undefined,
  find: (name: string, domainId: string) => Promise<T | undefined>,
): Promise<T[]> {
  const domains = domainId !== undefined ? [domainId] : (await store.listDomains()).map((d) => d.id);
  const found = await Promise.all(domains.map((d) => find(name, d)));
  return found.filter((x): x is Awaited<T> & T => x !== undefined);
}

export function adminRoutes(app: Hono<IdentityEnv>, deps: AdminDeps): void {
  const { caller, self, base } = deps;
  const admin = async (c: C, action: string) => {
    const p = await caller(c);
    if (!isAdmin(p)) throw forbidden(action);
    return p;
  };
  /** The admin check before the body's (Keystone enforces its policy first), its token kept. */
  const adminFirst =
    (action: string): MiddlewareHandler<IdentityEnv> =>
    async (c, next) => {
      c.set("token", await admin(c, action));
      await next();
    };
  const token = (c: C) => c.get("token")!;
  /** The caller's domain for a create that names none: its project's, else its user's. */
  const domainOfCaller = (p: TokenPayload) => p.project?.domain.id ?? p.user.domain.id;
  const list = <T>(c: C, kind: string, items: T[], view: (x: T, base: string) => unknown) =>
    c.json(
      collection(
        kind,
        items.map((x) => view(x, base(c))),
        self(c),
      ),
    );

  // ---- domains --------------------------------------------------------------------------------
  app.get("/v3/domains", keystoneQuery, async (c) => {
    await admin(c, "list_domains");
    const { name, enabled } = c.req.valid("query");
    const on = truthy(enabled);
    const all = name !== undefined ? [await store.findDomainByName(name)] : await store.listDomains();
    const domains = all.filter(
      (d): d is store.Domain => d !== undefined && (on === undefined || d.enabled === on),
    );
    return list(c, "domains", domains, domainView);
  });
  app.post("/v3/domains", adminFirst("create_domain"), body(domainCreate), async (c) => {
    const domain = await manage.createDomain(c.req.valid("json").domain);
    return c.json({ domain: domainView(domain, base(c)) }, 201);
  });
  app.get("/v3/domains/:id", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.domain.id !== id && p.project?.domain.id !== id) throw forbidden("get_domain");
    return c.json({ domain: domainView(await manage.requireDomain(id), base(c)) });
  });
  app.patch("/v3/domains/:id", adminFirst("update_domain"), body(patchOf("domain")), async (c) => {
    const before = await manage.requireDomain(c.req.param("id"));
    const domain = await manage.updateDomain(before, checked(domainUpdate, c.req.valid("json").domain));
    return c.json({ domain: domainView(domain, base(c)) });
  });
  app.delete("/v3/domains/:id", async (c) => {
    await admin(c, "delete_domain");
    await manage.deleteDomain(c.req.param("id"));
    return c.body(null, 204);
  });

  // ---- projects -------------------------------------------------------------------------------
  app.get("/v3/projects", keystoneQuery, async (c) => {
    await admin(c, "list_projects");
    const q = c.req.valid("query");
    const on = truthy(q.enabled);
    const all =
      q.name !== undefined
        ? await byName(q.name, q.domain_id, store.findProjectByName)
        : await store.listProjects();
    const projects = all.filter(
      (p) =>
        (q.domain_id === undefined || p.domain_id === q.domain_id) &&
        (q.parent_id === undefined || p.parent_id === q.parent_id) &&
        (on === undefined || p.enabled === on) &&
        (q.is_domain === undefined || truthy(q.is_domain) === p.is_domain),
    );
    return list(c, "projects", projects, projectView);
  });
  app.post("/v3/projects", adminFirst("create_project"), body(projectCreate), async (c) => {
    const project = await manage.createProject(c.req.valid("json").project, domainOfCaller(token(c)));
    return c.json({ project: projectView(project, base(c)) }, 201);
  });
  app.get("/v3/projects/:id", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.project?.id !== id) throw forbidden("get_project");
    return c.json({ project: projectView(await manage.requireProject(id), base(c)) });
  });
  app.patch("/v3/projects/:id", adminFirst("update_project"), body(patchOf("project")), async (c) => {
    const before = await manage.requireProject(c.req.param("id"));
    const project = await manage.updateProject(before, checked(projectUpdate, c.req.valid("json").project));
    return c.json({ project: projectView(project, base(c)) });
  });
  app.delete("/v3/projects/:id", async (c) => {
    await admin(c, "delete_project");
    await manage.deleteProject(c.req.param("id"));
    return c.body(null, 204);
  });

  // ---- grants: a user's roles on a project ----------------------------------------------------
  app.get("/v3/projects/:p/users/:u/roles", async (c) => {
    await admin(c, "list_grants");
    const { p, u } = c.req.param();
    await manage.requireProject(p);
    await manage.requireUser(u);
    const a = await store.getAssignment(u, p);
    const roles = (await Promise.all((a?.role_ids ?? []).map((r) => store.getRole(r)))).filter(
      (r): r is store.Role => r !== undefined,
    );
    return list(c, "roles", roles, roleView);
  });
  app.put("/v3/projects/:p/users/:u/roles/:r", async (c) => {
    await admin(c, "create_grant");
    const { p, u, r } = c.req.param();
    await manage.grant(p, u, r);
    return c.body(null, 204);
  });
  app.on(["GET", "HEAD"], "/v3/projects/:p/users/:u/roles/:r", async (c) => {
    await admin(c, "check_grant");
    const { p, u, r } = c.req.param();
    await manage.checkGrant(p, u, r);
    return c.body(null, 204);
  });
  app.delete("/v3/projects/:p/users/:u/roles/:r", async (c) => {
    await admin(c, "revoke_grant");
    const { p, u, r } = c.req.param();
    await manage.ungrant(p, u, r);
    return c.body(null, 204);
  });

  // ---- users ----------------------------------------------------------------------------------
  app.get("/v3/users", keystoneQuery, async (c) => {
    await admin(c, "list_users");
    const { name, domain_id: domainId, enabled } = c.req.valid("query");
    const on = truthy(enabled);
    const all =
      name !== undefined ? await byName(name, domainId, store.findUserByName) : await store.listUsers();
    const users = all.filter(
      (u) => (domainId === undefined || u.domain_id === domainId) && (on === undefined || u.enabled === on),
    );
    return list(c, "users", users, userView);
  });
  app.post("/v3/users", adminFirst("create_user"), body(userCreate), async (c) => {
    const user = await manage.createUser(c.req.valid("json").user, domainOfCaller(token(c)));
    return c.json({ user: userView(user, base(c)) }, 201);
  });
  app.get("/v3/users/:id", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.id !== id) throw forbidden("get_user");
    return c.json({ user: userView(await manage.requireUser(id), base(c)) });
  });
  app.patch("/v3/users/:id", adminFirst("update_user"), body(patchOf("user")), async (c) => {
    const before = await manage.requireUser(c.req.param("id"));
    const user = await manage.updateUser(before, checked(userUpdate, c.req.valid("json").user), deps.now());
    return c.json({ user: userView(user, base(c)) });
  });
  app.delete("/v3/users/:id", async (c) => {
    await admin(c, "delete_user");
    await manage.deleteUser(c.req.param("id"));
    return c.body(null, 204);
  });
  // Keystone enforces no policy here: the original password is the credential.
  app.post("/v3/users/:id/password", body(passwordChange), async (c) => {
    await manage.changePassword(c.req.param("id"), c.req.valid("json").user, deps.now());
    return c.body(null, 204);
  });
  app.get("/v3/users/:id/projects", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.id !== id) throw forbidden("list_user_projects");
    await manage.requireUser(id);
    return list(c, "projects", await manage.enabledProjectsOf(id), projectView);
  });
  // no groups here: a user belongs to none
  app.get("/v3/users/:id/groups", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.id !== id) throw forbidden("list_groups_for_user");
    await manage.requireUser(id);
    return list(c, "groups", [], (x) => x);
  });

  // ---- application credentials ----------------------------------------------------------------
  /** The owner, or an admin (Keystone's ADMIN_OR_SYSTEM_READER_OR_OWNER for reads and deletes). */
  const ownerOrAdmin = async (c: C, action: string) => {
    const p = await caller(c);
    if (!isAdmin(p) && p.user.id !== c.req.param("id")) throw forbidden(action);
    return p;
  };
  const credentialView = async (cred: store.ApplicationCredential & { secret?: string }, c: C) =>
    applicationCredentialView(cred, await rolesOf(cred.role_ids), base(c));
  app.get("/v3/users/:id/application_credentials", keystoneQuery, async (c) => {
    await ownerOrAdmin(c, "list_application_credentials");
    const { name } = c.req.valid("query");
    const creds = (await store.applicationCredentialsOf(c.req.param("id"))).filter(
      (x) => name === undefined || x.name === name,
    );
    const views = await Promise.all(creds.map((x) => credentialView(x, c)));
    return c.json(collection("application_credentials", views, self(c)));
  });
  /** Who may create one, before the body (a 403 comes before a 400, as Keystone's policy). */
  const creatorFirst: MiddlewareHandler<IdentityEnv> = async (c, next) => {
    const p = await caller(c);
    appCreds.mayCreate(c.req.param("id")!, p);
    c.set("token", p);
    await next();
  };
  app.post(
    "/v3/users/:id/application_credentials",
    creatorFirst,
    body(applicationCredentialCreate),
    async (c) => {
      const cred = await appCreds.createApplicationCredential(
        c.req.param("id"),
        c.req.valid("json").application_credential,
        token(c),
        deps.now(),
      );
      return c.json({ application_credential: await credentialView(cred, c) }, 201);
    },
  );
  app.get("/v3/users/:id/application_credentials/:cid", async (c) => {
    await ownerOrAdmin(c, "get_application_credential");
    const cred = await appCreds.requireApplicationCredential(c.req.param("id"), c.req.param("cid"));
    return c.json({ application_credential: await credentialView(cred, c) });
  });
  app.delete("/v3/users/:id/application_credentials/:cid", async (c) => {
    const p = await ownerOrAdmin(c, "delete_application_credential");
    await appCreds.deleteApplicationCredential(c.req.param("id"), c.req.param("cid"), p);
    return c.body(null, 204);
  });

  // ---- roles ----------------------------------------------------------------------------------
  app.get("/v3/roles", keystoneQuery, async (c) => {
    await admin(c, "list_roles");
    const { name } = c.req.valid("query");
    const all = name !== undefined ? [await store.findRoleByName(name)] : await store.listRoles();
    const roles = all.filter((r): r is store.Role => r !== undefined);
    return list(c, "roles", roles, roleView);
  });
  app.post("/v3/roles", adminFirst("create_role"), body(roleCreate), async (c) => {
    return c.json({ role: roleView(await manage.createRole(c.req.valid("json").role), base(c)) }, 201);
  });
  app.get("/v3/roles/:id", async (c) => {
    await admin(c, "get_role");
    return c.json({ role: roleView(await manage.requireRole(c.req.param("id")), base(c)) });
  });
  app.delete("/v3/roles/:id", async (c) => {
    await admin(c, "delete_role");
    await manage.deleteRole(c.req.param("id"));
    return c.body(null, 204);
  });

  // ---- role assignments -----------------------------------------------------------------------
  app.get("/v3/role_assignments", keystoneQuery, async (c) => {
    await admin(c, "list_role_assignments");
    const q = c.req.valid("query");
    const userId = q["user.id"];
    const projectId = q["scope.project.id"];
    const roleId = q["role.id"];
    // no groups, no domain or system assignments here: those filters match nothing
    if (q["group.id"] !== undefined || q["scope.domain.id"] !== undefined || q["scope.system"] !== undefined)
      return c.json(collection("role_assignments", [], self(c)));
    let assignments: store.Assignment[];
    if (userId !== undefined) assignments = await store.assignmentsOf(userId);
    else if (projectId !== undefined) assignments = await store.assignmentsOn(projectId);
    else assignments = await store.listAllAssignments();
    const effective = flag(q.effective);
    const names = flag(q.include_names);
    const rows: { user_id: string; project_id: string; role_id: string; prior?: string }[] = [];
    for (const a of assignments) {
      if (projectId !== undefined && a.project_id !== projectId) continue;
      for (const role_id of a.role_ids) rows.push({ user_id: a.user_id, project_id: a.project_id, role_id });
      if (effective)
        for (const [role_id, prior] of impliedBy(a.role_ids))
          rows.push({ user_id: a.user_id, project_id: a.project_id, role_id, prior });
    }
    const shown = rows.filter((r) => roleId === undefined || r.role_id === roleId);
    const cache = new Map<string, Promise<unknown>>();
    const once = <T>(key: string, read: () => Promise<T>) => {
      if (!cache.has(key)) cache.set(key, read());
      return cache.get(key) as Promise<T>;
    };
    const domainRef = async (id: string) => {
      const d = await once(`d#${id}`, () => store.getDomain(id));
      return { id, name: d?.name ?? id };
    };
    const views = await Promise.all(
      shown.map(async (r) => {
        if (!names)
          return roleAssignmentView(
            {
              user: { id: r.user_id },
              project: { id: r.project_id },
              role: { id: r.role_id },
              prior: r.prior,
            },
            base(c),
          );
        const [u, p, role] = await Promise.all([
          once(`u#${r.user_id}`, () => store.getUser(r.user_id)),
          once(`p#${r.project_id}`, () => store.getProject(r.project_id)),
          once(`r#${r.role_id}`, () => store.getRole(r.role_id)),
        ]);
        return roleAssignmentView(
          {
            user: {
              id: r.user_id,
              name: u?.name ?? r.user_id,
              domain: await domainRef(u?.domain_id ?? "default"),
            },
            project: {
              id: r.project_id,
              name: p?.name ?? r.project_id,
              domain: await domainRef(p?.domain_id ?? "default"),
            },
            role: { id: r.role_id, name: role?.name ?? r.role_id },
            prior: r.prior,
          },
          base(c),
        );
      }),
    );
    return c.json(collection("role_assignments", views, self(c)));
  });
}
