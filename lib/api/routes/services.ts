// /os-services: admin only. A compute service is its host's provider item (status, forced_down)
// and its Services item (the heartbeat: state and updated_at, as Nova's servicegroup reports them).
// Before 2.53 a service is named by host and binary in the body of PUT /os-services/{action};
// from 2.53 by its id in the path (the host name here).
import { schedulerConfig } from "../../config.js";
import { log } from "../../log.js";
import { RULES, requireAdmin } from "../auth.js";
import { badRequest, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { queryOne } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseLegacyServiceUpdate, parseServiceUpdate } from "../validation/services.js";
import { legacyServiceView, serviceView } from "../views/services.js";

const COMPUTE = "nova-compute";

export async function listServices({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesList);
  const serviceDownTime = schedulerConfig().service_down_time;
  const now = deps.now().getTime();
  const host = queryOne(query, "host");
  const binary = queryOne(query, "binary");
  const [hosts, heartbeats] = await Promise.all([deps.listHosts(), deps.listServiceHeartbeats()]);
  const byHost = new Map(heartbeats.map((s) => [s.host, s]));
  const services = hosts
    .filter((h) => !host || h.host === host)
    // nova-compute is the only service here (the API and scheduler are Lambdas, not services)
    .filter(() => !binary || binary === COMPUTE)
    .sort((a, b) => a.host.localeCompare(b.host))
    .map((h) => serviceView(h, { heartbeat: byHost.get(h.host), serviceDownTime, now }, ctx.version));
  return { status: 200, body: { services } };
}

/** PUT /os-services/{id} (2.53+): the full service record back. */
export async function updateService({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesUpdate);
  const change = parseServiceUpdate(parseJsonBody(body));
  const h = await deps.setServiceStatus(params.id!, change);
  if (!h) throw notFound(`Service ${params.id} could not be found.`);
  log.info("api.service_updated", { request_id: ctx.requestId, host: h.host, ...change });
  const heartbeat = await deps.getServiceHeartbeat(h.host);
  const c = { heartbeat, serviceDownTime: schedulerConfig().service_down_time, now: deps.now().getTime() };
  return { status: 200, body: { service: serviceView(h, c, ctx.version) } };
}

/** PUT /os-services/enable|disable|disable-log-reason|force-down (until 2.52): what was asked back. */
export async function legacyUpdateService({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesUpdate);
  const u = parseLegacyServiceUpdate(params.action!, parseJsonBody(body), ctx.version);
  if (u.binary !== COMPUTE) {
    throw badRequest(
      `Updating a ${u.binary} service is not supported. Only nova-compute services can be updated.`,
    );
  }
  const h = await deps.setServiceStatus(u.host, u.change);
  if (!h) throw notFound(`Could not find binary ${u.binary} on host ${u.host}.`);
  log.info("api.service_updated", { request_id: ctx.requestId, host: h.host, ...u.change });
  return { status: 200, body: legacyServiceView(u.host, u.binary, u.change) };
}

export const serviceRoutes: Route[] = [
  { method: "GET", pattern: "/os-services", handler: listServices },
  { method: "PUT", pattern: "/os-services/:action", handler: legacyUpdateService, max: "2.52" },
  { method: "PUT", pattern: "/os-services/:id", handler: updateService, min: "2.53" },
];
