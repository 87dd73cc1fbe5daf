// /os-server-groups: list, create, show, delete (a project's own groups; an admin's all), and the
// membership a create with the `group` hint gives its servers, under Nova's quotas.
import { randomUUID } from "node:crypto";
import type { ServerGroup } from "../../catalog/types.js";
import { log } from "../../log.js";
import { ceiling } from "../../quotas/quotas.js";
import type { ApiDeps } from "../deps.js";
import { badRequest, forbidden } from "../errors.js";
import type { ApiVersion } from "../microversion.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import {
  canSeeServerGroup,
  GROUP_MEMBERS_OVER_QUOTA,
  groupNotFoundMessage,
  parseCreateServerGroup,
  parseServerGroupListQuery,
  SERVER_GROUPS_OVER_QUOTA,
  serverGroupNotFound,
} from "../validation/server-groups.js";
import { serverGroupView } from "../views/server-groups.js";

/**
 * Nova's server_groups (per project) and server_group_members (per group) quotas: the project's
 * limits (lib/quotas; NOVALESS_MAX_SERVER_GROUPS and NOVALESS_MAX_SERVER_GROUP_MEMBERS still set
 * the defaults).
 */
export async function serverGroupQuotas(
  deps: ApiDeps,
  project: string,
): Promise<{ groups: number; members: number }> {
  const limits = await deps.quotas.getProjectLimits(project);
  return { groups: ceiling(limits.server_groups), members: ceiling(limits.server_group_members) };
}

/** The members whose servers exist and are not deleted (Nova shows only those). */
async function liveMembers(deps: ApiDeps, members: readonly string[]): Promise<Set<string>> {
  const unique = [...new Set(members)];
  const recs = await Promise.all(unique.map((id) => deps.getInstance(id)));
  return new Set(unique.filter((_, i) => recs[i] && !recs[i]!.deleted));
}

function view(g: ServerGroup, live: ReadonlySet<string>, v: ApiVersion): Record<string, unknown> {
  return serverGroupView(g, { liveMembers: g.members.filter((m) => live.has(m)) }, v);
}

/**
 * Add a create's instances to its group, all or none. Over quota, members whose servers were
 * deleted (and whose removal did not happen) are dropped and the add is tried once more; members
 * without a record yet may be a create in flight, so they are kept.
 */
export async function joinServerGroup(
  deps: ApiDeps,
  groupId: string,
  ids: string[],
  project: string,
): Promise<void> {
  const max = (await serverGroupQuotas(deps, project)).members;
  let r = await deps.addServerGroupMembers(groupId, ids, max);
  if (!r.ok && r.reason === "over-quota") {
    const recs = await Promise.all(r.group.members.map((m) => deps.getInstance(m)));
    const dead = r.group.members.filter((_, i) => recs[i]?.deleted);
    if (dead.length > 0) {
      await deps.removeServerGroupMembers(groupId, dead);
      r = await deps.addServerGroupMembers(groupId, ids, max);
    }
  }
  if (r.ok) return;
  throw r.reason === "over-quota"
    ? forbidden(GROUP_MEMBERS_OVER_QUOTA)
    : badRequest(groupNotFoundMessage(groupId));
}

/** Best effort: a create that failed after joining takes its instances out again. */
export async function leaveServerGroup(
  deps: ApiDeps,
  groupId: string,
  ids: string[],
  requestId: string,
): Promise<void> {
  try {
    await deps.removeServerGroupMembers(groupId, ids);
  } catch (error) {
    log.warn("api.create.group_members_not_removed", {
      request_id: requestId,
      group_id: groupId,
      instance_uuids: ids,
      error,
    });
  }
}

async function findServerGroup(call: RouteCall): Promise<ServerGroup> {
  const id = call.params.id!;
  const g = await call.deps.getServerGroup(id);
  if (!g || !canSeeServerGroup(g, call.ctx.auth)) throw serverGroupNotFound(id);
  return g;
}

export async function listServerGroupsRoute({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  const q = parseServerGroupListQuery(query, ctx.auth);
  const all = await deps.listServerGroups(q.allProjects ? undefined : ctx.auth.project_id);
  const page = all.slice(q.offset, q.offset + q.limit);
  const live = await liveMembers(
    deps,
    page.flatMap((g) => g.members),
  );
  return { status: 200, body: { server_groups: page.map((g) => view(g, live, ctx.version)) } };
}

export async function showServerGroupRoute(call: RouteCall): Promise<ApiResult> {
  const g = await findServerGroup(call);
  return {
    status: 200,
    body: { server_group: view(g, await liveMembers(call.deps, g.members), call.ctx.version) },
  };
}

export async function createServerGroupRoute({ ctx, deps, body }: RouteCall): Promise<ApiResult> {
  const group = parseCreateServerGroup(parseJsonBody(body), ctx.auth, randomUUID(), deps.now(), ctx.version);
  // Counted before the write, as Nova's check_deltas (two racing creates may both pass).
  const mine = await deps.listServerGroups(ctx.auth.project_id);
  if (mine.length >= (await serverGroupQuotas(deps, ctx.auth.project_id)).groups)
    throw forbidden(SERVER_GROUPS_OVER_QUOTA);
  const created = await deps.createServerGroup(group);
  ctx.logFields.server_group_id = created.id;
  return { status: 200, body: { server_group: view(created, new Set(), ctx.version) } };
}

export async function deleteServerGroupRoute(call: RouteCall): Promise<ApiResult> {
  const g = await findServerGroup(call);
  if (!(await call.deps.deleteServerGroup(g.id))) throw serverGroupNotFound(g.id);
  return { status: 204 };
}

export const serverGroupRoutes: Route[] = [
  { method: "GET", pattern: "/os-server-groups", handler: listServerGroupsRoute },
  { method: "POST", pattern: "/os-server-groups", handler: createServerGroupRoute },
  { method: "GET", pattern: "/os-server-groups/:id", handler: showServerGroupRoute },
  { method: "DELETE", pattern: "/os-server-groups/:id", handler: deleteServerGroupRoute },
];
