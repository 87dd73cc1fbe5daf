// The API as a Hono app: Compute's front (lib/api/front.ts), in the order of Nova's paste
// pipeline — request id and the request's log line → body size → version documents (no auth) →
// X-Auth-Token → microversion → route, every refusal in Nova's shape — with the Identity, Image and
// Networking fronts and the web console mounted on it. Served by hono/aws-lambda on Lambda,
// @hono/node-server locally, and handleHttp (router.ts) in tests.

import { randomUUID } from "node:crypto";
import type { Context, Hono, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { etag } from "hono/etag";
import { MAX_REQUEST_BODY_BYTES } from "../config.js";
import { keystoneUrl } from "../identity/keystone.js";
import { log } from "../log.js";
import { consoleApp } from "./console.js";
import type { ApiDeps } from "./deps.js";
import {
  ApiError,
  errorBody,
  METHOD_NOT_ALLOWED,
  REQUEST_TOO_LARGE,
  RESOURCE_NOT_FOUND,
  UNEXPECTED_ERROR,
} from "./errors.js";
import { createFront, type FrontVariables, type Service } from "./front.js";
import { identityApp } from "./identity/app.js";
import { imageApp } from "./image/app.js";
import { type ApiVersion, negotiateVersion, versionHeaders } from "./microversion.js";
import { networkApp } from "./network/app.js";
import { enforceRoute } from "./policy.js";
import { baseUrlFrom, type Query, type Route } from "./request.js";
import { ROUTES } from "./routes/index.js";
import { apiSettings } from "./settings.js";
import { NOVA_BODY } from "./validation/common.js";
import { legacyVersionView, versionsView, versionView } from "./views/versions.js";

/** What an entry point may hand the app besides the request (handleHttp's test options). */
export interface ApiBindings {
  requestId?: string;
  /** the public base URL for links when the entry knows it better than the Host header */
  baseUrl?: string;
}

export interface ApiVariables extends FrontVariables {
  requestId: string;
  logFields: Record<string, unknown>;
  version: ApiVersion;
}

export type ApiEnv = { Bindings: ApiBindings; Variables: ApiVariables };
export type ApiContext = Context<ApiEnv>;

const V21 = "/v2.1";

/** Find the route for a method and a path relative to /v2.1 (the 405's Allow list uses it). */
export function allowedMethods(path: string, routes: Route[] = ROUTES): string[] {
  const xs = path.split("/");
  const allow: string[] = [];
  for (const route of routes) {
    const ps = route.pattern.split("/");
    if (ps.length !== xs.length) continue;
    if (ps.every((p, i) => (p.startsWith(":") ? xs[i] !== "" : p === xs[i])) && !allow.includes(route.method))
      allow.push(route.method);
  }
  return allow;
}

const badMethod = (allow: string[]): ApiError =>
  new ApiError("badMethod", METHOD_NOT_ALLOWED, { allow: allow.join(", ") });

/** The request id, the public base URL, and one log line per request (with who and how long). */
const observe: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const started = performance.now();
  const requestId = c.env?.requestId ?? `req-${randomUUID()}`;
  const logFields: Record<string, unknown> = {};
  c.set("requestId", requestId);
  c.set("logFields", logFields);
  const headers = Object.fromEntries(c.req.raw.headers);
  c.set("baseUrl", apiSettings().publicUrl ?? c.env?.baseUrl?.replace(/\/+$/, "") ?? baseUrlFrom(headers));
  await next();
  c.res.headers.set("x-openstack-request-id", requestId);
  c.res.headers.set("x-compute-request-id", requestId);
  const auth = c.get("auth");
  const line = {
    request_id: requestId,
    method: c.req.method,
    path: c.req.path,
    status: c.res.status,
    duration_ms: Math.round((performance.now() - started) * 10) / 10,
    ...(auth ? { user_id: auth.user_id, project_id: auth.project_id } : {}),
    ...logFields,
  };
  if (c.res.status >= 500) log.error("api.request", line);
  else log.info("api.request", line);
};

/** The request's microversion; its headers on every compute answer, errors included. */
const microversion: MiddlewareHandler<ApiEnv> = async (c, next) => {
  const version = negotiateVersion(Object.fromEntries(c.req.raw.headers));
  c.set("version", version);
  await next();
  for (const [k, v] of Object.entries(versionHeaders(version))) c.res.headers.set(k, v);
};

async function bodyOf(c: ApiContext): Promise<string | undefined> {
  if (c.req.method === "GET" || c.req.method === "HEAD") return undefined;
  const text = await c.req.text();
  return text.length ? text : undefined;
}

function queryOf(c: ApiContext): Query {
  return c.req.queries() as Query;
}

function routeHandler(route: Route, deps: ApiDeps, legacy: boolean) {
  return async (c: ApiContext, next: () => Promise<void>) => {
    const params = { ...c.req.param() } as Record<string, string>;
    // Legacy URLs carry the caller's project: /v2.1/<project_id>/servers/…; another project's is
    // not a route.
    if (legacy) {
      if (params.project_id !== c.get("auth").project_id) return next();
      delete params.project_id;
    }
    if (!c.get("version").matches(route.min, route.max)) return next();
    // (c.req.path has lost the slash already: the request's own URL keeps it)
    if (route.exact && new URL(c.req.url).pathname.endsWith("/")) return next();
    const body = await bodyOf(c);
    // Nova's default policy for the route: a reader reads, a member writes (lib/api/policy.ts)
    enforceRoute(route, c.get("auth"), body);
    const result = await route.handler({
      ctx: {
        requestId: c.get("requestId"),
        baseUrl: c.get("baseUrl"),
        auth: c.get("auth"),
        logFields: c.get("logFields"),
        version: c.get("version"),
      },
      deps,
      params,
      query: queryOf(c),
      body,
    });
    if (result.status === 204 || result.body === undefined)
      return c.body(null, result.status as 204, result.headers);
    return c.json(result.body as object, result.status as 200, result.headers);
  };
}

/** Nova's 404, or its 405 with the methods the path has (a legacy path's too). */
function notFound(c: ApiContext): ApiError {
  const path = c.req.path.replace(/\/+$/, "") || "/";
  if (path === "/" || path === V21 || path === "/v2") return badMethod(["GET"]);
  // Nova's mapper matches no route for a trailing slash (DELETE /os-security-groups/ is a 404,
  // not the collection's 405)
  if (path.startsWith(`${V21}/`) && new URL(c.req.url).pathname.endsWith("/"))
    return new ApiError("itemNotFound", RESOURCE_NOT_FOUND);
  if (path.startsWith(`${V21}/`)) {
    let rel = path.slice(V21.length);
    const auth = c.get("auth");
    const first = rel.split("/")[1];
    let allow = allowedMethods(rel);
    if (!allow.length && auth && first === auth.project_id) {
      rel = rel.slice(first.length + 1) || "/";
      allow = allowedMethods(rel);
    }
    if (allow.length && !allow.includes(c.req.method)) return badMethod(allow);
  }
  return new ApiError("itemNotFound", RESOURCE_NOT_FOUND);
}

/** How Compute's front differs from the others. */
const NOVA: Service<ApiEnv> = {
  errorBody: (r) => ({ json: { [r.type]: { code: r.status, message: r.message } } }),
  // an unexpected failure: its cause to the log only
  unexpected: () => new ApiError("computeFault", UNEXPECTED_ERROR),
  // the routes read their bodies as text (the policy names a POST …/action by its key), and their
  // validators parse it by these rules (validation/common.ts parseJsonBody)
  ...NOVA_BODY,
  middleware: [
    observe,
    bodyLimit({
      maxSize: MAX_REQUEST_BODY_BYTES,
      onError: (c) => c.json(errorBody("overLimit", REQUEST_TOO_LARGE), 413),
    }),
  ],
  // unauthenticated, as in Nova
  versions: [
    { path: "/", document: versionsView },
    { path: V21, document: versionView },
    // the legacy v2.0 endpoint's document, which GET / links to (its API is not served)
    { path: "/v2", document: legacyVersionView },
  ],
  tokenPaths: [`${V21}/*`],
  notFound,
};

/** The whole API for one set of dependencies. */
export function createApp(deps: ApiDeps): Hono<ApiEnv> {
  return createFront(NOVA, deps, (app) => {
    // Identity (unless the stack validates against an existing Keystone) and Image, DevStack's paths.
    if (!keystoneUrl()) app.route("/identity", identityApp(deps));
    app.route("/image", imageApp(deps));
    // Networking v2, not yet in the service catalog (docs/networking.md)
    app.route("/networking", networkApp(deps));
    // the web console, on the same origin as the API it calls
    app.route("/console", consoleApp());

    // ETags on every answer to a GET: a console (or any client) polling with If-None-Match gets
    // a bodiless 304 while nothing changed
    app.use(`${V21}/*`, microversion, etag({ weak: true }));
    for (const route of ROUTES)
      app.on(route.method, `${V21}${route.pattern}`, routeHandler(route, deps, false));
    for (const route of ROUTES)
      app.on(route.method, `${V21}/:project_id${route.pattern}`, routeHandler(route, deps, true));
  });
}
