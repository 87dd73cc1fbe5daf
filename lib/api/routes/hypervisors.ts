// /os-hypervisors: admin only, from the host records. A hypervisor is also Placement's resource
// provider here, so its inventories are managed under it, in Placement's shapes and texts.
import { log } from "../../log.js";
import { InvalidInventory, PlacementConflict } from "../../placement/capacity.js";
import { deleteInventory, setInventory } from "../../placement/inventory.js";
import { isServiceUp } from "../../placement/liveness.js";
import type { HostRecord, Inventory } from "../../placement/types.js";
import { RULES, requireAdmin } from "../auth.js";
import { badRequest, conflict, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseInventoryUpdate, parseResourceClass } from "../validation/inventories.js";
import {
  hypervisorDetailView,
  hypervisorPlacementView,
  hypervisorSummaryView,
  inventoryView,
} from "../views/hypervisors.js";

/** Placement's policy names for what these routes do. */
export const INVENTORY_RULES = {
  list: "placement:resource_providers:inventories:list",
  update: "placement:resource_providers:inventories:update",
  delete: "placement:resource_providers:inventories:delete",
} as const;

export async function listHypervisors({ ctx, deps }: RouteCall, detail: boolean): Promise<ApiResult> {
  requireAdmin(ctx.auth, detail ? RULES.hypervisorsDetail : RULES.hypervisorsList);
  const hosts = (await deps.listHosts()).sort((a, b) => a.host.localeCompare(b.host));
  return {
    status: 200,
    body: {
      hypervisors: hosts.map((h) => {
        const up = isServiceUp(h);
        return detail ? hypervisorDetailView(h, up) : hypervisorSummaryView(h, up);
      }),
    },
  };
}

async function hostOr404(deps: RouteCall["deps"], id: string): Promise<HostRecord> {
  const h = await deps.getHost(id);
  if (!h) throw notFound(`Hypervisor with ID '${id}' could not be found.`);
  return h;
}

/** Nova's detail, plus Placement's view of the host: inventories, usages and allocations. */
export async function showHypervisor({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.hypervisorsShow);
  const h = await hostOr404(deps, params.id!);
  const up = isServiceUp(h);
  const held = await deps.listAllocations({ host: h.host });
  return {
    status: 200,
    body: { hypervisor: { ...hypervisorDetailView(h, up), ...hypervisorPlacementView(h, held) } },
  };
}

/** Placement's GET /resource_providers/{uuid}/inventories. */
export async function listInventories({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, INVENTORY_RULES.list);
  const h = await hostOr404(deps, params.id!);
  const inventories = Object.fromEntries(
    Object.entries(h.inventories)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([rc, i]) => [rc, inventoryView(i as Inventory)]),
  );
  return { status: 200, body: { resource_provider_generation: h.generation, inventories } };
}

function placementError(e: unknown): never {
  if (e instanceof PlacementConflict) throw conflict(e.message);
  if (e instanceof InvalidInventory) throw badRequest(e.message);
  throw e;
}

/**
 * Placement's PUT /resource_providers/{uuid}/inventories/{resource_class}: 409 when the generation
 * moved on or what is allocated would not fit. Adds the class if the host has none yet.
 */
export async function updateInventory({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, INVENTORY_RULES.update);
  const id = params.id!;
  const rc = parseResourceClass(id, params.resource_class!);
  const { generation, inventory } = parseInventoryUpdate(parseJsonBody(body));
  const h = await (deps.setInventory ?? setInventory)(id, rc, inventory, generation).catch(placementError);
  if (!h) throw notFound(`Hypervisor with ID '${id}' could not be found.`);
  log.info("api.inventory_updated", {
    request_id: ctx.requestId,
    host: id,
    resource_class: rc,
    generation: h.generation,
    ...inventory,
  });
  return {
    status: 200,
    body: { ...inventoryView(h.inventories[rc]!), resource_provider_generation: h.generation },
  };
}

/** Placement's DELETE of one inventory: 409 while anything is allocated from it. */
export async function deleteInventoryRoute({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, INVENTORY_RULES.delete);
  const id = params.id!;
  const rc = parseResourceClass(id, params.resource_class!);
  const current = await hostOr404(deps, id);
  if (!current.inventories[rc]) throw notFound(`No inventory of class ${rc} found for delete.`);
  const h = await (deps.deleteInventory ?? deleteInventory)(id, rc).catch(placementError);
  if (!h) throw notFound(`Hypervisor with ID '${id}' could not be found.`);
  log.info("api.inventory_deleted", { request_id: ctx.requestId, host: id, resource_class: rc });
  return { status: 204 };
}

export const hypervisorRoutes: Route[] = [
  { method: "GET", pattern: "/os-hypervisors", handler: (c) => listHypervisors(c, false) },
  { method: "GET", pattern: "/os-hypervisors/detail", handler: (c) => listHypervisors(c, true) },
  { method: "GET", pattern: "/os-hypervisors/:id", handler: showHypervisor },
  { method: "GET", pattern: "/os-hypervisors/:id/inventories", handler: listInventories },
  { method: "PUT", pattern: "/os-hypervisors/:id/inventories/:resource_class", handler: updateInventory },
  {
    method: "DELETE",
    pattern: "/os-hypervisors/:id/inventories/:resource_class",
    handler: deleteInventoryRoute,
  },
];
