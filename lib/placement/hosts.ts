// Host records: a compute node's resource provider and its service record in one item.
import { GetCommand, PutCommand, ScanCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import { capacity, type HostRecord, type Inventory, type ResourceClass, type Resources } from "./types.js";

export interface HostRegistration {
  host: string;
  availability_zone: string;
  inventories: Partial<Record<ResourceClass, Inventory>>;
  aggregates?: string[];
  traits?: string[];
  hypervisor_type: string;
  hypervisor_version: number;
  host_ip: string;
  supported_instances: [string, string, string][];
  queue_url: string;
}

export async function getHost(host: string): Promise<HostRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: resources().hostsTable, Key: { host }, ConsistentRead: true }),
  );
  return r.Item as HostRecord | undefined;
}

export async function listHosts(): Promise<HostRecord[]> {
  const out: HostRecord[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const r = await dynamo().send(
      new ScanCommand({ TableName: resources().hostsTable, ExclusiveStartKey: start }),
    );
    out.push(...((r.Items ?? []) as HostRecord[]));
    start = r.LastEvaluatedKey;
  } while (start);
  return out;
}

function freeFor(inventories: HostRecord["inventories"], usage: Resources): Resources {
  const free: Resources = {};
  for (const [rc, inv] of Object.entries(inventories) as [ResourceClass, Inventory][]) {
    free[rc] = capacity(inv) - (usage[rc] ?? 0);
  }
  return free;
}

/**
 * The compute agent's registration: create the host, or update its inventory and facts while
 * keeping its allocations, usage and the operator's service settings. Conditioned on
 * `generation`, so it cannot lose a concurrent claim's usage.
 */
export async function registerHost(reg: HostRegistration, now = new Date()): Promise<HostRecord> {
  const table = resources().hostsTable;
  for (;;) {
    const current = await getHost(reg.host);
    if (!current) {
      const usage: Resources = Object.fromEntries(Object.keys(reg.inventories).map((rc) => [rc, 0]));
      const item: HostRecord = {
        host: reg.host,
        node: reg.host,
        availability_zone: reg.availability_zone,
        aggregates: reg.aggregates ?? [],
        traits: reg.traits ?? [],
        inventories: reg.inventories,
        usage,
        free: freeFor(reg.inventories, usage),
        allocations: {},
        generation: 1,
        hypervisor_type: reg.hypervisor_type,
        hypervisor_version: reg.hypervisor_version,
        host_ip: reg.host_ip,
        supported_instances: reg.supported_instances,
        stats: { failed_builds: 0 },
        service: {
          disabled: false,
          disabled_reason: null,
          forced_down: false,
          last_heartbeat: now.toISOString(),
        },
        queue_url: reg.queue_url,
      };
      try {
        await dynamo().send(
          new PutCommand({ TableName: table, Item: item, ConditionExpression: "attribute_not_exists(host)" }),
        );
        return item;
      } catch (e) {
        if (isConditionalCheckFailed(e)) continue;
        throw e;
      }
    }
    const usage: Resources = { ...current.usage };
    for (const rc of Object.keys(reg.inventories) as ResourceClass[]) usage[rc] ??= 0;
    const updated: HostRecord = {
      ...current,
      availability_zone: reg.availability_zone,
      aggregates: reg.aggregates ?? current.aggregates,
      traits: reg.traits ?? current.traits,
      inventories: reg.inventories,
      usage,
      free: freeFor(reg.inventories, usage),
      generation: current.generation + 1,
      hypervisor_type: reg.hypervisor_type,
      hypervisor_version: reg.hypervisor_version,
      host_ip: reg.host_ip,
      supported_instances: reg.supported_instances,
      service: { ...current.service, forced_down: false, last_heartbeat: now.toISOString() },
      queue_url: reg.queue_url,
    };
    try {
      await dynamo().send(
        new PutCommand({
          TableName: table,
          Item: updated,
          ConditionExpression: "generation = :g",
          ExpressionAttributeValues: { ":g": current.generation },
        }),
      );
      return updated;
    } catch (e) {
      if (isConditionalCheckFailed(e)) continue;
      throw e;
    }
  }
}

/** The agent's heartbeat: the service is up while this is younger than service_down_time. */
export async function heartbeat(host: string, now = new Date()): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: resources().hostsTable,
      Key: { host },
      UpdateExpression: "SET service.last_heartbeat = :now",
      ConditionExpression: "attribute_exists(host)",
      ExpressionAttributeValues: { ":now": now.toISOString() },
    }),
  );
}

/** Nova's failed_builds statistic, fed to the BuildFailureWeigher: +1 per failure, 0 on success. */
export async function recordBuildResult(host: string, ok: boolean): Promise<void> {
  await dynamo().send(
    new UpdateCommand({
      TableName: resources().hostsTable,
      Key: { host },
      UpdateExpression: ok ? "SET stats.failed_builds = :zero" : "ADD stats.failed_builds :one",
      ConditionExpression: "attribute_exists(host)",
      ExpressionAttributeValues: ok ? { ":zero": 0 } : { ":one": 1 },
    }),
  );
}

export function isServiceUp(h: HostRecord, serviceDownTime: number, now = Date.now()): boolean {
  if (h.service.forced_down) return false;
  return now - Date.parse(h.service.last_heartbeat) <= serviceDownTime * 1000;
}
