// /os-hypervisors: admin only, from the host records.
import { schedulerConfig } from "../../config.js";
import { isServiceUp } from "../../placement/hosts.js";
import { RULES, requireAdmin } from "../auth.js";
import { notFound } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { hypervisorDetailView, hypervisorSummaryView } from "../views/hypervisors.js";

export async function listHypervisors({ ctx, deps }: RouteCall, detail: boolean): Promise<ApiResult> {
  requireAdmin(ctx.auth, detail ? RULES.hypervisorsDetail : RULES.hypervisorsList);
  const downTime = schedulerConfig().service_down_time;
  const now = deps.now().getTime();
  const hosts = (await deps.listHosts()).sort((a, b) => a.host.localeCompare(b.host));
  return {
    status: 200,
    body: {
      hypervisors: hosts.map((h) => {
        const up = isServiceUp(h, downTime, now);
        return detail ? hypervisorDetailView(h, up) : hypervisorSummaryView(h, up);
      }),
    },
  };
}

export async function showHypervisor({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.hypervisorsShow);
  const id = params.id!;
  const h = await deps.getHost(id);
  if (!h) throw notFound(`Hypervisor with ID '${id}' could not be found.`);
  const up = isServiceUp(h, schedulerConfig().service_down_time, deps.now().getTime());
  return { status: 200, body: { hypervisor: hypervisorDetailView(h, up) } };
}
