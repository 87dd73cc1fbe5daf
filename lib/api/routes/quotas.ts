// /os-quota-sets and /os-quota-class-sets: a project's limits (its own over the default class's),
// a user's in it (?user_id=: its own over the project's, Nova's DbQuotaDriver), their usage
// (/detail), and the default class an operator sets; and the instance quota a create reserves
// (reserveForCreate: the project's and the user's), given back if the create fails after reserving.
import { keystoneUrl } from "../../identity/keystone.js";
import { getProject } from "../../identity/store.js";
import { log } from "../../log.js";
import {
  type Limits,
  PER_PROJECT_RESOURCES,
  type QuotaResource,
  settableRange,
  userLimits,
} from "../../quotas/quotas.js";
import type { ProjectQuotas } from "../../quotas/store.js";
import type { AuthContext } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { badRequest, forbidden, policyForbidden } from "../errors.js";
import { type ApiResult, queryOne, type Route, type RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import {
  checkQuotaSetQuery,
  checkSettable,
  parseQuotaUpdate,
  quotaClassResources,
  quotaSetResources,
} from "../validation/quotas.js";
import { quotaSetDetailView, quotaSetView } from "../views/quotas.js";

/**
 * What a project uses of each resource Nova counts (key pairs are the caller's own, as Nova); with
 * `user`, what that user uses in it (its instances, cores and ram, its server groups, its key pairs).
 */
export async function quotaUsage(
  deps: ApiDeps,
  project: string,
  auth: AuthContext,
  user?: string,
): Promise<Partial<Record<QuotaResource, number>>> {
  const [usage, groups, keypairs] = await Promise.all([
    deps.quotas.getUsage(project, user),
    deps.listServerGroups(project),
    deps.listKeypairs(user ?? auth.user_id),
  ]);
  // a user's share counts from when users' shares were first kept: instances created before then
  // give back more than they added, so a share can dip below zero
  const atLeastZero = (n: number) => (user ? Math.max(0, n) : n);
  return {
    instances: atLeastZero(usage.instances),
    cores: atLeastZero(usage.cores),
    ram: atLeastZero(usage.ram),
    server_groups: user ? groups.filter((g) => g.user_id === user).length : groups.length,
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

/** `?user_id=`: a user's quotas in the project (an empty value is none, as Python's parse_qs). */
function userOf(call: RouteCall): string | undefined {
  return queryOne(call.query, "user_id") || undefined;
}

/** The limits in force for the project, or for a user in it (its own over the project's). */
async function limitsFor(deps: ApiDeps, project: string, user?: string): Promise<Limits> {
  if (!user) return deps.quotas.getProjectLimits(project);
  const q = await deps.quotas.getProjectQuotas(project);
  return userLimits(q.limits, q.users[user] ?? {});
}

/** The project whose quota set a GET reads, once its query, the caller's rule and the project are checked. */
async function readQuotaSetProject(call: RouteCall, rule: "show" | "detail"): Promise<string> {
  const { ctx, params, query } = call;
  const project = params.project!;
  checkQuotaSetQuery(query, ctx.version);
  readableProject(ctx.auth, project, rule);
  await verifyProjectId(ctx.auth, project);
  return project;
}

async function showQuotaSet(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps } = call;
  const project = await readQuotaSetProject(call, "show");
  const limits = await limitsFor(deps, project, userOf(call));
  return { status: 200, body: { quota_set: quotaSetView(quotaSetResources(ctx.version), limits, project) } };
}

async function showQuotaSetDetail(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps } = call;
  const project = await readQuotaSetProject(call, "detail");
  const user = userOf(call);
  const [limits, inUse] = await Promise.all([
    limitsFor(deps, project, user),
    quotaUsage(deps, project, ctx.auth, user),
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
  const user = userOf(call);
  const resources = quotaSetResources(ctx.version);
  const { set, force } = parseQuotaUpdate(parseJsonBody(body), "quota_set", resources);
  // after the body's schema, as Nova's decorator validates it before the method asks Keystone
  await verifyProjectId(ctx.auth, project);
  if (!force) {
    // Nova's get_settable_quotas: a project's limit no lower than its usage and its users' own
    // limits together; a user's no lower than its usage, no higher than what the project has left
    const [q, inUse] = await Promise.all([
      deps.quotas.getProjectQuotas(project),
      quotaUsage(deps, project, ctx.auth, user),
    ]);
    const users = Object.values(q.users);
    const own = user ? (q.users[user] ?? {}) : undefined;
    checkSettable(set, (r) => settableRange(r, q.limits, users, inUse[r] ?? 0, own));
  }
  if (user) {
    // the per-project resources (Nova's PER_PROJECT_QUOTAS) are the project's even when a user is named
    const mine = Object.entries(set).filter(([r]) => !PER_PROJECT_RESOURCES.includes(r as QuotaResource));
    const projects = Object.entries(set).filter(([r]) => PER_PROJECT_RESOURCES.includes(r as QuotaResource));
    await Promise.all([
      deps.quotas.setUserLimits(project, user, Object.fromEntries(mine)),
      deps.quotas.setProjectLimits(project, Object.fromEntries(projects)),
    ]);
  } else await deps.quotas.setProjectLimits(project, set);
  const limits = await limitsFor(deps, project, user);
  ctx.logFields.project = project;
  if (user) ctx.logFields.quota_user = user;
  return { status: 200, body: { quota_set: quotaSetView(resources, limits) } };
}

async function deleteQuotaSet(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  checkQuotaSetQuery(call.query, ctx.version);
  adminOnly(ctx.auth, "os_compute_api:os-quota-sets:delete");
  const user = userOf(call);
  if (user) await deps.quotas.deleteUserLimits(params.project!, user);
  else await deps.quotas.deleteProjectLimits(params.project!);
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

/**
 * Reserve a create's instances, cores and ram in its project and for its user (checked against the
 * user's own limits when it has some), or 403 with Nova's TooManyInstances message.
 */
export async function reserveForCreate(
  deps: ApiDeps,
  owner: { project: string; user: string },
  flavor: { vcpus: number; memory_mb: number },
  req: { minCount: number; maxCount: number },
  requestId: string,
  /** the project's quotas as the create's checks read them: the reservation reads them no more */
  quotas?: ProjectQuotas,
): Promise<CreateReservation> {
  const { project, user } = owner;
  const r = await deps.quotas.reserveInstances(project, flavor, req.minCount, req.maxCount, quotas, user);

  if (!r.ok) throw forbidden(r.message);
  let given = false;
  const giveBack = async () => {
    if (given) return;
    given = true;
    await deps.quotas.releaseUsage(project, r.delta, user).catch((error: unknown) =>
      log.error("api.create.quota_not_released", {
        request_id: requestId,
        project_id: project,
        user_id: user,
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
