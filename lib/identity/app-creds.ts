// Keystone's application credentials: a user delegates its roles on the project of its token to a
// named secret, for automation (Terraform, CI) that must not hold the user's password. The secret
// is shown once and stored as a scrypt hash. A credential is deleted with its user, when the user
// is disabled, or when the user loses a role on its project (lib/identity/manage.ts).
import { randomBytes } from "node:crypto";
import { conflict, expecting, forbidden, forbiddenAction, IdentityError, notFound } from "./errors.js";
import type { ApplicationCredentialInput, Identity, NamedRef } from "./inputs.js";
import { newId } from "./manage.js";
import { hashPassword, verifyPassword } from "./password.js";
import { withImplied } from "./roles.js";
import type { ApplicationCredential } from "./store.js";
import * as store from "./store.js";
import type { TokenPayload } from "./token.js";

/** Keystone's generated secret: 64 random bytes, urlsafe base64 without padding. */
const newSecret = () => randomBytes(64).toString("base64url");

/** A credential's own token may not manage credentials unless it is unrestricted (Keystone's rule). */
export function assertMayManage(token: TokenPayload): void {
  if (token.application_credential?.restricted)
    throw forbidden(
      "Using method 'application_credential' is not allowed for managing additional application credentials.",
    );
}

/**
 * Who may create a credential for `userId` (checked before its body): the user itself, with a
 * project-scoped token that may manage credentials; the token's project is the credential's.
 */
export function mayCreate(userId: string, token: TokenPayload): NonNullable<TokenPayload["project"]> {
  assertMayManage(token);
  if (token.user.id !== userId)
    throw forbiddenAction("Cannot create an application credential for another user");
  if (!token.project) throw forbidden("An application credential is made with a project-scoped token.");
  return token.project;
}

/** POST /v3/users/{user_id}/application_credentials with the caller's project-scoped token. */
export async function createApplicationCredential(
  userId: string,
  v: ApplicationCredentialInput,
  token: TokenPayload,
  now: Date,
): Promise<ApplicationCredential & { secret: string }> {
  const project = mayCreate(userId, token);
  if (v.expires_at != null && Date.parse(v.expires_at) <= now.getTime())
    throw new IdentityError(
      400,
      "The 'expires_at' must not be before now. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.",
    );
  const tokenRoles = token.roles.map((r) => r.id);
  let roleIds = tokenRoles;
  if (v.roles?.length) {
    const asked: string[] = [];
    for (const r of v.roles as ({ id?: unknown; name?: unknown } | undefined)[]) {
      const role =
        typeof r?.id === "string"
          ? await store.getRole(r.id)
          : typeof r?.name === "string"
            ? await store.findRoleByName(r.name)
            : undefined;
      if (!role) throw notFound("role", String(r?.id ?? r?.name));
      asked.push(role.id);
    }
    roleIds = withImplied(asked);
    if (roleIds.some((r) => !tokenRoles.includes(r)))
      throw new IdentityError(
        400,
        "Invalid application credential: Cannot create an application credential with unassigned role",
      );
  }
  const secret = v.secret || newSecret();
  const credential: ApplicationCredential = {
    id: newId(),
    name: v.name,
    description: v.description ?? null,
    user_id: userId,
    project_id: project.id,
    role_ids: roleIds,
    unrestricted: v.unrestricted === true,
    expires_at: v.expires_at ?? null,
    secret_hash: await hashPassword(secret),
  };
  if (!(await store.putApplicationCredential(credential)))
    throw conflict("application_credential", `Duplicate entry found with name ${credential.name}`);
  return { ...credential, secret };
}

/** One of the user's credentials, or Keystone's 404. */
export async function requireApplicationCredential(
  userId: string,
  id: string,
): Promise<ApplicationCredential> {
  const c = await store.getApplicationCredential(id);
  if (!c || c.user_id !== userId) throw notFound("Application Credential", id);
  return c;
}

export async function deleteApplicationCredential(
  userId: string,
  id: string,
  token: TokenPayload,
): Promise<void> {
  assertMayManage(token);
  await store.deleteApplicationCredential(await requireApplicationCredential(userId, id));
}

/**
 * The credential an `application_credential` auth method names (by id, or by name and its user)
 * when the secret matches and it has not expired; undefined otherwise (→ 401).
 */
export async function authenticateApplicationCredential(
  method: Extract<Identity, { method: "application_credential" }>["application_credential"],
  findUser: (ref: NamedRef) => Promise<{ id: string } | undefined>,
  now: Date,
): Promise<ApplicationCredential | undefined> {
  let c: ApplicationCredential | undefined;
  if ("id" in method) c = await store.getApplicationCredential(method.id);
  else {
    const user = await findUser(method.user);
    if (!user) throw expecting("user", "application_credential");
    c = await store.findApplicationCredentialByName(method.name, user.id);
  }
  if (!c || !(await verifyPassword(method.secret, c.secret_hash))) return undefined;
  if (c.expires_at !== null && !(Date.parse(c.expires_at) > now.getTime())) return undefined;
  return c;
}
