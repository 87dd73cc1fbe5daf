// Keystone's identity and assignment backends on one DynamoDB table (NOVALESS_IDENTITY_TABLE):
// `domain#<id>`, `project#<id>`, `user#<id>` (with its scrypt hash), `role#<id>`, and one
// `assignment#<user>#<project>` per user and project holding the role ids. A name is unique in
// its domain (Keystone's rule), so each named item has a `name#<kind>#<domain>#<name>` item
// holding its id, written in the same transaction: a token asked for by names (user, project,
// domain) is three GetItem pairs, not three Scans, and two concurrent creates of one name
// cannot both win. `user-projects#<user>` lists the projects a user has a role on.
import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld, writeHeld } from "../aws/dynamo-errors.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";

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
}

export interface User {
  id: string;
  name: string;
  domain_id: string;
  enabled: boolean;
  /** `scrypt$N$r$p$salt$hash` (lib/identity/password.ts); never leaves lib/identity */
  password_hash: string;
  password_expires_at: null;
}

export interface Role {
  id: string;
  name: string;
  domain_id: null;
}

export interface Assignment {
  user_id: string;
  project_id: string;
  role_ids: string[];
}

type Kind = "domain" | "project" | "user" | "role" | "assignment";
/** The kinds whose name is unique in a domain (a domain's own name is unique globally). */
type NamedKind = "domain" | "project" | "user";
const NAMED: ReadonlySet<Kind> = new Set<Kind>(["domain", "project", "user"]);

function nameKey(kind: NamedKind, name: string, domainId?: string): string {
  return kind === "domain" ? `name#domain#${name}` : `name#${kind}#${domainId}#${name}`;
}

function nameKeyOf(kind: Kind, item: object): string | undefined {
  if (!NAMED.has(kind)) return undefined;
  const { name, domain_id } = item as { name: string; domain_id?: string };
  return nameKey(kind as NamedKind, name, domain_id);
}

export function identityTable(): string {
  return resources().identityTable;
}

function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, kind: _kind, ...rest } = item;
  return rest as T;
}

async function get<T>(kind: Kind, id: string): Promise<T | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: identityTable(), Key: { pk: `${kind}#${id}` }, ConsistentRead: true }),
  );
  return r.Item ? strip<T>(r.Item) : undefined;
}

async function all<T>(kind: Kind): Promise<T[]> {
  const items = await scanAll({
    TableName: identityTable(),
    FilterExpression: "#k = :k",
    ExpressionAttributeNames: { "#k": "kind" },
    ExpressionAttributeValues: { ":k": kind },
    ConsistentRead: true,
  });
  return items
    .map((i) => strip<T>(i))
    .sort((a, b) => String((a as { id?: string }).id).localeCompare(String((b as { id?: string }).id)));
}

/** Write an item unless one with its key, or (named kinds) its name in its domain, exists; true when written. */
export async function putIfAbsent(kind: Kind, key: string, item: object): Promise<boolean> {
  const named = nameKeyOf(kind, item);
  if (!named) {
    return conditionHeld(
      dynamo().send(
        new PutCommand({
          TableName: identityTable(),
          Item: { ...item, pk: `${kind}#${key}`, kind },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
      ),
    );
  }
  const absent = "attribute_not_exists(pk)";
  return writeHeld(
    dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: identityTable(),
              Item: { ...item, pk: `${kind}#${key}`, kind },
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
      }),
    ),
  );
}

/**
 * The name items of what was stored before they existed (a table seeded by an older release):
 * run by the seed, never on a request path. Returns how many it wrote.
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
  for (const a of await all<Assignment>("assignment")) await listProjectOf(a);
  return written;
}

function listProjectOf(a: Assignment): Promise<unknown> {
  return dynamo().send(
    new UpdateCommand({
      TableName: identityTable(),
      Key: { pk: `user-projects#${a.user_id}` },
      UpdateExpression: "SET kind = :k ADD project_ids :p",
      ExpressionAttributeValues: { ":k": "user-projects", ":p": new Set([a.project_id]) },
    }),
  );
}

async function byName<T>(kind: NamedKind, name: string, domainId?: string): Promise<T | undefined> {
  const r = await dynamo().send(
    new GetCommand({
      TableName: identityTable(),
      Key: { pk: nameKey(kind, name, domainId) },
      ConsistentRead: true,
    }),
  );
  const id = r.Item?.id as string | undefined;
  return id === undefined ? undefined : get<T>(kind, id);
}

/** Replace an item (an operator resetting the admin password). */
export async function put(kind: Kind, key: string, item: object): Promise<void> {
  await dynamo().send(
    new PutCommand({ TableName: identityTable(), Item: { ...item, pk: `${kind}#${key}`, kind } }),
  );
}

export const getDomain = (id: string) => get<Domain>("domain", id);
export const getProject = (id: string) => get<Project>("project", id);
export const getUser = (id: string) => get<User>("user", id);
export const getRole = (id: string) => get<Role>("role", id);
export const listDomains = () => all<Domain>("domain");
export const listProjects = () => all<Project>("project");
export const listUsers = () => all<User>("user");
export const listRoles = () => all<Role>("role");

export const findDomainByName = (name: string) => byName<Domain>("domain", name);
export const findProjectByName = (name: string, domainId: string) =>
  byName<Project>("project", name, domainId);
export const findUserByName = (name: string, domainId: string) => byName<User>("user", name, domainId);

export async function getAssignment(userId: string, projectId: string): Promise<Assignment | undefined> {
  return get<Assignment>("assignment", `${userId}#${projectId}`);
}

/** Every project on which the user has a role: its project list, then one read per project. */
export async function assignmentsOf(userId: string): Promise<Assignment[]> {
  const r = await dynamo().send(
    new GetCommand({
      TableName: identityTable(),
      Key: { pk: `user-projects#${userId}` },
      ConsistentRead: true,
    }),
  );
  const projects = [...((r.Item?.project_ids as Set<string> | undefined) ?? [])].sort();
  const found = await Promise.all(projects.map((p) => getAssignment(userId, p)));
  return found.filter((a): a is Assignment => Boolean(a?.role_ids.length));
}

/** The assignment unless it exists, and the project in the user's list (idempotent either way). */
export async function putAssignment(a: Assignment): Promise<boolean> {
  const written = await putIfAbsent("assignment", `${a.user_id}#${a.project_id}`, a);
  await listProjectOf(a);
  return written;
}
