// Nova's live migration API: os-migrateLive (migrate_server.py _migrate_live, compute/api.py
// live_migrate) and the in-progress migration's actions (server_migrations.py: force_complete
// from 2.22, abort from 2.24, in queued/preparing from 2.65). The move is accepted as any other
// (server-moves.ts accept: the migration record, task state `migrating`, the instance action,
// the request to the conductor). Before 2.34 Nova's migrate_server is a synchronous call: the API
// waits for the conductor's checks and scheduling and answers their refusal as a 400 (409 for a
// guest that does not run); from 2.34 it answers 202 at once and a refusal is the action's error
// event and the migration's `error`. The wait polls the migration record, as os-getConsoleOutput
// polls for its answer (docs/moves.md says why not StartSyncExecution).
import { setTimeout as sleep } from "node:timers/promises";
import type { InstanceRecord, MigrationRecord } from "../../instances/types.js";
import type { LiveMigrationDeps } from "../deps.js";
import { badRequest, conflict, notFound, policyForbidden } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseLiveMigrateBody, parseMigrationAction } from "../validation/live-migrate.js";
import { actionRecord } from "./instance-action.js";
import { checkHosted, checkInstance } from "./instance-checks.js";
import { accept } from "./server-moves.js";
import { findServer } from "./servers.js";

const POLICY = {
  migrateLive: "os_compute_api:os-migrate-server:migrate_live",
  migrateLiveHost: "os_compute_api:os-migrate-server:migrate_live:host",
  forceComplete: "os_compute_api:servers:migrations:force_complete",
  delete: "os_compute_api:servers:migrations:delete",
};

function liveDeps(call: RouteCall): LiveMigrationDeps {
  const l = call.deps.liveMigration;
  if (!l) throw new Error("the API was built without its live migration dependencies");
  return l;
}

/** os-migrateLive: an admin's. */
export async function migrateLive(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const { auth, version } = call.ctx;
  const body = parseLiveMigrateBody(arg, version);
  if (!auth.isAdmin) throw policyForbidden(body.host ? POLICY.migrateLiveHost : POLICY.migrateLive);
  checkInstance(rec, auth, "live_migrate", "os-migrateLive");
  checkHosted(rec);
  if (body.host) {
    const found = await call.deps.getHost(body.host);
    if (!found || found.service.deleted_at) throw badRequest(`Compute host ${body.host} could not be found.`);
  }
  const migration = await accept(call, rec, "live-migration", rec.flavor, body.host, {
    force: body.force,
    blockMigration: body.blockMigration,
  });
  if (!version.atLeast("2.34")) await conductorVerdict(call, rec, migration);
  return { status: 202 };
}

/**
 * Nova's synchronous live_migrate_instance: the conductor's checks and scheduling have answered
 * once the record leaves `accepted` (queued: placed; error: refused, its reason the instance's
 * fault). Bounded well inside the API's 29 s; past it the answer is 202 and the outcome lands on
 * the instance action, as Nova's after a MessagingTimeout.
 */
async function conductorVerdict(call: RouteCall, rec: InstanceRecord, m: MigrationRecord): Promise<void> {
  const l = liveDeps(call);
  const deadline = Date.now() + l.verdictTimeoutMs;
  while (Date.now() < deadline) {
    await sleep(l.verdictPollMs);
    const now = await l.getMigration(m.uuid);
    if (!now || now.status === "accepted") continue;
    if (now.status !== "error") return;
    const failed = await call.deps.getInstance(rec.id);
    const f = failed?.fault;
    const text = f?.message || `Live migration of instance ${rec.id} failed.`;
    throw f?.code === 409 ? conflict(text) : badRequest(text);
  }
  call.ctx.logFields.live_migration_verdict = "timeout";
}

/** The server's migration `mid` (Nova's Migration.get_by_id_and_instance), or undefined. */
async function migrationOf(call: RouteCall, id: string, mid: string): Promise<MigrationRecord | undefined> {
  if (!/^[0-9]+$/.test(mid)) return undefined;
  return (await call.deps.listInstanceMigrations(id)).find((x) => x.id === Number(mid));
}

/** Nova's InvalidMigrationState. */
const invalidMigrationState = (m: MigrationRecord, id: string, method: string) =>
  badRequest(
    `Migration ${m.id} state of instance ${id} is ${m.status}. Cannot ${method} while the migration is in this state.`,
  );

/** The source's queue: the control goes to the copy under way there. */
async function castControl(
  call: RouteCall,
  rec: InstanceRecord,
  action: "force_complete" | "abort",
): Promise<void> {
  const move = rec.migration;
  const m = call.deps.moves;
  if (!move?.attempt || !m) return;
  const source = await call.deps.getHost(move.source_host);
  if (!source?.queue_url) return;
  await m.castToCompute(source.queue_url, {
    version: 1,
    kind: "live_migration_control",
    action,
    request_id: call.ctx.requestId,
    instance_uuid: rec.id,
    host: move.source_host,
    migration_uuid: move.uuid,
    attempt: move.attempt,
    same_host: false,
  });
}

/** POST /servers/{id}/migrations/{mid}/action {"force_complete": null} (2.22). */
export async function forceComplete(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const action = parseMigrationAction(parseJsonBody(call.body));
  const rec = await findServer(deps, id, ctx.auth);
  if (!ctx.auth.isAdmin) throw policyForbidden(POLICY.forceComplete);
  checkInstance(rec, ctx.auth, "live_migrate_force_complete", action);
  const m = await migrationOf(call, id, params.migration_id!);
  // (force_complete answers a missing migration with 400, as Nova's)
  if (!m) throw badRequest(`Migration ${params.migration_id} not found for instance ${id}`);
  if (m.status !== "running") throw invalidMigrationState(m, id, "force complete");
  const recorded = await liveDeps(call).recordAction(
    rec,
    actionRecord("live_migration_force_complete", call),
  );
  if (!recorded || recorded.migration?.uuid !== m.uuid) throw invalidMigrationState(m, id, "force complete");
  await castControl(call, recorded, "force_complete");
  return { status: 202 };
}

/** DELETE /servers/{id}/migrations/{mid}: abort (2.24; queued or preparing too from 2.65). */
export async function abortLiveMigration(call: RouteCall): Promise<ApiResult> {
  const { ctx, deps, params } = call;
  const id = params.id!;
  ctx.logFields.instance_uuid = id;
  const rec = await findServer(deps, id, ctx.auth);
  if (!ctx.auth.isAdmin) throw policyForbidden(POLICY.delete);
  checkInstance(rec, ctx.auth, "live_migrate_abort", "abort live migration");
  const m = await migrationOf(call, id, params.migration_id!);
  if (!m) throw notFound(`Migration ${params.migration_id} not found for instance ${id}`);
  const allowed = ctx.version.atLeast("2.65") ? ["running", "queued", "preparing"] : ["running"];
  if (!allowed.includes(m.status)) throw invalidMigrationState(m, id, "abort live migration");
  const marked = await liveDeps(call).markAbort(rec, actionRecord("live_migration_cancel", call));
  if (!marked || marked.migration?.uuid !== m.uuid)
    throw invalidMigrationState(m, id, "abort live migration");
  // the mark stops a step not begun yet; the source stops a copy under way (or one about to begin)
  await castControl(call, marked, "abort");
  return { status: 202 };
}

export const liveMigrationRoutes: Route[] = [
  {
    method: "POST",
    pattern: "/servers/:id/migrations/:migration_id/action",
    handler: forceComplete,
    min: "2.22",
  },
  {
    method: "DELETE",
    pattern: "/servers/:id/migrations/:migration_id",
    handler: abortLiveMigration,
    min: "2.24",
  },
];
