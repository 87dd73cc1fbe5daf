// Quotas in the Catalog table: the default class's limits (`quota-class#default`), a project's own
// (`quota#<project>`), and what a project holds (`usage#<project>`: instances, cores, ram). A
// create reserves all its instances in one conditional ADD whose condition is the limit itself,
// so concurrent creates can never together pass it; a delete gives them back in the same
// transaction that marks the instance deleted (release.ts), so neither can happen twice.
import { DeleteCommand, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import {
  checkDelta,
  checkInstances,
  deltaOf,
  effectiveLimits,
  type Limits,
  NO_USAGE,
  type QuotaResource,
  reserveCeilings,
  type Usage,
} from "./quotas.js";

function table(): string {
  return resources().catalogTable;
}

export const DEFAULT_CLASS_KEY = "quota-class#default";
export const projectQuotaKey = (project: string) => `quota#${project}`;
export const usageKey = (project: string) => `usage#${project}`;

async function readLimits(pk: string): Promise<Partial<Limits>> {
  const r = await dynamo().send(new GetCommand({ TableName: table(), Key: { pk }, ConsistentRead: true }));
  return (r.Item?.limits as Partial<Limits> | undefined) ?? {};
}

async function writeLimits(
  pk: string,
  kind: string,
  set: Partial<Record<QuotaResource, number>>,
): Promise<void> {
  if (Object.keys(set).length === 0) return;
  const names: Record<string, string> = { "#l": "limits" };
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
  const [defaults, own] = await Promise.all([
    readLimits(DEFAULT_CLASS_KEY),
    readLimits(projectQuotaKey(project)),
  ]);
  return effectiveLimits(defaults, own);
}

export async function setProjectLimits(project: string, set: Partial<Limits>): Promise<void> {
  await writeLimits(projectQuotaKey(project), "quota", set);
}

/** Back to the defaults (Nova's DELETE /os-quota-sets/{project}). */
export async function deleteProjectLimits(project: string): Promise<void> {
  await dynamo().send(new DeleteCommand({ TableName: table(), Key: { pk: projectQuotaKey(project) } }));
}

export async function getUsage(project: string): Promise<Usage> {
  const r = await dynamo().send(
    new GetCommand({ TableName: table(), Key: { pk: usageKey(project) }, ConsistentRead: true }),
  );
  if (!r.Item) return { ...NO_USAGE };
  return {
    instances: Number(r.Item.instances ?? 0),
    cores: Number(r.Item.cores ?? 0),
    ram: Number(r.Item.ram ?? 0),
  };
}

export type ReserveResult = { ok: true; count: number; delta: Usage } | { ok: false; message: string };

/**
 * Reserve min..max instances of a flavor for a project: as many as fit (Nova reduces max_count to
 * what the quota allows when that is at least min_count), all in one conditional write. A write
 * that loses a race re-reads and decides again, so a reservation never passes a limit.
 */
export async function reserveInstances(
  project: string,
  flavor: { vcpus: number; memory_mb: number },
  minCount: number,
  maxCount: number,
  /** the project's limits, when the caller read them already */
  known?: Limits,
): Promise<ReserveResult> {
  const limits = known ?? (await getProjectLimits(project));

  // The common case first, without reading the usage: all of max_count in one conditional ADD,
  // whose condition is the limits themselves. Only a refusal reads the usage, to fit fewer or
  // to say why.
  const whole = deltaOf(maxCount, flavor);
  if (await addUsage(project, whole, limits)) return { ok: true, count: maxCount, delta: whole };
  for (;;) {
    const used = await getUsage(project);
    const check = checkInstances(limits, used, flavor, minCount, maxCount);

    if (!check.ok) return check;
    const delta = deltaOf(check.count, flavor);
    // lost to a concurrent reservation: read the usage again
    if (await addUsage(project, delta, limits)) return { ok: true, count: check.count, delta };
  }
}

/**
 * Reserve what a resize up adds (cores and ram; see upsizeDelta), in one conditional write that
 * never passes a limit; Nova's message when it does not fit.
 */
export async function reserveDelta(project: string, delta: Usage): Promise<ReserveResult> {
  if (!delta.instances && !delta.cores && !delta.ram) return { ok: true, count: 0, delta };
  const limits = await getProjectLimits(project);
  for (;;) {
    const check = checkDelta(limits, await getUsage(project), delta);
    if (!check.ok) return check;
    if (await addUsage(project, delta, limits)) return { ok: true, count: 0, delta };
  }
}

/** ADD `delta` to the project's usage unless a limit would be passed; false when refused. */
async function addUsage(project: string, delta: Usage, limits: Limits): Promise<boolean> {
  const ceilings = reserveCeilings(limits, delta);
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {
    ":i": delta.instances,
    ":c": delta.cores,
    ":r": delta.ram,
    ":kind": "usage",
  };
  const conditions = Object.entries(ceilings).map(([r, max]) => {
    names[`#${r}`] = r;
    values[`:max_${r}`] = max;
    return `(attribute_not_exists(#${r}) AND :zero <= :max_${r}) OR #${r} <= :max_${r}`;
  });
  if (conditions.length) values[":zero"] = 0;
  return conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: usageKey(project) },
        UpdateExpression: "SET kind = :kind ADD instances :i, cores :c, ram :r",
        ConditionExpression: conditions.length ? conditions.map((c) => `(${c})`).join(" AND ") : undefined,
        ExpressionAttributeNames: conditions.length ? names : undefined,
        ExpressionAttributeValues: values,
      }),
    ),
  );
}

/** Give back what a reservation took (a create that failed after reserving). */
export async function releaseUsage(project: string, delta: Usage): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: table(),
      Key: { pk: usageKey(project) },
      UpdateExpression: "ADD instances :i, cores :c, ram :r",
      ExpressionAttributeValues: { ":i": -delta.instances, ":c": -delta.cores, ":r": -delta.ram },
    }),
  );
}

/** The transaction item that gives one instance's usage back (release.ts writes it with the delete). */
export function releaseItem(project: string, delta: Usage) {
  return {
    Update: {
      TableName: table(),
      Key: { pk: usageKey(project) },
      UpdateExpression: "ADD instances :i, cores :c, ram :r",
      ExpressionAttributeValues: { ":i": -delta.instances, ":c": -delta.cores, ":r": -delta.ram },
    },
  };
}

/** What the API reads and writes of quotas (a fake in unit tests). */
export interface QuotaStore {
  getDefaultLimits: typeof getDefaultLimits;
  setDefaultLimits: typeof setDefaultLimits;
  getProjectLimits: typeof getProjectLimits;
  setProjectLimits: typeof setProjectLimits;
  deleteProjectLimits: typeof deleteProjectLimits;
  getUsage: typeof getUsage;
  reserveInstances: typeof reserveInstances;
  reserveDelta: typeof reserveDelta;
  releaseUsage: typeof releaseUsage;
}

export const dynamoQuotaStore: QuotaStore = {
  getDefaultLimits,
  setDefaultLimits,
  getProjectLimits,
  setProjectLimits,
  deleteProjectLimits,
  getUsage,
  reserveInstances,
  reserveDelta,
  releaseUsage,
};
