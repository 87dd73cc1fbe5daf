// Placement's rules for one resource provider, each written once: the inventory record a host
// reports and Placement keeps, and its capacity. Pure, at the bottom of lib/'s graph beside config and resources:
// lib/scheduler may not import lib/placement, and both need these (so do the API's views, the
// planner and the compute agent), so they live below both.
import { z } from "zod";

/** One resource class of a provider: Placement's inventory record, as a host reports it. */
export const inventorySchema = z.object({
  total: z.number().int().min(0),
  reserved: z.number().int().min(0),
  min_unit: z.number().int().min(1),
  max_unit: z.number().int().min(1),
  step_size: z.number().int().min(1),
  allocation_ratio: z.number().positive(),
});

export type Inventory = z.infer<typeof inventorySchema>;

/** Placement's capacity: (total − reserved) × allocation_ratio, whole units. */
export function capacity(inv: Pick<Inventory, "total" | "reserved" | "allocation_ratio">): number {
  return Math.floor((inv.total - inv.reserved) * inv.allocation_ratio);
}
