// Keystone's part, reduced to a static token table: X-Auth-Token → user, project, roles.
import { policyForbidden } from "./errors.js";
import type { Principal } from "./settings.js";

export interface AuthContext extends Principal {
  /** Nova's default policy's "admin" rule: the admin role. */
  isAdmin: boolean;
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
