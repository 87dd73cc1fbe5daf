// Nova's read API for migration records: GET /os-migrations (every move, admin) and, from 2.23,
// GET /servers/{id}/migrations[/{migration_id}] (a server's in-progress live migrations, admin).
// Nova 2024.2's policies: os-migrations:index and servers:migrations:index/show are admin only.

import type { InstanceRecord, MigrationRecord } from "../../instances/types.js";
import type { AuthContext } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { badRequest, instanceNotFound, notFound, policyForbidden } from "../errors.js";
import type { ApiResult, Query, Route, RouteCall } from "../request.js";
import { boolFromString, UUID_RE } from "../validation/common.js";
import { type MigrationFilters, parseMigrationQuery } from "../validation/migrations.js";
import { isLiveMigrationInProgress, migrationView, serverMigrationView } from "../views/migrations.js";

const RULES = {
  index: "os_compute_api:os-migrations:index",
  serverIndex: "os_compute_api:servers:migrations:index",
  serverShow: "os_compute_api:servers:migrations:show",
} as const;

/** migration_get_all_by_filters' filters, one record at a time. */
function matches(m: MigrationRecord, f: MigrationFilters): boolean {
  const updated = Date.parse(m.updated_at);
  if (f.changesSince && updated < Date.parse(f.changesSince)) return false;
  if (f.changesBefore && updated > Date.parse(f.changesBefore)) return false;
  if (f.status !== undefined && m.status !== f.status) return false;
  if (f.host !== undefined) {
    if (m.source_compute !== f.host && m.dest_compute !== f.host) return false;
  } else if (f.source_compute !== undefined && m.source_compute !== f.source_compute) return false;
  if (f.node !== undefined && m.source_node !== f.node && m.dest_node !== f.node) return false;
  if (f.migration_type !== undefined && m.migration_type !== f.migration_type) return false;
  // Nova's hidden marks the duplicate record a cross-cell resize leaves in its source cell, and
  // os-migrations drops hidden records anyway; novaless has one cell, so none is hidden: a false
  // value keeps every record, a true one (or one that is no boolean) matches none
  if (f.hidden !== undefined && boolFromString(f.hidden) !== false) return false;
  if (f.instance_uuid !== undefined && m.instance_uuid !== f.instance_uuid) return false;
  if (f.user_id !== undefined && m.user_id !== f.user_id) return false;
  if (f.project_id !== undefined && m.project_id !== f.project_id) return false;
  if (f.uuid !== undefined && m.uuid !== f.uuid) return false;
  return true;
}

/**
 * Nova's next link (common.ViewBuilder._get_next_link): the request's parameters sorted, one
 * value each (the last in that order), the marker set to the page's last uuid.
 */
function nextHref(baseUrl: string, query: Query, marker: string): string {
  const pairs = Object.entries(query)
    .flatMap(([k, vs]) => vs.map((v): [string, string] => [k, v]))
    .sort(([k1, v1], [k2, v2]) => (k1 < k2 ? -1 : k1 > k2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0));
  const params = new Map(pairs);
  params.set("marker", marker);
  return `${baseUrl}/v2.1/os-migrations?${new URLSearchParams([...params]).toString()}`;
}

export async function listMigrations({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  // the query schema first, then the policy, as Nova's decorators run before the method
  const q = parseMigrationQuery(query, ctx.version);
  if (!ctx.auth.isAdmin) throw policyForbidden(RULES.index);
  const f = q.filters;
  if (f.changesSince && f.changesBefore && f.changesBefore < f.changesSince) {
    throw badRequest("The value of changes-since must be less than or equal to changes-before.");
  }
  let page: MigrationRecord[];
  let cut: string | undefined;
  if (q.paged) {
    // Nova reads the marker by uuid among every migration, whatever the filters
    const after = q.marker ? await deps.getMigration(q.marker) : undefined;
    if (q.marker && !after) throw badRequest(`Marker ${q.marker} could not be found.`);
    const r = await deps.pageMigrations({
      instanceUuid: f.instance_uuid,
      match: (m) => matches(m, f),
      after,
      limit: q.limit,
    });
    page = r.migrations;
    cut = r.next;
  } else {
    page = (await deps.listMigrations({ instanceUuid: f.instance_uuid })).filter((m) => matches(m, f));
  }
  ctx.logFields.count = page.length;
  const body: Record<string, unknown> = {
    migrations: page.map((m) => migrationView(m, { baseUrl: ctx.baseUrl }, ctx.version)),
  };
  // Nova's _get_collection_links: a next link whenever the page is full, even if nothing follows
  // (or when the read budget cut it short: then after the last one read)
  if (q.paged && q.limit > 0 && page.length === q.limit) {
    body.migrations_links = [{ rel: "next", href: nextHref(ctx.baseUrl, query, page.at(-1)!.uuid) }];
  } else if (cut) {
    body.migrations_links = [{ rel: "next", href: nextHref(ctx.baseUrl, query, cut) }];
  }
  return { status: 200, body };
}

/** common.get_instance: a member reads only its project's servers; a deleted one is gone. */
async function findServer(deps: ApiDeps, id: string, auth: AuthContext): Promise<InstanceRecord> {
  if (!UUID_RE.test(id)) throw instanceNotFound(id);
  const rec = await deps.getInstance(id);
  if (!rec || rec.deleted || (!auth.isAdmin && rec.project_id !== auth.project_id))
    throw instanceNotFound(id);
  return rec;
}

/** The server's in-progress live migrations (migration_get_in_progress_by_instance). */
async function liveMigrationsOf(deps: ApiDeps, id: string): Promise<MigrationRecord[]> {
  return (await deps.listInstanceMigrations(id)).filter(isLiveMigrationInProgress);
}

export async function listServerMigrations({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  // the server first, then the policy, as Nova
  await findServer(deps, id, ctx.auth);
  if (!ctx.auth.isAdmin) throw policyForbidden(RULES.serverIndex);
  const migrations = await liveMigrationsOf(deps, id);
  return {
    status: 200,
    body: {
      migrations: migrations.map((m) => serverMigrationView(m, { baseUrl: ctx.baseUrl }, ctx.version)),
    },
  };
}

export async function showServerMigration({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const id = params.id!;
  const mid = params.migration_id!;
  ctx.logFields.instance_uuid = id;
  await findServer(deps, id, ctx.auth);
  if (!ctx.auth.isAdmin) throw policyForbidden(RULES.serverShow);
  // migration_get_by_id_and_instance: the integer id among the server's migrations
  const m = /^[0-9]+$/.test(mid)
    ? (await deps.listInstanceMigrations(id)).find((x) => x.id === Number(mid))
    : undefined;
  if (!m) throw notFound(`In-progress live migration ${mid} is not found for server ${id}.`);
  if (m.migration_type !== "live-migration") {
    throw notFound(`Migration ${mid} for server ${id} is not live-migration.`);
  }
  if (!isLiveMigrationInProgress(m))
    throw notFound(`Live migration ${mid} for server ${id} is not in progress.`);
  return {
    status: 200,
    body: { migration: serverMigrationView(m, { baseUrl: ctx.baseUrl }, ctx.version) },
  };
}

export const migrationRoutes: Route[] = [
  { method: "GET", pattern: "/os-migrations", handler: listMigrations },
  { method: "GET", pattern: "/servers/:id/migrations", handler: listServerMigrations, min: "2.23" },
  {
    method: "GET",
    pattern: "/servers/:id/migrations/:migration_id",
    handler: showServerMigration,
    min: "2.23",
  },
];
