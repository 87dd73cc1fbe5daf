// /os-simple-tenant-usage: every project's usage over a period (admin), or one project's (its own
// members or an admin), from the instance records, deleted ones included until their TTL removes
// them; `detailed=1` lists each server; 2.40 pages by instance (limit, marker).
import type { InstanceRecord } from "../../instances/types.js";
import { badRequest, policyForbidden } from "../errors.js";
import { type ApiResult, type Query, queryOne, type Route, type RouteCall } from "../request.js";
import { activeIn, tenantUsages } from "../views/usage.js";

const FORMATS = [
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/,
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{1,6})$/,
  /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,6})$/,
];

/** Nova's _parse_datetime: absent is now; the three forms it knows are UTC. */
export function parseUsageTime(raw: string | undefined, now: Date): Date {
  if (raw === undefined) return now;
  for (const f of FORMATS) {
    const m = f.exec(raw);
    if (!m) continue;
    const [, y, mo, d, h, mi, s, frac] = m;
    const ms = frac ? Number(frac.padEnd(6, "0")) / 1000 : 0;
    const t = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
    if (!Number.isNaN(t)) return new Date(t);
  }
  throw badRequest("Datetime is in invalid format");
}

interface Period {
  start: Date;
  stop: Date;
  now: Date;
  detailed: boolean;
  limit?: number;
  marker?: string;
}

function periodOf(query: Query, now: Date, paged: boolean): Period {
  const start = parseUsageTime(queryOne(query, "start"), new Date(now.getTime() - 1));
  const stop = parseUsageTime(queryOne(query, "end"), now);
  if (!(start < stop))
    throw badRequest("Invalid start time. The start time cannot occur after the end time.");
  const p: Period = { start, stop, now, detailed: queryOne(query, "detailed") === "1" };
  if (paged) {
    const limit = queryOne(query, "limit");
    if (limit !== undefined) {
      if (!/^[0-9]+$/.test(limit))
        throw badRequest(
          `Invalid input for query parameters limit. Value: ${limit}. '${limit}' does not match '^[0-9]*$'`,
        );
      p.limit = Number(limit);
    }
    p.marker = queryOne(query, "marker");
  }
  return p;
}

/** The period's instances, oldest first, after the marker (2.40), at most limit. */
function page(recs: InstanceRecord[], p: Period): { recs: InstanceRecord[]; full: boolean } {
  let active = recs
    .filter((r) => activeIn(r, p.start, p.stop))
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  if (p.marker !== undefined) {
    const i = active.findIndex((r) => r.id === p.marker);
    if (i === -1) throw badRequest(`Marker ${p.marker} could not be found.`);
    active = active.slice(i + 1);
  }
  if (p.limit === undefined) return { recs: active, full: false };
  return { recs: active.slice(0, p.limit), full: p.limit > 0 && active.length > p.limit };
}

function nextLink(base: string, query: Query, last: string): { href: string; rel: string }[] {
  const q = new URLSearchParams();
  for (const [k, vs] of Object.entries(query)) if (k !== "marker") for (const v of vs) q.append(k, v);
  q.set("marker", last);
  return [{ href: `${base}?${q.toString()}`, rel: "next" }];
}

async function listUsage({ ctx, deps, query }: RouteCall): Promise<ApiResult> {
  if (!ctx.auth.isAdmin) throw policyForbidden("os_compute_api:os-simple-tenant-usage:list");
  const p = periodOf(query, deps.now(), ctx.version.atLeast("2.40"));
  const { recs, full } = page(await deps.listInstances(undefined, { withDeleted: true }), p);
  const body: Record<string, unknown> = { tenant_usages: tenantUsages(recs, p) };
  if (full)
    body.tenant_usages_links = nextLink(`${ctx.baseUrl}/v2.1/os-simple-tenant-usage`, query, recs.at(-1)!.id);
  return { status: 200, body };
}

async function showUsage({ ctx, deps, query, params }: RouteCall): Promise<ApiResult> {
  const project = params.tenant_id!;
  if (!ctx.auth.isAdmin && project !== ctx.auth.project_id)
    throw policyForbidden("os_compute_api:os-simple-tenant-usage:show");
  const p = periodOf(query, deps.now(), ctx.version.atLeast("2.40"));
  const { recs, full } = page(await deps.listInstances(project, { withDeleted: true }), p);
  // Nova's show is always detailed, and `{}` for a project with nothing in the period
  const body: Record<string, unknown> = {
    tenant_usage: tenantUsages(recs, { ...p, detailed: true })[0] ?? {},
  };
  if (full)
    body.tenant_usage_links = nextLink(
      `${ctx.baseUrl}/v2.1/os-simple-tenant-usage/${project}`,
      query,
      recs.at(-1)!.id,
    );
  return { status: 200, body };
}

export const usageRoutes: Route[] = [
  // GET /os-simple-tenant-usage/ names an empty project: Nova's router finds no route there (404),
  // where reading the slash as none would answer every project's usage
  { method: "GET", pattern: "/os-simple-tenant-usage", handler: listUsage, exact: true },
  { method: "GET", pattern: "/os-simple-tenant-usage/:tenant_id", handler: showUsage },
];
