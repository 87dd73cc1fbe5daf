// /servers/{id}/os-instance-actions. From 2.21 the actions of a deleted server are read too (Nova
// reads deleted instances there), by its project or an admin; before 2.21 a member gets 404 for
// them, as for another project's server (admins keep reading them, for the build's story).

import type { InstanceAction, InstanceRecord } from "../../instances/types.js";
import type { AuthContext } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { badRequest, instanceNotFound, notFound } from "../errors.js";
import type { ApiVersion } from "../microversion.js";
import { type ApiResult, type Query, queryOne, type Route, type RouteCall } from "../request.js";
import { MAX_LIMIT, parseChangeTime, UUID_RE } from "../validation/common.js";
import { actionDetailView, actionsListView, lastUpdate, sortedActions } from "../views/actions.js";

async function findForActions(
  deps: ApiDeps,
  id: string,
  auth: AuthContext,
  v: ApiVersion,
): Promise<InstanceRecord> {
  if (!UUID_RE.test(id)) throw instanceNotFound(id);
  const rec = await deps.getInstance(id);
  if (!rec) throw instanceNotFound(id);
  if (auth.isAdmin) return rec;
  if (rec.project_id !== auth.project_id || (rec.deleted && !v.atLeast("2.21"))) throw instanceNotFound(id);
  return rec;
}

/** 2.58's paging and changes-since (2.66 changes-before) over the actions, newest first. */
function pageActions(actions: InstanceAction[], query: Query, v: ApiVersion) {
  if (!v.atLeast("2.58")) return { page: actions, more: false };
  const since = parseChangeTime(query, "changes-since");
  const before = v.atLeast("2.66") ? parseChangeTime(query, "changes-before") : undefined;
  if (since && before && since > before) {
    throw badRequest("The value of changes-since must be less than or equal to changes-before.");
  }
  let out = actions.filter((a) => {
    const t = new Date(Date.parse(lastUpdate(a))).toISOString();
    return (!since || t >= since) && (!before || t <= before);
  });
  const marker = queryOne(query, "marker");
  if (marker) {
    const i = out.findIndex((a) => a.request_id === marker);
    if (i === -1) throw badRequest(`Marker ${marker} could not be found.`);
    out = out.slice(i + 1);
  }
  const rawLimit = queryOne(query, "limit");
  if (rawLimit === undefined) return { page: out, more: false };
  if (!/^[0-9]+$/.test(rawLimit)) {
    throw badRequest(
      `Invalid input for query parameters limit. Value: ${rawLimit}. '${rawLimit}' is not a 'integer'`,
    );
  }
  const limit = Math.min(Number(rawLimit), MAX_LIMIT);
  return { page: out.slice(0, limit), more: out.length > limit };
}

export async function listActions({ ctx, deps, params, query }: RouteCall): Promise<ApiResult> {
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findForActions(deps, id, ctx.auth, ctx.version);
  const { page, more } = pageActions(sortedActions(rec), query, ctx.version);
  const body: Record<string, unknown> = {
    instanceActions: actionsListView(rec, page, ctx.auth.isAdmin, ctx.version),
  };
  if (more && page.length) {
    const next = new URLSearchParams();
    for (const [k, vs] of Object.entries(query)) if (k !== "marker") for (const v of vs) next.append(k, v);
    next.set("marker", page[page.length - 1]!.request_id);
    body.links = [
      { rel: "next", href: `${ctx.baseUrl}/v2.1/servers/${id}/os-instance-actions?${next.toString()}` },
    ];
  }
  return { status: 200, body };
}

export async function showAction({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const id = params.id!;
  const requestId = params.request_id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findForActions(deps, id, ctx.auth, ctx.version);
  const action = Object.hasOwn(rec.actions ?? {}, requestId) ? rec.actions[requestId] : undefined;
  if (!action) throw notFound(`Action for request_id ${requestId} on instance ${id} not found`);
  return {
    status: 200,
    body: { instanceAction: actionDetailView(action, rec, ctx.auth.isAdmin, ctx.version) },
  };
}

export const instanceActionRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/os-instance-actions", handler: listActions },
  { method: "GET", pattern: "/servers/:id/os-instance-actions/:request_id", handler: showAction },
];
