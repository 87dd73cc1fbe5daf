// One front for every OpenStack service the API serves (Compute, Image, Networking, Identity), as
// Neutron's one controller serves every resource: the same chain and the same tools, each service
// declaring only how it differs, as data (its `Service`). The chain: the service's own middleware
// (Compute's request id and body limit) → its version documents (no token) → keystonemiddleware's
// token check on its paths → its routes → its answer to a path it does not serve. Every refusal,
// wherever it is thrown, is answered in the service's error shape; a body is read as JSON (a
// malformed one the service's 400) and validated with zod through Hono's validator.
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { validator } from "hono/validator";
import type { z } from "zod";
import { type AuthContext, type AuthDeps, authenticate } from "./auth.js";
import { type BodyRules, parseBody } from "./body.js";
import { Refusal, UNAUTHORIZED_BODY } from "./errors.js";

/** What every front's context holds (an entry's public base URL, the token's caller). */
export interface FrontVariables {
  baseUrl: string;
  auth: AuthContext;
  /** the request's log line's fields, where the API's observer keeps one */
  logFields?: Record<string, unknown>;
}
export type FrontEnv = { Variables: FrontVariables };

/** An error body: JSON, or Glance's plain text. */
export type ErrorAnswer = { json: object } | { text: string };

export interface VersionDocument {
  path: string;
  document: (baseUrl: string) => unknown;
  /** 300 Multiple Choices where the service answers so (Glance, Keystone) */
  status?: 200 | 300;
}

/** How one service differs from the others. */
export interface Service<E extends FrontEnv = FrontEnv> extends BodyRules {
  /** the error body its clients parse */
  errorBody: (r: Refusal) => ErrorAnswer;
  /** its domain's own errors (lib/network's, lib/identity's) as refusals */
  refusalOf?: (e: Error) => Refusal | undefined;
  /** an error that is no refusal; without it, the enclosing front answers it */
  unexpected?: (e: Error) => Refusal;
  /** its version documents, answered without a token */
  versions: readonly VersionDocument[];
  /** the paths behind the token check (Hono patterns) */
  tokenPaths: readonly string[];
  /** its middleware before everything else */
  middleware?: readonly MiddlewareHandler<E>[];
  /** its answer to a path it does not serve */
  notFound: (c: Context<E>) => Refusal;
}

function answer(c: Context, r: Refusal, errorBody: Service["errorBody"]): Response {
  const body = errorBody(r);
  const status = r.status as 400;
  if ("text" in body) return c.text(body.text, status, r.headers);
  return c.json(body.json, status, r.headers);
}

/**
 * A service's front: a Hono app with the chain above; `routes` adds the service's own routes
 * between the token check and the not-found answer.
 */
export function createFront<E extends FrontEnv>(
  service: Service<E>,
  deps: AuthDeps,
  routes: (app: Hono<E>) => void,
): Hono<E> {
  const app = new Hono<E>({ strict: false });
  app.onError((e, c) => {
    const fields = (c.var as FrontVariables).logFields;
    let refusal = e instanceof Refusal ? e : service.refusalOf?.(e);
    if (!refusal) {
      if (!service.unexpected) throw e;
      refusal = service.unexpected(e);
      if (fields) {
        fields.error = e;
        if (e.stack) fields.stack = e.stack;
      }
    } else if (refusal.status >= 500 && fields && !fields.error) fields.error = refusal;
    return answer(c, refusal, service.errorBody);
  });
  for (const m of service.middleware ?? []) app.use("*", m);
  for (const v of service.versions)
    app.get(v.path, (c) => c.json(v.document((c.var as FrontVariables).baseUrl) as object, v.status ?? 200));
  for (const path of service.tokenPaths) app.use(path, requireToken(deps));
  routes(app);
  // (a mounted front's notFound is not consulted, its parent's is: the catch-all is a route)
  app.all("*", (c) => {
    throw service.notFound(c);
  });
  return app;
}

/** keystonemiddleware's part: a valid X-Auth-Token, or Keystone's 401 whatever the service. */
export function requireToken<E extends FrontEnv>(deps: AuthDeps): MiddlewareHandler<E> {
  return async (c, next) => {
    const auth = await authenticate(Object.fromEntries(c.req.raw.headers), deps);
    if (!auth) return c.json(UNAUTHORIZED_BODY, 401);
    c.set("auth", auth);
    await next();
  };
}

/** The request's body as JSON by the service's rules, or the service's 400. */
export async function readJson(c: Context, service: BodyRules): Promise<unknown> {
  return parseBody(await c.req.text(), service);
}

/** Why a value failed its schema: the first issue, and the input at its path. */
export interface Failure {
  issue: z.core.$ZodIssue;
  input: unknown;
}

function failure(error: z.ZodError, input: unknown): Failure {
  const issue = error.issues[0]!;
  let at = input;
  for (const k of issue.path) at = (at as Record<PropertyKey, unknown> | undefined)?.[k];
  return { issue, input: at };
}

/**
 * The body, read by the service's rules and checked by a zod schema, for `c.req.valid("json")`:
 * a failure is the refusal `refuse` words for the service.
 */
export function jsonBody<S extends z.ZodType, E extends FrontEnv = FrontEnv>(
  service: BodyRules,
  schema: S,
  refuse: (f: Failure) => Refusal,
): MiddlewareHandler<E, string, { in: { json: z.input<S> }; out: { json: z.output<S> } }> {
  return async (c, next) => {
    const raw = await readJson(c, service);
    const r = schema.safeParse(raw);
    if (!r.success) throw refuse(failure(r.error, raw));
    c.req.addValidatedData("json", r.data as object);
    await next();
  };
}

/** The query, checked by a zod schema (each parameter its list of values), for `c.req.valid("query")`. */
export function queryOf<S extends z.ZodType>(schema: S, refuse: (f: Failure) => Refusal) {
  return validator("query", (_v, c): z.output<S> => {
    const raw = c.req.queries();
    const r = schema.safeParse(raw);
    if (!r.success) throw refuse(failure(r.error, raw));
    return r.data;
  });
}
