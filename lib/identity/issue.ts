// Keystone's POST /v3/auth/tokens as a domain operation: identify (password, token or application
// credential), resolve the scope (project by id, or by name and domain; else the user's default
// project when it holds a role there), read the roles the user holds there (implied ones added),
// sign. Its input is the body lib/api/identity/bodies.ts checked; errors carry Keystone's status and
// message, and lib/api/identity shapes them.
import { authenticateApplicationCredential } from "./app-creds.js";
import { IdentityError, unauthorized } from "./errors.js";
import type { DomainRef, Identity, NamedRef, ScopeRequest } from "./inputs.js";
import { verifyPassword } from "./password.js";
import {
  type ApplicationCredential,
  type Domain,
  findDomainByName,
  findProjectByName,
  findUserByName,
  getAssignment,
  getDomain,
  getProject,
  getUser,
  type Project,
  type User,
} from "./store.js";
import { newAuditId, signToken, type TokenPayload, tokenExpirationSeconds } from "./token.js";
import { rolesOf } from "./validate.js";

export { IdentityError };

async function domainOf(ref: DomainRef): Promise<Domain> {
  const d = "id" in ref ? await getDomain(ref.id) : await findDomainByName(ref.name);
  if (!d?.enabled) throw unauthorized();
  return d;
}

/** A user named by id, or by name and domain. */
export async function userOf(u: NamedRef): Promise<User | undefined> {
  if ("id" in u) return getUser(u.id);
  return findUserByName(u.name, (await domainOf(u.domain)).id);
}

async function passwordUser(u: NamedRef & { password: string }): Promise<User> {
  const user = await userOf(u);
  // Keystone answers an unknown user and a wrong password alike: nothing says which it was.
  if (!user?.enabled || !(await verifyPassword(u.password, user.password_hash))) throw unauthorized();
  return user;
}

export interface IssueInput {
  identity: Identity;
  /** the scope asked for, checked when it is read: once the caller is authenticated */
  scope: () => ScopeRequest;
  /** the X-Auth-Token of the request, for the token method when the body has no id */
  headerToken?: string;
  /** what a token (for the token method) stands for: ours, or one of the static table's */
  resolveToken: (token: string) => Promise<TokenPayload | undefined>;
  key: Buffer;
  now: Date;
}

/** The project a scope names (by id, or by name and domain), enabled and in an enabled domain. */
async function scopedProject(p: NamedRef): Promise<Project> {
  const found =
    "id" in p ? await getProject(p.id) : await findProjectByName(p.name, (await domainOf(p.domain)).id);
  if (!found?.enabled || !(await getDomain(found.domain_id))?.enabled) throw unauthorized();
  return found;
}

/** A new token for a Keystone auth request body; its payload and its string. */
export async function issueToken(input: IssueInput): Promise<{ token: string; payload: TokenPayload }> {
  const identity = input.identity;
  let user: User | undefined;
  let from: TokenPayload | undefined;
  let credential: ApplicationCredential | undefined;
  if (identity.method === "password") user = await passwordUser(identity.password.user);
  else if (identity.method === "application_credential") {
    credential = await authenticateApplicationCredential(identity.application_credential, userOf, input.now);
    if (!credential) throw unauthorized();
    user = await getUser(credential.user_id);
  } else if (identity.method === "token") {
    const id = identity.token.id ?? input.headerToken;
    if (typeof id !== "string") throw unauthorized();
    from = await input.resolveToken(id);
    // a credential's token is bound to its project: it is not rescoped (Keystone's rule)
    if (!from || from.application_credential) throw unauthorized();
    user = await getUser(from.user.id);
  } else throw unauthorized();
  if (!user?.enabled) throw unauthorized();
  const userDomain = await getDomain(user.domain_id);
  if (!userDomain?.enabled) throw unauthorized();

  let project: Project | undefined;
  if (credential) {
    // the credential's project, whatever the body says
    project = await getProject(credential.project_id);
    if (!project?.enabled) throw unauthorized();
  } else {
    const scope = input.scope();
    if (scope !== undefined && scope !== "unscoped") project = await scopedProject(scope.project);
    else if (scope === undefined && user.default_project_id) {
      // Keystone scopes to the default project when no scope is asked and the user holds a role there
      const p = await getProject(user.default_project_id);
      const a = p?.enabled ? await getAssignment(user.id, p.id) : undefined;
      if (a?.role_ids.length) project = p;
    }
  }

  let scoped: Pick<TokenPayload, "project" | "roles"> = { roles: [] };
  if (project) {
    const assignment = await getAssignment(user.id, project.id);
    if (!assignment?.role_ids.length) throw unauthorized();
    let roles = await rolesOf(assignment.role_ids);
    if (credential) {
      const held = new Set(roles.map((r) => r.id));
      if (credential.role_ids.some((r) => !held.has(r))) throw unauthorized();
      roles = await rolesOf(credential.role_ids);
    }
    const pd = (await getDomain(project.domain_id))!;
    scoped = { project: { id: project.id, name: project.name, domain: { id: pd.id, name: pd.name } }, roles };
  }
  // A token from a token keeps the first one's expiry and audit chain, as Keystone's does; a
  // credential's token expires no later than the credential.
  let expires = from
    ? from.expires_at
    : new Date(input.now.getTime() + tokenExpirationSeconds() * 1000).toISOString();
  if (credential?.expires_at && credential.expires_at < expires) expires = credential.expires_at;
  const payload: TokenPayload = {
    methods: from ? ["token"] : credential ? ["application_credential"] : ["password"],
    user: { id: user.id, name: user.name, domain: { id: userDomain.id, name: userDomain.name } },
    ...scoped,
    ...(credential
      ? {
          application_credential: {
            id: credential.id,
            name: credential.name,
            restricted: !credential.unrestricted,
          },
        }
      : {}),
    issued_at: input.now.toISOString(),
    expires_at: expires,
    audit_ids: [newAuditId(), ...(from?.audit_ids.slice(0, 1) ?? [])],
  };
  return { token: signToken(payload, input.key), payload };
}
