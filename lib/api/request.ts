// Framework-free request/response shapes shared by the Lambda adapter and the local node:http
// server, and what route handlers receive.
import type { AuthContext } from "./auth.js";
import type { ApiDeps } from "./deps.js";
import type { ApiVersion } from "./microversion.js";

export interface HttpRequest {
  method: string;
  /** the raw path, optionally with its query string: `/v2.1/servers/detail?status=ERROR` */
  path: string;
  /** lowercased header names */
  headers: Record<string, string | undefined>;
  body: string | undefined;
  /** the `req-<uuid>` to use; generated when absent */
  requestId?: string;
  /** public base URL for links (`https://api.example.com/stage`); else NOVALESS_API_URL or Host */
  baseUrl?: string;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  /** JSON text, or "" (204) */
  body: string;
}

/** Repeated query parameters keep every value, in order (`?status=ERROR&status=ACTIVE`). */
export type Query = Record<string, string[]>;

/** The last value of a query parameter (Nova reads single-valued filters this way). */
export function queryOne(query: Query, name: string): string | undefined {
  const v = query[name];
  return v?.length ? v[v.length - 1] : undefined;
}

export function baseUrlFrom(headers: Record<string, string | undefined>, configured?: string): string {
  if (configured) return configured.replace(/\/+$/, "");
  const host = headers["x-forwarded-host"]?.split(",")[0]?.trim() || headers.host || "localhost";
  const proto = headers["x-forwarded-proto"]?.split(",")[0]?.trim() || "http";
  return `${proto}://${host}`;
}

/** Everything a route handler knows about the request besides its parameters. */
export interface RequestContext {
  requestId: string;
  /** no trailing slash; links are `${baseUrl}/v2.1/...` */
  baseUrl: string;
  auth: AuthContext;
  /** the negotiated microversion (lib/api/microversion.ts) */
  version: ApiVersion;
  /** extra fields for the request's log line (instance_uuid, counts, the cause of a 500) */
  logFields: Record<string, unknown>;
}

export interface RouteCall {
  ctx: RequestContext;
  deps: ApiDeps;
  params: Record<string, string>;
  query: Query;
  body: string | undefined;
}

export interface ApiResult {
  status: number;
  /** serialized as JSON; absent for 204 */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Route {
  method: string;
  /** relative to /v2.1; `:name` segments are parameters */
  pattern: string;
  handler: (call: RouteCall) => Promise<ApiResult>;
  /** the microversions it exists at (inclusive; open when absent): outside them it is 404, as Nova */
  min?: string;
  max?: string;
  /**
   * The path with a trailing slash is no route, as Nova's router has it (its routes match exactly).
   * Compute's front otherwise reads a trailing slash as none (Hono's strict: false), which every
   * other route keeps: only where a client's trailing slash means something else is it set.
   */
  exact?: true;
}
