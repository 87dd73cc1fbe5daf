// What Glance's front accepts, as zod schemas with Glance's texts: the image list's query
// (limit, sort) and a create's body (its jsonschema's refusals, and what the catalog does not keep).
import { z } from "zod";
import type { BodyRules } from "../body.js";
import { Refusal } from "../errors.js";
import { jsonBody, queryOf } from "../front.js";

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DISK_FORMATS = ["ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop"];
const CONTAINER_FORMATS = ["ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed"];

const MALFORMED = "Malformed JSON in request body.";
export const GLANCE_BODY: BodyRules = { malformedBody: () => new Refusal(400, MALFORMED) };

/** Glance's api_limit_max and limit_param_default. */
const LIMIT_MAX = 1000;
const LIMIT_DEFAULT = 25;

/** The list's own parameters; any other filters on a property. */
export const LIST_PARAMS = new Set([
  "limit",
  "marker",
  "name",
  "status",
  "visibility",
  "owner",
  "sort",
  "sort_key",
  "sort_dir",
  "member_status",
  "os_hidden",
  "tag",
]);

const SORT_KEYS = new Set([
  "name",
  "status",
  "created_at",
  "updated_at",
  "id",
  "size",
  "min_disk",
  "min_ram",
]);

export interface ImageListQuery {
  /** each parameter's first value */
  q: Record<string, string>;
  /** the limit asked (its next link repeats it), and the page's size (at most api_limit_max) */
  limit: { asked: number; shown: number };
  sort?: { key: string; dir: "asc" | "desc" };
}

const refused = (ctx: z.RefinementCtx, message: string) => {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
};

/**
 * Glance's sort_key/sort_dir (or sort=<key>:<dir>,…), the first key only, descending unless
 * asked; a limit of 0 or more.
 */
const listQuery = z.record(z.string(), z.array(z.string())).transform((all, ctx): ImageListQuery => {
  const q = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v[0]!]));
  const asked = q.limit === undefined ? LIMIT_DEFAULT : Number(q.limit);
  if (!Number.isInteger(asked) || asked < 0) return refused(ctx, "limit param must be positive");
  const limit = { asked, shown: Math.min(asked, LIMIT_MAX) };
  const [spec] = (q.sort ?? "").split(",");
  const [key, dir] = q.sort ? (spec ?? "").split(":") : [q.sort_key, q.sort_dir];
  if (key === undefined) return { q, limit };
  if (!SORT_KEYS.has(key)) return refused(ctx, `Invalid sort key: ${key}.`);
  const d = dir ?? "desc";
  if (d !== "asc" && d !== "desc") return refused(ctx, `Invalid sort direction: ${d}`);
  return { q, limit, sort: { key, dir: d } };
});

export const imageListQuery = queryOf(listQuery, (f) => new Refusal(400, f.issue.message));

const SCHEMA = "Provided object does not match schema 'image'";
const json = (v: unknown) => JSON.stringify(v);
const UUID_PATTERN =
  "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$";

/** A format: unset (or null), or one of Glance's. */
const format = (allowed: string[]) =>
  z
    .enum(allowed as [string, ...string[]], {
      error: (iss) => `${SCHEMA}: ${json(iss.input)} is not one of ${json(allowed)}`,
    })
    .nullish();

/** min_disk, min_ram: 0 unless given (or null), else an integer of 0 or more. */
const size = (k: string) =>
  z
    .int({
      error: (iss) =>
        `${SCHEMA}: ${json(iss.input)} is not valid under any of the given schemas\n\nFailed validating 'type' in schema['properties']['${k}']`,
    })
    .min(0)
    .nullish()
    .transform((v) => v ?? 0);

const KNOWN = new Set([
  "id",
  "name",
  "visibility",
  "protected",
  "tags",
  "disk_format",
  "container_format",
  "os_hidden",
  "min_disk",
  "min_ram",
]);

/**
 * A create's body, checked in the order Glance's answers name them: the id, the name, what the
 * catalog does not keep (a visibility other than public, protected, tags), the formats, the other
 * properties (strings, kept as the image's), then the sizes.
 */
const createSchema = z
  .object(
    {
      id: z
        .string({ error: (iss) => `${SCHEMA}: ${json(iss.input)} does not match '${UUID_PATTERN}'` })
        .regex(UUID)
        .nullish(),
      name: z
        .string({ error: () => `${SCHEMA}: name must be a string of at most 255 characters` })
        .max(255)
        .nullish(),
      visibility: z
        .literal("public", {
          error: () => "Only public images are served here: the catalog's images are every project's.",
        })
        .optional(),
      protected: z
        .unknown()
        .refine((v) => v !== true, "Protected images are not supported here.")
        .optional(),
      tags: z
        .unknown()
        .refine((v) => !(Array.isArray(v) && v.length), "Image tags are not supported here.")
        .optional(),
      disk_format: format(DISK_FORMATS),
      container_format: format(CONTAINER_FORMATS),
      os_hidden: z.unknown().optional(),
      min_disk: z.unknown().optional(),
      min_ram: z.unknown().optional(),
    },
    { error: () => MALFORMED },
  )
  .catchall(
    z.string({
      error: (iss) =>
        `${SCHEMA}: ${json(iss.input)} is not of type 'string'\n\nFailed validating 'type' in schema['additionalProperties']`,
    }),
  )
  // the sizes last: only a body whose other attributes pass reaches them
  .transform((body, ctx) => {
    const sizes: Record<string, number> = {};
    for (const k of ["min_disk", "min_ram"] as const) {
      const r = size(k).safeParse(body[k]);
      if (!r.success) return refused(ctx, r.error.issues[0]!.message);
      sizes[k] = r.data;
    }
    const properties: Record<string, string> = {};
    for (const [k, v] of Object.entries(body)) if (!KNOWN.has(k)) properties[k] = v as string;
    return {
      id: body.id ?? undefined,
      name: body.name ?? undefined,
      disk_format: body.disk_format ?? undefined,
      container_format: body.container_format ?? undefined,
      min_disk: sizes.min_disk!,
      min_ram: sizes.min_ram!,
      properties,
    };
  });

export type ImageBody = z.output<typeof createSchema>;

export const imageBody = jsonBody(GLANCE_BODY, createSchema, (f) => new Refusal(400, f.issue.message));
