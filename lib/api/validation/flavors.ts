// Flavor requests, checked without I/O: POST /flavors, os-extra-specs, and the list filters.
import { z } from "zod";
import type { Flavor } from "../../catalog/types.js";
import type { AuthContext } from "../auth.js";
import { badRequest } from "../errors.js";
import { type Query, queryOne } from "../request.js";
import { boolFromString, nonNegativeInt, novaBoolean, novaName, positiveInt, validate } from "./common.js";

const flavorId = z
  .string()
  .min(1)
  .max(255)
  .regex(/^(?! )[a-zA-Z0-9. _-]+(?<! )$/);

/** rxtx_factor: a number > 0 (or a decimal string), at most a float's maximum. */
const rxtxFactor = z
  .union([z.number(), z.string().regex(/^[0-9]+(\.[0-9]+)?$/)])
  .transform((v) => Number(v))
  .pipe(z.number().gt(0).max(3.40282e38));

export const createFlavorSchema = z.strictObject({
  flavor: z.strictObject({
    name: novaName,
    id: flavorId.nullable().optional(),
    ram: positiveInt(),
    vcpus: positiveInt(),
    disk: nonNegativeInt(),
    "OS-FLV-EXT-DATA:ephemeral": nonNegativeInt().optional(),
    swap: nonNegativeInt().optional(),
    rxtx_factor: rxtxFactor.optional(),
    "os-flavor-access:is_public": novaBoolean.optional(),
    description: z.string().max(65535).nullable().optional(),
  }),
});

/** The flavor a POST /flavors body describes; `newId` supplies the id when none is given. */
export function parseCreateFlavor(raw: unknown, newId: () => string): Flavor {
  const f = validate(createFlavorSchema, raw).flavor;
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
  };
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

export interface FlavorListFilters {
  /** true: public only; false: private only; null: both (admin's `is_public=none`) */
  isPublic: boolean | null;
  minRam?: number;
  minDisk?: number;
}

function minFilter(query: Query, name: string): number | undefined {
  const v = queryOne(query, name);
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw badRequest(`Invalid ${name} filter [${v}]`);
  return Number(v);
}

/**
 * Nova's flavor list filters. Everyone sees public flavors by default; only an admin may ask
 * for private ones (`is_public=false` or `none`), as no project has flavor access here.
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
  return { isPublic, minRam: minFilter(query, "minRam"), minDisk: minFilter(query, "minDisk") };
}

/** Filtered, and sorted by flavor id as Nova's default (sort_key=flavorid, sort_dir=asc). */
export function filterFlavors(flavors: Flavor[], f: FlavorListFilters): Flavor[] {
  return flavors
    .filter(
      (x) =>
        (f.isPublic === null || x.is_public === f.isPublic) &&
        (f.minRam === undefined || x.memory_mb >= f.minRam) &&
        (f.minDisk === undefined || x.root_gb >= f.minDisk),
    )
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A member sees a flavor only when it is public (no per-project flavor access in novaless). */
export function canSeeFlavor(f: Flavor, auth: AuthContext): boolean {
  return f.is_public || auth.isAdmin;
}
