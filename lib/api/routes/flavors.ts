// /flavors: list, detail, show, create (admin) and os-extra-specs.
import { randomUUID } from "node:crypto";
import type { Flavor } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { RULES, requireAdmin } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { conflict, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import {
  canSeeFlavor,
  filterFlavors,
  parseCreateFlavor,
  parseExtraSpecs,
  parseFlavorListQuery,
} from "../validation/flavors.js";
import { flavorSummaryView, flavorView } from "../views/flavors.js";

const flavorNotFound = (id: string) => notFound(`Flavor ${id} could not be found.`);

async function findFlavor(deps: ApiDeps, id: string, auth: AuthContext): Promise<Flavor> {
  const f = await deps.getFlavor(id);
  if (!f || !canSeeFlavor(f, auth)) throw flavorNotFound(id);
  return f;
}

export async function listFlavorsRoute({ ctx, deps, query }: RouteCall, detail: boolean): Promise<ApiResult> {
  const filters = parseFlavorListQuery(query, ctx.auth);
  const flavors = filterFlavors(await deps.listFlavors(), filters);
  return {
    status: 200,
    body: {
      flavors: flavors.map((f) => (detail ? flavorView(f, ctx.baseUrl) : flavorSummaryView(f, ctx.baseUrl))),
    },
  };
}

export async function showFlavor({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const f = await findFlavor(deps, params.id!, ctx.auth);
  return { status: 200, body: { flavor: flavorView(f, ctx.baseUrl) } };
}

export async function createFlavorRoute({ ctx, deps, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.flavorCreate);
  const flavor = parseCreateFlavor(parseJsonBody(body), randomUUID);
  const r = await deps.createFlavor(flavor);
  if (!r.ok) {
    throw r.reason === "id-exists"
      ? conflict(`Flavor with ID ${flavor.id} already exists.`)
      : conflict(`Flavor with name ${flavor.name} already exists.`);
  }
  ctx.logFields.flavor_id = flavor.id;
  return { status: 200, body: { flavor: flavorView(r.flavor, ctx.baseUrl) } };
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

export const flavorRoutes: Route[] = [
  { method: "GET", pattern: "/flavors", handler: (c) => listFlavorsRoute(c, false) },
  { method: "POST", pattern: "/flavors", handler: createFlavorRoute },
  { method: "GET", pattern: "/flavors/detail", handler: (c) => listFlavorsRoute(c, true) },
  { method: "GET", pattern: "/flavors/:id", handler: showFlavor },
  { method: "GET", pattern: "/flavors/:id/os-extra-specs", handler: showExtraSpecs },
  { method: "POST", pattern: "/flavors/:id/os-extra-specs", handler: setExtraSpecs },
];
