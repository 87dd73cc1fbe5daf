// A token /identity signed is valid while its signature holds, it has not expired, and what it
// stands for still does: its user exists, is enabled and revoked nothing since the token was
// issued (a disable, a password change); its project and their domains exist and are enabled; the
// user still holds a role there; its application credential still exists; the token itself was
// not revoked (DELETE /v3/auth/tokens). All of that is one BatchGetItem. The roles are read again
// at each validation, as Keystone's Fernet tokens compute them, so a removed role takes effect at
// once. The compute and image APIs may remember a validation for `[token]
// revocation_cache_time` seconds; /identity always reads.
import { createHash } from "node:crypto";
import { identityOptions } from "../config.js";
import { withImplied } from "./roles.js";
import { getRole, liveState } from "./store.js";
import { type Named, type TokenPayload, tokenKey, verifyToken } from "./token.js";

const BUILTIN = new Set(["admin", "member", "reader"]);
const roleNames = new Map<string, string>();

/** A role id's name: the default roles' ids are their names; another's is read once per process. */
async function roleName(id: string): Promise<string | undefined> {
  if (BUILTIN.has(id)) return id;
  if (!roleNames.has(id)) {
    const r = await getRole(id);
    if (!r) return undefined;
    roleNames.set(id, r.name);
  }
  return roleNames.get(id);
}

/** Role ids → the token's roles (implied ones added), sorted by name; unknown ids dropped. */
export async function rolesOf(roleIds: Iterable<string>): Promise<Named[]> {
  const out: Named[] = [];
  for (const id of withImplied(roleIds)) {
    const name = await roleName(id);
    if (name !== undefined) out.push({ id, name });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The payload as it stands now (roles as held now), or undefined when it no longer holds. */
export async function stillValid(
  p: TokenPayload,
  now: Date,
  consistent: boolean,
): Promise<TokenPayload | undefined> {
  const domainIds = [p.user.domain.id, ...(p.project ? [p.project.domain.id] : [])];
  const s = await liveState({
    userId: p.user.id,
    projectId: p.project?.id,
    domainIds,
    auditId: p.audit_ids[0],
    applicationCredentialId: p.application_credential?.id,
    consistent,
  });
  if (s.revoked || !s.user?.enabled) return undefined;
  if (s.user.revoked_at !== undefined && !(p.issued_at > s.user.revoked_at)) return undefined;
  if (domainIds.some((d) => !s.domains.get(d)?.enabled)) return undefined;
  if (!p.project) return { ...p, roles: [] };
  if (!s.project?.enabled || !s.assignment?.role_ids.length) return undefined;
  let held = withImplied(s.assignment.role_ids);
  if (p.application_credential) {
    const c = s.applicationCredential;
    if (!c || (c.expires_at !== null && !(Date.parse(c.expires_at) > now.getTime()))) return undefined;
    // the credential delegates its roles only while the user still holds every one of them
    if (c.role_ids.some((r) => !held.includes(r))) return undefined;
    held = c.role_ids;
  }
  const roles = await rolesOf(held);
  return roles.length ? { ...p, roles } : undefined;
}

interface Remembered {
  payload: TokenPayload | undefined;
  until: number;
}
const remembered = new Map<string, Remembered>();

/**
 * The payload of a token /identity signed that is valid at `now`, else undefined. `fresh` reads
 * the store whatever was remembered (/identity's own validation).
 */
export async function validateToken(
  token: string,
  now: Date,
  fresh: boolean,
): Promise<TokenPayload | undefined> {
  const signed = verifyToken(token, await tokenKey(), now);
  if (!signed) return undefined;
  const ttl = fresh ? 0 : identityOptions().tokenRevocationCacheTime * 1000;
  // keyed by a hash: tokens are credentials and never sit in memory as keys
  const key = ttl > 0 ? createHash("sha256").update(token).digest("hex") : "";
  const clock = Date.now();
  if (ttl > 0) {
    const hit = remembered.get(key);
    if (hit && hit.until > clock) return hit.payload;
  }
  const payload = await stillValid(signed, now, fresh);
  if (ttl > 0) {
    remembered.set(key, { payload, until: Math.min(clock + ttl, Date.parse(signed.expires_at)) });
    if (remembered.size > 10_000) for (const [k, e] of remembered) if (e.until <= clock) remembered.delete(k);
  }
  return payload;
}
