// The router: one entry, handleHttp, for the Lambda adapter and the local node:http server.
// Order of checks, as in Nova's paste pipeline: body size → version documents (no auth) →
// X-Auth-Token → route → handler. Every answer carries the request id; every request logs one line.
import { randomUUID } from "node:crypto";
import { MAX_REQUEST_BODY_BYTES } from "../config.js";
import { log } from "../log.js";
import { type AuthContext, authenticate, tokenTable } from "./auth.js";
import { type ApiDeps, defaultDeps } from "./deps.js";
import {
  ApiError,
  errorBody,
  METHOD_NOT_ALLOWED,
  REQUEST_TOO_LARGE,
  RESOURCE_NOT_FOUND,
  UNAUTHORIZED_BODY,
  UNAUTHORIZED_STATUS,
  UNEXPECTED_ERROR,
} from "./errors.js";
import {
  type ApiResult,
  baseUrlFrom,
  type HttpRequest,
  type HttpResponse,
  type Query,
  type RequestContext,
  type RouteCall,
  splitPath,
} from "./request.js";
import { listActions, showAction } from "./routes/actions.js";
import {
  aggregateActionRoute,
  createAggregateRoute,
  deleteAggregateRoute,
  listAggregatesRoute,
  listAvailabilityZones,
  listAvailabilityZonesDetail,
  showAggregateRoute,
  updateAggregateRoute,
} from "./routes/aggregates.js";
import {
  createFlavorRoute,
  listFlavorsRoute,
  setExtraSpecs,
  showExtraSpecs,
  showFlavor,
} from "./routes/flavors.js";
import {
  deleteInventoryRoute,
  listHypervisors,
  listInventories,
  showHypervisor,
  updateInventory,
} from "./routes/hypervisors.js";
import { listImagesRoute, showImage } from "./routes/images.js";
import { repairPlacementAudit, showPlacementAudit } from "./routes/placement-audit.js";
import { planRoute, showScheduling } from "./routes/scheduling.js";
import {
  createServerGroupRoute,
  deleteServerGroupRoute,
  listServerGroupsRoute,
  showServerGroupRoute,
} from "./routes/server-groups.js";
import { createServer, deleteServerRoute, listServers, showServer } from "./routes/servers.js";
import { listServices, updateService } from "./routes/services.js";
import { apiSettings } from "./settings.js";
import { versionsView, versionView } from "./views/versions.js";

export interface Route {
  method: string;
  /** relative to /v2.1; `:name` segments are parameters */
  pattern: string;
  handler: (call: RouteCall) => Promise<ApiResult>;
}

/** Static paths before parameterized ones: the first route whose pattern and method match wins. */
export const ROUTES: Route[] = [
  { method: "GET", pattern: "/servers", handler: (c) => listServers(c, false) },
  { method: "POST", pattern: "/servers", handler: createServer },
  { method: "GET", pattern: "/servers/detail", handler: (c) => listServers(c, true) },
  { method: "GET", pattern: "/servers/:id", handler: showServer },
  { method: "DELETE", pattern: "/servers/:id", handler: deleteServerRoute },
  { method: "GET", pattern: "/servers/:id/os-instance-actions", handler: listActions },
  { method: "GET", pattern: "/servers/:id/os-instance-actions/:request_id", handler: showAction },
  { method: "GET", pattern: "/servers/:id/os-scheduling", handler: showScheduling },
  { method: "GET", pattern: "/flavors", handler: (c) => listFlavorsRoute(c, false) },
  { method: "POST", pattern: "/flavors", handler: createFlavorRoute },
  { method: "GET", pattern: "/flavors/detail", handler: (c) => listFlavorsRoute(c, true) },
  { method: "GET", pattern: "/flavors/:id", handler: showFlavor },
  { method: "GET", pattern: "/flavors/:id/os-extra-specs", handler: showExtraSpecs },
  { method: "POST", pattern: "/flavors/:id/os-extra-specs", handler: setExtraSpecs },
  { method: "GET", pattern: "/images", handler: (c) => listImagesRoute(c, false) },
  { method: "GET", pattern: "/images/detail", handler: (c) => listImagesRoute(c, true) },
  { method: "GET", pattern: "/images/:id", handler: showImage },
  { method: "GET", pattern: "/os-hypervisors", handler: (c) => listHypervisors(c, false) },
  { method: "GET", pattern: "/os-hypervisors/detail", handler: (c) => listHypervisors(c, true) },
  { method: "GET", pattern: "/os-hypervisors/:id", handler: showHypervisor },
  { method: "GET", pattern: "/os-hypervisors/:id/inventories", handler: listInventories },
  { method: "PUT", pattern: "/os-hypervisors/:id/inventories/:resource_class", handler: updateInventory },
  {
    method: "DELETE",
    pattern: "/os-hypervisors/:id/inventories/:resource_class",
    handler: deleteInventoryRoute,
  },
  { method: "GET", pattern: "/os-placement-audit", handler: showPlacementAudit },
  { method: "POST", pattern: "/os-placement-audit", handler: repairPlacementAudit },
  { method: "GET", pattern: "/os-services", handler: listServices },
  { method: "PUT", pattern: "/os-services/:id", handler: updateService },
  { method: "GET", pattern: "/os-aggregates", handler: listAggregatesRoute },
  { method: "POST", pattern: "/os-aggregates", handler: createAggregateRoute },
  { method: "GET", pattern: "/os-aggregates/:id", handler: showAggregateRoute },
  { method: "PUT", pattern: "/os-aggregates/:id", handler: updateAggregateRoute },
  { method: "DELETE", pattern: "/os-aggregates/:id", handler: deleteAggregateRoute },
  { method: "POST", pattern: "/os-aggregates/:id/action", handler: aggregateActionRoute },
  { method: "GET", pattern: "/os-availability-zone", handler: listAvailabilityZones },
  { method: "GET", pattern: "/os-availability-zone/detail", handler: listAvailabilityZonesDetail },
  { method: "GET", pattern: "/os-server-groups", handler: listServerGroupsRoute },
  { method: "POST", pattern: "/os-server-groups", handler: createServerGroupRoute },
  { method: "GET", pattern: "/os-server-groups/:id", handler: showServerGroupRoute },
  { method: "DELETE", pattern: "/os-server-groups/:id", handler: deleteServerGroupRoute },
  { method: "POST", pattern: "/os-scheduler/plan", handler: planRoute },
];

const COLLECTIONS = new Set(ROUTES.map((r) => r.pattern.split("/")[1]));

function matchPattern(pattern: string, path: string): Record<string, string> | undefined {
  const ps = pattern.split("/");
  const xs = path.split("/");
  if (ps.length !== xs.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i]!;
    const x = xs[i]!;
    if (p.startsWith(":")) {
      if (!x) return undefined;
      params[p.slice(1)] = x;
    } else if (p !== x) return undefined;
  }
  return params;
}

export type RouteMatch =
  | { kind: "found"; route: Route; params: Record<string, string> }
  | { kind: "bad-method"; allow: string[] }
  | { kind: "not-found" };

/** Find the route for a method and a path relative to /v2.1. */
export function matchRoute(method: string, path: string, routes: Route[] = ROUTES): RouteMatch {
  const allow: string[] = [];
  for (const route of routes) {
    const params = matchPattern(route.pattern, path);
    if (!params) continue;
    if (route.method === method) return { kind: "found", route, params };
    if (!allow.includes(route.method)) allow.push(route.method);
  }
  return allow.length ? { kind: "bad-method", allow } : { kind: "not-found" };
}

const badMethod = (allow: string[]): ApiError =>
  new ApiError("badMethod", METHOD_NOT_ALLOWED, { allow: allow.join(", ") });

interface DispatchState {
  auth?: AuthContext;
}

async function dispatch(
  method: string,
  path: string,
  query: Query,
  req: HttpRequest,
  ctxBase: Omit<RequestContext, "auth">,
  deps: ApiDeps,
  state: DispatchState,
): Promise<ApiResult> {
  if (req.body !== undefined && Buffer.byteLength(req.body, "utf8") > MAX_REQUEST_BODY_BYTES) {
    throw new ApiError("overLimit", REQUEST_TOO_LARGE);
  }
  // version documents: unauthenticated, as in Nova
  if (path === "/") {
    if (method !== "GET") throw badMethod(["GET"]);
    return { status: 200, body: versionsView(ctxBase.baseUrl) };
  }
  if (path === "/v2.1") {
    if (method !== "GET") throw badMethod(["GET"]);
    return { status: 200, body: versionView(ctxBase.baseUrl) };
  }
  if (!path.startsWith("/v2.1/")) throw new ApiError("itemNotFound", RESOURCE_NOT_FOUND);

  const auth = authenticate(req.headers, await tokenTable());
  if (!auth) return { status: UNAUTHORIZED_STATUS, body: UNAUTHORIZED_BODY };
  state.auth = auth;

  let rel = path.slice("/v2.1".length);
  // legacy URLs carry the project: /v2.1/<project_id>/servers/…
  const first = rel.split("/")[1] ?? "";
  if (first === auth.project_id && !COLLECTIONS.has(first)) rel = rel.slice(first.length + 1) || "/";

  const m = matchRoute(method, rel);
  if (m.kind === "not-found") throw new ApiError("itemNotFound", RESOURCE_NOT_FOUND);
  if (m.kind === "bad-method") throw badMethod(m.allow);
  return m.route.handler({ ctx: { ...ctxBase, auth }, deps, params: m.params, query, body: req.body });
}

/**
 * Answer one HTTP request. Never throws: every failure becomes an OpenStack-shaped error, and an
 * unexpected one a 500 computeFault whose cause goes to the log only.
 */
export async function handleHttp(req: HttpRequest, deps: ApiDeps = defaultDeps): Promise<HttpResponse> {
  const started = performance.now();
  const requestId = req.requestId ?? `req-${randomUUID()}`;
  const method = req.method.toUpperCase();
  const { path, query } = splitPath(req.path);
  const logFields: Record<string, unknown> = {};
  const state: DispatchState = {};

  let result: ApiResult;
  try {
    const baseUrl = apiSettings().publicUrl ?? req.baseUrl?.replace(/\/+$/, "") ?? baseUrlFrom(req.headers);
    result = await dispatch(method, path, query, req, { requestId, baseUrl, logFields }, deps, state);
  } catch (e) {
    if (e instanceof ApiError) {
      result = { status: e.status, body: e.body(), headers: e.headers };
    } else {
      logFields.error = e;
      if (e instanceof Error && e.stack) logFields.stack = e.stack;
      result = { status: 500, body: errorBody("computeFault", UNEXPECTED_ERROR) };
    }
    if (result.status >= 500 && !logFields.error && e instanceof Error) logFields.error = e;
  }

  const headers: Record<string, string> = {
    ...(result.headers ?? {}),
    "x-openstack-request-id": requestId,
    "x-compute-request-id": requestId,
  };
  let body = "";
  if (result.body !== undefined && result.status !== 204) {
    body = JSON.stringify(result.body);
    headers["content-type"] = "application/json";
  }

  const line = {
    request_id: requestId,
    method,
    path,
    status: result.status,
    duration_ms: Math.round((performance.now() - started) * 10) / 10,
    ...(state.auth ? { user_id: state.auth.user_id, project_id: state.auth.project_id } : {}),
    ...logFields,
  };
  if (result.status >= 500) log.error("api.request", line);
  else log.info("api.request", line);

  return { status: result.status, headers, body };
}
