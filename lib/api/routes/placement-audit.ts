// /os-placement-audit (admin): `nova-manage placement audit` over HTTP. GET reports; POST repairs
// (the same report, each finding with what was changed). Query: grace_seconds, host (repeatable).
import { log } from "../../log.js";
import { auditPlacement } from "../../placement/audit.js";
import { requireAdmin } from "../auth.js";
import { badRequest } from "../errors.js";
import { type ApiResult, queryOne, type Route, type RouteCall } from "../request.js";

export const AUDIT_RULES = {
  report: "placement:audit",
  repair: "placement:audit:repair",
} as const;

function graceSeconds(call: RouteCall): number | undefined {
  const raw = queryOne(call.query, "grace_seconds");
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw)) {
    throw badRequest(
      `Invalid input for query parameters grace_seconds. Value: ${raw}. '${raw}' is not a non-negative integer`,
    );
  }
  return Number(raw);
}

async function run(call: RouteCall, repair: boolean): Promise<ApiResult> {
  requireAdmin(call.ctx.auth, repair ? AUDIT_RULES.repair : AUDIT_RULES.report);
  const grace = graceSeconds(call);
  const hosts = call.query.host;
  const report = await (call.deps.auditPlacement ?? auditPlacement)({
    repair,
    ...(grace === undefined ? {} : { graceSeconds: grace }),
    ...(hosts?.length ? { hosts } : {}),
    now: call.deps.now(),
  });
  call.ctx.logFields.findings = report.findings.length;
  if (repair && report.findings.length) {
    log.info("api.placement_audit_repaired", { request_id: call.ctx.requestId, findings: report.findings });
  }
  return { status: 200, body: { placement_audit: report } };
}

export const showPlacementAudit = (call: RouteCall) => run(call, false);
export const repairPlacementAudit = (call: RouteCall) => run(call, true);

export const placementAuditRoutes: Route[] = [
  { method: "GET", pattern: "/os-placement-audit", handler: showPlacementAudit },
  { method: "POST", pattern: "/os-placement-audit", handler: repairPlacementAudit },
];
