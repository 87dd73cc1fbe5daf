// Keystone's part, reduced to a static token table: X-Auth-Token → user, project, roles.
// Deployed, the table lives in Secrets Manager (NOVALESS_AUTH_TOKENS_SECRET names it) and is read
// at run time; locally it comes from NOVALESS_AUTH_TOKENS or the demo tokens, as before.
import { secretString } from "../aws/secrets.js";
import { policyForbidden } from "./errors.js";
import { authTokens, type Principal, parseAuthTokens } from "./settings.js";

export interface AuthContext extends Principal {
  /** Nova's default policy's "admin" rule: the admin role. */
  isAdmin: boolean;
}

let fromSecret: { raw: string; tokens: Record<string, Principal> } | undefined;

/** The token table in force: the secret's when NOVALESS_AUTH_TOKENS_SECRET is set, else the local one. */
export async function tokenTable(): Promise<Record<string, Principal>> {
  const secretId = process.env.NOVALESS_AUTH_TOKENS_SECRET;
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

/** The caller behind the request's X-Auth-Token, or undefined (→ 401). Headers are lowercased. */
export function authenticate(
  headers: Record<string, string | undefined>,
  tokens: Record<string, Principal>,
): AuthContext | undefined {
  const token = headers["x-auth-token"]?.trim();
  if (!token || !Object.hasOwn(tokens, token)) return undefined;
  const p = tokens[token]!;
  return { ...p, roles: [...p.roles], isAdmin: p.roles.includes("admin") };
}

/** Enforce an admin-only rule, answering as Nova's policy engine does. */
export function requireAdmin(auth: AuthContext, rule: string): void {
  if (!auth.isAdmin) throw policyForbidden(rule);
}

/** Nova's policy rule names for what this API enforces. */
export const RULES = {
  forcedHost: "os_compute_api:servers:create:forced_host",
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
