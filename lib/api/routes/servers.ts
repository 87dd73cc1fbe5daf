// /servers: create, list, show, delete. Validation and views are pure (validation/, views/);
// this file is the I/O around them.
import { imageVisibleTo } from "../../catalog/image-create.js";
import type { Flavor, Image, ServerGroup } from "../../catalog/types.js";
import { NetworkRequestRefused } from "../../instances/networking.js";
import { MarkerNotFound, type ServerPage } from "../../instances/queries.js";
import { SecurityGroupRefused } from "../../instances/security-groups.js";
import type { InstanceRecord, NetworkRequest } from "../../instances/types.js";
import { log } from "../../log.js";
import { metrics } from "../../metrics.js";
import type { Network } from "../../network/store/table.js";
import { isServiceUp } from "../../placement/liveness.js";
import type { ProjectQuotas } from "../../quotas/store.js";
import type { AuthContext } from "../auth.js";
import { buildRequestDelaySeconds, checkFlavorFitsImage, newAdminPass, planCreate } from "../build.js";
import type { ApiDeps } from "../deps.js";
import { ApiError, badRequest, conflict, instanceNotFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { apiSettings } from "../settings.js";
import { MAX_LIMIT, parseJsonBody, UUID_RE } from "../validation/common.js";
import { canSeeFlavor } from "../validation/flavors.js";
import { canSeeServerGroup, groupNotFoundMessage } from "../validation/server-groups.js";
import { compareServers, matchesServer, parseServerListQuery } from "../validation/server-list.js";
import { type CreateServerRequest, parseCreateServer, parseUpdateServer } from "../validation/servers.js";
import { resourceLinks } from "../views/format.js";
import {
  securityGroupIdsOf,
  serverSummaryView,
  serverUpdateView,
  serverView,
  vmStatesShowing,
} from "../views/servers.js";
import { availableZoneNames } from "../zones.js";
import { checkInstance } from "./instance-checks.js";
import { reserveForCreate } from "./quotas.js";
import { deleteOrDefer } from "./server-deferred-delete.js";
import { joinServerGroup, leaveServerGroup } from "./server-groups.js";

/** Can this caller see this (live) server? Another project's server is "not found", as Nova. */
export function canSeeServer(rec: InstanceRecord, auth: AuthContext): boolean {
  return auth.isAdmin || rec.project_id === auth.project_id;
}

/** The live server behind a path id, or 404 (bad uuid, missing, deleted, another project's). */
export async function findServer(deps: ApiDeps, id: string, auth: AuthContext): Promise<InstanceRecord> {
  if (!UUID_RE.test(id)) throw instanceNotFound(id);
  const rec = await deps.getInstance(id);
  if (!rec || rec.deleted || !canSeeServer(rec, auth)) throw instanceNotFound(id);
  return rec;
}

/**
 * Nova refuses a zone no enabled compute service is in (unless a host is forced). Zones come from
 * AZ aggregates and the hosts' own zones, cached for a few seconds (lib/api/zones.ts).
 */
async function checkZoneAvailable(deps: ApiDeps, zone: string): Promise<void> {
  if (!(await availableZoneNames(deps)).has(zone)) {
    throw badRequest("The requested availability zone is not available");
  }
}

/**
 * Nova's _validate_host_or_node (2.74): the requested host, node, or host and node must exist;
 * else 400 ComputeHostNotFound, naming what was asked for.
 */
async function checkDestination(
  deps: ApiDeps,
  { host, node }: { host: string | null; node: string | null },
): Promise<void> {
  const found = host
    ? await deps.getHost(host).then((h) => h && (!node || h.node === node))
    : (await deps.listHosts()).some((h) => h.node === node);
  if (!found) throw badRequest(`Compute host ${host ?? node} could not be found.`);
}

/** The `group` hint's group: it must exist and be the caller's (Nova: 400, group not found). */
async function findHintedGroup(deps: ApiDeps, hints: Record<string, unknown>, auth: AuthContext) {
  const id = hints.group;
  if (typeof id !== "string") return undefined;
  const group = await deps.getServerGroup(id);
  if (!group || !canSeeServerGroup(group, auth)) throw badRequest(groupNotFoundMessage(id));
  return group;
}

export interface ResolvedCreate {
  req: CreateServerRequest;
  flavor: Flavor;
  image: Image;
  group: ServerGroup | undefined;
  /** the project's limits and its users' own, as the checks read them (the reservation reuses them) */
  quotas: ProjectQuotas;
  /** the create's networks, resolved (one port each per server) */
  networks: NetworkRequest[];
  /** the zones all of those networks are available in (their hints), if any says */
  networkZones?: string[];
  /** the create's security groups, resolved (absent: the project's default) */
  securityGroups?: string[];
}

/**
 * Everything a create checks before it writes anything: the body, the flavor and image, the
 * zone, the server group. Shared with the scheduler's dry run (os-scheduler/plan).
 */
export async function resolveCreate({ ctx, deps, body }: RouteCall): Promise<ResolvedCreate> {
  const { auth } = ctx;
  const raw = parseJsonBody(body);
  // The flavor and image the body names are read with the project's quotas, in one request
  // (lib/aws/dynamo-loader.ts), before the body is checked; what the checks then ask is theirs.
  const named = (raw as { server?: { flavorRef?: unknown; imageRef?: unknown } } | null)?.server;
  const readAhead = <T>(ref: unknown, read: (ref: string) => Promise<T>) => {
    if (typeof ref !== "string" || ref === "") return undefined;
    const p = read(ref);
    p.catch(() => undefined); // awaited below when used; a body refused first leaves it unread
    return { ref, p };
  };
  // Read as settled (eventually consistent, a miss read again consistently): a create's flavor
  // and image were made before it, and change seldom; half the read units of every create.
  const getFlavor = (ref: string) => deps.getFlavor(ref, true);
  const getImage = (ref: string) => deps.getImage(ref, true);
  const flavorAhead = readAhead(named?.flavorRef, getFlavor);
  const imageAhead = readAhead(named?.imageRef, getImage);
  // Nova checks a create's metadata against the project's metadata_items quota (-1: unlimited)
  const quotas = await deps.quotas.getProjectQuotas(auth.project_id);
  const metadataItems = quotas.limits.metadata_items;
  const req = parseCreateServer(
    raw,
    auth,
    { maxMetadataItems: metadataItems === -1 ? Number.POSITIVE_INFINITY : metadataItems },
    ctx.version,
  );

  const flavor = await (flavorAhead?.ref === req.flavorRef ? flavorAhead.p : getFlavor(req.flavorRef));
  if (!flavor || !canSeeFlavor(flavor, auth)) throw badRequest(`Flavor ${req.flavorRef} could not be found.`);
  if (flavor.disabled)
    throw badRequest(`Flavor ${req.flavorRef} is disabled and cannot be used to create servers.`);
  const image = await (imageAhead?.ref === req.imageRef ? imageAhead.p : getImage(req.imageRef));
  if (!image || !imageVisibleTo(image, auth)) throw badRequest(`Image ${req.imageRef} could not be found.`);
  // Nova's _check_requested_image: a snapshot still uploading cannot be booted
  if (image.status !== "active") throw badRequest(`Image ${image.id} is not active.`);
  if (req.keyName && !(await deps.getKeypair(auth.user_id, req.keyName))) {
    throw badRequest(`Keypair ${req.keyName} not found for user ${auth.user_id}`);
  }
  checkFlavorFitsImage(flavor, image);
  if (req.az?.zone && !req.az.host) await checkZoneAvailable(deps, req.az.zone);
  if (req.requestedDestination) await checkDestination(deps, req.requestedDestination);
  const group = await findHintedGroup(deps, req.schedulerHints, auth);
  const securityGroups = await requestedSecurityGroups(deps, req, auth);
  const seen = new Map<string, Network>();
  const networks = await requestedNetworks(deps, req, auth, seen);
  const networkZones = networks.length ? await deps.network?.zones(networks, seen) : undefined;
  if (networkZones) checkNetworkZones(networkZones, req.az?.zone ?? undefined);
  return {
    req,
    flavor,
    image,
    group,
    quotas,
    networks,
    ...(networkZones ? { networkZones } : {}),
    ...(securityGroups ? { securityGroups } : {}),
  };
}

/** Nova's _check_requested_secgroups: each a group of the project (400, or 409 when ambiguous). */
async function requestedSecurityGroups(
  deps: ApiDeps,
  req: CreateServerRequest,
  auth: AuthContext,
): Promise<string[] | undefined> {
  if (!req.securityGroups?.length) return undefined;
  if (!deps.network) {
    // no network service: the only security group there is, is Nova's default
    const other = req.securityGroups.find((g) => g !== "default");
    if (other) throw badRequest(`Security group ${other} not found for project ${auth.project_id}.`);
    return undefined;
  }
  try {
    return await deps.network.securityGroups(req.securityGroups, auth);
  } catch (e) {
    if (e instanceof SecurityGroupRefused)
      throw e.status === 409 ? conflict(e.message) : badRequest(e.message);
    throw e;
  }
}

/** Nova's validate_networks, its refusals as the API's 400 and 409. */
async function requestedNetworks(
  deps: ApiDeps,
  req: CreateServerRequest,
  auth: AuthContext,
  seen: Map<string, Network>,
): Promise<NetworkRequest[]> {
  if (!deps.network) return [];
  try {
    return await deps.network.validate(req.networks, auth, req.maxCount, seen);
  } catch (e) {
    if (e instanceof NetworkRequestRefused)
      throw e.status === 409 ? conflict(e.message) : badRequest(e.message);
    throw e;
  }
}

/**
 * A server must land where its networks are (their availability_zone_hints): none shared is a
 * request nothing can satisfy, and so is a requested zone outside them.
 */
function checkNetworkZones(zones: string[], requested: string | undefined): void {
  if (zones.length === 0)
    throw badRequest("The requested networks have no availability zone in common (availability_zone_hints).");
  if (requested && !zones.includes(requested))
    throw badRequest(
      `Availability zone ${requested} is not one the requested networks are available in (${zones.join(", ")}).`,
    );
}

/** Best effort: a record that cannot be deleted either is logged, for an operator to clean up. */
async function softDelete(deps: ApiDeps, ids: string[], requestId: string): Promise<void> {
  const cleanup = await Promise.allSettled(ids.map((id) => deps.markDeleted(id)));
  const stuck = ids.filter((_, i) => cleanup[i]!.status === "rejected");
  if (stuck.length) {
    log.error("api.create.cleanup_failed", {
      request_id: requestId,
      instance_uuids: stuck,
      error: (cleanup.find((c) => c.status === "rejected") as PromiseRejectedResult).reason,
    });
  }
}

export async function createServer(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps } = call;
  const { auth } = ctx;
  const settings = apiSettings();
  const { req, flavor, image, group, quotas, networks, networkZones, securityGroups } =
    await resolveCreate(call);
  // Nova's instance quota: max_count reduced to what fits; given back if the create fails below
  const quota = await reserveForCreate(
    deps,
    { project: auth.project_id, user: auth.user_id },
    flavor,
    req,
    ctx.requestId,
    quotas,
  );

  const plan = planCreate({
    req: { ...req, maxCount: quota.count },
    flavor,
    image,
    auth,
    requestId: ctx.requestId,
    now: deps.now(),
    nameTemplate: settings.multiInstanceNameTemplate,
    networks,
    ...(networkZones ? { networkZones } : {}),
    ...(securityGroups ? { securityGroups } : {}),
  });
  const ids = plan.records.map((r) => r.id);
  ctx.logFields.instance_uuid = ids[0];
  ctx.logFields.reservation_id = plan.reservationId;
  if (ids.length > 1) ctx.logFields.instance_uuids = ids;

  // Records first, then the message: the conductor must find every instance it is told about.
  // If either step fails, the create did not happen from the caller's point of view (500, no id
  // returned), so the records written are soft-deleted rather than left in BUILD forever or
  // surfacing as ERROR servers the caller never learnt the ids of. A message that did reach the
  // queue despite an error finds them deleted and builds nothing. Each record is written on its
  // own and all writes are awaited, so no write can land after the clean-up.
  // Nova adds the members (under the group-members quota) before the instances exist; a create
  // that fails afterwards takes them out again.
  if (group) await joinServerGroup(deps, group.id, ids, auth.project_id).catch(quota.undo);
  const written = await Promise.allSettled(plan.records.map((r) => deps.createInstances([r])));
  const writeFailure = written.find((w): w is PromiseRejectedResult => w.status === "rejected");
  try {
    if (writeFailure) throw writeFailure.reason;
    await Promise.all(
      plan.buildRequests.map((r, k) => deps.sendBuildRequest(r, buildRequestDelaySeconds(k))),
    );
  } catch (e) {
    ctx.logFields.error = e;
    await softDelete(deps, ids, ctx.requestId);
    if (group) await leaveServerGroup(deps, group.id, ids, ctx.requestId);
    await quota.giveBack();
    throw new ApiError(
      "computeFault",
      writeFailure
        ? "The server could not be created: its record could not be written. Please try again."
        : "The server could not be created: its build request could not be queued. Please try again.",
    );
  }

  metrics.buildsStarted(ids.length);
  if (req.returnReservationId) return { status: 202, body: { reservation_id: plan.reservationId } };
  const first = ids[0]!;
  const server = {
    id: first,
    links: resourceLinks(ctx.baseUrl, "servers", first),
    "OS-DCF:diskConfig": "MANUAL",
    // Nova echoes the request's groups, or the default it will have
    security_groups: req.securityGroups?.length
      ? req.securityGroups.map((name) => ({ name }))
      : [{ name: "default" }],
    adminPass: req.adminPass ?? newAdminPass(),
  };
  return {
    status: 202,
    headers: { location: `${ctx.baseUrl}/v2.1/servers/${first}` },
    // Nova answers the first server only, however many were made (the reservation id only when
    // return_reservation_id asks for it)
    body: { server },
  };
}

/**
 * Nova's host_status (2.16, admins): DOWN when the host's service is down or forced down,
 * MAINTENANCE when disabled, UP otherwise, UNKNOWN for a host without a service. Read only when
 * the answer shows it.
 */
async function hostStatuses(
  deps: ApiDeps,
  recs: InstanceRecord[],
  ctx: RouteCall["ctx"],
): Promise<((host: string) => string) | undefined> {
  if (!ctx.auth.isAdmin || !ctx.version.atLeast("2.16")) return undefined;
  const hosts = [...new Set(recs.flatMap((r) => (r.host ? [r.host] : [])))];
  const found = await Promise.all(hosts.map((h) => deps.getHost(h)));
  const status = new Map<string, string>();
  hosts.forEach((h, i) => {
    const rec = found[i];
    if (!rec || rec.service.deleted_at) status.set(h, "UNKNOWN");
    else if (!isServiceUp(rec)) status.set(h, "DOWN");
    else status.set(h, rec.service.disabled ? "MAINTENANCE" : "UP");
  });
  return (h) => status.get(h) ?? "UNKNOWN";
}

export async function listServers({ ctx, deps, query }: RouteCall, detail: boolean): Promise<ApiResult> {
  const { auth } = ctx;
  const f = parseServerListQuery(query, auth, detail, ctx.version);
  const changes = f.changesSince !== undefined || f.changesBefore !== undefined;
  const vmStates = f.statuses && [...new Set([...f.statuses].flatMap(vmStatesShowing))];
  // Nova's osapi max_limit when no limit is given
  const limit = f.limit ?? MAX_LIMIT;
  let page: ServerPage;
  try {
    page = await deps.listServerPage({
      project: f.allTenants ? f.projectId : auth.project_id,
      host: f.host,
      vmStates,
      // Nova: live servers only, unless `deleted` says otherwise or changes-since/-before is given
      deleted: f.deleted ?? (changes ? undefined : false),
      // (SOFT_DELETED servers count as deleted: left out of a listing of live ones unless asked for)
      softDeleted: f.softDeleted,
      changesSince: f.changesSince,
      changesBefore: f.changesBefore,
      match: (r) => matchesServer(r, f),
      marker: f.marker,
      limit,
      compare: f.sort && compareServers(f.sort),
    });
  } catch (e) {
    if (e instanceof MarkerNotFound) throw badRequest(e.message);
    throw e;
  }
  const servers = page.records;
  ctx.logFields.count = servers.length;
  const hostStatus = detail ? await hostStatuses(deps, servers, ctx) : undefined;
  const securityGroupNames = detail ? await groupNamesOf(deps, servers) : undefined;
  const opts = {
    baseUrl: ctx.baseUrl,
    isAdmin: auth.isAdmin,
    version: ctx.version,
    hostStatus,
    securityGroupNames,
  };
  const body: Record<string, unknown> = {
    servers: servers.map((r) => (detail ? serverView(r, opts) : serverSummaryView(r, ctx.baseUrl))),
  };
  if (page.next) {
    const next = new URLSearchParams();
    for (const [k, vs] of Object.entries(query)) if (k !== "marker") for (const v of vs) next.append(k, v);
    next.set("marker", page.next);
    body.servers_links = [
      { rel: "next", href: `${ctx.baseUrl}/v2.1/servers${detail ? "/detail" : ""}?${next.toString()}` },
    ];
  }
  return { status: 200, body };
}

export async function showServer(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findServer(deps, id, ctx.auth);
  return { status: 200, body: { server: await viewOf(rec, call) } };
}

/** The names of the security groups of these servers' ports (one read of each group). */
export async function groupNamesOf(deps: ApiDeps, recs: InstanceRecord[]): Promise<Map<string, string>> {
  const ids = [...new Set(recs.flatMap(securityGroupIdsOf))];
  return ids.length && deps.network ? deps.network.groupNames(ids) : new Map();
}

/** One server as its caller sees it at its version. */
export async function viewOf(
  rec: InstanceRecord,
  { ctx, deps }: RouteCall,
): Promise<Record<string, unknown>> {
  const hostStatus = await hostStatuses(deps, [rec], ctx);
  return serverView(rec, {
    baseUrl: ctx.baseUrl,
    isAdmin: ctx.auth.isAdmin,
    version: ctx.version,
    hostStatus,
    securityGroupNames: await groupNamesOf(deps, [rec]),
  });
}

/** PUT /servers/{id}: name, description (2.19); answers the server's view. */
export async function updateServerRoute(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params, body } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const changes = parseUpdateServer(parseJsonBody(body), ctx.version);
  const rec = await findServer(deps, id, ctx.auth);
  checkInstance(rec, ctx.auth, "update", "update");
  const updated = await deps.updateServer(id, { fields: changes, now: deps.now() });
  if (!updated) throw instanceNotFound(id);
  return {
    status: 200,
    body: {
      server: serverUpdateView(updated, {
        baseUrl: ctx.baseUrl,
        isAdmin: ctx.auth.isAdmin,
        version: ctx.version,
        securityGroupNames: await groupNamesOf(deps, [updated]),
      }),
    },
  };
}

/** DELETE /servers/{id}: at once, or deferred (reclaim_instance_interval: server-deferred-delete.ts). */
export async function deleteServerRoute(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findServer(deps, id, ctx.auth);
  checkInstance(rec, ctx.auth, "delete", "delete");
  await deleteOrDefer(call, rec);
  return { status: 204 };
}

export const serverRoutes: Route[] = [
  { method: "GET", pattern: "/servers", handler: (c) => listServers(c, false) },
  { method: "POST", pattern: "/servers", handler: createServer },
  { method: "GET", pattern: "/servers/detail", handler: (c) => listServers(c, true) },
  { method: "GET", pattern: "/servers/:id", handler: showServer },
  { method: "PUT", pattern: "/servers/:id", handler: updateServerRoute },
  { method: "DELETE", pattern: "/servers/:id", handler: deleteServerRoute },
];
