// GET /os-migrations' query, as Nova's schemas/migrations.py and MigrationsController._index read it.
// Before 2.59 the schema allows any parameter and every one reaches the database's filters
// (migration_get_all_by_filters), so the filters it knows (node, uuid, user_id, project_id too)
// apply and the rest are ignored; from 2.59 only the schema's properties are allowed.
import { badRequest } from "../errors.js";
import type { ApiVersion } from "../microversion.js";
import { type Query, queryOne } from "../request.js";
import { MAX_LIMIT, parseChangeTime } from "./common.js";

/** The database's filters, each the last value of its parameter (Nova's dict.update(req.GET)). */
export interface MigrationFilters {
  status?: string;
  /** source_compute or dest_compute */
  host?: string;
  /** ignored when host is given, as Nova's elif */
  source_compute?: string;
  /** source_node or dest_node (reachable before 2.59 only) */
  node?: string;
  migration_type?: string;
  hidden?: string;
  instance_uuid?: string;
  user_id?: string;
  project_id?: string;
  /** reachable before 2.59 only */
  uuid?: string;
  /** ISO instants, 2.59 and 2.66 */
  changesSince?: string;
  changesBefore?: string;
}

export interface MigrationQuery {
  filters: MigrationFilters;
  /** 2.59+: sorted by created_at, id descending, paged (limit at most max_limit) */
  paged: boolean;
  limit: number;
  marker?: string;
}

/** The filter keys migration_get_all_by_filters reads. */
const DB_FILTERS = [
  "status",
  "host",
  "source_compute",
  "node",
  "migration_type",
  "hidden",
  "instance_uuid",
  "user_id",
  "project_id",
  "uuid",
] as const;

/** index_query_v20's properties (common_query_param: any number of strings). */
const MULTI = ["hidden", "host", "instance_uuid", "source_compute", "status", "migration_type"];

/** Nova's single_param properties by the version that added them (maxItems 1). */
const SINGLE: readonly { name: string; min: string }[] = [
  { name: "limit", min: "2.59" },
  { name: "marker", min: "2.59" },
  { name: "changes-since", min: "2.59" },
  { name: "changes-before", min: "2.66" },
  { name: "user_id", min: "2.80" },
  { name: "project_id", min: "2.80" },
];

/** Python's repr of a list of strings, as jsonschema prints the failing value. */
const pyList = (vs: string[]) => `[${vs.map((v) => `'${v}'`).join(", ")}]`;

/** Nova's query schema from 2.59 (additionalProperties: False); properties before extras, as jsonschema. */
function checkSchema(query: Query, v: ApiVersion): void {
  const singles = SINGLE.filter((p) => v.atLeast(p.min)).map((p) => p.name);
  for (const name of singles) {
    const vs = query[name];
    if (!vs) continue;
    if (vs.length > 1) {
      throw badRequest(
        `Invalid input for query parameters ${name}. Value: ${pyList(vs)}. ${pyList(vs)} is too long`,
      );
    }
    const value = vs[0]!;
    // non_negative_integer: pattern ^[0-9]*$ and minLength 1
    if (name === "limit" && !/^[0-9]*$/.test(value)) {
      throw badRequest(
        `Invalid input for query parameters limit. Value: ${value}. '${value}' does not match '^[0-9]*$'`,
      );
    }
    if (name === "limit" && value === "") {
      throw badRequest(`Invalid input for query parameters limit. Value: . '' is too short`);
    }
    if (name === "changes-since" || name === "changes-before") parseChangeTime(query, name);
  }
  const allowed = new Set([...MULTI, ...singles]);
  const extra = Object.keys(query).filter((k) => !allowed.has(k));
  if (extra.length) {
    const names = extra.map((k) => `'${k}'`).join(", ");
    throw badRequest(
      `Additional properties are not allowed (${names} ${extra.length > 1 ? "were" : "was"} unexpected)`,
    );
  }
}

export function parseMigrationQuery(query: Query, v: ApiVersion): MigrationQuery {
  const paged = v.atLeast("2.59");
  if (paged) checkSchema(query, v);
  const filters: MigrationFilters = {};
  // presence, not truthiness: Nova filters on `"host" in filters`, so ?host= matches no host
  for (const k of DB_FILTERS) if (k in query) filters[k] = queryOne(query, k) ?? "";
  // before 2.59 Nova drops changes-since/before from the filters; from then they are parsed
  if (paged) filters.changesSince = parseChangeTime(query, "changes-since");
  if (v.atLeast("2.66")) filters.changesBefore = parseChangeTime(query, "changes-before");
  const rawLimit = paged ? queryOne(query, "limit") : undefined;
  // common.get_limit_and_marker: min(max_limit, limit), max_limit when absent
  const limit = rawLimit === undefined ? MAX_LIMIT : Math.min(Number(rawLimit), MAX_LIMIT);
  const marker = paged ? queryOne(query, "marker") : undefined;
  return { filters, paged, limit, ...(marker ? { marker } : {}) };
}
