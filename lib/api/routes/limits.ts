// /limits: the caller's project's absolute limits and usage (an admin may ask for another project's
// with ?tenant_id=), as Nova renders them at each microversion; Nova has no rate limits (`rate: []`).
import { policyForbidden } from "../errors.js";
import { type ApiResult, queryOne, type Route, type RouteCall } from "../request.js";
import { checkLimitsQuery } from "../validation/quotas.js";
import { limitsView } from "../views/quotas.js";

async function showLimits({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  checkLimitsQuery(query, ctx.version);
  const asked = queryOne(query, "tenant_id");
  if (asked !== undefined && asked !== ctx.auth.project_id && !ctx.auth.isAdmin)
    throw policyForbidden("os_compute_api:limits:other_project");
  const project = asked ?? ctx.auth.project_id;
  const [limits, usage, groups] = await Promise.all([
    deps.quotas.getProjectLimits(project),
    deps.quotas.getUsage(project),
    deps.listServerGroups(project),
  ]);
  return {
    status: 200,
    body: limitsView({ limits, inUse: { ...usage, server_groups: groups.length } }, ctx.version),
  };
}

export const limitsRoutes: Route[] = [{ method: "GET", pattern: "/limits", handler: showLimits }];
