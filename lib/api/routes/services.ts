// /os-services: admin only. A compute service is its host's provider item (status, forced_down)
// and its Services item (the heartbeat: state and updated_at, as Nova's servicegroup reports them).
import { schedulerConfig } from "../../config.js";
import { log } from "../../log.js";

import { RULES, requireAdmin } from "../auth.js";
import { notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseServiceUpdate } from "../validation/services.js";
import { serviceView } from "../views/services.js";

export async function listServices({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesList);
  const downTime = schedulerConfig().service_down_time;
  const now = deps.now().getTime();
  const host = query.host?.[0];
  const binary = query.binary?.[0];
  const [hosts, heartbeats] = await Promise.all([deps.listHosts(), deps.listServiceHeartbeats()]);
  const byHost = new Map(heartbeats.map((s) => [s.host, s]));
  const services = hosts
    .filter((h) => !host || h.host === host)
    .filter(() => !binary || binary === "nova-compute")
    .sort((a, b) => a.host.localeCompare(b.host))
    .map((h) => serviceView(h, byHost.get(h.host), downTime, now));
  return { status: 200, body: { services } };
}

export async function updateService({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesUpdate);
  const change = parseServiceUpdate(parseJsonBody(body));
  const h = await deps.setServiceStatus(params.id!, change);
  if (!h) throw notFound(`Service ${params.id} not found.`);
  log.info("api.service_updated", { request_id: ctx.requestId, host: h.host, ...change });
  const heartbeat = await deps.getServiceHeartbeat(h.host);
  return {
    status: 200,
    body: { service: serviceView(h, heartbeat, schedulerConfig().service_down_time, deps.now().getTime()) },
  };
}

export const serviceRoutes: Route[] = [
  { method: "GET", pattern: "/os-services", handler: listServices },
  { method: "PUT", pattern: "/os-services/:id", handler: updateService },
];
