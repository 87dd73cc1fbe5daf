// Flavor requests, checked without I/O: POST /flavors (2.55 description), PUT /flavors/{id}
// (2.55), os-extra_specs, flavor access actions, the list's filters, sorting and paging, and who
// sees a flavor (public, shared with the project, or an admin).
import { z } from "zod";
import type { Flavor } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { badRequest } from "../errors.js";
import { type ApiVersion, forVersion } from "../microversion.js";
import { type Query, queryOne } from "../request.js";
import { boolFromString, nonNegativeInt, novaBoolean, novaName, positiveInt, validate } from "./common.js";

/** Nova's schema takes a string or a number (tempest sends integers); the flavor keeps it a string. */
const flavorId = z.union([
  z
    .string()
    .min(1)
    .max(255)
    .regex(/^(?! )[a-zA-Z0-9. _-]+(?<! )$/),
  z
    .number()
    .refine((n) => Number.isFinite(n) && n >= 0)
    .transform((n) => String(n)),
]);

/** rxtx_factor: a number > 0 (or a decimal string), at most a float's maximum. */
const rxtxFactor = z
  .union([z.number(), z.string().regex(/^[0-9]+(\.[0-9]+)?$/)])
  .transform((v) => Number(v))
  .pipe(z.number().gt(0).max(3.40282e38));

const description = z.string().max(65535).nullable();

const createFields = {
  name: novaName,
  id: flavorId.nullable().optional(),
  ram: positiveInt(),
  vcpus: positiveInt(),
  disk: nonNegativeInt(),
  "OS-FLV-EXT-DATA:ephemeral": nonNegativeInt().optional(),
  swap: nonNegativeInt().optional(),
  rxtx_factor: rxtxFactor.optional(),
  "os-flavor-access:is_public": novaBoolean.optional(),
};

export const createFlavorSchema = z.strictObject({
  flavor: z.strictObject({ ...createFields, description: description.optional() }),
});

// a description is accepted from 2.55
const createSchemas = [
  { max: "2.54", value: z.strictObject({ flavor: z.strictObject(createFields) }) as z.ZodType },
  { min: "2.55", value: createFlavorSchema as z.ZodType },
];

/** The flavor a POST /flavors body describes; `newId` supplies the id when none is given. */
export function parseCreateFlavor(raw: unknown, newId: () => string, v: ApiVersion): Flavor {
  const f = (validate(forVersion(createSchemas, v), raw) as z.output<typeof createFlavorSchema>).flavor;
  return {
    id: f.id ?? newId(),
    name: f.name,
    vcpus: f.vcpus,
    memory_mb: f.ram,
    root_gb: f.disk,
    ephemeral_gb: f["OS-FLV-EXT-DATA:ephemeral"] ?? 0,
    swap: f.swap ?? 0,
    rxtx_factor: f.rxtx_factor ?? 1.0,
    is_public: f["os-flavor-access:is_public"] ?? true,
    disabled: false,
    extra_specs: {},
    description: f.description ?? null,
    projects: [],
  };
}

const updateFlavorSchema = z.strictObject({ flavor: z.strictObject({ description }) });

/** PUT /flavors/{id} (2.55): `{"flavor": {"description": …}}`, the only field that changes. */
export function parseUpdateFlavor(raw: unknown): string | null {
  return validate(updateFlavorSchema, raw).flavor.description;
}

const tenant = z.strictObject({ tenant: z.string().min(1).max(255) });
const flavorActionSchema = z.union([
  z.strictObject({ addTenantAccess: tenant }),
  z.strictObject({ removeTenantAccess: tenant }),
]);

export type FlavorAction = { add: true; tenant: string } | { add: false; tenant: string };

/** POST /flavors/{id}/action: addTenantAccess or removeTenantAccess. */
export function parseFlavorAction(raw: unknown): FlavorAction {
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw)) {
    const keys = Object.keys(raw);
    if (keys.length === 1 && !["addTenantAccess", "removeTenantAccess"].includes(keys[0]!)) {
      throw badRequest(`There is no such action: ${keys[0]}`);
    }
  }
  const a = validate(flavorActionSchema, raw);
  return "addTenantAccess" in a
    ? { add: true, tenant: a.addTenantAccess.tenant }
    : { add: false, tenant: a.removeTenantAccess.tenant };
}

/** Nova's extra-specs body: keys of [a-zA-Z0-9-_:. ]{1,255}, values strings (numbers/booleans are stringified). */
export const extraSpecsSchema = z.strictObject({
  extra_specs: z.record(
    z.string().regex(/^[a-zA-Z0-9-_:. ]{1,255}$/),
    z.union([z.string().max(255), z.number(), z.boolean()]).transform((v) => String(v)),
  ),
});

export function parseExtraSpecs(raw: unknown): Record<string, string> {
  return validate(extraSpecsSchema, raw).extra_specs;
}

/** Nova's flavor sort keys (index_query_v275) and the field each sorts by here. */
const SORT_KEYS: Record<string, (f: Flavor) => string | number | boolean | null> = {
  flavorid: (f) => f.id,
  id: (f) => f.id,
  name: (f) => f.name,
  memory_mb: (f) => f.memory_mb,
  root_gb: (f) => f.root_gb,
  ephemeral_gb: (f) => f.ephemeral_gb,
  swap: (f) => f.swap,
  vcpus: (f) => f.vcpus,
  rxtx_factor: (f) => f.rxtx_factor,
  is_public: (f) => f.is_public,
  disabled: (f) => f.disabled,
  description: (f) => f.description,
  // not kept here: every flavor ties, so the order is the id's
  created_at: () => 0,
  updated_at: () => 0,
  vcpu_weight: () => 0,
};

export interface FlavorListFilters {
  /** true: public only; false: private only; null: both (admin's `is_public=none`) */
  isPublic: boolean | null;
  /** a member's project: its private flavors shared with it are listed too; disabled ones are not */
  projectId?: string;
  minRam?: number;
  minDisk?: number;
  sortKey: string;
  sortDir: "asc" | "desc";
  limit?: number;
  marker?: string;
}

function minFilter(query: Query, name: string): number | undefined {
  const v = queryOne(query, name);
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw badRequest(`Invalid ${name} filter [${v}]`);
  return Number(v);
}

/**
 * Nova's flavor list query. A member sees public flavors and those shared with their project;
 * only an admin may ask for private ones (`is_public=false` or `none`).
 */
export function parseFlavorListQuery(query: Query, auth: AuthContext): FlavorListFilters {
  let isPublic: boolean | null = true;
  const raw = queryOne(query, "is_public");
  if (auth.isAdmin && raw !== undefined) {
    if (raw.toLowerCase() === "none") isPublic = null;
    else {
      const b = boolFromString(raw);
      if (b === undefined) throw badRequest(`Invalid is_public filter [${raw}]`);
      isPublic = b;
    }
  }
  const sortKey = queryOne(query, "sort_key") || "flavorid";
  if (!(sortKey in SORT_KEYS)) {
    throw badRequest(
      `Invalid input for query parameters sort_key. Value: ${sortKey}. '${sortKey}' is not one of [${Object.keys(
        SORT_KEYS,
      )
        .map((k) => `'${k}'`)
        .join(", ")}]`,
    );
  }
  const sortDir = queryOne(query, "sort_dir") || "asc";
  if (sortDir !== "asc" && sortDir !== "desc") {
    throw badRequest(
      `Invalid input for query parameters sort_dir. Value: ${sortDir}. '${sortDir}' is not one of ['asc', 'desc']`,
    );
  }
  const f: FlavorListFilters = { isPublic, sortKey, sortDir };
  if (!auth.isAdmin) f.projectId = auth.project_id;
  const minRam = minFilter(query, "minRam");
  if (minRam !== undefined) f.minRam = minRam;
  const minDisk = minFilter(query, "minDisk");
  if (minDisk !== undefined) f.minDisk = minDisk;
  const limit = queryOne(query, "limit");
  if (limit !== undefined) {
    if (!/^[0-9]+$/.test(limit)) throw badRequest("limit param must be an integer");
    f.limit = Number(limit);
  }
  const marker = queryOne(query, "marker");
  if (marker !== undefined) f.marker = marker;
  return f;
}

function compare(a: string | number | boolean | null, b: string | number | boolean | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

/** Filtered, sorted (sort_key, then id) and paged (marker: a flavor id, then limit). */
export function filterFlavors(flavors: Flavor[], f: FlavorListFilters, maxLimit = 1000): Flavor[] {
  const key = SORT_KEYS[f.sortKey]!;
  const dir = f.sortDir === "desc" ? -1 : 1;
  let out = flavors
    .filter(
      (x) =>
        (f.projectId === undefined
          ? f.isPublic === null || x.is_public === f.isPublic
          : !x.disabled && (x.is_public || (x.projects ?? []).includes(f.projectId))) &&
        (f.minRam === undefined || x.memory_mb >= f.minRam) &&
        (f.minDisk === undefined || x.root_gb >= f.minDisk),
    )
    .sort((a, b) => dir * (compare(key(a), key(b)) || compare(a.id, b.id)));
  if (f.marker !== undefined) {
    const i = out.findIndex((x) => x.id === f.marker);
    if (i === -1) throw badRequest(`marker [${f.marker}] not found`);
    out = out.slice(i + 1);
  }
  return out.slice(0, Math.min(f.limit ?? maxLimit, maxLimit));
}

/** A member sees a flavor when it is public or shared with their project; an admin sees all. */
export function canSeeFlavor(f: Flavor, auth: AuthContext): boolean {
  return f.is_public || auth.isAdmin || (f.projects ?? []).includes(auth.project_id);
}
