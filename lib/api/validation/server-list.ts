// GET /servers and /servers/detail: the list filters a query may say, and the matching and
// ordering of instance records by them, checked without I/O.
import type { InstanceRecord } from "../../instances/types.js";
import type { AuthContext } from "../auth.js";
import { RULES } from "../auth.js";
import { badRequest, forbidden, policyForbidden } from "../errors.js";
import { type ApiVersion, MIN_VERSION } from "../microversion.js";
import { type Query, queryOne } from "../request.js";
import { serverStatus } from "../views/servers.js";
import { boolFromString, idFromHref, MAX_LIMIT, parseChangeTime } from "./common.js";

/**
 * Nova's server statuses. A status filter matches the status a server shows (views/servers.ts):
 * Nova filters by the vm_states and task_states its _STATE_MAP maps to the status, which is the
 * same set. The statuses of operations novaless has not (PAUSED, RESIZE…) are valid and match none.
 */
const NOVA_STATUSES = [
  "ACTIVE",
  "BUILD",
  "DELETED",
  "ERROR",
  "HARD_REBOOT",
  "MIGRATING",
  "PASSWORD",
  "PAUSED",
  "REBOOT",
  "REBUILD",
  "RESCUE",
  "RESIZE",
  "REVERT_RESIZE",
  "SHELVED",
  "SHELVED_OFFLOADED",
  "SHUTOFF",
  "SOFT_DELETED",
  "SUSPENDED",
  "UNKNOWN",
  "VERIFY_RESIZE",
];

export interface ServerListFilters {
  /** list every project's servers (admin with all_tenants) */
  allTenants: boolean;
  /** admin with all_tenants: only this project */
  projectId?: string;
  /** the statuses asked for (upper case); undefined: any */
  statuses?: Set<string>;
  name?: { test(s: string): boolean };
  reservationId?: string;
  /** Nova's `flavor` and `image` filters: by id */
  flavorId?: string;
  imageId?: string;
  host?: string;
  node?: string;
  limit?: number;
  marker?: string;
  /** ip and ip6 (2.5 for members): a fixed address of that version matching from its start */
  ipv4?: { test(s: string): boolean };
  ipv6?: { test(s: string): boolean };
  /** 2.26: has all of / any of / not all of / none of these tags */
  tags?: string[];
  tagsAny?: string[];
  notTags?: string[];
  notTagsAny?: string[];
  /** ISO times: changed at or after (changes-since), at or before (changes-before, 2.66) */
  changesSince?: string;
  changesBefore?: string;
  /** Nova's sort keys and directions, in order; newest first when absent */
  sort?: { key: SortKey; dir: "asc" | "desc" }[];
  /**
   * Nova's `deleted` (admins; status DELETED alone implies it): true lists deleted servers only,
   * false live ones only; absent: live ones, or both with changes-since/changes-before.
   */
  deleted?: boolean;
  /**
   * Nova's `soft_deleted` (admins): whether SOFT_DELETED servers are selected with `deleted` (the
   * deleted ones unless false; the live ones only if true). Absent: Nova's defaults.
   */
  softDeleted?: boolean;
}

/** The sort keys this listing supports (Nova's, for the fields a record has). */
const SORT_KEYS = {
  created_at: (r: InstanceRecord) => r.created_at,
  updated_at: (r: InstanceRecord) => r.updated_at,
  launched_at: (r: InstanceRecord) => r.launched_at ?? "",
  display_name: (r: InstanceRecord) => r.name,
  uuid: (r: InstanceRecord) => r.id,
  vm_state: (r: InstanceRecord) => r.vm_state,
  task_state: (r: InstanceRecord) => r.task_state ?? "",
  availability_zone: (r: InstanceRecord) => r.availability_zone ?? "",
  project_id: (r: InstanceRecord) => r.project_id,
  user_id: (r: InstanceRecord) => r.user_id,
  key_name: (r: InstanceRecord) => r.key_name ?? "",
  // Nova lets only admins sort by where servers run
  host: (r: InstanceRecord) => r.host ?? "",
  node: (r: InstanceRecord) => r.node ?? "",
} as const;
type SortKey = keyof typeof SORT_KEYS;
const ADMIN_SORT_KEYS: readonly string[] = ["host", "node"];

function parseSort(query: Query, auth: AuthContext): ServerListFilters["sort"] {
  const keys = query.sort_key ?? [];
  const dirs = query.sort_dir ?? [];
  if (!keys.length) {
    if (dirs.length) throw badRequest("Sort direction given without a sort key");
    return undefined;
  }
  return keys.map((key, i) => {
    if (!Object.hasOwn(SORT_KEYS, key) || (ADMIN_SORT_KEYS.includes(key) && !auth.isAdmin)) {
      throw badRequest(`Invalid input for query parameters sort_key. Value: ${key}.`);
    }
    const dir = dirs[i] ?? dirs[dirs.length - 1] ?? "desc";
    if (dir !== "asc" && dir !== "desc") {
      throw badRequest(`Invalid input for query parameters sort_dir. Value: ${dir}.`);
    }
    return { key: key as SortKey, dir };
  });
}

function tagList(query: Query, name: string): string[] | undefined {
  const raw = queryOne(query, name);
  return raw === undefined || raw === "" ? undefined : raw.split(",");
}

function parseAllTenants(query: Query): boolean {
  if (!("all_tenants" in query)) return false;
  const v = queryOne(query, "all_tenants") ?? "";
  if (v === "") return true; // Nova: the bare parameter enables it
  const b = boolFromString(v);
  if (b === undefined) throw badRequest(`Invalid input received: Unrecognized value '${v}' for all_tenants`);
  return b;
}

/** A name filter: a regular expression searched anywhere in the name, as Nova; literal if invalid. */
export function nameMatcher(pattern: string): { test(s: string): boolean } {
  try {
    const re = new RegExp(pattern);
    return { test: (s) => re.test(s) };
  } catch {
    return { test: (s) => s.includes(pattern) };
  }
}

/**
 * An ip/ip6 filter: compute/api.py _ip_filter's re.match, a regular expression anchored at the
 * address's start (the Networking front has no ip-substring-filtering for Nova to ask instead);
 * a literal prefix if invalid.
 */
function addressMatcher(pattern: string): { test(s: string): boolean } {
  try {
    const re = new RegExp(`^(?:${pattern})`);
    return { test: (s) => re.test(s) };
  } catch {
    return { test: (s) => s.startsWith(pattern) };
  }
}

/** Nova's _match_instance: any fixed address of the server matching its version's filter. */
function addressesMatch(r: InstanceRecord, f: ServerListFilters): boolean {
  if (!f.ipv4 && !f.ipv6) return true;
  return (r.network_info ?? []).some((vif) =>
    vif.fixed_ips.some((ip) => (ip.version === 4 ? f.ipv4 : f.ipv6)?.test(ip.ip_address)),
  );
}

export function parseServerListQuery(
  query: Query,
  auth: AuthContext,
  detail: boolean,
  v: ApiVersion = MIN_VERSION,
): ServerListFilters {
  const allTenants = parseAllTenants(query);
  if (allTenants && !auth.isAdmin) {
    throw policyForbidden(detail ? RULES.detailAllTenants : RULES.indexAllTenants);
  }
  const f: ServerListFilters = { allTenants };

  const statuses = query.status;
  if (statuses?.length) {
    f.statuses = new Set(statuses.map((raw) => raw.toUpperCase()));
    // Nova refuses statuses none of which it knows only when listing all_tenants; otherwise
    // they match nothing
    if (allTenants && ![...f.statuses].some((st) => NOVA_STATUSES.includes(st)))
      throw badRequest("Invalid status value");
  }

  const name = queryOne(query, "name");
  if (name !== undefined && name !== "") f.name = nameMatcher(name);
  const ip = queryOne(query, "ip");
  if (ip) f.ipv4 = addressMatcher(ip);
  const ip6 = queryOne(query, "ip6");
  if (ip6 && (auth.isAdmin || v.atLeast("2.5"))) f.ipv6 = addressMatcher(ip6);
  const rid = queryOne(query, "reservation_id");
  if (rid) f.reservationId = rid;
  const flavor = queryOne(query, "flavor");
  if (flavor) f.flavorId = idFromHref(flavor);
  const image = queryOne(query, "image");
  if (image) f.imageId = idFromHref(image);

  // admin-only filters are ignored for others, as Nova removes them
  if (auth.isAdmin) {
    const host = queryOne(query, "host");
    if (host) f.host = host;
    const node = queryOne(query, "node");
    if (node) f.node = node;
    const project = queryOne(query, "project_id") ?? queryOne(query, "tenant_id");
    if (project && allTenants) f.projectId = project;
    // Nova: bool_from_string(default=False)
    const deleted = queryOne(query, "deleted");
    if (deleted !== undefined) f.deleted = boolFromString(deleted) ?? false;
    // Nova hands the string itself to its database filter: any value but an empty one is true
    const soft = queryOne(query, "soft_deleted");
    if (soft !== undefined) f.softDeleted = soft !== "";
  }
  // Nova: status DELETED alone lists deleted servers, for admins only
  if (f.statuses?.size === 1 && f.statuses.has("DELETED")) {
    if (!auth.isAdmin) throw forbidden("Only administrators may list deleted instances");
    f.deleted = true;
  }

  const limit = queryOne(query, "limit");
  if (limit !== undefined) {
    if (!/^[0-9]+$/.test(limit)) throw badRequest("limit param must be an integer");
    f.limit = Math.min(Number(limit), MAX_LIMIT);
  }
  const marker = queryOne(query, "marker");
  if (marker) f.marker = marker;

  // before their versions Nova ignores these parameters, as any unknown one
  if (v.atLeast("2.26")) {
    f.tags = tagList(query, "tags");
    f.tagsAny = tagList(query, "tags-any");
    f.notTags = tagList(query, "not-tags");
    f.notTagsAny = tagList(query, "not-tags-any");
  }
  f.changesSince = parseChangeTime(query, "changes-since");
  if (v.atLeast("2.66")) {
    f.changesBefore = parseChangeTime(query, "changes-before");
    if (f.changesSince && f.changesBefore && f.changesSince > f.changesBefore) {
      throw badRequest("The value of changes-since must be less than or equal to changes-before.");
    }
  }
  f.sort = parseSort(query, auth);
  return f;
}

/** Nova's tag filters on one server's tags. */
function tagsMatch(r: InstanceRecord, f: ServerListFilters): boolean {
  const has = new Set(r.tags ?? []);
  return (
    (!f.tags || f.tags.every((t) => has.has(t))) &&
    (!f.tagsAny || f.tagsAny.some((t) => has.has(t))) &&
    !f.notTags?.every((t) => has.has(t)) &&
    !f.notTagsAny?.some((t) => has.has(t))
  );
}

function compareBy(sort: NonNullable<ServerListFilters["sort"]>) {
  return (a: InstanceRecord, b: InstanceRecord): number => {
    for (const { key, dir } of sort) {
      const c = SORT_KEYS[key](a).localeCompare(SORT_KEYS[key](b));
      if (c) return dir === "asc" ? c : -c;
    }
    // Nova adds id as the last key, so a page boundary is stable
    return a.id.localeCompare(b.id);
  };
}

/** Does this server pass the filters (the page's selection aside: project scope, deleted)? */
export function matchesServer(r: InstanceRecord, f: ServerListFilters): boolean {
  return (
    (!f.projectId || r.project_id === f.projectId) &&
    (!f.statuses || f.statuses.has(serverStatus(r))) &&
    (!f.name || f.name.test(r.name)) &&
    (!f.reservationId || r.reservation_id === f.reservationId) &&
    (!f.flavorId || r.flavor.id === f.flavorId) &&
    (!f.imageId || r.image.id === f.imageId) &&
    (!f.host || r.host === f.host) &&
    (!f.node || r.node === f.node) &&
    (!f.changesSince || r.updated_at >= f.changesSince) &&
    (!f.changesBefore || r.updated_at <= f.changesBefore) &&
    tagsMatch(r, f) &&
    addressesMatch(r, f)
  );
}

/** Nova's order for sort_key/sort_dir (id last, so a page boundary is stable). */
export function compareServers(sort: NonNullable<ServerListFilters["sort"]>) {
  return compareBy(sort);
}

/** Apply the filters and the page to servers already sorted newest first. */
export function filterServers(
  servers: InstanceRecord[],
  f: ServerListFilters,
): { servers: InstanceRecord[]; more: boolean } {
  let out = servers.filter((r) => matchesServer(r, f));
  if (f.sort) out.sort(compareBy(f.sort));
  if (f.marker) {
    const i = out.findIndex((r) => r.id === f.marker);
    if (i === -1) throw badRequest(`marker [${f.marker}] not found`);
    out = out.slice(i + 1);
  }
  const limit = f.limit ?? MAX_LIMIT;
  return { servers: out.slice(0, limit), more: f.limit !== undefined && out.length > limit };
}
