// Inventory changes by an admin (Placement's PUT/DELETE on a provider's inventories): one
// UpdateItem conditioned on the provider generation, recomputing `free` from the usage read at
// that generation, so a concurrent claim, release or inventory change can never be lost, and
// refused (409) when what is allocated would no longer fit.
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { unlessConditionFails } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import { GENERATION_CONFLICT, PlacementConflict, planInventory } from "./capacity.js";
import { logChange } from "./change-log.js";
import { stamp } from "./feed.js";
import { getHost } from "./hosts.js";
import type { HostRecord, Inventory, InventoryOverride, ResourceClass } from "./types.js";

export interface InventoryChange {
  /** the provider generation the caller read; omitted: re-read and retry until it applies */
  generation?: number;
  /** the new inventories, from the current record */
  inventories: (current: HostRecord) => HostRecord["inventories"];
  /** the admin overrides to keep, from the current record */
  overrides: (current: HostRecord) => HostRecord["inventory_overrides"];
}

/**
 * Apply an inventory change; undefined when there is no such host. Throws PlacementConflict
 * (generation moved on, or allocations would not fit) and InvalidInventory.
 */
export async function changeInventory(
  host: string,
  change: InventoryChange,
): Promise<HostRecord | undefined> {
  for (;;) {
    const current = await getHost(host);
    if (!current) return undefined;
    if (change.generation !== undefined && change.generation !== current.generation) {
      throw new PlacementConflict(GENERATION_CONFLICT, "placement.concurrent_update");
    }
    const planned = planInventory(current, change.inventories(current));
    const values: Record<string, unknown> = {
      ":inv": planned.inventories,
      ":limits": planned.claim_limit,
      ":usage": planned.usage,
      ":free": planned.free,
      ":ov": change.overrides(current) ?? {},
      ":one": 1,
      ":g": current.generation,
    };
    const changed = stamp(values);
    const r = await unlessConditionFails(
      dynamo().send(
        new UpdateCommand({
          TableName: resources().hostsTable,
          Key: { host },
          UpdateExpression:
            "SET inventories = :inv, claim_limit = :limits, #usage = :usage, #free = :free, " +
            `inventory_overrides = :ov, generation = generation + :one, ${changed}`,
          ConditionExpression: "generation = :g",
          ExpressionAttributeNames: { "#usage": "usage", "#free": "free" },
          ExpressionAttributeValues: values,
          ReturnValues: "ALL_NEW",
        }),
      ),
    );
    if (r) {
      await logChange(host, values);
      return r.Attributes as HostRecord;
    }
    // the generation moved on: a caller that named one is told, otherwise plan again
    if (change.generation !== undefined) {
      throw new PlacementConflict(GENERATION_CONFLICT, "placement.concurrent_update");
    }
  }
}

/**
 * Placement's PUT /resource_providers/{uuid}/inventories/{resource_class}: replace (or add) one
 * class's inventory. Its reserved and allocation_ratio become admin overrides that the agent's
 * next registration keeps.
 */
export function setInventory(
  host: string,
  rc: ResourceClass,
  inv: Inventory,
  generation?: number,
): Promise<HostRecord | undefined> {
  const override: InventoryOverride = { reserved: inv.reserved, allocation_ratio: inv.allocation_ratio };
  return changeInventory(host, {
    ...(generation === undefined ? {} : { generation }),
    inventories: (c) => ({ ...c.inventories, [rc]: inv }),
    overrides: (c) => ({ ...(c.inventory_overrides ?? {}), [rc]: override }),
  });
}

/** Placement's DELETE of one class's inventory: refused (409 InventoryInUse) while allocated. */
export function deleteInventory(
  host: string,
  rc: ResourceClass,
  generation?: number,
): Promise<HostRecord | undefined> {
  const without = <T extends object>(m: T | undefined): T => {
    const copy = { ...(m ?? {}) } as Record<string, unknown>;
    delete copy[rc];
    return copy as T;
  };
  return changeInventory(host, {
    ...(generation === undefined ? {} : { generation }),
    inventories: (c) => without(c.inventories),
    overrides: (c) => without(c.inventory_overrides),
  });
}
