// /os-services: admin only. The compute services are the hosts' service records.
import { schedulerConfig } from "../../config.js";
import { log } from "../../log.js";
import { isServiceUp } from "../../placement/hosts.js";
import { RULES, requireAdmin } from "../auth.js";
import { notFound } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseServiceUpdate } from "../validation/services.js";
import { serviceView } from "../views/services.js";

export async function listServices({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesList);
  const downTime = schedulerConfig().service_down_time;
  const now = deps.now().getTime();
  const host = query.host?.[0];
  const binary = query.binary?.[0];
  const hosts = (await deps.listHosts())
    .filter((h) => !host || h.host === host)
    .filter(() => !binary || binary === "nova-compute")
    .sort((a, b) => a.host.localeCompare(b.host));
  return { status: 200, body: { services: hosts.map((h) => serviceView(h, isServiceUp(h, downTime, now))) } };
}

export async function updateService({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, RULES.servicesUpdate);
  const change = parseServiceUpdate(parseJsonBody(body));
  const h = await deps.setServiceStatus(params.id!, change);
  if (!h) throw notFound(`Service ${params.id} not found.`);
  log.info("api.service_updated", { request_id: ctx.requestId, host: h.host, ...change });
  const up = isServiceUp(h, schedulerConfig().service_down_time, deps.now().getTime());
  return { status: 200, body: { service: serviceView(h, up) } };
}
