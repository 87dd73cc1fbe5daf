// Keystone v3 on DevStack's path, /identity: enough of it for keystoneauth's discovery and
// password/token authentication, and for what `openstack` reads (projects, users, roles, domains).
// Keystone's default policy: listing projects, users, roles and domains is the admin's; a user sees
// their own user, projects and domain.
import { type Context, Hono } from "hono";
import { IdentityError, issueToken } from "../../identity/issue.js";
import * as store from "../../identity/store.js";
import { type TokenPayload, tokenExpirationSeconds, tokenKey, verifyToken } from "../../identity/token.js";
import { type AuthDeps, tokenTable } from "../auth.js";
import {
  collection,
  domainView,
  keystoneError,
  projectView,
  roleView,
  serviceCatalog,
  tokenView,
  userView,
  versionDocument,
  versionsDocument,
} from "./views.js";

/** What the parent app puts in the context: the public base URL (lib/api/app.ts's observe). */
type IdentityEnv = { Variables: { baseUrl: string } };
type C = Context<IdentityEnv>;

const AUTH_REQUIRED = "The request you have made requires authentication.";

/**
 * The payload behind a token: one our /identity signed (scoped or not), or one of the static
 * table's, described as Keystone would (names are the ids; it expires an expiration from now).
 */
export async function tokenPayload(token: string | undefined, now: Date): Promise<TokenPayload | undefined> {
  token = token?.trim();
  if (!token) return undefined;
  const tokens = await tokenTable();
  if (Object.hasOwn(tokens, token)) {
    const p = tokens[token]!;
    const domain = { id: "default", name: "Default" };
    return {
      methods: ["token"],
      user: { id: p.user_id, name: p.user_id, domain },
      project: { id: p.project_id, name: p.project_id, domain },
      roles: p.roles.map((r) => ({ id: r, name: r })),
      issued_at: now.toISOString(),
      expires_at: new Date(now.getTime() + tokenExpirationSeconds() * 1000).toISOString(),
      audit_ids: [],
    };
  }
  return verifyToken(token, await tokenKey(), now);
}

const isAdmin = (p: TokenPayload) => !!p.project && p.roles.some((r) => r.name === "admin");

class Refusal extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404,
    message: string,
  ) {
    super(message);
  }
}

const forbidden = (action: string) =>
  new Refusal(403, `You are not authorized to perform the requested action: identity:${action}.`);

export function identityApp(deps: AuthDeps): Hono<IdentityEnv> {
  const app = new Hono<IdentityEnv>({ strict: false });
  const base = (c: C) => c.get("baseUrl");

  app.onError((e, c) => {
    if (e instanceof Refusal || e instanceof IdentityError)
      return c.json(keystoneError(e.status, e.message), e.status);
    throw e;
  });

  /** The caller's token, or Keystone's 401. */
  const caller = async (c: C): Promise<TokenPayload> => {
    const p = await tokenPayload(c.req.header("x-auth-token"), deps.now());
    if (!p) throw new Refusal(401, AUTH_REQUIRED);
    return p;
  };
  const self = (c: C) => `${base(c)}${c.req.path}`;
  const admin = async (c: C, action: string) => {
    const p = await caller(c);
    if (!isAdmin(p)) throw forbidden(action);
    return p;
  };

  app.get("/", (c) => c.json(versionsDocument(base(c)), 300));
  app.get("/v3", (c) => c.json(versionDocument(base(c))));

  app.post("/v3/auth/tokens", async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new Refusal(400, "Malformed request body");
    }
    const { token, payload } = await issueToken({
      body,
      headerToken: c.req.header("x-auth-token"),
      resolveToken: (t) => tokenPayload(t, deps.now()),
      key: await tokenKey(),
      now: deps.now(),
    });
    return c.json(tokenView(payload, base(c)), 201, { "X-Subject-Token": token });
  });

  const validate = async (c: C) => {
    await caller(c);
    const subject = c.req.header("x-subject-token");
    const p = await tokenPayload(subject, deps.now());
    if (!p) throw new Refusal(404, `Could not find token: ${subject ?? ""}.`);
    return p;
  };
  app.get("/v3/auth/tokens", async (c) => {
    const p = await validate(c);
    return c.json(tokenView(p, base(c)), 200, { "X-Subject-Token": c.req.header("x-subject-token")! });
  });
  app.on("HEAD", "/v3/auth/tokens", async (c) => {
    await validate(c);
    return c.body(null, 200);
  });

  app.get("/v3/auth/catalog", async (c) => {
    const p = await caller(c);
    if (!p.project)
      throw new Refusal(403, "A project-scoped token is required to produce a service catalog.");
    return c.json({ catalog: serviceCatalog(base(c)), links: { self: self(c), previous: null, next: null } });
  });

  /** The projects the user holds a role on (enabled ones). */
  const projectsOf = async (userId: string) => {
    const out: store.Project[] = [];
    for (const a of await store.assignmentsOf(userId)) {
      const p = await store.getProject(a.project_id);
      if (p?.enabled) out.push(p);
    }
    return out;
  };
  app.get("/v3/auth/projects", async (c) => {
    const p = await caller(c);
    const projects = await projectsOf(p.user.id);
    return c.json(
      collection(
        "projects",
        projects.map((x) => projectView(x, base(c))),
        self(c),
      ),
    );
  });
  app.get("/v3/auth/domains", async (c) => {
    await caller(c);
    return c.json(collection("domains", [], self(c)));
  });

  app.get("/v3/projects", async (c) => {
    await admin(c, "list_projects");
    const { name, domain_id: domainId } = c.req.query();
    const projects = (await store.listProjects()).filter(
      (p) => (name === undefined || p.name === name) && (domainId === undefined || p.domain_id === domainId),
    );
    return c.json(
      collection(
        "projects",
        projects.map((p) => projectView(p, base(c))),
        self(c),
      ),
    );
  });
  app.get("/v3/projects/:id", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.project?.id !== id) throw forbidden("get_project");
    const project = await store.getProject(id);
    if (!project) throw new Refusal(404, `Could not find project: ${id}.`);
    return c.json({ project: projectView(project, base(c)) });
  });

  app.get("/v3/users", async (c) => {
    await admin(c, "list_users");
    const { name, domain_id: domainId } = c.req.query();
    const users = (await store.listUsers()).filter(
      (u) => (name === undefined || u.name === name) && (domainId === undefined || u.domain_id === domainId),
    );
    return c.json(
      collection(
        "users",
        users.map((u) => userView(u, base(c))),
        self(c),
      ),
    );
  });
  app.get("/v3/users/:id", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.id !== id) throw forbidden("get_user");
    const user = await store.getUser(id);
    if (!user) throw new Refusal(404, `Could not find user: ${id}.`);
    return c.json({ user: userView(user, base(c)) });
  });
  app.get("/v3/users/:id/projects", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.id !== id) throw forbidden("list_user_projects");
    if (!(await store.getUser(id))) throw new Refusal(404, `Could not find user: ${id}.`);
    const projects = await projectsOf(id);
    return c.json(
      collection(
        "projects",
        projects.map((x) => projectView(x, base(c))),
        self(c),
      ),
    );
  });

  app.get("/v3/roles", async (c) => {
    await admin(c, "list_roles");
    const { name } = c.req.query();
    const roles = (await store.listRoles()).filter((r) => name === undefined || r.name === name);
    return c.json(
      collection(
        "roles",
        roles.map((r) => roleView(r, base(c))),
        self(c),
      ),
    );
  });

  app.get("/v3/domains", async (c) => {
    await admin(c, "list_domains");
    const { name } = c.req.query();
    const domains = (await store.listDomains()).filter((d) => name === undefined || d.name === name);
    return c.json(
      collection(
        "domains",
        domains.map((d) => domainView(d, base(c))),
        self(c),
      ),
    );
  });
  app.get("/v3/domains/:id", async (c) => {
    const p = await caller(c);
    const id = c.req.param("id");
    if (!isAdmin(p) && p.user.domain.id !== id && p.project?.domain.id !== id) throw forbidden("get_domain");
    const domain = await store.getDomain(id);
    if (!domain) throw new Refusal(404, `Could not find domain: ${id}.`);
    return c.json({ domain: domainView(domain, base(c)) });
  });

  // (a mounted sub-app's notFound is not consulted: the parent's is, so the catch-all is a route)
  app.all("*", (c) => c.json(keystoneError(404, "The resource could not be found."), 404));
  return app;
}
