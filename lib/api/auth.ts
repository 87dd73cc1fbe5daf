// Keystone's middleware's part: X-Auth-Token → user, project, roles. A token is, in turn, one of
// the static table (deployed: the Secrets Manager secret NOVALESS_AUTH_TOKENS_SECRET names; locally
// NOVALESS_AUTH_TOKENS or the demo tokens), a token our /identity signed, or — when the stack runs
// beside an existing Keystone (NOVALESS_KEYSTONE_URL) — one that Keystone validates.
import { secretString } from "../aws/secrets.js";
import { apiOptions } from "../config.js";
import { keystoneValidator } from "../identity/keystone.js";
import { validateToken } from "../identity/validate.js";
import { policyForbidden } from "./errors.js";
import { authTokens, type Principal, parseAuthTokens } from "./settings.js";

export interface AuthContext extends Principal {
  /** Nova's default policy's "admin" rule: the admin role. */
  isAdmin: boolean;
  user_name?: string;
  project_name?: string;
  domain_id?: string;
}

/** What authentication reads besides the headers (ApiDeps has it). */
export interface AuthDeps {
  now: () => Date;
}

let fromSecret: { raw: string; tokens: Record<string, Principal> } | undefined;

/** The token table in force: the secret's when NOVALESS_AUTH_TOKENS_SECRET is set, else the local one. */
export async function tokenTable(): Promise<Record<string, Principal>> {
  const secretId = apiOptions().authTokensSecret;
  if (!secretId) return authTokens();
  const raw = await secretString(secretId);
  if (fromSecret?.raw === raw) return fromSecret.tokens;
  // An empty secret is an empty table (every call 401), never the local demo tokens.
  if (raw.trim() === "") return {};
  try {
    fromSecret = { raw, tokens: parseAuthTokens(raw) };
  } catch (e) {
    throw new Error(`the token table in secret ${secretId} is invalid: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return fromSecret.tokens;
}

/**
 * The caller behind the request's X-Auth-Token, or undefined (→ 401). Headers are lowercased. A
 * token without a project (unscoped) is no caller of the Compute API.
 */
export async function authenticate(
  headers: Record<string, string | undefined>,
  deps: AuthDeps,
): Promise<AuthContext | undefined> {
  const token = headers["x-auth-token"]?.trim();
  if (!token) return undefined;
  const tokens = await tokenTable();
  if (Object.hasOwn(tokens, token)) {
    const p = tokens[token]!;
    return { ...p, roles: [...p.roles], isAdmin: p.roles.includes("admin") };
  }
  const keystone = keystoneValidator();
  if (keystone) {
    const v = await keystone.validate(token);
    if (!v?.project_id) return undefined;
    return {
      user_id: v.user_id,
      project_id: v.project_id,
      roles: v.roles,
      isAdmin: v.roles.includes("admin"),
      user_name: v.user_name,
      project_name: v.project_name,
      domain_id: v.domain_id,
    };
  }
  // signed here, and its user, project, roles and revocation as they stand (lib/identity/validate.ts)
  const payload = await validateToken(token, deps.now(), false);
  if (!payload?.project) return undefined;
  const roles = payload.roles.map((r) => r.name);
  return {
    user_id: payload.user.id,
    project_id: payload.project.id,
    roles,
    isAdmin: roles.includes("admin"),
    user_name: payload.user.name,
    project_name: payload.project.name,
    domain_id: payload.user.domain.id,
  };
}

/** Enforce an admin-only rule, answering as Nova's policy engine does. */
export function requireAdmin(auth: AuthContext, rule: string): void {
  if (!auth.isAdmin) throw policyForbidden(rule);
}

/** Nova's policy rule names for what this API enforces. */
export const RULES = {
  forcedHost: "os_compute_api:servers:create:forced_host",
  requestedDestination: "compute:servers:create:requested_destination",
  indexAllTenants: "os_compute_api:servers:index:get_all_tenants",
  detailAllTenants: "os_compute_api:servers:detail:get_all_tenants",
  flavorCreate: "os_compute_api:os-flavor-manage:create",
  flavorExtraSpecsCreate: "os_compute_api:os-flavor-extra-specs:create",
  hypervisorsList: "os_compute_api:os-hypervisors:list",
  hypervisorsDetail: "os_compute_api:os-hypervisors:list-detail",
  hypervisorsShow: "os_compute_api:os-hypervisors:show",
  servicesList: "os_compute_api:os-services:list",
  servicesUpdate: "os_compute_api:os-services:update",
} as const;
