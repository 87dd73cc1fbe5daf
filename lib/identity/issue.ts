// Keystone's POST /v3/auth/tokens as a domain operation: identify (password or token), resolve the
// scope (project by id, or by name and domain), read the roles the user holds there, sign. Errors
// carry Keystone's status and message; lib/api/identity shapes them.
import { verifyPassword } from "./password.js";
import {
  type Domain,
  findDomainByName,
  findProjectByName,
  findUserByName,
  getAssignment,
  getDomain,
  getProject,
  getRole,
  getUser,
  type User,
} from "./store.js";
import { type Named, newAuditId, signToken, type TokenPayload, tokenExpirationSeconds } from "./token.js";

export class IdentityError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404,
    message: string,
  ) {
    super(message);
    this.name = "IdentityError";
  }
}

const AUTH_FAILED = "The request you have made requires authentication.";
const unauthorized = () => new IdentityError(401, AUTH_FAILED);
const badRequest = (m: string) => new IdentityError(400, m);

type Ref = { id?: unknown; name?: unknown; domain?: { id?: unknown; name?: unknown } };

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

async function domainOf(ref: Ref["domain"], what: string): Promise<Domain> {
  if (!ref || (typeof ref.id !== "string" && typeof ref.name !== "string"))
    throw badRequest(
      `Expecting to find domain in ${what}. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.`,
    );
  const d = typeof ref.id === "string" ? await getDomain(ref.id) : await findDomainByName(ref.name as string);
  if (!d) throw unauthorized();
  return d;
}

async function passwordUser(method: Record<string, unknown>): Promise<User> {
  const u = obj(method.user) as (Ref & { password?: unknown }) | undefined;
  if (!u || typeof u.password !== "string")
    throw badRequest(
      "Invalid input for field 'identity/password/user/password': None is not of type 'string'",
    );
  let user: User | undefined;
  if (typeof u.id === "string") user = await getUser(u.id);
  else if (typeof u.name === "string") {
    const d = await domainOf(u.domain, "user");
    user = await findUserByName(u.name, d.id);
  } else
    throw badRequest(
      "Expecting to find id or name in user. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.",
    );
  // Keystone answers an unknown user and a wrong password alike: nothing says which it was.
  if (!user?.enabled || !(await verifyPassword(u.password, user.password_hash))) throw unauthorized();
  return user;
}

export interface IssueInput {
  body: unknown;
  /** the X-Auth-Token of the request, for the token method when the body has no id */
  headerToken?: string;
  /** what a token (for the token method) stands for: ours, or one of the static table's */
  resolveToken: (token: string) => Promise<TokenPayload | undefined>;
  key: Buffer;
  now: Date;
}

/** A new token for a Keystone auth request body; its payload and its string. */
export async function issueToken(input: IssueInput): Promise<{ token: string; payload: TokenPayload }> {
  const auth = obj(obj(input.body)?.auth);
  const identity = obj(auth?.identity);
  const methods = identity?.methods;
  if (!auth || !identity || !Array.isArray(methods) || methods.length === 0)
    throw badRequest(
      "Expecting to find identity in auth. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.",
    );
  let user: User | undefined;
  let from: TokenPayload | undefined;
  if (methods.includes("password")) user = await passwordUser(obj(identity.password) ?? {});
  else if (methods.includes("token")) {
    const id = obj(identity.token)?.id ?? input.headerToken;
    if (typeof id !== "string") throw unauthorized();
    from = await input.resolveToken(id);
    if (!from) throw unauthorized();
    user = await getUser(from.user.id);
    if (!user?.enabled) throw unauthorized();
  } else throw unauthorized();
  const userDomain = (await getDomain(user.domain_id)) ?? { id: user.domain_id, name: user.domain_id };

  const scope = auth.scope;
  let project: TokenPayload["project"];
  let roles: Named[] = [];
  if (scope !== undefined && scope !== "unscoped") {
    const p = obj(obj(scope)?.project) as Ref | undefined;
    if (!p) throw badRequest("Only project scope is supported.");
    let found: Awaited<ReturnType<typeof getProject>>;
    if (typeof p.id === "string") found = await getProject(p.id);
    else if (typeof p.name === "string")
      found = await findProjectByName(p.name, (await domainOf(p.domain, "project")).id);
    else
      throw badRequest(
        "Expecting to find id or name in project. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.",
      );
    if (!found?.enabled) throw unauthorized();
    const assignment = await getAssignment(user.id, found.id);
    if (!assignment?.role_ids.length) throw unauthorized();
    const pd = (await getDomain(found.domain_id)) ?? { id: found.domain_id, name: found.domain_id };
    project = { id: found.id, name: found.name, domain: { id: pd.id, name: pd.name } };
    for (const rid of assignment.role_ids) {
      const r = await getRole(rid);
      if (r) roles.push({ id: r.id, name: r.name });
    }
    roles = roles.sort((a, b) => a.name.localeCompare(b.name));
  }
  // A token from a token keeps the first one's expiry and audit chain, as Keystone's does.
  const expires = from
    ? from.expires_at
    : new Date(input.now.getTime() + tokenExpirationSeconds() * 1000).toISOString();
  const payload: TokenPayload = {
    methods: from ? ["token"] : ["password"],
    user: { id: user.id, name: user.name, domain: { id: userDomain.id, name: userDomain.name } },
    ...(project ? { project } : {}),
    roles,
    issued_at: input.now.toISOString(),
    expires_at: expires,
    audit_ids: [newAuditId(), ...(from?.audit_ids.slice(0, 1) ?? [])],
  };
  return { token: signToken(payload, input.key), payload };
}
