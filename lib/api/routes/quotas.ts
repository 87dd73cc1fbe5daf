// /os-quota-sets and /os-quota-class-sets: a project's limits (its own over the default class's),
// their usage (/detail), and the default class an operator sets; and the instance quota a create
// reserves (reserveForCreate), given back if the create fails after reserving.
import { keystoneUrl } from "../../identity/keystone.js";
import { getProject } from "../../identity/store.js";
import { log } from "../../log.js";
import type { Limits, QuotaResource } from "../../quotas/quotas.js";
import type { AuthContext } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { badRequest, forbidden, policyForbidden } from "../errors.js";
import { type ApiResult, queryOne, type Route, type RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import {
  checkNotBelowUsage,
  checkQuotaSetQuery,
  parseQuotaUpdate,
  quotaClassResources,
  quotaSetResources,
} from "../validation/quotas.js";
import { quotaSetDetailView, quotaSetView } from "../views/quotas.js";

/** What a project uses of each resource Nova counts (key pairs are the caller's own, as Nova). */
export async function quotaUsage(
  deps: ApiDeps,
  project: string,
  auth: AuthContext,
): Promise<Partial<Record<QuotaResource, number>>> {
  const [usage, groups, keypairs] = await Promise.all([
    deps.quotas.getUsage(project),
    deps.listServerGroups(project),
    deps.listKeypairs(auth.user_id),
  ]);
  return {
    instances: usage.instances,
    cores: usage.cores,
    ram: usage.ram,
    server_groups: groups.length,
    key_pairs: keypairs.ok ? keypairs.keypairs.length : 0,
  };
}

/** A member reads its own project's quotas; another project's are the admin's. */
function readableProject(auth: AuthContext, project: string, rule: string): void {
  if (!auth.isAdmin && project !== auth.project_id)
    throw policyForbidden(`os_compute_api:os-quota-sets:${rule}`);
}

/**
 * Nova's identity.verify_project_id: it asks Keystone, with the caller's token, for the project,
 * and only a 404 is "Project ID <id> is not a valid project." (400); Keystone's 403 to a caller who
 * may not read that project lets the request through. So: the caller's own project (its token
 * names it) and a non-admin's question pass unasked; an admin's is a lookup in our Identity. With
 * an external Keystone (NOVALESS_KEYSTONE_URL) nothing is asked: novaless holds no service user
 * there, so every project passes, as Nova's check lets one pass when it cannot ask Keystone.
 */
async function verifyProjectId(auth: AuthContext, project: string): Promise<void> {
  if (project === auth.project_id || !auth.isAdmin || keystoneUrl()) return;
  if (!(await getProject(project))) throw badRequest(`Project ID ${project} is not a valid project.`);
}

function adminOnly(auth: AuthContext, rule: string): void {
  if (!auth.isAdmin) throw policyForbidden(rule);
}

/** Per-user quotas are not kept: a user's limits are its project's (Nova's fallback). */
function noUserQuotas(call: RouteCall): void {
  if (queryOne(call.query, "user_id") !== undefined)
    throw badRequest("Per-user quotas are not supported; set the project's quota instead.");
}

async function showQuotaSet(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params, query } = call;
  const project = params.project!;
  checkQuotaSetQuery(query, ctx.version);
  readableProject(ctx.auth, project, "show");
  await verifyProjectId(ctx.auth, project);
  const limits = await deps.quotas.getProjectLimits(project);
  return { status: 200, body: { quota_set: quotaSetView(quotaSetResources(ctx.version), limits, project) } };
}

async function showQuotaSetDetail(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params, query } = call;
  const project = params.project!;
  checkQuotaSetQuery(query, ctx.version);
  readableProject(ctx.auth, project, "detail");
  await verifyProjectId(ctx.auth, project);
  const [limits, inUse] = await Promise.all([
    deps.quotas.getProjectLimits(project),
    quotaUsage(deps, project, ctx.auth),
  ]);
  return {
    status: 200,
    body: { quota_set: quotaSetDetailView(quotaSetResources(ctx.version), limits, inUse, project) },
  };
}

async function showDefaults({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  await verifyProjectId(ctx.auth, params.project!);
  const limits = await deps.quotas.getDefaultLimits();
  return {
    status: 200,
    body: { quota_set: quotaSetView(quotaSetResources(ctx.version), limits, params.project!) },
  };
}

async function updateQuotaSet(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params, body } = call;
  const project = params.project!;
  checkQuotaSetQuery(call.query, ctx.version);
  adminOnly(ctx.auth, "os_compute_api:os-quota-sets:update");
  noUserQuotas(call);
  const resources = quotaSetResources(ctx.version);
  const { set, force } = parseQuotaUpdate(parseJsonBody(body), "quota_set", resources);
  // after the body's schema, as Nova's decorator validates it before the method asks Keystone
  await verifyProjectId(ctx.auth, project);
  if (!force) checkNotBelowUsage(set, await quotaUsage(deps, project, ctx.auth));
  await deps.quotas.setProjectLimits(project, set);
  const limits = await deps.quotas.getProjectLimits(project);
  ctx.logFields.project = project;
  return { status: 200, body: { quota_set: quotaSetView(resources, limits) } };
}

async function deleteQuotaSet(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  checkQuotaSetQuery(call.query, ctx.version);
  adminOnly(ctx.auth, "os_compute_api:os-quota-sets:delete");
  noUserQuotas(call);
  await deps.quotas.deleteProjectLimits(params.project!);
  return { status: 202 };
}

/** novaless keeps the one class Nova uses, `default`. */
function defaultClassOnly(id: string): void {
  if (id !== "default")
    throw badRequest(`Quota class ${id} is not supported; only the 'default' class is kept.`);
}

async function showQuotaClass({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  adminOnly(ctx.auth, "os_compute_api:os-quota-class-sets:show");
  defaultClassOnly(params.id!);
  const limits = await deps.quotas.getDefaultLimits();
  return {
    status: 200,
    body: { quota_class_set: quotaSetView(quotaClassResources(ctx.version), limits, params.id!) },
  };
}

async function updateQuotaClass({ ctx, deps, params, body }: RouteCall): Promise<ApiResult> {
  adminOnly(ctx.auth, "os_compute_api:os-quota-class-sets:update");
  defaultClassOnly(params.id!);
  const resources = quotaClassResources(ctx.version);
  const { set } = parseQuotaUpdate(parseJsonBody(body), "quota_class_set", resources);
  await deps.quotas.setDefaultLimits(set);
  const limits: Limits = await deps.quotas.getDefaultLimits();
  return { status: 200, body: { quota_class_set: quotaSetView(resources, limits) } };
}

export interface CreateReservation {
  /** how many instances the create makes: max_count, or fewer when only fewer fit */
  count: number;
  /** give the reservation back (the create failed after reserving); logs rather than throws */
  giveBack: () => Promise<void>;
  /** for `.catch`: give back, then rethrow */
  undo: (e: unknown) => Promise<never>;
}

/** Reserve a create's instances, cores and ram, or 403 with Nova's TooManyInstances message. */
export async function reserveForCreate(
  deps: ApiDeps,
  project: string,
  flavor: { vcpus: number; memory_mb: number },
  req: { minCount: number; maxCount: number },
  requestId: string,
  limits?: Limits,
): Promise<CreateReservation> {
  const r = await deps.quotas.reserveInstances(project, flavor, req.minCount, req.maxCount, limits);

  if (!r.ok) throw forbidden(r.message);
  let given = false;
  const giveBack = async () => {
    if (given) return;
    given = true;
    await deps.quotas.releaseUsage(project, r.delta).catch((error: unknown) =>
      log.error("api.create.quota_not_released", {
        request_id: requestId,
        project_id: project,
        ...r.delta,
        error,
      }),
    );
  };
  return {
    count: r.count,
    giveBack,
    undo: async (e) => {
      await giveBack();
      throw e;
    },
  };
}

export const quotaRoutes: Route[] = [
  { method: "GET", pattern: "/os-quota-sets/:project/defaults", handler: showDefaults },
  { method: "GET", pattern: "/os-quota-sets/:project/detail", handler: showQuotaSetDetail },
  { method: "GET", pattern: "/os-quota-sets/:project", handler: showQuotaSet },
  { method: "PUT", pattern: "/os-quota-sets/:project", handler: updateQuotaSet },
  { method: "DELETE", pattern: "/os-quota-sets/:project", handler: deleteQuotaSet },
  { method: "GET", pattern: "/os-quota-class-sets/:id", handler: showQuotaClass },
  { method: "PUT", pattern: "/os-quota-class-sets/:id", handler: updateQuotaClass },
];
