// /servers/{id}/os-instance-actions. Admins may read the actions of deleted servers, as Nova
// allows since 2.21; a member gets 404 for those, as for another project's server.

import type { InstanceRecord } from "../../instances/types.js";
import type { AuthContext } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { instanceNotFound, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { UUID_RE } from "../validation/common.js";
import { actionDetailView, actionsListView } from "../views/actions.js";

async function findForActions(deps: ApiDeps, id: string, auth: AuthContext): Promise<InstanceRecord> {
  if (!UUID_RE.test(id)) throw instanceNotFound(id);
  const rec = await deps.getInstance(id);
  if (!rec) throw instanceNotFound(id);
  if (!auth.isAdmin && (rec.deleted || rec.project_id !== auth.project_id)) throw instanceNotFound(id);
  return rec;
}

export async function listActions({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findForActions(deps, id, ctx.auth);
  return { status: 200, body: { instanceActions: actionsListView(rec) } };
}

export async function showAction({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const id = params.id!;
  const requestId = params.request_id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findForActions(deps, id, ctx.auth);
  const action = Object.hasOwn(rec.actions ?? {}, requestId) ? rec.actions[requestId] : undefined;
  if (!action) throw notFound(`Action for request_id ${requestId} on instance ${id} not found`);
  return { status: 200, body: { instanceAction: actionDetailView(action, rec, ctx.auth.isAdmin) } };
}

export const instanceActionRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/os-instance-actions", handler: listActions },
  { method: "GET", pattern: "/servers/:id/os-instance-actions/:request_id", handler: showAction },
];
