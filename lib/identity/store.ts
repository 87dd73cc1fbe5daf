// Keystone's identity and assignment backends on one DynamoDB table (NOVALESS_IDENTITY_TABLE):
// `domain#<id>`, `project#<id>`, `user#<id>` (with its scrypt hash), `role#<id>`, and one
// `assignment#<user>#<project>` per user and project holding the role ids. A few dozen items: a
// lookup by name scans the kind's prefix, as the catalog does.
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
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

/** Write an item unless one with its key exists; true when written. */
export async function putIfAbsent(kind: Kind, key: string, item: object): Promise<boolean> {
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

export async function findDomainByName(name: string): Promise<Domain | undefined> {
  return (await listDomains()).find((d) => d.name === name);
}

export async function findProjectByName(name: string, domainId: string): Promise<Project | undefined> {
  return (await listProjects()).find((p) => p.name === name && p.domain_id === domainId);
}

export async function findUserByName(name: string, domainId: string): Promise<User | undefined> {
  return (await listUsers()).find((u) => u.name === name && u.domain_id === domainId);
}

export async function getAssignment(userId: string, projectId: string): Promise<Assignment | undefined> {
  return get<Assignment>("assignment", `${userId}#${projectId}`);
}

/** Every project on which the user has a role. */
export async function assignmentsOf(userId: string): Promise<Assignment[]> {
  return (await all<Assignment>("assignment")).filter((a) => a.user_id === userId && a.role_ids.length > 0);
}

export async function putAssignment(a: Assignment): Promise<boolean> {
  return putIfAbsent("assignment", `${a.user_id}#${a.project_id}`, a);
}
