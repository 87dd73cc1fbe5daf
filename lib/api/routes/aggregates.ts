// /os-aggregates (admin only): list, create, show, update, delete, and the add_host,
// remove_host and set_metadata actions. Nova's rules are pure (validation/aggregates.ts); each
// change here is read → rule → write conditioned on the revision read, retried on a race.
// /os-availability-zone also lives here: zones are aggregates' metadata joined with the hosts.
import { randomUUID } from "node:crypto";
import type { Aggregate } from "../../catalog/types.js";
import { schedulerConfig } from "../../config.js";
import { requireAdmin } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { conflict, notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import {
  addAggregateHost,
  aggregateNotFound,
  checkAggregateDeletable,
  newAggregate,
  parseAggregateAction,
  parseCreateAggregate,
  parseUpdateAggregate,
  removeAggregateHost,
  setAggregateMetadata,
  updateAggregate,
} from "../validation/aggregates.js";
import { parseJsonBody } from "../validation/common.js";
import { aggregateCreatedView, aggregateView } from "../views/aggregates.js";
import { availabilityZonesDetailView, availabilityZonesView } from "../views/availability-zones.js";
import { availabilityZones, forgetZones } from "../zones.js";

/** Nova's policy rule names. */
export const AGGREGATE_RULES = {
  index: "os_compute_api:os-aggregates:index",
  create: "os_compute_api:os-aggregates:create",
  show: "os_compute_api:os-aggregates:show",
  update: "os_compute_api:os-aggregates:update",
  delete: "os_compute_api:os-aggregates:delete",
  add_host: "os_compute_api:os-aggregates:add_host",
  remove_host: "os_compute_api:os-aggregates:remove_host",
  set_metadata: "os_compute_api:os-aggregates:set_metadata",
  azDetail: "os_compute_api:os-availability-zone:detail",
} as const;

const ACTION_RULES = {
  add_host: AGGREGATE_RULES.add_host,
  remove_host: AGGREGATE_RULES.remove_host,
  set_metadata: AGGREGATE_RULES.set_metadata,
} as const;

/** Attempts at a change that lost a race with another change of the same aggregate. */
const ATTEMPTS = 5;

/** Read, apply `change` (which may throw Nova's errors), write back unless changed meanwhile. */
async function mutate(
  deps: ApiDeps,
  id: string,
  change: (agg: Aggregate, all: Aggregate[]) => Aggregate | Promise<Aggregate>,
): Promise<Aggregate> {
  for (let i = 0; i < ATTEMPTS; i++) {
    const current = await deps.getAggregateRevision(id);
    if (!current) throw aggregateNotFound(id);
    const all = await deps.listAggregates({ fresh: true });
    const next = await change(current.aggregate, all);
    const saved = await deps.saveAggregate(next, current.revision);
    forgetZones(deps);
    if (saved) return next;
  }
  throw conflict(`Aggregate ${id} is being changed concurrently; please try again.`);
}

/**
 * The uuid an aggregate path names: Nova's integer id (what clients use), or the uuid itself.
 * 404 in Nova's words when neither is known.
 */
async function aggregateUuid(deps: ApiDeps, param: string): Promise<string> {
  if (!/^[0-9]+$/.test(param)) return param;
  const n = Number(param);
  const found = (await deps.listAggregates({ fresh: true })).find((a) => a.number === n);
  if (!found) throw aggregateNotFound(param);
  return found.id;
}

export async function listAggregatesRoute({ ctx, deps }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, AGGREGATE_RULES.index);
  const all = await deps.listAggregates({ fresh: true });
  return { status: 200, body: { aggregates: all.map((a) => aggregateView(a, undefined, ctx.version)) } };
}

export async function createAggregateRoute({ ctx, deps, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, AGGREGATE_RULES.create);
  const input = parseCreateAggregate(parseJsonBody(body));
  const r = await deps.createAggregate(newAggregate(input, randomUUID(), deps.now()));
  forgetZones(deps);
  if (!r.ok) throw conflict(`Aggregate ${input.name} already exists.`);
  ctx.logFields.aggregate_id = r.aggregate.id;
  return { status: 200, body: { aggregate: aggregateCreatedView(r.aggregate, undefined, ctx.version) } };
}

export async function showAggregateRoute({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, AGGREGATE_RULES.show);
  const id = await aggregateUuid(deps, params.id!);
  const current = await deps.getAggregateRevision(id);
  if (!current) throw aggregateNotFound(params.id!);
  return { status: 200, body: { aggregate: aggregateView(current.aggregate, undefined, ctx.version) } };
}

export async function updateAggregateRoute({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, AGGREGATE_RULES.update);
  const update = parseUpdateAggregate(parseJsonBody(body));
  const now = deps.now();
  const agg = await mutate(deps, await aggregateUuid(deps, params.id!), (a, all) =>
    updateAggregate(a, update, all, now),
  );
  return { status: 200, body: { aggregate: aggregateView(agg, undefined, ctx.version) } };
}

/** Nova answers 200 with no body. */
export async function deleteAggregateRoute({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, AGGREGATE_RULES.delete);
  const id = await aggregateUuid(deps, params.id!);
  for (let i = 0; i < ATTEMPTS; i++) {
    const current = await deps.getAggregateRevision(id);
    if (!current) throw aggregateNotFound(id);
    checkAggregateDeletable(current.aggregate);
    const deleted = await deps.deleteAggregate(id, current.revision);
    forgetZones(deps);
    if (deleted) return { status: 200 };
  }
  throw conflict(`Aggregate ${id} is being changed concurrently; please try again.`);
}

export async function aggregateActionRoute({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  const raw = parseJsonBody(body);
  // policy before validation, so a member learns nothing from the body's errors
  const named = raw && typeof raw === "object" ? Object.keys(raw)[0] : undefined;
  const rule =
    named && Object.hasOwn(ACTION_RULES, named)
      ? ACTION_RULES[named as keyof typeof ACTION_RULES]
      : AGGREGATE_RULES.update;
  requireAdmin(ctx.auth, rule);
  const action = parseAggregateAction(raw);
  const id = await aggregateUuid(deps, params.id!);
  const now = deps.now();
  let agg: Aggregate;
  switch (action.action) {
    case "add_host": {
      // Nova checks the compute service exists first (ComputeHostNotFound → 404).
      if (!(await deps.getHost(action.host)))
        throw notFound(`Compute host ${action.host} could not be found.`);
      agg = await mutate(deps, id, (a, all) => addAggregateHost(a, action.host, all, now));
      break;
    }
    case "remove_host":
      agg = await mutate(deps, id, (a) => removeAggregateHost(a, action.host, now));
      break;
    case "set_metadata":
      agg = await mutate(deps, id, (a, all) => setAggregateMetadata(a, action.metadata, all, now));
      break;
  }
  ctx.logFields.aggregate_id = id;
  return { status: 200, body: { aggregate: aggregateView(agg, undefined, ctx.version) } };
}

/** Take a host out of an aggregate (a compute service's delete does, as Nova). */
export async function removeHostFromAggregate(deps: ApiDeps, id: string, host: string): Promise<void> {
  const now = deps.now();
  await mutate(deps, id, (a) => removeAggregateHost(a, host, now));
}

// ── /os-availability-zone ──

async function zones(deps: ApiDeps, withHeartbeats = false) {
  const [hosts, aggregates, heartbeats] = await Promise.all([
    deps.listHosts(),
    deps.listAggregates(),
    withHeartbeats ? deps.listServiceHeartbeats() : [],
  ]);
  // a deleted compute service is in no zone (os-services DELETE)
  return availabilityZones(
    hosts.filter((h) => !h.service.deleted_at),
    aggregates,
    {
      defaultZone: schedulerConfig().default_availability_zone,
      heartbeats: new Map(heartbeats.map((s) => [s.host, s.last_heartbeat])),
    },
  );
}

export async function listAvailabilityZones({ deps }: RouteCall): Promise<ApiResult> {
  return { status: 200, body: availabilityZonesView(await zones(deps)) };
}

export async function listAvailabilityZonesDetail({ ctx, deps }: RouteCall): Promise<ApiResult> {
  requireAdmin(ctx.auth, AGGREGATE_RULES.azDetail);
  return { status: 200, body: availabilityZonesDetailView(await zones(deps, true)) };
}

export const aggregateRoutes: Route[] = [
  { method: "GET", pattern: "/os-aggregates", handler: listAggregatesRoute },
  { method: "POST", pattern: "/os-aggregates", handler: createAggregateRoute },
  { method: "GET", pattern: "/os-aggregates/:id", handler: showAggregateRoute },
  { method: "PUT", pattern: "/os-aggregates/:id", handler: updateAggregateRoute },
  { method: "DELETE", pattern: "/os-aggregates/:id", handler: deleteAggregateRoute },
  { method: "POST", pattern: "/os-aggregates/:id/action", handler: aggregateActionRoute },
  { method: "GET", pattern: "/os-availability-zone", handler: listAvailabilityZones },
  { method: "GET", pattern: "/os-availability-zone/detail", handler: listAvailabilityZonesDetail },
];
