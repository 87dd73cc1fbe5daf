// /os-services: admin only. A compute service is its host's provider item (status, forced_down)
// and its Services item (the heartbeat: state and updated_at, as Nova's servicegroup reports them).
// Before 2.53 a service is named by host and binary in the body of PUT /os-services/{action};
// from 2.53 by its id in the path (the host name here).
import { schedulerConfig } from "../../config.js";
import { log } from "../../log.js";
import { RULES, requireAdmin } from "../auth.js";
import { badRequest, conflict, notFound } from "../errors.js";
import { hostByNumber, hostByUuid, isNumber, isUuid, serviceNumber, serviceUuid } from "../host-ids.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { queryOne } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseLegacyServiceUpdate, parseServiceUpdate } from "../validation/services.js";
import { legacyServiceView, serviceView } from "../views/services.js";
import { removeHostFromAggregate } from "./aggregates.js";

const COMPUTE = "nova-compute";

/** The host a service path id names: its service's integer id (before 2.53) or uuid, or its name. */
async function hostNamed(deps: RouteCall["deps"], id: string): Promise<string> {
  // an unknown id names no host: the callers answer 404 for it
  if (isUuid(id)) return hostByUuid(await deps.listHosts(), id, serviceUuid)?.host ?? id;
  if (isNumber(id)) return hostByNumber(await deps.listHosts(), id, serviceNumber)?.host ?? id;
  return id;
}

export async function listServices({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesList);
  const serviceDownTime = schedulerConfig().service_down_time;
  const now = deps.now().getTime();
  const host = queryOne(query, "host");
  const binary = queryOne(query, "binary");
  const [hosts, heartbeats] = await Promise.all([deps.listHosts(), deps.listServiceHeartbeats()]);
  const byHost = new Map(heartbeats.map((s) => [s.host, s]));
  const services = hosts
    .filter((h) => !h.service.deleted_at)
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
  const h = await deps.setServiceStatus(await hostNamed(deps, params.id!), change);
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

/**
 * DELETE /os-services/{id}: as Nova, refused (409) while the host has instances; otherwise the
 * host leaves its aggregates and its service is marked deleted (see deleteComputeService). Its
 * agent, if still running, brings it back at its next registration, as Nova's nova-compute does.
 * The host's queue and DLQ are deleted with it (created at registration, not by the stack, they
 * would outlive it). Nova's API has no force here, so Nova's own force-down is the force: while
 * they hold messages the delete is refused (409), unless the service is forced down, declaring
 * the host dead and what waits for it abandoned.
 */
export async function deleteService({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, SERVICE_RULES.delete);
  const id = params.id!;
  const h = await deps.getHost(await hostNamed(deps, id));
  if (!h || h.service.deleted_at) throw notFound(`Service ${id} not found.`);
  const hosting = (await deps.listInstances()).some((r) => r.host === h.host);
  if (hosting || h.num_instances > 0) throw conflict(HOSTING_INSTANCES);
  if (h.queue_url && !h.service.forced_down) {
    const queued = (await deps.queuedMessages?.(h.queue_url)) ?? 0;
    if (queued > 0) throw conflict(queuedText(queued));
  }
  for (const a of await deps.listAggregates({ fresh: true })) {
    if (a.hosts.includes(h.host)) await removeHostFromAggregate(deps, a.id, h.host);
  }
  const r = await deps.deleteComputeService(h.host, deps.now().toISOString(), h.queue_url || undefined);
  if (r === "not-found") throw notFound(`Service ${id} not found.`);
  if (r === "busy") throw conflict(HOSTING_INSTANCES);
  log.info("api.service_deleted", {
    request_id: ctx.requestId,
    host: h.host,
    forced_down: h.service.forced_down,
  });
  return { status: 204 };
}

const HOSTING_INSTANCES =
  "Unable to delete compute service that is hosting instances. Migrate or delete the instances first.";

const queuedText = (n: number) =>
  `Unable to delete compute service whose queues still hold ${n} message(s). Let its agent take them, ` +
  "or force the service down (the host is then declared dead) and delete it again: its queues are deleted " +
  "with what they hold. novaless-dlq list shows what its dead-letter queue holds.";

const SERVICE_RULES = { delete: "os_compute_api:os-services:delete" } as const;

export const serviceRoutes: Route[] = [
  { method: "GET", pattern: "/os-services", handler: listServices },
  { method: "PUT", pattern: "/os-services/:action", handler: legacyUpdateService, max: "2.52" },
  { method: "PUT", pattern: "/os-services/:id", handler: updateService, min: "2.53" },
  { method: "DELETE", pattern: "/os-services/:id", handler: deleteService },
];
