// Keystone v3 on DevStack's path, /identity: keystoneauth's discovery, password, token and
// application-credential authentication, validation and revocation of tokens here; the admin API
// (projects, users, domains, roles, role assignments, application credentials) in ./admin.ts.
import type { Context, Hono } from "hono";
import { IdentityError, issueToken } from "../../identity/issue.js";
import { enabledProjectsOf } from "../../identity/manage.js";
import { withImplied } from "../../identity/roles.js";
import * as store from "../../identity/store.js";
import { type TokenPayload, tokenExpirationSeconds, tokenKey } from "../../identity/token.js";
import { validateToken } from "../../identity/validate.js";
import { type AuthDeps, tokenTable } from "../auth.js";
import { Refusal } from "../errors.js";
import { createFront, jsonBody, type Service } from "../front.js";
import { adminRoutes, forbidden, type IdentityEnv, isAdmin, KEYSTONE_BODY } from "./admin.js";
import { checked, keystoneRefusal, scopeRequest, tokenRequest } from "./bodies.js";
import {
  collection,
  keystoneError,
  projectView,
  serviceCatalog,
  tokenView,
  versionDocument,
  versionsDocument,
} from "./views.js";

type C = Context<IdentityEnv>;

const AUTH_REQUIRED = "The request you have made requires authentication.";

/**
 * The payload behind a token: one our /identity signed (scoped or not) that is still valid (its
 * user, project, roles and revocation read now), or one of the static table's, described as
 * Keystone would (names are the ids; it expires an expiration from now).
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
      roles: withImplied(p.roles).map((r) => ({ id: r, name: r })),
      issued_at: now.toISOString(),
      expires_at: new Date(now.getTime() + tokenExpirationSeconds() * 1000).toISOString(),
      audit_ids: [],
    };
  }
  return validateToken(token, now, true);
}

/**
 * How Keystone's front differs from the others. It checks a token per route (a token request
 * needs none), and answers a missing one with its own 401, the same body keystonemiddleware gives.
 */
const KEYSTONE: Service<IdentityEnv> = {
  ...KEYSTONE_BODY,
  errorBody: (r) => ({ json: keystoneError(r.status as 400, r.message) }),
  // lib/identity's refusals, with Keystone's texts
  refusalOf: (e) => (e instanceof IdentityError ? new Refusal(e.status, e.message) : undefined),
  versions: [
    { path: "/", document: versionsDocument, status: 300 },
    { path: "/v3", document: versionDocument },
  ],
  tokenPaths: [],
  notFound: () => new Refusal(404, "The resource could not be found."),
};

export function identityApp(deps: AuthDeps): Hono<IdentityEnv> {
  return createFront(KEYSTONE, deps, (app) => routes(app, deps));
}

function routes(app: Hono<IdentityEnv>, deps: AuthDeps): void {
  const base = (c: C) => c.get("baseUrl");

  /** The caller's token, or Keystone's 401. */
  const caller = async (c: C): Promise<TokenPayload> => {
    const p = await tokenPayload(c.req.header("x-auth-token"), deps.now());
    if (!p) throw new Refusal(401, AUTH_REQUIRED);
    return p;
  };
  const self = (c: C) => `${base(c)}${c.req.path}`;

  app.post("/v3/auth/tokens", jsonBody(KEYSTONE_BODY, tokenRequest, keystoneRefusal), async (c) => {
    const { auth } = c.req.valid("json");
    const { token, payload } = await issueToken({
      identity: auth.identity,
      scope: () => checked(scopeRequest, auth.scope),
      headerToken: c.req.header("x-auth-token"),
      resolveToken: (t) => tokenPayload(t, deps.now()),
      key: await tokenKey(),
      now: deps.now(),
    });
    return c.json(tokenView(payload, base(c)), 201, { "X-Subject-Token": token });
  });

  /** The subject token, for its own user or an admin (identity:validate_token, revoke_token). */
  const subjectOf = async (c: C, action: string) => {
    const p = await caller(c);
    const subject = c.req.header("x-subject-token");
    const s = await tokenPayload(subject, deps.now());
    if (!s) throw new Refusal(404, `Could not find token: ${subject ?? ""}.`);
    if (!isAdmin(p) && s.user.id !== p.user.id) throw forbidden(action);
    return s;
  };
  const validate = (c: C) => subjectOf(c, "validate_token");
  app.get("/v3/auth/tokens", async (c) => {
    const p = await validate(c);
    return c.json(tokenView(p, base(c)), 200, { "X-Subject-Token": c.req.header("x-subject-token")! });
  });
  app.on("HEAD", "/v3/auth/tokens", async (c) => {
    await validate(c);
    return c.body(null, 200);
  });
  // Keystone's revocation by audit id: the token, and no other, stops validating.
  app.delete("/v3/auth/tokens", async (c) => {
    const s = await subjectOf(c, "revoke_token");
    if (s.audit_ids[0]) await store.putRevokedToken(s.audit_ids[0], s.expires_at);
    return c.body(null, 204);
  });

  app.get("/v3/auth/catalog", async (c) => {
    const p = await caller(c);
    if (!p.project)
      throw new Refusal(403, "A project-scoped token is required to produce a service catalog.");
    return c.json({ catalog: serviceCatalog(base(c)), links: { self: self(c), previous: null, next: null } });
  });

  app.get("/v3/auth/projects", async (c) => {
    const p = await caller(c);
    const projects = await enabledProjectsOf(p.user.id);
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

  adminRoutes(app, { caller, self, base: (c) => base(c), now: deps.now });
}
