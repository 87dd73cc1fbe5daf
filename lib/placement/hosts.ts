// Host records: a compute node's resource provider and its service record in one item.
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import { planInventory, withOverrides } from "./capacity.js";
import type { HostRecord, Inventory, ResourceClass } from "./types.js";

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

/** Every host; `consistent` for readers that must see every write already acknowledged (audit). */
export async function listHosts(opts: { consistent?: boolean } = {}): Promise<HostRecord[]> {
  return scanAll<HostRecord>({
    TableName: resources().hostsTable,
    ...(opts.consistent ? { ConsistentRead: true } : {}),
  });
}

/**
 * The compute agent's registration: create the host, or update its inventory and facts while
 * keeping its allocations, usage, the operator's service settings and the reserved and
 * allocation_ratio an admin set. One UpdateItem conditioned on `generation`, so it can lose
 * neither a concurrent claim nor a concurrent inventory change; it writes only what the agent
 * owns, so a concurrent os-services change (which does not bump the generation) is kept too.
 * Throws PlacementConflict (Placement's InventoryInUse) when the reported inventory would no
 * longer hold what is allocated on the host, and InvalidInventory for an impossible one.
 */
export async function registerHost(reg: HostRegistration, now = new Date()): Promise<HostRecord> {
  const table = resources().hostsTable;
  for (;;) {
    const current = await getHost(reg.host);
    if (!current) {
      const item: HostRecord = {
        host: reg.host,
        node: reg.host,
        availability_zone: reg.availability_zone,
        aggregates: reg.aggregates ?? [],
        traits: reg.traits ?? [],
        ...planInventory({ host: reg.host, usage: {}, allocations: {} }, reg.inventories),
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
    const planned = planInventory(current, withOverrides(reg.inventories, current.inventory_overrides));
    const facts: Record<string, unknown> = {
      availability_zone: reg.availability_zone,
      aggregates: reg.aggregates ?? current.aggregates,
      traits: reg.traits ?? current.traits,
      ...planned,
      hypervisor_type: reg.hypervisor_type,
      hypervisor_version: reg.hypervisor_version,
      host_ip: reg.host_ip,
      supported_instances: reg.supported_instances,
      queue_url: reg.queue_url,
    };
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {
      ":g": current.generation,
      ":one": 1,
      ":now": now.toISOString(),
    };
    const sets = Object.entries(facts).map(([k, v], i) => {
      names[`#f${i}`] = k;
      values[`:f${i}`] = v;
      return `#f${i} = :f${i}`;
    });
    // forced_down is the operator's (Nova: only `service-force-down` unsets it): a restarted agent
    // must not bring a host an operator fenced back into scheduling.
    sets.push("generation = generation + :one", "service.last_heartbeat = :now");
    try {
      const r = await dynamo().send(
        new UpdateCommand({
          TableName: table,
          Key: { host: reg.host },
          UpdateExpression: `SET ${sets.join(", ")}`,
          ConditionExpression: "generation = :g",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: "ALL_NEW",
        }),
      );
      return r.Attributes as HostRecord;
    } catch (e) {
      if (isConditionalCheckFailed(e)) continue;
      throw e;
    }
  }
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
