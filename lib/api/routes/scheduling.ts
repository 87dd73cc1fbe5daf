// The scheduler's decisions, explained, for admins: GET /servers/{id}/os-scheduling (the last
// decision kept for the instance) and POST /os-scheduler/plan (a dry run of a create: the same
// body, the same checks, a plan; nothing claimed, nothing written). A member gets 403 from both:
// the detail names hosts and capacities, which Nova never shows to users. A plan warns of the
// hints the configured filters would ignore.
import { schedulerConfig } from "../../config.js";
import { ignoredHints } from "../../scheduler/ignored-hints.js";
import { requireAdmin } from "../auth.js";
import { flavorSpec, imageSpec, requestSpecFor } from "../build.js";
import { instanceNotFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { UUID_RE } from "../validation/common.js";
import { planView, schedulingView } from "../views/scheduling.js";
import { resolveCreate } from "./servers.js";

export const SCHEDULING_RULES = {
  show: "os_compute_api:os-scheduling:show",
  plan: "os_compute_api:os-scheduler:plan",
} as const;

export async function showScheduling({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, SCHEDULING_RULES.show);
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  if (!UUID_RE.test(id)) throw instanceNotFound(id);
  // As os-instance-actions: an admin may read a deleted server's decision.
  const [rec, decision] = await Promise.all([deps.getInstance(id), deps.getSchedulingDecision(id)]);
  if (!rec) throw instanceNotFound(id);
  return { status: 200, body: schedulingView(decision) };
}

export async function planRoute(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps } = call;
  requireAdmin(ctx.auth, SCHEDULING_RULES.plan);
  const { req, flavor, image, networkZones } = await resolveCreate(call);
  const spec = {
    ...requestSpecFor(req, flavorSpec(flavor), imageSpec(image), ctx.auth),
    ...(networkZones ? { network_availability_zones: networkZones } : {}),
  };
  const plan = await deps.planDestinations(spec);
  ctx.logFields.no_valid_host = plan.no_valid_host;
  return { status: 200, body: planView(plan, ignoredHints(spec, schedulerConfig())) };
}

export const schedulingRoutes: Route[] = [
  { method: "GET", pattern: "/servers/:id/os-scheduling", handler: showScheduling },
  { method: "POST", pattern: "/os-scheduler/plan", handler: planRoute },
];
