// PUT /os-hypervisors/{id}/inventories/{resource_class}: Placement's BASE_INVENTORY_SCHEMA
// (total and the generation required, the rest defaulted as Placement defaults them).
import { z } from "zod";
import { INVENTORY_DEFAULTS, isResourceClass } from "../../placement/capacity.js";
import { type Inventory, MAX_INT, type ResourceClass } from "../../placement/types.js";
import { badRequest } from "../errors.js";
import { validate } from "./common.js";

/** SQL_SP_FLOAT_MAX, Placement's bound on allocation_ratio */
const FLOAT_MAX = 3.40282e38;

const inventoryUpdate = z.strictObject({
  resource_provider_generation: z.int(),
  total: z.int().min(1).max(MAX_INT),
  reserved: z.int().min(0).max(MAX_INT).optional(),
  min_unit: z.int().min(1).max(MAX_INT).optional(),
  max_unit: z.int().min(1).max(MAX_INT).optional(),
  step_size: z.int().min(1).max(MAX_INT).optional(),
  allocation_ratio: z.number().max(FLOAT_MAX).optional(),
});

export interface InventoryUpdate {
  generation: number;
  inventory: Inventory;
}

export function parseInventoryUpdate(body: unknown): InventoryUpdate {
  const b = validate(inventoryUpdate, body);
  const { resource_provider_generation: generation, ...fields } = b;
  return { generation, inventory: { ...INVENTORY_DEFAULTS, ...fields } };
}

/** The resource class in the path: a standard class or CUSTOM_*, as Placement names them. */
export function parseResourceClass(host: string, name: string): ResourceClass {
  if (isResourceClass(name)) return name;
  throw badRequest(
    `Unknown resource class in inventory for resource provider '${host}': No such resource class ${name}.`,
  );
}
