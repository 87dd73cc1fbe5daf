// /os-hypervisors: admin only, from the host records. A hypervisor is also Placement's resource
// provider here, so its inventories are managed under it, in Placement's shapes and texts.
import { log } from "../../log.js";
import { InvalidInventory, PlacementConflict } from "../../placement/capacity.js";
import { deleteInventory, setInventory } from "../../placement/inventory.js";
import { isServiceUp } from "../../placement/liveness.js";
import type { HostRecord, Inventory } from "../../placement/types.js";
import { RULES, requireAdmin } from "../auth.js";
import { ApiError, badRequest, conflict, notFound } from "../errors.js";
import { hostByNumber, hostByUuid, isNumber, isUuid, nodeNumber, nodeUuid } from "../host-ids.js";
import { type ApiResult, type Query, queryOne, type Route, type RouteCall } from "../request.js";
import { boolFromString, MAX_LIMIT, parseJsonBody } from "../validation/common.js";
import { parseInventoryUpdate, parseResourceClass } from "../validation/inventories.js";
import {
  hypervisorDetailView,
  hypervisorPlacementView,
  hypervisorStatisticsView,
  hypervisorSummaryView,
  inventoryView,
  uptimeText,
} from "../views/hypervisors.js";

/** Placement's policy names for what these routes do. */
export const INVENTORY_RULES = {
  list: "placement:resource_providers:inventories:list",
  update: "placement:resource_providers:inventories:update",
  delete: "placement:resource_providers:inventories:delete",
} as const;

const HYPERVISOR_RULES = {
  statistics: "os_compute_api:os-hypervisors:statistics",
  uptime: "os_compute_api:os-hypervisors:uptime",
  search: "os_compute_api:os-hypervisors:search",
  servers: "os_compute_api:os-hypervisors:servers",
} as const;

const hypervisorNotFound = (id: string) => notFound(`Hypervisor with ID '${id}' could not be found.`);

function byName(a: HostRecord, b: HostRecord): number {
  return a.host < b.host ? -1 : a.host > b.host ? 1 : 0;
}

/** Nova's compute_node_search_by_hypervisor: hostnames containing the pattern (SQL LIKE %p%). */
function matching(hosts: HostRecord[], pattern: string): HostRecord[] {
  const p = pattern.toLowerCase();
  const found = hosts.filter((h) => h.node.toLowerCase().includes(p)).sort(byName);
  if (found.length === 0) throw notFound(`No hypervisor matching '${pattern}' could be found.`);
  return found;
}

/** Each host's live servers, as Nova lists them on a hypervisor: name and uuid. */
async function serversByHost(
  deps: RouteCall["deps"],
): Promise<Map<string, { name: string; uuid: string }[]>> {
  const out = new Map<string, { name: string; uuid: string }[]>();
  for (const r of await deps.listInstances()) {
    if (!r.host) continue;
    const list = out.get(r.host) ?? [];
    list.push({ name: r.name, uuid: r.id });
    out.set(r.host, list);
  }
  return out;
}

function withServersParam(query: Query): boolean {
  const v = queryOne(query, "with_servers");
  if (v === undefined) return false;
  const b = boolFromString(v);
  if (b === undefined) {
    throw badRequest(
      `Invalid input for query parameters with_servers. Value: ${v}. '${v}' is not a valid boolean`,
    );
  }
  return b;
}

/** GET /os-hypervisors[/detail]: 2.33 paging by id; 2.53 hypervisor_hostname_pattern and with_servers. */
export async function listHypervisors({ ctx, deps, query }: RouteCall, detail: boolean): Promise<ApiResult> {
  requireAdmin(ctx.auth, detail ? RULES.hypervisorsDetail : RULES.hypervisorsList);
  const v = ctx.version;
  const pattern = v.atLeast("2.53") ? queryOne(query, "hypervisor_hostname_pattern") : undefined;
  const withServers = v.atLeast("2.53") && withServersParam(query);
  const paged = v.atLeast("2.33");
  const limitParam = paged ? queryOne(query, "limit") : undefined;
  const marker = paged ? queryOne(query, "marker") : undefined;
  let hosts = (await liveHosts(deps)).sort(byName);
  let limit: number | undefined;
  if (pattern !== undefined) {
    if (limitParam !== undefined || marker !== undefined) {
      throw badRequest(
        "Paging over hypervisors with the hypervisor_hostname_pattern query parameter is not supported.",
      );
    }
    hosts = matching(hosts, pattern);
  } else if (paged) {
    if (marker !== undefined) {
      const i = hosts.findIndex(
        (h) =>
          h.host === marker ||
          nodeUuid(h.host) === marker.toLowerCase() ||
          String(nodeNumber(h.host)) === marker,
      );
      if (i === -1) throw badRequest(`marker [${marker}] not found`);
      hosts = hosts.slice(i + 1);
    }
    if (limitParam !== undefined) {
      if (!/^[0-9]+$/.test(limitParam)) throw badRequest("limit param must be an integer");
      limit = Math.min(Number(limitParam), MAX_LIMIT);
    }
    hosts = hosts.slice(0, limit ?? MAX_LIMIT);
  }
  const servers = withServers ? await serversByHost(deps) : undefined;
  const view = detail ? hypervisorDetailView : hypervisorSummaryView;
  const body: Record<string, unknown> = {
    hypervisors: hosts.map((h) =>
      view(
        h,
        { up: isServiceUp(h), now: deps.now(), ...(servers ? { servers: servers.get(h.host) ?? [] } : {}) },
        v,
      ),
    ),
  };
  if (limit !== undefined && hosts.length > 0 && hosts.length === limit) {
    const next = new URLSearchParams();
    for (const [k, vs] of Object.entries(query)) if (k !== "marker") for (const x of vs) next.append(k, x);
    const last = hosts[hosts.length - 1]!.host;
    next.set("marker", v.atLeast("2.53") ? nodeUuid(last) : String(nodeNumber(last)));
    body.hypervisors_links = [
      {
        rel: "next",
        href: `${ctx.baseUrl}/v2.1/os-hypervisors${detail ? "/detail" : ""}?${next.toString()}`,
      },
    ];
  }
  return { status: 200, body };
}

/** The hosts whose compute service was not deleted (os-services DELETE). */
async function liveHosts(deps: RouteCall["deps"]): Promise<HostRecord[]> {
  return (await deps.listHosts()).filter((h) => !h.service.deleted_at);
}

/** The host a path id names: its node's integer id (before 2.53) or uuid (2.53), or its name. */
async function hostOr404(deps: RouteCall["deps"], id: string): Promise<HostRecord> {
  const h = isUuid(id)
    ? hostByUuid(await deps.listHosts(), id, nodeUuid)
    : ((isNumber(id) ? hostByNumber(await deps.listHosts(), id, nodeNumber) : undefined) ??
      (await deps.getHost(id)));
  if (!h || h.service.deleted_at) throw hypervisorNotFound(id);
  return h;
}

/** GET /os-hypervisors/{id}: Nova's detail (2.53 with_servers). */
export async function showHypervisor({ ctx, deps, params, query }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.hypervisorsShow);
  const v = ctx.version;
  const withServers = v.atLeast("2.53") && withServersParam(query);
  const h = await hostOr404(deps, params.id!);
  const servers = withServers ? ((await serversByHost(deps)).get(h.host) ?? []) : undefined;
  return {
    status: 200,
    body: {
      hypervisor: hypervisorDetailView(
        h,
        { up: isServiceUp(h), now: deps.now(), ...(servers ? { servers } : {}) },
        v,
      ),
    },
  };
}

/** novaless: what Placement knows of the host (generation, inventories, usages, allocations). */
export async function showHypervisorPlacement({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.hypervisorsShow);
  const h = await hostOr404(deps, params.id!);
  const held = await deps.listAllocations({ host: h.host });
  return { status: 200, body: { hypervisor: { id: h.host, ...hypervisorPlacementView(h, held) } } };
}

/** GET /os-hypervisors/statistics (until 2.87). */
export async function hypervisorStatistics({ ctx, deps }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, HYPERVISOR_RULES.statistics);
  return { status: 200, body: { hypervisor_statistics: hypervisorStatisticsView(await liveHosts(deps)) } };
}

/**
 * GET /os-hypervisors/{id}/uptime (until 2.87): `uptime`'s text, counted from the host's last
 * registration; a host registered before hosts said when (no started_at) is Nova's 501 for a
 * driver without uptime.
 */
export async function hypervisorUptime({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, HYPERVISOR_RULES.uptime);
  const h = await hostOr404(deps, params.id!);
  const uptime = uptimeText(h, deps.now());
  if (uptime === null) throw new ApiError("notImplemented", "The requested functionality is not supported.");
  return {
    status: 200,
    body: { hypervisor: { ...hypervisorSummaryView(h, { up: isServiceUp(h) }, ctx.version), uptime } },
  };
}

/** GET /os-hypervisors/{pattern}/search (until 2.52). */
export async function searchHypervisors({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, HYPERVISOR_RULES.search);
  const hosts = matching(await liveHosts(deps), params.pattern!);
  return {
    status: 200,
    body: { hypervisors: hosts.map((h) => hypervisorSummaryView(h, { up: isServiceUp(h) }, ctx.version)) },
  };
}

/** GET /os-hypervisors/{pattern}/servers (until 2.52): the matching hosts with their servers. */
export async function hypervisorServers({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, HYPERVISOR_RULES.servers);
  const hosts = matching(await liveHosts(deps), params.pattern!);
  const servers = await serversByHost(deps);
  return {
    status: 200,
    body: {
      hypervisors: hosts.map((h) =>
        hypervisorSummaryView(h, { up: isServiceUp(h), servers: servers.get(h.host) ?? [] }, ctx.version),
      ),
    },
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
  if (!h) throw hypervisorNotFound(id);
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
  const h = await (deps.deleteInventory ?? deleteInventory)(current.host, rc).catch(placementError);
  if (!h) throw hypervisorNotFound(id);
  log.info("api.inventory_deleted", { request_id: ctx.requestId, host: id, resource_class: rc });
  return { status: 204 };
}

export const hypervisorRoutes: Route[] = [
  { method: "GET", pattern: "/os-hypervisors", handler: (c) => listHypervisors(c, false) },
  { method: "GET", pattern: "/os-hypervisors/detail", handler: (c) => listHypervisors(c, true) },
  { method: "GET", pattern: "/os-hypervisors/statistics", handler: hypervisorStatistics, max: "2.87" },
  { method: "GET", pattern: "/os-hypervisors/:id", handler: showHypervisor },
  { method: "GET", pattern: "/os-hypervisors/:id/uptime", handler: hypervisorUptime, max: "2.87" },
  { method: "GET", pattern: "/os-hypervisors/:pattern/search", handler: searchHypervisors, max: "2.52" },
  { method: "GET", pattern: "/os-hypervisors/:pattern/servers", handler: hypervisorServers, max: "2.52" },
  { method: "GET", pattern: "/os-hypervisors/:id/placement", handler: showHypervisorPlacement },
  { method: "GET", pattern: "/os-hypervisors/:id/inventories", handler: listInventories },
  { method: "PUT", pattern: "/os-hypervisors/:id/inventories/:resource_class", handler: updateInventory },
  {
    method: "DELETE",
    pattern: "/os-hypervisors/:id/inventories/:resource_class",
    handler: deleteInventoryRoute,
  },
];
