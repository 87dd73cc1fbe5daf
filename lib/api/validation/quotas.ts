// Quota-set, quota-class-set and /limits requests as Nova's schemas take them: which resources a
// microversion knows (network quotas gone at 2.36, injected files at 2.57; the classes' own steps
// at 2.50), integer-or-numeric-string values from -1 to MAX_INT, and (2.75) no unknown query
// parameters.
import { type Limits, QUOTA_RESOURCES, type QuotaResource, type Settable } from "../../quotas/quotas.js";
import { badRequest } from "../errors.js";
import { type ApiVersion, forVersion } from "../microversion.js";
import type { Query } from "../request.js";
import { MAX_INT, repr } from "./common.js";

const NETWORK: QuotaResource[] = ["floating_ips", "fixed_ips", "security_groups", "security_group_rules"];
const INJECTED: QuotaResource[] = [
  "injected_files",
  "injected_file_content_bytes",
  "injected_file_path_bytes",
];
const GROUPS: QuotaResource[] = ["server_groups", "server_group_members"];
const without = (drop: QuotaResource[]) => QUOTA_RESOURCES.filter((r) => !drop.includes(r));

/** The resources of a quota set (os-quota-sets) at each microversion. */
export const QUOTA_SET_RESOURCES = [
  { value: QUOTA_RESOURCES },
  { min: "2.36", value: without(NETWORK) },
  { min: "2.57", value: without([...NETWORK, ...INJECTED]) },
];

/** The resources of a quota class set: server groups from 2.50, when the network ones left. */
export const QUOTA_CLASS_RESOURCES = [
  { value: without(GROUPS) },
  { min: "2.50", value: without(NETWORK) },
  { min: "2.57", value: without([...NETWORK, ...INJECTED]) },
];

/**
 * The query parameters each route accepts from 2.75 (before, unknown ones are ignored). The error
 * is at the top of the query, so Nova's message is jsonschema's alone.
 */
function checkQuery(query: Query, v: ApiVersion, allowed: string[]): void {
  if (!v.atLeast("2.75")) return;
  const extra = Object.keys(query).filter((k) => !allowed.includes(k));
  if (extra.length) {
    throw badRequest(
      `Additional properties are not allowed (${extra.map((k) => `'${k}'`).join(", ")} ${extra.length > 1 ? "were" : "was"} unexpected)`,
    );
  }
}

/** Python's repr of a JSON value, as Nova's messages print a body: `{'instances': 5}`. */
function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return repr(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(", ")}]`;
  if (typeof v === "object")
    return `{${Object.entries(v)
      .map(([k, x]) => `'${k}': ${pyRepr(x)}`)
      .join(", ")}}`;
  return String(v);
}

export const checkQuotaSetQuery = (q: Query, v: ApiVersion) => checkQuery(q, v, ["user_id"]);
export const checkLimitsQuery = (q: Query, v: ApiVersion) => checkQuery(q, v, ["tenant_id"]);

function quotaValue(key: string, value: unknown): number {
  const bad = (why: string) =>
    badRequest(`Invalid input for field/attribute ${key}. Value: ${value}. ${why}`);
  let n: number;
  if (typeof value === "number" && Number.isInteger(value)) n = value;
  else if (typeof value === "string") {
    if (!/^-?[0-9]+$/.test(value)) throw bad(`${repr(value)} does not match '^-?[0-9]+$'`);
    n = Number(value);
  } else throw bad(`${repr(value)} is not of type 'integer', 'string'`);
  if (n < -1) throw bad(`${n} is less than the minimum of -1`);
  if (n > MAX_INT) throw bad(`${n} is greater than the maximum of ${MAX_INT}`);
  return n;
}

export interface QuotaUpdate {
  set: Partial<Limits>;
  force: boolean;
}

/** `{"quota_set": {...}}` (or `quota_class_set`): the known resources of this version, and `force`. */
export function parseQuotaUpdate(
  body: unknown,
  envelope: "quota_set" | "quota_class_set",
  resources: QuotaResource[],
): QuotaUpdate {
  const inner = (body as Record<string, unknown> | null)?.[envelope];
  if (typeof body !== "object" || body === null || Array.isArray(body) || inner === undefined)
    throw badRequest(
      `Invalid input for field/attribute ${envelope}. Value: None. '${envelope}' is a required property`,
    );
  const extraTop = Object.keys(body).filter((k) => k !== envelope);
  if (extraTop.length)
    throw badRequest(
      `Invalid input for field/attribute ${envelope}. Value: ${pyRepr(body)}. Additional properties are not allowed ('${extraTop[0]}' was unexpected)`,
    );
  if (typeof inner !== "object" || inner === null || Array.isArray(inner))
    throw badRequest(
      `Invalid input for field/attribute ${envelope}. Value: ${pyRepr(inner)}. ${pyRepr(inner)} is not of type 'object'`,
    );
  const allowed = new Set<string>(resources);
  const entries = Object.entries(inner as Record<string, unknown>);
  const unknown = entries.filter(([k]) => !allowed.has(k) && !(envelope === "quota_set" && k === "force"));
  if (unknown.length)
    throw badRequest(
      `Invalid input for field/attribute ${envelope}. Value: ${pyRepr(inner)}. Additional properties are not allowed (${unknown.map(([k]) => `'${k}'`).join(", ")} ${unknown.length > 1 ? "were" : "was"} unexpected)`,
    );
  const set: Partial<Limits> = {};
  let force = false;
  for (const [k, value] of entries) {
    if (k === "force") {
      if (typeof value === "boolean") force = value;
      else if (typeof value === "string" && /^(true|false|1|0|yes|no|on|off)$/i.test(value))
        force = /^(true|1|yes|on)$/i.test(value);
      else
        throw badRequest(
          `Invalid input for field/attribute force. Value: ${value}. ${repr(value)} is not one of [True, 'True', 'TRUE', 'true', '1', 'ON', 'On', 'on', 'YES', 'Yes', 'yes', False, 'False', 'FALSE', 'false', '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no']`,
        );
      continue;
    }
    set[k as QuotaResource] = quotaValue(k, value);
  }
  return { set, force };
}

/**
 * Nova refuses a limit below what is already used (unless forced):
 * `Quota limit 2 for instances must be greater than or equal to already used and reserved 3.`
 */
export function checkNotBelowUsage(
  set: Partial<Limits>,
  inUse: Partial<Record<QuotaResource, number>>,
): void {
  for (const [k, limit] of Object.entries(set) as [QuotaResource, number][]) {
    const used = inUse[k] ?? 0;
    if (limit !== -1 && limit < used)
      throw badRequest(
        `Quota limit ${limit} for ${k} must be greater than or equal to already used and reserved ${used}.`,
      );
  }
}

/**
 * Nova's _validate_quota_limit over each resource set, in the body's order: below the minimum
 * (what is used, and for a project what its users' own limits add up to) or above the maximum (for
 * a user, what its project has not given its other users) is a 400; -1 counts as infinite.
 */
export function checkSettable(set: Partial<Limits>, range: (r: QuotaResource) => Settable): void {
  const inf = (v: number) => (v === -1 ? Number.POSITIVE_INFINITY : v);
  for (const [k, limit] of Object.entries(set) as [QuotaResource, number][]) {
    const { minimum, maximum } = range(k);
    if (inf(limit) < inf(minimum))
      throw badRequest(
        `Quota limit ${limit} for ${k} must be greater than or equal to already used and reserved ${minimum}.`,
      );
    if (inf(limit) > inf(maximum))
      throw badRequest(`Quota limit ${limit} for ${k} must be less than or equal to ${maximum}.`);
  }
}

export const quotaSetResources = (v: ApiVersion) => forVersion(QUOTA_SET_RESOURCES, v);
export const quotaClassResources = (v: ApiVersion) => forVersion(QUOTA_CLASS_RESOURCES, v);
