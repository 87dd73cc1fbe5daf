// Server groups in the Catalog table (pk `server_group#<id>`), and for each member a pointer
// item (pk `server_group_member#<instance uuid>` → group id) so that deleting a server finds its
// group with one read. Membership changes are read-modify-writes conditioned on the group's
// `revision`, so the group-members quota holds under concurrent creates.

import { setTimeout as sleep } from "node:timers/promises";
import {
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import type { ServerGroup } from "./types.js";

const PREFIX = "server_group#";
const MEMBER = "server_group_member#";
/** BatchWriteItem's limit. */
const BATCH = 25;
/** Attempts at a read-modify-write that lost to a concurrent change (with a jittered pause). */
const RETRIES = 8;

function table(): string {
  return resources().catalogTable;
}

function fromItem(item: Record<string, unknown>): ServerGroup {
  const { pk: _pk, kind: _kind, revision: _revision, ...rest } = item;
  const g = rest as unknown as ServerGroup;
  return { ...g, rules: { ...g.rules }, members: [...(g.members ?? [])] };
}

async function read(id: string): Promise<{ group: ServerGroup; revision: number } | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: table(), Key: { pk: `${PREFIX}${id}` }, ConsistentRead: true }),
  );
  return r.Item ? { group: fromItem(r.Item), revision: r.Item.revision as number } : undefined;
}

/** Replace the members of a group read at `revision`; false when it changed meanwhile. */
async function writeMembers(id: string, revision: number, members: string[]): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: `${PREFIX}${id}` },
        UpdateExpression: "SET members = :m, revision = :next",
        ConditionExpression: "revision = :r",
        ExpressionAttributeValues: { ":m": members, ":r": revision, ":next": revision + 1 },
      }),
    ),
  );
}

/** The server group, or undefined. Visibility (project) is the caller's business. */
export async function getServerGroup(id: string): Promise<ServerGroup | undefined> {
  return (await read(id))?.group;
}

/** Every server group of a project, or of all projects; oldest first. */
export async function listServerGroups(projectId?: string): Promise<ServerGroup[]> {
  const items = await scanAll({
    TableName: table(),
    FilterExpression: projectId ? "begins_with(pk, :p) AND project_id = :proj" : "begins_with(pk, :p)",
    ExpressionAttributeValues: projectId ? { ":p": PREFIX, ":proj": projectId } : { ":p": PREFIX },
    ConsistentRead: true,
  });
  return items
    .map(fromItem)
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

export async function createServerGroup(g: ServerGroup): Promise<ServerGroup> {
  await dynamo().send(
    new PutCommand({
      TableName: table(),
      Item: { ...g, pk: `${PREFIX}${g.id}`, kind: "server_group", revision: 1 },
      ConditionExpression: "attribute_not_exists(pk)",
    }),
  );
  return fromItem({ ...g });
}

/** False when there was no such group. Members' pointers stay; a server delete ignores them. */
export async function deleteServerGroup(id: string): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new DeleteCommand({
        TableName: table(),
        Key: { pk: `${PREFIX}${id}` },
        ConditionExpression: "attribute_exists(pk)",
      }),
    ),
  );
}

export type AddMembersResult =
  | { ok: true; group: ServerGroup }
  | { ok: false; reason: "not-found" }
  | { ok: false; reason: "over-quota"; group: ServerGroup };

/**
 * Append instance uuids to a group, all or none: only while the group keeps at most
 * `maxMembers` members afterwards (Nova's server_group_members quota). Uuids already members are
 * not added twice.
 */
export async function addServerGroupMembers(
  id: string,
  uuids: string[],
  maxMembers: number,
): Promise<AddMembersResult> {
  for (let i = 0; i < RETRIES; i++) {
    const current = await read(id);
    if (!current) return { ok: false, reason: "not-found" };
    const { group, revision } = current;
    const fresh = [...new Set(uuids)].filter((u) => !group.members.includes(u));
    if (fresh.length === 0) return { ok: true, group };
    if (group.members.length + fresh.length > maxMembers) return { ok: false, reason: "over-quota", group };
    const members = [...group.members, ...fresh];
    if (await writeMembers(id, revision, members)) {
      await writePointers(id, fresh);
      return { ok: true, group: { ...group, members } };
    }
    await sleep(Math.random() * 10 * (i + 1));
  }
  throw new Error(`server group ${id}: members changed concurrently ${RETRIES} times`);
}

/** Best effort: a pointer not written only means its server's delete leaves the member behind. */
async function writePointers(groupId: string, uuids: string[]): Promise<void> {
  for (let i = 0; i < uuids.length; i += BATCH) {
    let requests: Record<string, unknown>[] | undefined = uuids.slice(i, i + BATCH).map((u) => ({
      PutRequest: { Item: { pk: `${MEMBER}${u}`, kind: "server_group_member", group_id: groupId } },
    }));
    for (let tries = 0; requests?.length && tries < RETRIES; tries++) {
      const r = await dynamo().send(
        new BatchWriteCommand({ RequestItems: { [table()]: requests as never } }),
      );
      requests = r.UnprocessedItems?.[table()] as Record<string, unknown>[] | undefined;
    }
  }
}

/** Remove instance uuids from a group (those that are members); true when the group exists. */
export async function removeServerGroupMembers(id: string, uuids: string[]): Promise<boolean> {
  const gone = new Set(uuids);
  for (let i = 0; i < RETRIES; i++) {
    const current = await read(id);
    if (!current) return false;
    const { group, revision } = current;
    const kept = group.members.filter((m) => !gone.has(m));
    if (kept.length === group.members.length) return true;
    if (await writeMembers(id, revision, kept)) return true;
    await sleep(Math.random() * 10 * (i + 1));
  }
  throw new Error(`server group ${id}: members changed concurrently ${RETRIES} times`);
}

/** A deleted server leaves its group (Nova removes members on delete); its pointer goes too. */
export async function forgetServerGroupMember(instanceId: string): Promise<void> {
  const key = { pk: `${MEMBER}${instanceId}` };
  const r = await dynamo().send(new GetCommand({ TableName: table(), Key: key, ConsistentRead: true }));
  const groupId = r.Item?.group_id as string | undefined;
  if (!groupId) return;
  await removeServerGroupMembers(groupId, [instanceId]);
  await dynamo().send(new DeleteCommand({ TableName: table(), Key: key }));
}
