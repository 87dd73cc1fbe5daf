// Quotas in the Catalog table: the default class's limits (`quota-class#default`), a project's own
// (`quota#<project>`: `limits`, and each user's own as `limits#<user>` beside them, so one read by
// key finds them all and a project's DELETE drops them with it, as Nova's destroy_all_by_project),
// and what a project holds (`usage#<project>`: instances, cores, ram, and each user's share as
// `instances#<user>`, `cores#<user>`, `ram#<user>`). A create reserves all its instances in one
// conditional ADD whose condition is the limits themselves (the project's, and the user's when it
// has its own), so concurrent creates can never together pass them; a delete gives them back in
// the same transaction that marks the instance deleted (release.ts), so neither can happen twice.
// The users' counters are top-level attributes because ADD takes top-level attributes only, and
// needs no parent map to exist ("ADD - Adds the specified value to the item, if the attribute does
// not already exist": docs.aws.amazon.com, UpdateItem's UpdateExpression).
import { DeleteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { loadItem } from "../aws/dynamo-loader.js";
import { resources } from "../config.js";
import {
  COUNTED_RESOURCES,
  checkDeltaIn,
  checkInstancesIn,
  deltaOf,
  effectiveLimits,
  type Limits,
  limitsCounted,
  NO_USAGE,
  type QuotaResource,
  type QuotaScope,
  reserveCeilings,
  type Usage,
  userLimits,
} from "./quotas.js";

function table(): string {
  return resources().catalogTable;
}

export const DEFAULT_CLASS_KEY = "quota-class#default";
export const projectQuotaKey = (project: string) => `quota#${project}`;
export const usageKey = (project: string) => `usage#${project}`;
/** A user's own limits, an attribute of its project's quota item. */
const USER_LIMITS = "limits#";
const userLimitsAttr = (user: string) => `${USER_LIMITS}${user}`;
/** A user's share of a counted resource, an attribute of its project's usage item. */
const userCounter = (resource: string, user: string) => `${resource}#${user}`;

/** One item, read consistently (with the other catalog items asked in the same tick). */
function readItem(pk: string): Promise<Record<string, unknown> | undefined> {
  return loadItem(table(), pk);
}

async function readLimits(pk: string): Promise<Partial<Limits>> {
  return ((await readItem(pk))?.limits as Partial<Limits> | undefined) ?? {};
}

async function writeLimits(
  pk: string,
  kind: string,
  set: Partial<Record<QuotaResource, number>>,
  attribute = "limits",
): Promise<void> {
  if (Object.keys(set).length === 0) return;
  const names: Record<string, string> = { "#l": attribute };
  const values: Record<string, unknown> = { ":kind": kind, ":empty": {} };
  // the map must exist before its keys are set; two statements keep concurrent writers' keys
  await dynamo().send(
    new UpdateCommand({
      TableName: table(),
      Key: { pk },
      UpdateExpression: "SET #l = if_not_exists(#l, :empty), kind = :kind",
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }),
  );
  const sets = Object.entries(set).map(([k, v], i) => {
    names[`#k${i}`] = k;
    values[`:v${i}`] = v;
    return `#l.#k${i} = :v${i}`;
  });
  delete values[":empty"];
  await dynamo().send(
    new UpdateCommand({
      TableName: table(),
      Key: { pk },
      UpdateExpression: `SET ${sets.join(", ")}, kind = :kind`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }),
  );
}

/** The default class's limits as an operator set them (Nova's defaults fill the rest). */
export async function getDefaultLimits(): Promise<Limits> {
  return effectiveLimits(await readLimits(DEFAULT_CLASS_KEY));
}

export async function setDefaultLimits(set: Partial<Limits>): Promise<void> {
  await writeLimits(DEFAULT_CLASS_KEY, "quota-class", set);
}

/** The limits in force for a project. */
export async function getProjectLimits(project: string): Promise<Limits> {
  return (await getProjectQuotas(project)).limits;
}

/** A project's limits in force, and the limits each of its users has of its own. */
export interface ProjectQuotas {
  limits: Limits;
  users: Record<string, Partial<Limits>>;
}

/** The project's limits and its users' own, in one read of its quota item (and the class's). */
export async function getProjectQuotas(project: string): Promise<ProjectQuotas> {
  const [defaults, item] = await Promise.all([
    readLimits(DEFAULT_CLASS_KEY),
    readItem(projectQuotaKey(project)),
  ]);
  const users: Record<string, Partial<Limits>> = {};
  for (const [k, v] of Object.entries(item ?? {}))
    if (k.startsWith(USER_LIMITS)) users[k.slice(USER_LIMITS.length)] = v as Partial<Limits>;
  return { limits: effectiveLimits(defaults, item?.limits as Partial<Limits> | undefined), users };
}

export async function setProjectLimits(project: string, set: Partial<Limits>): Promise<void> {
  await writeLimits(projectQuotaKey(project), "quota", set);
}

/** Back to the defaults (Nova's DELETE /os-quota-sets/{project}): its users' own limits go too. */
export async function deleteProjectLimits(project: string): Promise<void> {
  await dynamo().send(new DeleteCommand({ TableName: table(), Key: { pk: projectQuotaKey(project) } }));
}

/** Set a user's own limits (Nova's ProjectUserQuota rows); the per-project resources are not taken here. */
export async function setUserLimits(project: string, user: string, set: Partial<Limits>): Promise<void> {
  await writeLimits(projectQuotaKey(project), "quota", set, userLimitsAttr(user));
}

/** Drop a user's own limits (Nova's destroy_all_by_project_and_user): its project's apply again. */
export async function deleteUserLimits(project: string, user: string): Promise<void> {
  await dynamo()
    .send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: projectQuotaKey(project) },
        UpdateExpression: "REMOVE #u",
        ConditionExpression: "attribute_exists(pk)",
        ExpressionAttributeNames: { "#u": userLimitsAttr(user) },
      }),
    )
    .catch((e: unknown) => {
      // no quota item: nothing to remove (and no empty item written)
      if ((e as { name?: string }).name !== "ConditionalCheckFailedException") throw e;
    });
}

/** The counters' attribute names: the project's, or a user's share. */
const counterNames = (user?: string): Record<keyof Usage, string> =>
  Object.fromEntries(COUNTED_RESOURCES.map((r) => [r, user ? userCounter(r, user) : r])) as Record<
    keyof Usage,
    string
  >;

function usageFrom(item: Record<string, unknown> | undefined, user?: string): Usage {
  if (!item) return { ...NO_USAGE };
  const n = counterNames(user);
  return {
    instances: Number(item[n.instances] ?? 0),
    cores: Number(item[n.cores] ?? 0),
    ram: Number(item[n.ram] ?? 0),
  };
}

/** What a project holds, or (with `user`) the user's share of it. */
export async function getUsage(project: string, user?: string): Promise<Usage> {
  return usageFrom(await readItem(usageKey(project)), user);
}

async function getUsages(project: string, user?: string): Promise<{ project: Usage; user: Usage }> {
  const item = await readItem(usageKey(project));
  return { project: usageFrom(item), user: user ? usageFrom(item, user) : { ...NO_USAGE } };
}

export type ReserveResult = { ok: true; count: number; delta: Usage } | { ok: false; message: string };

/**
 * Where a reservation is checked and counted: the project, and the user (its share is always
 * counted; it is checked only when it has limits of its own for instances, cores or ram).
 */
interface Owner {
  project: string;
  limits: Limits;
  user?: string;
  userLimits?: Limits;
}

/** `known`: the project's quotas as the caller read them; else one read of them here. */
async function ownerOf(project: string, user: string | undefined, known?: ProjectQuotas): Promise<Owner> {
  const { limits, users } = known ?? (await getProjectQuotas(project));
  const own = (user && users[user]) || {};
  return { project, limits, user, userLimits: limitsCounted(own) ? userLimits(limits, own) : undefined };
}

function scopes(owner: Owner, used: { project: Usage; user: Usage }): QuotaScope[] {
  const out: QuotaScope[] = [{ limits: owner.limits, used: used.project }];
  if (owner.userLimits) out.push({ limits: owner.userLimits, used: used.user });
  return out;
}

/**
 * Reserve min..max instances of a flavor for a project (and its user): as many as fit (Nova
 * reduces max_count to what the quota allows when that is at least min_count), all in one
 * conditional write. A write that loses a race re-reads and decides again, so a reservation never
 * passes a limit.
 */
export async function reserveInstances(
  project: string,
  flavor: { vcpus: number; memory_mb: number },
  minCount: number,
  maxCount: number,
  /** the project's limits and its users' own, when the caller read them already (one read) */
  known?: ProjectQuotas,
  /** the user who creates: its own limits are checked too, and its share counted */
  user?: string,
): Promise<ReserveResult> {
  const owner = await ownerOf(project, user, known);

  // The common case first, without reading the usage: all of max_count in one conditional ADD,
  // whose condition is the limits themselves. Only a refusal reads the usage, to fit fewer or
  // to say why.
  const whole = deltaOf(maxCount, flavor);
  if (await addUsage(owner, whole)) return { ok: true, count: maxCount, delta: whole };
  for (;;) {
    const check = checkInstancesIn(scopes(owner, await getUsages(project, user)), flavor, minCount, maxCount);

    if (!check.ok) return check;
    const delta = deltaOf(check.count, flavor);
    // lost to a concurrent reservation: read the usage again
    if (await addUsage(owner, delta)) return { ok: true, count: check.count, delta };
  }
}

/**
 * Reserve what a resize up adds (cores and ram; see upsizeDelta), in one conditional write that
 * never passes a limit (the project's, and the instance's user's own); Nova's message when it
 * does not fit.
 */
export async function reserveDelta(project: string, delta: Usage, user?: string): Promise<ReserveResult> {
  if (!delta.instances && !delta.cores && !delta.ram) return { ok: true, count: 0, delta };
  const owner = await ownerOf(project, user);
  for (;;) {
    const check = checkDeltaIn(scopes(owner, await getUsages(project, user)), delta);
    if (!check.ok) return check;
    if (await addUsage(owner, delta)) return { ok: true, count: 0, delta };
  }
}

/** ADD `delta` to the project's usage and the user's share unless a limit would be passed; false when refused. */
async function addUsage(owner: Owner, delta: Usage): Promise<boolean> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":kind": "usage" };
  const conditions: string[] = [];
  const adds: string[] = [];
  const counters = (scope: string, user: string | undefined, limits: Limits | undefined) => {
    const n = counterNames(user);
    for (const r of COUNTED_RESOURCES) {
      names[`#${scope}${r}`] = n[r];
      values[`:d_${r}`] = delta[r];
      adds.push(`#${scope}${r} :d_${r}`);
    }
    if (!limits) return;
    for (const [r, max] of Object.entries(reserveCeilings(limits, delta))) {
      values[`:max_${scope}${r}`] = max;
      values[":zero"] = 0;
      conditions.push(
        `(attribute_not_exists(#${scope}${r}) AND :zero <= :max_${scope}${r}) OR #${scope}${r} <= :max_${scope}${r}`,
      );
    }
  };
  counters("p_", undefined, owner.limits);
  if (owner.user) counters("u_", owner.user, owner.userLimits);
  return conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: usageKey(owner.project) },
        UpdateExpression: `SET kind = :kind ADD ${adds.join(", ")}`,
        ConditionExpression: conditions.length ? conditions.map((c) => `(${c})`).join(" AND ") : undefined,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    ),
  );
}

/** The update that gives `delta` back to the project's usage and the user's share. */
function releaseUpdate(project: string, delta: Usage, user?: string) {
  const names: Record<string, string> = {};
  const values: Record<string, number> = {};
  const adds: string[] = [];
  for (const [scope, who] of [
    ["p_", undefined],
    ["u_", user],
  ] as const) {
    if (scope === "u_" && !who) continue;
    const n = counterNames(who);
    for (const r of COUNTED_RESOURCES) {
      names[`#${scope}${r}`] = n[r];
      values[`:d_${r}`] = -delta[r];
      adds.push(`#${scope}${r} :d_${r}`);
    }
  }
  return {
    TableName: table(),
    Key: { pk: usageKey(project) },
    UpdateExpression: `ADD ${adds.join(", ")}`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/** Give back what a reservation took (a create that failed after reserving). */
export async function releaseUsage(project: string, delta: Usage, user?: string): Promise<void> {
  await dynamo().send(new UpdateCommand(releaseUpdate(project, delta, user)));
}

/**
 * The transaction item that gives one instance's usage back (release.ts writes it with the
 * delete): the project's, and the share of the user who owns the instance.
 */
export function releaseItem(project: string, delta: Usage, user?: string) {
  return { Update: releaseUpdate(project, delta, user) };
}

/**
 * The transaction item that counts one instance's usage again, with no limit to pass: an
 * os-resetState of a SOFT_DELETED server, which Nova's count takes in at once.
 */
export function countItem(project: string, delta: Usage, user?: string) {
  return releaseItem(project, { instances: -delta.instances, cores: -delta.cores, ram: -delta.ram }, user);
}

/** What the API reads and writes of quotas (a fake in unit tests). */
export interface QuotaStore {
  getDefaultLimits: typeof getDefaultLimits;
  setDefaultLimits: typeof setDefaultLimits;
  getProjectLimits: typeof getProjectLimits;
  getProjectQuotas: typeof getProjectQuotas;
  setProjectLimits: typeof setProjectLimits;
  deleteProjectLimits: typeof deleteProjectLimits;
  setUserLimits: typeof setUserLimits;
  deleteUserLimits: typeof deleteUserLimits;
  getUsage: typeof getUsage;
  reserveInstances: typeof reserveInstances;
  reserveDelta: typeof reserveDelta;
  releaseUsage: typeof releaseUsage;
}

export const dynamoQuotaStore: QuotaStore = {
  getDefaultLimits,
  setDefaultLimits,
  getProjectLimits,
  getProjectQuotas,
  setProjectLimits,
  deleteProjectLimits,
  setUserLimits,
  deleteUserLimits,
  getUsage,
  reserveInstances,
  reserveDelta,
  releaseUsage,
};
