// The console talks only to the public API: Identity v3 to sign in, Networking v2 for networks,
// Compute for the rest. The token lives in sessionStorage (gone with the tab). Polls send
// If-None-Match, so an unchanged answer is a bodiless 304.
import type { Session } from "./types.js";

/** The API's root: the page is at <root>/console. */
export const API_ROOT = location.pathname.replace(/\/console(\/.*)?$/, "");
const COMPUTE_VERSION = "compute 2.96";
const KEY = "novaless.console.session";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let session: Session | null = JSON.parse(sessionStorage.getItem(KEY) ?? "null") as Session | null;
const listeners = new Set<() => void>();

export const currentSession = (): Session | null => session;
export function onSessionChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}
export function setSession(s: Session | null): void {
  session = s;
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  for (const fn of listeners) fn();
}

/**
 * OpenStack's error bodies: {"badRequest": {"message": …}} (Compute), {"error": {…}} (Keystone),
 * {"NeutronError": {"type", "message", "detail"}} (Networking).
 */
async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as Record<string, { message?: string }>;
    const first = Object.values(body)[0];
    if (first?.message) return new ApiError(res.status, first.message);
  } catch {
    // not JSON
  }
  return new ApiError(res.status, text || `${res.status} ${res.statusText}`);
}

export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  opts: { token?: string; headers?: Record<string, string> } = {},
): Promise<{ body: T; headers: Headers }> {
  const token = opts.token ?? session?.token;
  const res = await fetch(`${API_ROOT}${path}`, {
    method,
    headers: {
      accept: "application/json",
      "openstack-api-version": COMPUTE_VERSION,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { "x-auth-token": token } : {}),
      ...opts.headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status === 401 && session && !opts.token) setSession(null);
  if (!res.ok) throw await errorOf(res);
  const text = await res.text();
  return { body: (text ? JSON.parse(text) : {}) as T, headers: res.headers };
}

export const get = async <T>(path: string): Promise<T> => (await request<T>("GET", path)).body;
export const post = async <T>(path: string, body: unknown): Promise<T> =>
  (await request<T>("POST", path, body)).body;
export const put = async <T>(path: string, body: unknown): Promise<T> =>
  (await request<T>("PUT", path, body)).body;
export const patch = async <T>(path: string, body: unknown): Promise<T> =>
  (await request<T>("PATCH", path, body)).body;

const etags = new Map<string, { etag: string; body: unknown }>();

/** A GET that answers the cached body when the server says 304 Not Modified. */
export async function getFresh<T>(path: string): Promise<T> {
  const seen = etags.get(path);
  const res = await fetch(`${API_ROOT}${path}`, {
    headers: {
      accept: "application/json",
      "openstack-api-version": COMPUTE_VERSION,
      ...(session ? { "x-auth-token": session.token } : {}),
      ...(seen ? { "if-none-match": seen.etag } : {}),
    },
  });
  if (res.status === 304 && seen) return seen.body as T;
  if (res.status === 401 && session) setSession(null);
  if (!res.ok) throw await errorOf(res);
  const body = (await res.json()) as T;
  const etag = res.headers.get("etag");
  if (etag) etags.set(path, { etag, body });
  return body;
}

interface TokenBody {
  token: {
    user: { id: string; name: string };
    project?: { id: string; name: string };
    roles?: { name: string }[];
  };
}

function sessionOf(token: string, b: TokenBody): Session {
  return {
    token,
    user: b.token.user.name,
    userId: b.token.user.id,
    project: b.token.project?.name ?? "",
    projectId: b.token.project?.id ?? "",
    admin: (b.token.roles ?? []).some((r) => r.name === "admin"),
  };
}

/** Keystone's password method, scoped to the project (user and project in domain Default). */
export async function signInWithPassword(user: string, password: string, project: string): Promise<Session> {
  const domain = { name: "Default" };
  const res = await fetch(`${API_ROOT}/identity/v3/auth/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({
      auth: {
        identity: { methods: ["password"], password: { user: { name: user, domain, password } } },
        scope: { project: { name: project || user, domain } },
      },
    }),
  });
  if (!res.ok) throw await errorOf(res);
  const token = res.headers.get("x-subject-token");
  if (!token) throw new ApiError(500, "Identity answered without a token");
  return sessionOf(token, (await res.json()) as TokenBody);
}

/** A token someone already has: Keystone's own validation says whose it is. */
export async function signInWithToken(token: string): Promise<Session> {
  const { body } = await request<TokenBody>("GET", "/identity/v3/auth/tokens", undefined, {
    token,
    headers: { "x-subject-token": token },
  });
  return sessionOf(token, body);
}
