// Validation against an existing Keystone, as keystonemiddleware's auth_token does it: GET
// <keystone>/v3/auth/tokens with the token as X-Subject-Token, and the answer cached for
// token_cache_time (300 s, never past the token's own expiry), invalid tokens included, so a burst
// of calls costs Keystone one request. The token validates itself (X-Auth-Token: the same token),
// which needs no service user.
import { createHash } from "node:crypto";
import { identityOptions } from "../config.js";

export interface ValidatedToken {
  user_id: string;
  user_name: string;
  domain_id: string;
  project_id?: string;
  project_name?: string;
  roles: string[];
  expires_at: string;
}

export interface KeystoneValidatorOptions {
  /** Keystone's endpoint, e.g. https://keystone.example.org:5000 or …/identity */
  url: string;
  /** seconds a validation is reused (keystonemiddleware's token_cache_time) */
  cacheSeconds?: number;
  now?: () => number;
  fetch?: typeof fetch;
}

interface Entry {
  value: ValidatedToken | undefined;
  until: number;
}

export class KeystoneValidator {
  private readonly cache = new Map<string, Entry>();
  private readonly base: string;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly fetcher: typeof fetch;

  constructor(opts: KeystoneValidatorOptions) {
    this.base = opts.url.replace(/\/+$/, "").replace(/\/v3$/, "");
    this.ttlMs = (opts.cacheSeconds ?? 300) * 1000;
    this.now = opts.now ?? Date.now;
    this.fetcher = opts.fetch ?? fetch;
  }

  /** The token's identity, or undefined when Keystone refuses it. Throws when Keystone is unreachable. */
  async validate(token: string): Promise<ValidatedToken | undefined> {
    // The cache is keyed by a hash: tokens are credentials and never sit in memory as keys.
    const key = createHash("sha256").update(token).digest("hex");
    const now = this.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.value;
    this.cache.delete(key);
    const res = await this.fetcher(`${this.base}/v3/auth/tokens`, {
      headers: { "X-Auth-Token": token, "X-Subject-Token": token, Accept: "application/json" },
    });
    let value: ValidatedToken | undefined;
    if (res.ok) value = parse(await res.json());
    else if (res.status !== 401 && res.status !== 403 && res.status !== 404)
      throw new Error(`Keystone answered ${res.status} validating a token`);
    const expiry = value ? Date.parse(value.expires_at) : Number.POSITIVE_INFINITY;
    if (value && !(expiry > now)) value = undefined;
    this.cache.set(key, { value, until: Math.min(now + this.ttlMs, expiry) });
    // keep the cache bounded: drop what has expired once it grows
    if (this.cache.size > 10_000) for (const [k, e] of this.cache) if (e.until <= now) this.cache.delete(k);
    return value;
  }
}

function parse(body: unknown): ValidatedToken | undefined {
  const t = (body as { token?: Record<string, unknown> })?.token;
  const user = t?.user as { id?: string; name?: string; domain?: { id?: string } } | undefined;
  if (!t || typeof user?.id !== "string" || typeof t.expires_at !== "string") return undefined;
  const project = t.project as { id?: string; name?: string } | undefined;
  const roles = Array.isArray(t.roles) ? (t.roles as { name?: string }[]).map((r) => String(r.name)) : [];
  return {
    user_id: user.id,
    user_name: user.name ?? user.id,
    domain_id: user.domain?.id ?? "default",
    ...(project?.id ? { project_id: project.id, project_name: project.name ?? project.id } : {}),
    roles,
    expires_at: t.expires_at,
  };
}

let shared: { url: string; validator: KeystoneValidator } | undefined;

/** NOVALESS_KEYSTONE_URL: when set, tokens are Keystone's and /identity is not served here. */
export function keystoneUrl(): string | undefined {
  return identityOptions().keystoneUrl || undefined;
}

/** The process's validator for NOVALESS_KEYSTONE_URL (one cache per process, as the middleware's). */
export function keystoneValidator(): KeystoneValidator | undefined {
  const url = keystoneUrl();
  if (!url) return undefined;
  if (shared?.url !== url) {
    const cacheSeconds = identityOptions().keystoneCacheSeconds;
    shared = { url, validator: new KeystoneValidator({ url, cacheSeconds }) };
  }
  return shared.validator;
}
