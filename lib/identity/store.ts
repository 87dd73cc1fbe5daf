// Keystone's identity, resource and assignment backends on one DynamoDB table (NOVALESS_IDENTITY_TABLE):
// `domain#<id>`, `project#<id>`, `user#<id>` (with its scrypt hash), `role#<id>`, one
// `assignment#<user>#<project>` per user and project holding the role ids (a string set),
// `appcred#<id>` (an application credential, its secret hashed) and `revoked#<audit id>` (a
// revoked token, until it would have expired: the table's TTL removes it).
//
// A name is unique in its domain (Keystone's rule), so each named item has a
// `name#<kind>#<domain>#<name>` item holding its id, written in the same transaction: a token asked
// for by names is GetItems, not Scans, and two concurrent creates of one name cannot both win.
// Lookups go by key: `user-projects#<user>` lists the projects a user has a role on,
// `project-users#<project>` the users with a role on a project, `project-children#<project>` its
// child projects, `user-appcreds#<user>` a user's application credentials. Whole-kind listings (an admin's `project list`) Query the `by-kind`
// index, never Scan.
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { conditionHeld, isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { queryAll } from "../aws/dynamo-pages.js";
import { transactUnlessConditionFails } from "../aws/dynamo-transact.js";
import { resources } from "../config.js";
import { IDENTITY_BY_KIND_INDEX } from "../resources.js";

export interface Domain {
  id: string;
  name: string;
  description: string;
  enabled: boolean;
}

export interface Project {
  id: string;
  name: string;
  domain_id: string;
  description: string;
  enabled: boolean;
  is_domain: boolean;
  parent_id: string;
  tags?: string[];
  /** Keystone keeps the properties it does not know as the entity's "extra" */
  extra?: Record<string, unknown>;
}

export interface User {
  id: string;
  name: string;
  domain_id: string;
  enabled: boolean;
  /** `scrypt$N$r$p$salt$hash` (lib/identity/password.ts); never leaves lib/identity */
  password_hash: string;
  password_expires_at: null;
  default_project_id?: string;
  description?: string;
  extra?: Record<string, unknown>;
  /**
   * Tokens issued at or before this instant are revoked (Keystone's revocation event by user:
   * a disable, a password change, a delete). ISO 8601.
   */
  revoked_at?: string;
}

export interface Role {
  id: string;
  name: string;
  domain_id: null;
  description?: string | null;
}

export interface Assignment {
  user_id: string;
  project_id: string;
  role_ids: string[];
}

export interface ApplicationCredential {
  id: string;
  name: string;
  description: string | null;
  user_id: string;
  project_id: string;
  /** the role ids it delegates (implied ones included, as Keystone stores them) */
  role_ids: string[];
  unrestricted: boolean;
  /** ISO 8601, or null for never */
  expires_at: string | null;
  /** the secret's scrypt hash; the secret itself is shown once, at creation */
  secret_hash: string;
}

export type Kind = "domain" | "project" | "user" | "role" | "assignment" | "appcred";
/** The kinds whose name is unique in a scope: a domain's and a role's globally, a user's and a project's in its domain, an application credential's for its user. */
type NamedKind = "domain" | "project" | "user" | "role" | "appcred";
const NAMED: ReadonlySet<Kind> = new Set<Kind>(["domain", "project", "user", "role", "appcred"]);

function nameKey(kind: NamedKind, name: string, scope?: string): string {
  return kind === "domain" || kind === "role" ? `name#${kind}#${name}` : `name#${kind}#${scope}#${name}`;
}

function nameKeyOf(kind: Kind, item: object): string | undefined {
  if (!NAMED.has(kind)) return undefined;
  const { name, domain_id, user_id } = item as { name: string; domain_id?: string; user_id?: string };
  return nameKey(kind as NamedKind, name, kind === "appcred" ? user_id : (domain_id ?? undefined));
}

export function identityTable(): string {
  return resources().identityTable;
}

function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, kind: _kind, ...rest } = item;
  // string sets come back as Sets; the domain speaks arrays
  for (const [k, v] of Object.entries(rest)) if (v instanceof Set) rest[k] = [...v].sort();
  return rest as T;
}

const keyOf = (kind: Kind, id: string) => ({ pk: `${kind}#${id}` });

async function get<T>(kind: Kind, id: string): Promise<T | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: identityTable(), Key: keyOf(kind, id), ConsistentRead: true }),
  );
  return r.Item ? strip<T>(r.Item) : undefined;
}

/** Every item of a kind as stored: one Query of the by-kind index (eventually consistent). */
function queryKind(kind: Kind): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: identityTable(),
    IndexName: IDENTITY_BY_KIND_INDEX,
    KeyConditionExpression: "#k = :k",
    ExpressionAttributeNames: { "#k": "kind" },
    ExpressionAttributeValues: { ":k": kind },
  });
}

/** Every item of a kind, by id. */
async function all<T>(kind: Kind): Promise<T[]> {
  const items = await queryKind(kind);
  return items
    .map((i) => strip<T>(i))
    .sort((a, b) => String((a as { id?: string }).id).localeCompare(String((b as { id?: string }).id)));
}

/** Write an item unless one with its key, or (named kinds) its name in its scope, exists; true when written. */
export async function putIfAbsent(kind: Kind, key: string, item: object): Promise<boolean> {
  const named = nameKeyOf(kind, item);
  const absent = "attribute_not_exists(pk)";
  if (!named) {
    return conditionHeld(
      dynamo().send(
        new PutCommand({
          TableName: identityTable(),
          Item: { ...item, ...keyOf(kind, key), kind },
          ConditionExpression: absent,
        }),
      ),
    );
  }
  return transactUnlessConditionFails({
    TransactItems: [
      {
        Put: {
          TableName: identityTable(),
          Item: { ...item, ...keyOf(kind, key), kind },
          ConditionExpression: absent,
        },
      },
      {
        Put: {
          TableName: identityTable(),
          Item: { pk: named, kind: "name", id: key },
          ConditionExpression: absent,
        },
      },
    ],
  });
}

/**
 * Replace a stored item (`before` is what was read) with `after`; a new name moves its name item
 * in the same transaction. False when the item is gone or the new name is taken.
 */
export async function replaceNamed<T extends { id: string }>(
  kind: Kind,
  before: T,
  after: T,
): Promise<boolean> {
  const table = identityTable();
  const put = {
    Put: {
      TableName: table,
      Item: { ...after, ...keyOf(kind, after.id), kind },
      ConditionExpression: "attribute_exists(pk)",
    },
  };
  const from = nameKeyOf(kind, before);
  const to = nameKeyOf(kind, after);
  if (from === to) return transactUnlessConditionFails({ TransactItems: [put] });
  return transactUnlessConditionFails({
    TransactItems: [
      put,
      {
        Delete: {
          TableName: table,
          Key: { pk: from },
          ConditionExpression: "id = :id",
          ExpressionAttributeValues: { ":id": after.id },
        },
      },
      {
        Put: {
          TableName: table,
          Item: { pk: to, kind: "name", id: after.id },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
    ],
  });
}

/** Delete an item and its name item; false when it was already gone. */
export async function deleteNamed(kind: Kind, item: { id: string }): Promise<boolean> {
  const named = nameKeyOf(kind, item);
  const del = {
    Delete: {
      TableName: identityTable(),
      Key: keyOf(kind, item.id),
      ConditionExpression: "attribute_exists(pk)",
    },
  };
  return transactUnlessConditionFails({
    TransactItems: named
      ? [
          del,
          {
            Delete: {
              TableName: identityTable(),
              Key: { pk: named },
              ConditionExpression: "attribute_not_exists(pk) OR id = :id",
              ExpressionAttributeValues: { ":id": item.id },
            },
          },
        ]
      : [del],
  });
}

/**
 * The name items, string sets and lookup sets of what was stored before they existed (a table
 * seeded by an older release): run by the seed, never on a request path. Returns how many
 * name items it wrote.
 */
export async function indexNames(): Promise<number> {
  let written = 0;
  for (const kind of NAMED) {
    for (const item of await all<{ id: string }>(kind)) {
      const ok = await conditionHeld(
        dynamo().send(
          new PutCommand({
            TableName: identityTable(),
            Item: { pk: nameKeyOf(kind, item)!, kind: "name", id: item.id },
            ConditionExpression: "attribute_not_exists(pk)",
          }),
        ),
      );
      if (ok) written++;
    }
  }
  // An older release stored role_ids as a list and kept no project-users lists: only its
  // assignments are written again (the set grants ADD to, and both lookup lists), so a seed of a
  // table this release wrote costs its reads and nothing more.
  const older = (await queryKind("assignment")).filter((i) => Array.isArray(i.role_ids));
  for (const a of older.map((i) => strip<Assignment>(i)))
    if (a.role_ids.length) await grantRoles(a.user_id, a.project_id, a.role_ids);
  return written;
}

async function addToSet(pk: string, attribute: string, value: string): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: identityTable(),
      Key: { pk },
      UpdateExpression: "SET kind = :k ADD #a :v",
      ExpressionAttributeNames: { "#a": attribute },
      ExpressionAttributeValues: { ":k": pk.slice(0, pk.indexOf("#")), ":v": new Set([value]) },
    }),
  );
}

async function removeFromSet(pk: string, attribute: string, value: string): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: identityTable(),
      Key: { pk },
      UpdateExpression: "DELETE #a :v",
      ExpressionAttributeNames: { "#a": attribute },
      ExpressionAttributeValues: { ":v": new Set([value]) },
    }),
  );
}

async function readSet(pk: string, attribute: string): Promise<string[]> {
  const r = await dynamo().send(
    new GetCommand({ TableName: identityTable(), Key: { pk }, ConsistentRead: true }),
  );
  return [...((r.Item?.[attribute] as Set<string> | undefined) ?? [])].sort();
}

async function byName<T>(kind: NamedKind, name: string, scope?: string): Promise<T | undefined> {
  const r = await dynamo().send(
    new GetCommand({
      TableName: identityTable(),
      Key: { pk: nameKey(kind, name, scope) },
      ConsistentRead: true,
    }),
  );
  const id = r.Item?.id as string | undefined;
  return id === undefined ? undefined : get<T>(kind, id);
}

/** Replace an item unconditionally (an operator resetting the admin password). */
export async function put(kind: Kind, key: string, item: object): Promise<void> {
  await dynamo().send(
    new PutCommand({ TableName: identityTable(), Item: { ...item, ...keyOf(kind, key), kind } }),
  );
}

export const getDomain = (id: string) => get<Domain>("domain", id);
export const getProject = (id: string) => get<Project>("project", id);
export const getUser = (id: string) => get<User>("user", id);
export const getRole = (id: string) => get<Role>("role", id);
export const getApplicationCredential = (id: string) => get<ApplicationCredential>("appcred", id);

/** Projects by id, in the order asked (those that exist): one batch of reads. */
export async function getProjects(ids: readonly string[]): Promise<Project[]> {
  if (ids.length === 0) return [];
  const items = await batchGetAll(
    identityTable(),
    ids.map((id) => keyOf("project", id)),
    { ConsistentRead: true },
  );
  const byId = new Map(items.map((i) => strip<Project>(i)).map((p) => [p.id, p]));
  return ids.map((id) => byId.get(id)).filter((p): p is Project => p !== undefined);
}
export const listDomains = () => all<Domain>("domain");
export const listProjects = () => all<Project>("project");
export const listUsers = () => all<User>("user");
export const listRoles = () => all<Role>("role");
export const listAllAssignments = () => all<Assignment>("assignment");

export const findDomainByName = (name: string) => byName<Domain>("domain", name);
export const findRoleByName = (name: string) => byName<Role>("role", name);
export const findProjectByName = (name: string, domainId: string) =>
  byName<Project>("project", name, domainId);
export const findUserByName = (name: string, domainId: string) => byName<User>("user", name, domainId);
export const findApplicationCredentialByName = (name: string, userId: string) =>
  byName<ApplicationCredential>("appcred", name, userId);

export async function getAssignment(userId: string, projectId: string): Promise<Assignment | undefined> {
  return get<Assignment>("assignment", `${userId}#${projectId}`);
}

async function assignmentsAt(keys: { user_id: string; project_id: string }[]): Promise<Assignment[]> {
  if (keys.length === 0) return [];
  const items = await batchGetAll(
    identityTable(),
    keys.map((k) => keyOf("assignment", `${k.user_id}#${k.project_id}`)),
    { ConsistentRead: true },
  );
  return items
    .map((i) => strip<Assignment>(i))
    .filter((a) => a.role_ids?.length)
    .sort((a, b) => `${a.user_id}#${a.project_id}`.localeCompare(`${b.user_id}#${b.project_id}`));
}

/** Every project on which the user has a role: its project list, then one batch of reads. */
export async function assignmentsOf(userId: string): Promise<Assignment[]> {
  const projects = await readSet(`user-projects#${userId}`, "project_ids");
  return assignmentsAt(projects.map((project_id) => ({ user_id: userId, project_id })));
}

/** Every user with a role on the project: its user list, then one batch of reads. */
export async function assignmentsOn(projectId: string): Promise<Assignment[]> {
  const users = await readSet(`project-users#${projectId}`, "user_ids");
  return assignmentsAt(users.map((user_id) => ({ user_id, project_id: projectId })));
}

/** Add roles to a user on a project (idempotent), and each to the other's lookup list. */
export async function grantRoles(userId: string, projectId: string, roleIds: string[]): Promise<void> {
  const key = keyOf("assignment", `${userId}#${projectId}`);
  const values = { ":k": "assignment", ":u": userId, ":p": projectId, ":r": new Set(roleIds) };
  const add = () =>
    dynamo().send(
      new UpdateCommand({
        TableName: identityTable(),
        Key: key,
        UpdateExpression: "SET kind = :k, user_id = :u, project_id = :p ADD role_ids :r",
        ExpressionAttributeValues: values,
      }),
    );
  try {
    await add();
  } catch (e) {
    // an older release stored role_ids as a list, which ADD refuses: make it the set once
    if ((e as { name?: string }).name !== "ValidationException") throw e;
    const old = await getAssignment(userId, projectId);
    await put("assignment", `${userId}#${projectId}`, {
      user_id: userId,
      project_id: projectId,
      role_ids: new Set([...(old?.role_ids ?? []), ...roleIds]),
    });
  }
  await addToSet(`user-projects#${userId}`, "project_ids", projectId);
  await addToSet(`project-users#${projectId}`, "user_ids", userId);
}

/** The assignment as a whole (the seed's form): its roles granted, idempotent. */
export async function putAssignment(a: Assignment): Promise<boolean> {
  const before = await getAssignment(a.user_id, a.project_id);
  await grantRoles(a.user_id, a.project_id, a.role_ids);
  return !before;
}

/** Remove one role of a user on a project; false when the user did not hold it there. */
export async function revokeRole(userId: string, projectId: string, roleId: string): Promise<boolean> {
  try {
    await dynamo().send(
      new UpdateCommand({
        TableName: identityTable(),
        Key: keyOf("assignment", `${userId}#${projectId}`),
        UpdateExpression: "DELETE role_ids :r",
        ConditionExpression: "contains(role_ids, :id)",
        ExpressionAttributeValues: { ":r": new Set([roleId]), ":id": roleId },
      }),
    );
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
  const left = await getAssignment(userId, projectId);
  if (!left?.role_ids?.length) await dropAssignment(userId, projectId);
  return true;
}

/** Forget a user's assignment on a project altogether (a deleted user or project). */
export async function dropAssignment(userId: string, projectId: string): Promise<void> {
  await dynamo().send(
    new DeleteCommand({ TableName: identityTable(), Key: keyOf("assignment", `${userId}#${projectId}`) }),
  );
  await removeFromSet(`user-projects#${userId}`, "project_ids", projectId);
  await removeFromSet(`project-users#${projectId}`, "user_ids", userId);
}

/** A project's children (projects whose parent it is), read by key: a delete must not orphan one. */
export const childProjectsOf = (projectId: string) => readSet(`project-children#${projectId}`, "project_ids");
export const addChildProject = (parentId: string, childId: string) =>
  addToSet(`project-children#${parentId}`, "project_ids", childId);
export const dropChildProject = (parentId: string, childId: string) =>
  removeFromSet(`project-children#${parentId}`, "project_ids", childId);

/** Forget a lookup list itself (its owner is deleted). */
export async function dropLists(owner: "user" | "project", id: string): Promise<void> {
  const pks =
    owner === "user"
      ? [`user-projects#${id}`, `user-appcreds#${id}`]
      : [`project-users#${id}`, `project-children#${id}`];
  for (const pk of pks) await dynamo().send(new DeleteCommand({ TableName: identityTable(), Key: { pk } }));
}

/** A new application credential (false when its name is the user's already), in the user's list. */
export async function putApplicationCredential(c: ApplicationCredential): Promise<boolean> {
  const ok = await putIfAbsent("appcred", c.id, c);
  if (ok) await addToSet(`user-appcreds#${c.user_id}`, "appcred_ids", c.id);
  return ok;
}

/** A user's application credentials: its list, then one batch of reads. */
export async function applicationCredentialsOf(userId: string): Promise<ApplicationCredential[]> {
  const ids = await readSet(`user-appcreds#${userId}`, "appcred_ids");
  if (ids.length === 0) return [];
  const items = await batchGetAll(
    identityTable(),
    ids.map((id) => keyOf("appcred", id)),
    { ConsistentRead: true },
  );
  return items.map((i) => strip<ApplicationCredential>(i)).sort((a, b) => a.id.localeCompare(b.id));
}

export async function deleteApplicationCredential(c: ApplicationCredential): Promise<boolean> {
  const ok = await deleteNamed("appcred", c);
  await removeFromSet(`user-appcreds#${c.user_id}`, "appcred_ids", c.id);
  return ok;
}

/** Mark a token revoked by its audit id until it would have expired (the TTL then drops the mark). */
export async function putRevokedToken(auditId: string, expiresAt: string): Promise<void> {
  await dynamo().send(
    new PutCommand({
      TableName: identityTable(),
      Item: {
        pk: `revoked#${auditId}`,
        kind: "revoked",
        expires_at: Math.ceil(Date.parse(expiresAt) / 1000) + 60,
      },
    }),
  );
}

/**
 * What validating a token needs, in one BatchGetItem: the user, its project, its assignment there,
 * its domain(s), its application credential and its revocation mark, those that exist.
 */
export interface LiveState {
  user?: User;
  project?: Project;
  domains: Map<string, Domain>;
  assignment?: Assignment;
  applicationCredential?: ApplicationCredential;
  revoked: boolean;
}

export async function liveState(q: {
  userId: string;
  projectId?: string;
  domainIds: string[];
  auditId?: string;
  applicationCredentialId?: string;
  consistent: boolean;
}): Promise<LiveState> {
  const pks = new Set<string>([`user#${q.userId}`]);
  if (q.projectId) {
    pks.add(`project#${q.projectId}`);
    pks.add(`assignment#${q.userId}#${q.projectId}`);
  }
  for (const d of q.domainIds) pks.add(`domain#${d}`);
  if (q.auditId) pks.add(`revoked#${q.auditId}`);
  if (q.applicationCredentialId) pks.add(`appcred#${q.applicationCredentialId}`);
  const items = await batchGetAll(
    identityTable(),
    [...pks].map((pk) => ({ pk })),
    { ConsistentRead: q.consistent },
  );
  const state: LiveState = { domains: new Map(), revoked: false };
  for (const item of items) {
    const kind = item.kind as string;
    if (kind === "user") state.user = strip<User>(item);
    else if (kind === "project") state.project = strip<Project>(item);
    else if (kind === "assignment") state.assignment = strip<Assignment>(item);
    else if (kind === "appcred") state.applicationCredential = strip<ApplicationCredential>(item);
    else if (kind === "domain") {
      const d = strip<Domain>(item);
      state.domains.set(d.id, d);
    } else if (kind === "revoked") state.revoked = true;
  }
  return state;
}
