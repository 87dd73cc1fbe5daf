// Nova's quotas as arithmetic: the resources and their defaults, the limits in force (a project's
// own over the default class), and what a create may reserve, with Nova's messages. Pure: the
// store (store.ts) reads and writes the items these functions reason about.

import { NOVA_QUOTA_DEFAULTS, quotaDefaults } from "../config.js";

/** Every quota resource Nova has had, with its default ([quota] options, lib/config.ts's table). */
export const NOVA_DEFAULTS = NOVA_QUOTA_DEFAULTS;

export type QuotaResource = keyof typeof NOVA_DEFAULTS;
export const QUOTA_RESOURCES = Object.keys(NOVA_DEFAULTS) as QuotaResource[];

/** A limit per resource; -1 is unlimited. */
export type Limits = Record<QuotaResource, number>;

/** What a project holds of the counted resources (the `usage#<project>` item). */
export interface Usage {
  instances: number;
  cores: number;
  ram: number;
}

export const NO_USAGE: Usage = { instances: 0, cores: 0, ram: 0 };

/** A limit as a ceiling to compare counts with: -1 (unlimited) is Infinity. */
export const ceiling = (limit: number): number => (limit === -1 ? Number.POSITIVE_INFINITY : limit);

/**
 * The deployment's defaults: Nova's [quota] options, here NOVALESS_QUOTA_<RESOURCE> (for example
 * NOVALESS_QUOTA_INSTANCES=-1); a value that is not an integer >= -1 is ignored.
 */
export function configuredDefaults(env?: Record<string, string | undefined>): Partial<Limits> {
  return quotaDefaults(env);
}

/**
 * The limits in force: the project's own, else the default class's (set through the API), else
 * the deployment's configured defaults, else Nova's.
 */
export function effectiveLimits(defaults: Partial<Limits>, project: Partial<Limits> = {}): Limits {
  return { ...NOVA_DEFAULTS, ...configuredDefaults(), ...defaults, ...project };
}

/** What one create of `count` instances of a flavor asks for. */
export function deltaOf(count: number, flavor: { vcpus: number; memory_mb: number }): Usage {
  return { instances: count, cores: count * flavor.vcpus, ram: count * flavor.memory_mb };
}

const COUNTED = ["instances", "cores", "ram"] as const;

/** Room left under a limit (Infinity when unlimited). */
function headroom(limit: number, used: number): number {
  return limit === -1 ? Number.POSITIVE_INFINITY : Math.max(0, limit - used);
}

export type QuotaCheck = { ok: true; count: number } | { ok: false; message: string };

/**
 * How many of min..max instances fit, as Nova's _check_num_instances_quota: all of max_count if
 * they fit; else as many as the instances, cores and ram headroom allow, if that is at least
 * min_count; else Nova's TooManyInstances message naming (sorted) every resource max_count
 * would exceed: `Quota exceeded for cores, ram: Requested 8, 16384, but already used 18, 40960 of
 * 20, 51200 cores, ram`. A requested count is `min-max` when they differ, as Nova prints it.
 */
export function checkInstances(
  limits: Limits,
  used: Usage,
  flavor: { vcpus: number; memory_mb: number },
  minCount: number,
  maxCount: number,
): QuotaCheck {
  const want = deltaOf(maxCount, flavor);
  const overs = COUNTED.filter((r) => limits[r] !== -1 && used[r] + want[r] > limits[r]);
  if (overs.length === 0) return { ok: true, count: maxCount };
  let allowed = headroom(limits.instances, used.instances);
  if (flavor.vcpus)
    allowed = Math.min(allowed, Math.floor(headroom(limits.cores, used.cores) / flavor.vcpus));
  if (flavor.memory_mb)
    allowed = Math.min(allowed, Math.floor(headroom(limits.ram, used.ram) / flavor.memory_mb));
  if (allowed >= minCount && allowed > 0) return { ok: true, count: Math.min(allowed, maxCount) };
  const requested: Record<(typeof COUNTED)[number], string> = {
    instances: minCount === maxCount ? String(minCount) : `${minCount}-${maxCount}`,
    cores: String(want.cores),
    ram: String(want.ram),
  };
  return { ok: false, message: exceeded(overs, requested, used, limits) };
}

/** Nova's TooManyInstances / OverQuota text, the resources sorted. */
function exceeded(
  overs: readonly (typeof COUNTED)[number][],
  requested: Record<(typeof COUNTED)[number], string>,
  used: Usage,
  limits: Limits,
): string {
  const sorted = [...overs].sort();
  const list = (f: (r: (typeof COUNTED)[number]) => string) => sorted.map(f).join(", ");
  const names = sorted.join(", ");
  return (
    `Quota exceeded for ${names}: Requested ${list((r) => requested[r])}, ` +
    `but already used ${list((r) => String(used[r]))} of ${list((r) => String(limits[r]))} ${names}`
  );
}

/**
 * What a resize adds while it is unconfirmed: usage counts the larger flavor (Nova counts the
 * new flavor's cores and ram when they grow, and gives the old back only on confirm).
 */
export function upsizeDelta(
  from: { vcpus: number; memory_mb: number },
  to: { vcpus: number; memory_mb: number },
): Usage {
  return {
    instances: 0,
    cores: Math.max(0, to.vcpus - from.vcpus),
    ram: Math.max(0, to.memory_mb - from.memory_mb),
  };
}

/** Whether `delta` fits on top of `used` (Nova's quota check of a resize up). */
export function checkDelta(limits: Limits, used: Usage, delta: Usage): QuotaCheck {
  const overs = COUNTED.filter((r) => delta[r] > 0 && limits[r] !== -1 && used[r] + delta[r] > limits[r]);
  if (overs.length === 0) return { ok: true, count: 0 };
  const requested = {
    instances: String(delta.instances),
    cores: String(delta.cores),
    ram: String(delta.ram),
  };
  return { ok: false, message: exceeded(overs, requested, used, limits) };
}

/**
 * The bounds of a reservation's conditional write: each counted resource may be at most
 * `limit - delta` before the write (undefined: unlimited, no condition).
 */
export function reserveCeilings(limits: Limits, delta: Usage): Partial<Usage> {
  const out: Partial<Usage> = {};
  for (const r of COUNTED) if (limits[r] !== -1) out[r] = limits[r] - delta[r];
  return out;
}

/**
 * Nova's PER_PROJECT_QUOTAS (nova/db/main/api.py) that novaless keeps: limits a user cannot have
 * of its own; a PUT with ?user_id= that names them sets the project's.
 */
export const PER_PROJECT_RESOURCES: readonly QuotaResource[] = ["fixed_ips", "floating_ips"];

/** The counted resources, each a conditional counter of the project's and of each user's. */
export const COUNTED_RESOURCES = COUNTED;

/**
 * A user's limits in force (Nova's DbQuotaDriver.get_user_quotas): its own, else its project's.
 * `project` is the project's limits in force (its own over the class and the defaults).
 */
export function userLimits(project: Limits, own: Partial<Limits>): Limits {
  return { ...project, ...own };
}

/**
 * Whether a user's own limits name a counted resource: only then does Nova count the user's
 * instances and check them (compute/utils.py check_num_instances_quota).
 */
export const limitsCounted = (own: Partial<Limits>): boolean => COUNTED.some((r) => own[r] !== undefined);

/** A scope a create or resize is checked in: the project's limits and usage, or a user's. */
export interface QuotaScope {
  limits: Limits;
  used: Usage;
}

/**
 * checkInstances in each scope in turn, the project's first (Nova's
 * limit_check_project_and_user): each scope may reduce max_count further, and the first scope
 * that cannot fit min_count gives the message with its own limits and usage, as Nova's OverQuota
 * carries the scope it was raised for.
 */
export function checkInstancesIn(
  scopes: readonly QuotaScope[],
  flavor: { vcpus: number; memory_mb: number },
  minCount: number,
  maxCount: number,
): QuotaCheck {
  let count = maxCount;
  for (const s of scopes) {
    const check = checkInstances(s.limits, s.used, flavor, minCount, count);
    if (!check.ok) return check;
    count = check.count;
  }
  return { ok: true, count };
}

/** checkDelta in each scope in turn, the project's first. */
export function checkDeltaIn(scopes: readonly QuotaScope[], delta: Usage): QuotaCheck {
  for (const s of scopes) {
    const check = checkDelta(s.limits, s.used, delta);
    if (!check.ok) return check;
  }
  return { ok: true, count: 0 };
}

/** Nova's "unlimited" in the settable arithmetic: any value at or below -1. */
const unlimited = (v: number) => v <= -1;
const sum = (a: number, b: number) => (unlimited(a) || unlimited(b) ? -1 : a + b);
const sub = (a: number, b: number) => (unlimited(a) || unlimited(b) ? -1 : a - b);

export interface Settable {
  minimum: number;
  /** -1: no maximum */
  maximum: number;
}

/**
 * The range an update may set (Nova's DbQuotaDriver.get_settable_quotas). A project's limit must
 * be at least what is used and at least what its users' own limits add up to. A user's must be at
 * least what the user uses, and at most what the project has not given its other users: the
 * project's limit, less every user's own limit, plus this user's own.
 */
export function settableRange(
  resource: QuotaResource,
  project: Limits,
  users: readonly Partial<Limits>[],
  inUse: number,
  user?: Partial<Limits>,
): Settable {
  let remains = project[resource];
  for (const u of users) if (u[resource] !== undefined) remains -= u[resource];
  if (user) return { minimum: inUse, maximum: sum(remains, user[resource] ?? 0) };
  return { minimum: Math.max(sub(project[resource], remains), inUse), maximum: -1 };
}
