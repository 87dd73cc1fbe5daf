// handleHttp: the API for a framework-free request (tests, tools). It answers through the same Hono
// app the Lambda and the local server serve, built once per set of dependencies.
import type { Hono } from "hono";
import { type ApiEnv, createApp } from "./app.js";
import { type ApiDeps, defaultDeps } from "./deps.js";
import type { HttpRequest, HttpResponse } from "./request.js";

const apps = new WeakMap<ApiDeps, Hono<ApiEnv>>();

/** The app for a set of dependencies (one per object, so tests' fakes get their own). */
export function apiApp(deps: ApiDeps = defaultDeps): Hono<ApiEnv> {
  let app = apps.get(deps);
  if (!app) {
    app = createApp(deps);
    apps.set(deps, app);
  }
  return app;
}

/** "//x/" → "/x", as most front ends do before routing. */
function normalizePath(raw: string): string {
  const q = raw.indexOf("?");
  let path = (q === -1 ? raw : raw.slice(0, q)).replace(/\/{2,}/g, "/");
  if (!path.startsWith("/")) path = `/${path}`;
  return q === -1 ? path : path + raw.slice(q);
}

/**
 * Answer one HTTP request. Never throws: every failure becomes an OpenStack-shaped error, and an
 * unexpected one a 500 computeFault whose cause goes to the log only.
 */
export async function handleHttp(req: HttpRequest, deps: ApiDeps = defaultDeps): Promise<HttpResponse> {
  const method = req.method.toUpperCase();
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, v);
  const request = new Request(`http://127.0.0.1${normalizePath(req.path)}`, {
    method,
    headers,
    body: method === "GET" || method === "HEAD" ? undefined : req.body,
  });
  const res = await apiApp(deps).fetch(request, { requestId: req.requestId, baseUrl: req.baseUrl });
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    out[k] = v;
  });
  return { status: res.status, headers: out, body: res.status === 204 ? "" : await res.text() };
}
