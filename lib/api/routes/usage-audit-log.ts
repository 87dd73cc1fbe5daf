// GET /os-instance_usage_audit_log[/{before_timestamp}] (Nova's instance_usage_audit_log.py):
// for the last completed audit period, which compute hosts ran the instance usage audit and what
// it counted, from Nova's task_log. Nova's hosts run that audit only with instance_usage_audit
// on (default off), to send compute.instance.exists notifications to Telemetry. novaless has no
// notifications and runs no such audit, so its task log is empty, as a default Nova's is: every
// compute service (disabled ones too, as Nova counts them) is "not run", with no instances and
// no errors. Nothing here is estimated.
import { requireAdmin } from "../auth.js";
import { badRequest } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";

/** Nova's policy rules (nova/policies/instance_usage_audit_log.py): admin only. */
export const AUDIT_LOG_RULES = {
  list: "os_compute_api:os-instance-usage-audit-log:list",
  show: "os_compute_api:os-instance-usage-audit-log:show",
} as const;

/** Python's str(datetime): "2026-10-01 00:00:00" (no microseconds when they are 0). */
function pyDate(d: Date): string {
  const iso = d.toISOString();
  const ms = d.getUTCMilliseconds();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${ms ? `.${String(ms * 1000).padStart(6, "0")}` : ""}`;
}

/**
 * Nova's utils.last_completed_audit_period with its default unit, "month" (periods begin on the
 * 1st, 00:00 UTC): the month that ended last before `before`.
 */
export function lastCompletedAuditPeriod(before: Date): { begin: Date; end: Date } {
  let end = new Date(Date.UTC(before.getUTCFullYear(), before.getUTCMonth(), 1));
  if (end.getTime() >= before.getTime())
    end = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 1, 1));
  const begin = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 1, 1));
  return { begin, end };
}

/** Nova's strptime of "%Y-%m-%d %H:%M:%S" or "%Y-%m-%d %H:%M:%S.%f", as UTC (Nova's naive utcnow). */
export function parseBeforeTimestamp(id: string): Date | undefined {
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?$/.exec(id);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const ms = m[7] ? Math.floor(Number(m[7].padEnd(6, "0")) / 1000) : 0;
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms));
  // strptime refuses what does not exist (month 13, February 30, hour 24)
  if (date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || h > 23 || mi > 59 || s > 59)
    return undefined;
  return date;
}

/** Nova's _get_audit_task_logs over an empty task log: every compute service not run. */
async function auditLog(call: RouteCall, before: Date): Promise<Record<string, unknown>> {
  const { begin, end } = lastCompletedAuditPeriod(before);
  const hosts = (await call.deps.listHosts()).filter((h) => !h.service.deleted_at).map((h) => h.host);
  return {
    period_beginning: pyDate(begin),
    period_ending: pyDate(end),
    num_hosts: hosts.length,
    num_hosts_done: 0,
    num_hosts_running: 0,
    num_hosts_not_run: hosts.length,
    hosts_not_run: hosts,
    total_instances: 0,
    total_errors: 0,
    // Nova's wording: "ALL" only when every host is done (no hosts at all: 0 of 0 is all)
    overall_status: `${hosts.length === 0 ? "ALL" : `0 of ${hosts.length}`} hosts done. 0 errors.`,
    log: {},
  };
}

async function listAuditLogs(call: RouteCall): Promise<ApiResult> {
  requireAdmin(call.ctx.auth, AUDIT_LOG_RULES.list);
  return { status: 200, body: { instance_usage_audit_logs: await auditLog(call, call.deps.now()) } };
}

async function showAuditLog(call: RouteCall): Promise<ApiResult> {
  requireAdmin(call.ctx.auth, AUDIT_LOG_RULES.show);
  const id = call.params.id!;
  const before = parseBeforeTimestamp(id);
  if (!before) throw badRequest(`Invalid timestamp for date ${id}`);
  return { status: 200, body: { instance_usage_audit_log: await auditLog(call, before) } };
}

export const usageAuditLogRoutes: Route[] = [
  { method: "GET", pattern: "/os-instance_usage_audit_log", handler: listAuditLogs },
  { method: "GET", pattern: "/os-instance_usage_audit_log/:id", handler: showAuditLog },
];
