// /flavors: list (filters, sort, paging), detail, show, create/delete and the 2.55 description
// update (admin), os-extra_specs (read by whoever sees the flavor, written by admins), and flavor
// access: private flavors shared with projects (os-flavor-access, addTenantAccess,
// removeTenantAccess).
import { randomUUID } from "node:crypto";
import type { Flavor } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { RULES, requireAdmin } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { badRequest, conflict, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { MAX_LIMIT, parseJsonBody } from "../validation/common.js";
import {
  canSeeFlavor,
  filterFlavors,
  parseCreateFlavor,
  parseExtraSpecs,
  parseFlavorAction,
  parseFlavorListQuery,
  parseUpdateFlavor,
} from "../validation/flavors.js";
import { flavorAccessView, flavorSummaryView, flavorView } from "../views/flavors.js";

const FLAVOR_RULES = {
  delete: "os_compute_api:os-flavor-manage:delete",
  update: "os_compute_api:os-flavor-manage:update",
  access: "os_compute_api:os-flavor-access",
  addAccess: "os_compute_api:os-flavor-access:add_tenant_access",
  removeAccess: "os_compute_api:os-flavor-access:remove_tenant_access",
  extraSpecsUpdate: "os_compute_api:os-flavor-extra-specs:update",
  extraSpecsDelete: "os_compute_api:os-flavor-extra-specs:delete",
} as const;

const flavorNotFound = (id: string) => notFound(`Flavor ${id} could not be found.`);
const specNotFound = (id: string, key: string) =>
  notFound(`Flavor ${id} has no extra specs with key ${key}.`);

async function findFlavor(deps: ApiDeps, id: string, auth: AuthContext): Promise<Flavor> {
  const f = await deps.getFlavor(id);
  if (!f || !canSeeFlavor(f, auth)) throw flavorNotFound(id);
  return f;
}

/** Every caller may read extra specs here (Nova's default: project reader or admin). */
const viewContext = (call: RouteCall) => ({ baseUrl: call.ctx.baseUrl, extraSpecs: true });

export async function listFlavorsRoute(call: RouteCall, detail: boolean): Promise<ApiResult> {
  const { ctx, deps, query } = call;
  const filters = parseFlavorListQuery(query, ctx.auth);
  const flavors = filterFlavors(await deps.listFlavors(), filters, MAX_LIMIT);
  const view = detail ? flavorView : flavorSummaryView;
  const c = viewContext(call);
  const body: Record<string, unknown> = { flavors: flavors.map((f) => view(f, c, ctx.version)) };
  // Nova's collection links: a full page of an asked limit has a next one
  if (
    filters.limit !== undefined &&
    flavors.length > 0 &&
    flavors.length === Math.min(filters.limit, MAX_LIMIT)
  ) {
    const next = new URLSearchParams();
    for (const [k, vs] of Object.entries(query)) if (k !== "marker") for (const v of vs) next.append(k, v);
    next.set("marker", flavors[flavors.length - 1]!.id);
    body.flavors_links = [
      { rel: "next", href: `${ctx.baseUrl}/v2.1/flavors${detail ? "/detail" : ""}?${next.toString()}` },
    ];
  }
  return { status: 200, body };
}

export async function showFlavor(call: RouteCall): Promise<ApiResult> {
  const f = await findFlavor(call.deps, call.params.id!, call.ctx.auth);
  return { status: 200, body: { flavor: flavorView(f, viewContext(call), call.ctx.version) } };
}

export async function createFlavorRoute(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, body } = call;
  requireAdmin(ctx.auth, RULES.flavorCreate);
  const flavor = parseCreateFlavor(parseJsonBody(body), randomUUID, ctx.version);
  const r = await deps.createFlavor(flavor);
  if (!r.ok) {
    throw r.reason === "id-exists"
      ? conflict(`Flavor with ID ${flavor.id} already exists.`)
      : conflict(`Flavor with name ${flavor.name} already exists.`);
  }
  ctx.logFields.flavor_id = flavor.id;
  return { status: 200, body: { flavor: flavorView(r.flavor, viewContext(call), ctx.version) } };
}

/** PUT /flavors/{id} (2.55): the description. */
export async function updateFlavorRoute(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params, body } = call;
  requireAdmin(ctx.auth, FLAVOR_RULES.update);
  const description = parseUpdateFlavor(parseJsonBody(body));
  const f = await deps.setFlavorDescription(params.id!, description);
  if (!f) throw flavorNotFound(params.id!);
  return { status: 200, body: { flavor: flavorView(f, viewContext(call), ctx.version) } };
}

/** DELETE /flavors/{id}: 202, as Nova (servers keep their copy of it). */
export async function deleteFlavorRoute({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, FLAVOR_RULES.delete);
  if (!(await deps.deleteFlavor(params.id!))) throw flavorNotFound(params.id!);
  ctx.logFields.flavor_id = params.id;
  return { status: 202 };
}

export async function showExtraSpecs({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const f = await findFlavor(deps, params.id!, ctx.auth);
  return { status: 200, body: { extra_specs: { ...f.extra_specs } } };
}

export async function setExtraSpecs({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.flavorExtraSpecsCreate);
  const specs = parseExtraSpecs(parseJsonBody(body));
  const f = await deps.setFlavorExtraSpecs(params.id!, specs);
  if (!f) throw flavorNotFound(params.id!);
  return { status: 200, body: { extra_specs: specs } };
}

export async function showExtraSpec({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const f = await findFlavor(deps, params.id!, ctx.auth);
  const key = params.key!;
  if (!Object.hasOwn(f.extra_specs, key)) throw specNotFound(params.id!, key);
  return { status: 200, body: { [key]: f.extra_specs[key] } };
}

/** PUT /flavors/{id}/os-extra_specs/{key}: a body of exactly that key. */
export async function updateExtraSpec({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, FLAVOR_RULES.extraSpecsUpdate);
  const raw = parseJsonBody(body);
  const key = params.key!;
  const specs = parseExtraSpecs({ extra_specs: raw });
  if (Object.keys(specs).length > 1) throw badRequest("Request body contains too many items");
  if (!Object.hasOwn(specs, key)) throw badRequest("Request body and URI mismatch");
  const f = await deps.setFlavorExtraSpecs(params.id!, specs);
  if (!f) throw flavorNotFound(params.id!);
  return { status: 200, body: specs };
}

export async function deleteExtraSpec({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, FLAVOR_RULES.extraSpecsDelete);
  const r = await deps.deleteFlavorExtraSpec(params.id!, params.key!);
  if (r === "no-flavor") throw flavorNotFound(params.id!);
  if (r === "no-key") throw specNotFound(params.id!, params.key!);
  return { status: 200 };
}

/** GET /flavors/{id}/os-flavor-access (admin): 404 for a public flavor, as Nova. */
export async function listFlavorAccess({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, FLAVOR_RULES.access);
  const f = await deps.getFlavor(params.id!);
  if (!f) throw flavorNotFound(params.id!);
  if (f.is_public) throw notFound("Access list not available for public flavors.");
  return { status: 200, body: flavorAccessView(f) };
}

/** POST /flavors/{id}/action: addTenantAccess / removeTenantAccess (admin). */
export async function flavorActionRoute({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  const action = parseFlavorAction(parseJsonBody(body));
  const id = params.id!;
  requireAdmin(ctx.auth, action.add ? FLAVOR_RULES.addAccess : FLAVOR_RULES.removeAccess);
  const f = await deps.getFlavor(id);
  if (!f) throw flavorNotFound(id);
  if (action.add) {
    if (f.is_public && ctx.version.atLeast("2.7")) throw conflict("Can not add access to a public flavor.");
    const r = await deps.addFlavorAccess(id, action.tenant);
    if (!r.ok) {
      throw r.reason === "exists"
        ? conflict(`Flavor access already exists for flavor ${id} and project ${action.tenant} combination.`)
        : flavorNotFound(id);
    }
    return { status: 200, body: flavorAccessView(r.flavor) };
  }
  const r = await deps.removeFlavorAccess(id, action.tenant);
  if (!r.ok) {
    throw r.reason === "absent"
      ? notFound(`Flavor access not found for ${id} / ${action.tenant} combination.`)
      : flavorNotFound(id);
  }
  return { status: 200, body: flavorAccessView(r.flavor) };
}

export const flavorRoutes: Route[] = [
  { method: "GET", pattern: "/flavors", handler: (c) => listFlavorsRoute(c, false) },
  { method: "POST", pattern: "/flavors", handler: createFlavorRoute },
  { method: "GET", pattern: "/flavors/detail", handler: (c) => listFlavorsRoute(c, true) },
  { method: "GET", pattern: "/flavors/:id", handler: showFlavor },
  { method: "PUT", pattern: "/flavors/:id", handler: updateFlavorRoute, min: "2.55" },
  { method: "DELETE", pattern: "/flavors/:id", handler: deleteFlavorRoute },
  { method: "POST", pattern: "/flavors/:id/action", handler: flavorActionRoute },
  { method: "GET", pattern: "/flavors/:id/os-flavor-access", handler: listFlavorAccess },
  { method: "GET", pattern: "/flavors/:id/os-extra_specs", handler: showExtraSpecs },
  { method: "POST", pattern: "/flavors/:id/os-extra_specs", handler: setExtraSpecs },
  { method: "GET", pattern: "/flavors/:id/os-extra_specs/:key", handler: showExtraSpec },
  { method: "PUT", pattern: "/flavors/:id/os-extra_specs/:key", handler: updateExtraSpec },
  { method: "DELETE", pattern: "/flavors/:id/os-extra_specs/:key", handler: deleteExtraSpec },
];
