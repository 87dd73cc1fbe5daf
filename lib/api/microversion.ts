// Nova's API microversions: negotiated per request from OpenStack-API-Version (or the legacy
// X-OpenStack-Nova-API-Version), 2.1 when absent. What differs between versions is data: tables of
// rows, each with an inclusive version range (`Ranged`), read by forVersion and viewFields, so a
// handler never branches on a version number itself.
import { ApiError } from "./errors.js";

export const MIN_API_VERSION = "2.1";
/** Nova 2024.2 (Dalmatian)'s maximum: 2.96 (pinned_availability_zone). */
export const MAX_API_VERSION = "2.96";

const FORMAT = /^([1-9]\d*)\.(0|[1-9]\d*)$/;

export class ApiVersion {
  constructor(
    readonly major: number,
    readonly minor: number,
  ) {}

  /** "2.47" → ApiVersion; throws on anything else (the caller decides the answer). */
  static parse(s: string): ApiVersion {
    const m = FORMAT.exec(s.trim());
    if (!m)
      throw new Error(`API Version String ${s} is of invalid format. Must be of format MajorNum.MinorNum.`);
    return new ApiVersion(Number(m[1]), Number(m[2]));
  }

  toString(): string {
    return `${this.major}.${this.minor}`;
  }

  compare(o: ApiVersion): number {
    return this.major - o.major || this.minor - o.minor;
  }

  atLeast(v: string): boolean {
    return this.compare(parsed(v)) >= 0;
  }

  /** Inside [min, max], both inclusive; an absent bound is open. */
  matches(min?: string, max?: string): boolean {
    return (min === undefined || this.atLeast(min)) && (max === undefined || this.compare(parsed(max)) <= 0);
  }
}

const cache = new Map<string, ApiVersion>();
function parsed(v: string): ApiVersion {
  let r = cache.get(v);
  if (!r) {
    r = ApiVersion.parse(v);
    cache.set(v, r);
  }
  return r;
}

export const MIN_VERSION = parsed(MIN_API_VERSION);
export const MAX_VERSION = parsed(MAX_API_VERSION);

/** The compute version a header asks for: `compute 2.60`, among other services' (`volume 3.0, compute 2.60`). */
function computeVersionOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(",")) {
    const [service, version, ...rest] = part.trim().split(/\s+/);
    if (service?.toLowerCase() === "compute") return [version ?? "", ...rest].join(" ").trim();
  }
  return undefined;
}

/**
 * The version of a request (lowercased header names), as Nova's APIVersionRequest: the new header
 * wins over the legacy one; `latest` is the maximum; 400 when malformed; 406 when out of range.
 */
export function negotiateVersion(headers: Record<string, string | undefined>): ApiVersion {
  const asked =
    computeVersionOf(headers["openstack-api-version"]) ?? headers["x-openstack-nova-api-version"]?.trim();
  if (asked === undefined || asked === "") return MIN_VERSION;
  if (asked.toLowerCase() === "latest") return MAX_VERSION;
  let v: ApiVersion;
  try {
    v = ApiVersion.parse(asked);
  } catch (e) {
    throw new ApiError("badRequest", (e as Error).message);
  }
  if (!v.matches(MIN_API_VERSION, MAX_API_VERSION)) {
    throw new ApiError(
      "computeFault",
      `Version ${v} is not supported by the API. Minimum is ${MIN_API_VERSION} and maximum is ${MAX_API_VERSION}.`,
      {},
      406,
    );
  }
  return v;
}

/** The headers every compute response carries (Nova's wsgi.Resource adds them). */
export function versionHeaders(v: ApiVersion): Record<string, string> {
  return {
    "openstack-api-version": `compute ${v}`,
    "x-openstack-nova-api-version": `${v}`,
    vary: "OpenStack-API-Version, X-OpenStack-Nova-API-Version",
  };
}

/** A row of a version table: valid from `min` to `max`, both inclusive, either open. */
export type Ranged<T> = { min?: string; max?: string } & T;

/** The value of the last row whose range holds v; throws if none does (a table's gap is a bug). */
export function forVersion<T>(rows: readonly Ranged<{ value: T }>[], v: ApiVersion): T {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!;
    if (v.matches(row.min, row.max)) return row.value;
  }
  throw new Error(`no row of the version table holds ${v}`);
}

/** A field value that removes the key an earlier row set. */
export const OMIT: unique symbol = Symbol("omit");

export type FieldRows<R, C> = readonly Ranged<{
  fields: (r: R, c: C) => Record<string, unknown>;
}>[];

/**
 * A view built from rows of fields: every row whose range holds the version contributes its
 * fields, in order; a later row overrides a key; a value of OMIT removes it.
 */
export function viewFields<R, C>(
  rows: FieldRows<R, C>,
): (r: R, c: C, v: ApiVersion) => Record<string, unknown> {
  return (r, c, v) => {
    const out: Record<string, unknown> = {};
    for (const row of rows) {
      if (!v.matches(row.min, row.max)) continue;
      for (const [k, val] of Object.entries(row.fields(r, c))) {
        if (val === OMIT) delete out[k];
        else out[k] = val;
      }
    }
    return out;
  };
}
