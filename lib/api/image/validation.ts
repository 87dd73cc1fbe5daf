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
const VISIBILITIES = ["community", "public", "private", "shared"] as const;

/** A zod issue with Glance's status where it is not 400 (a read-only or reserved attribute's 403). */
const refusedAs = (ctx: z.RefinementCtx, message: string, status = 400) => {
  ctx.addIssue({ code: "custom", message, params: { status } });
  return z.NEVER;
};

/** A refusal of a body's check: its status and text, as the issue carries them. */
export const bodyRefusal = (issue: z.core.$ZodIssue) =>
  new Refusal((issue as { params?: { status?: number } }).params?.status ?? 400, issue.message);

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

/** An extra property's value: Glance's schema takes strings only. */
const extra = z.string({
  error: (iss) =>
    `${SCHEMA}: ${json(iss.input)} is not of type 'string'\n\nFailed validating 'type' in schema['additionalProperties']`,
});

/** Glance's image schema for its own attributes a body may give (get_base_properties). */
const FIELDS = {
  id: z
    .string({ error: (iss) => `${SCHEMA}: ${json(iss.input)} does not match '${UUID_PATTERN}'` })
    .regex(UUID)
    .nullish(),
  name: z
    .string({ error: () => `${SCHEMA}: name must be a string of at most 255 characters` })
    .max(255)
    .nullish(),
  visibility: z
    .enum(VISIBILITIES, {
      error: (iss) => `${SCHEMA}: ${json(iss.input)} is not one of ${json(VISIBILITIES)}`,
    })
    .optional(),
  // what the catalog does not keep: a protected image, an image hidden from lists, tags
  protected: z
    .unknown()
    .refine((v) => v !== true, "Protected images are not supported here.")
    .optional(),
  tags: z
    .unknown()
    .refine((v) => !(Array.isArray(v) && v.length), "Image tags are not supported here.")
    .optional(),
  os_hidden: z
    .unknown()
    .refine((v) => v !== true, "Hidden images are not supported here.")
    .optional(),
  disk_format: format(DISK_FORMATS),
  container_format: format(CONTAINER_FORMATS),
  owner: z
    .string({ error: () => `${SCHEMA}: owner must be a string of at most 255 characters` })
    .max(255)
    .nullish(),
  min_disk: z.unknown().optional(),
  min_ram: z.unknown().optional(),
};

/** What a body may not name: Glance's _disallowed_properties (refused before its schema), read-only. */
const DISALLOWED = ["direct_url", "self", "file", "schema", "stores"];
/** Glance's _readonly_properties: the image's own figures, the catalog's to set. */
const READONLY = [
  "created_at",
  "updated_at",
  "status",
  "checksum",
  "os_hash_algo",
  "os_hash_value",
  "size",
  "virtual_size",
  "id",
  "os_glance_failed_import",
  "os_glance_importing_to_stores",
  ...DISALLOWED,
];
/** Glance's _reserved_properties, and its reserved namespace. */
const RESERVED = ["location", "deleted", "deleted_at"];
const RESERVED_NS = "os_glance";

const readOnly = (k: string) => `Attribute '${k}' is read-only.`;
const reserved = (k: string) =>
  RESERVED.includes(k) || k.startsWith(RESERVED_NS) ? `Attribute '${k}' is reserved.` : undefined;

/** A create's body: what Glance's deserializer and new_image make of it. */
export interface ImageBody {
  id?: string;
  name?: string;
  visibility?: (typeof VISIBILITIES)[number];
  owner?: string;
  disk_format?: string;
  container_format?: string;
  min_disk: number;
  min_ram: number;
  /** the extra properties */
  properties: Record<string, string>;
  /** the read-only attributes it names (new_image's 403, after the policies) */
  readonly: string[];
}

/**
 * A create's body, checked in the order Glance's answers name them: what it may not name at all
 * (403), its schema (the id, the name, what the catalog does not keep, the formats, the other
 * properties as strings, then the sizes), then the extra properties' names (a long one 400, a
 * reserved one 403).
 */
const createSchema = z.unknown().transform((body, ctx): ImageBody => {
  if (!body || typeof body !== "object" || Array.isArray(body)) return refusedAs(ctx, MALFORMED);
  const given = body as Record<string, unknown>;
  for (const k of DISALLOWED) if (k in given) return refusedAs(ctx, readOnly(k), 403);
  const shape = z
    .object({
      ...FIELDS,
      ...Object.fromEntries(READONLY.filter((k) => k !== "id").map((k) => [k, z.unknown().optional()])),
    })
    .catchall(extra)
    .safeParse(given);
  if (!shape.success) return refusedAs(ctx, shape.error.issues[0]!.message);
  // the sizes last: only a body whose other attributes pass reaches them
  const sizes: Record<string, number> = {};
  for (const k of ["min_disk", "min_ram"] as const) {
    const r = size(k).safeParse(given[k]);
    if (!r.success) return refusedAs(ctx, r.error.issues[0]!.message);
    sizes[k] = r.data;
  }
  const properties: Record<string, string> = {};
  for (const [k, v] of Object.entries(given)) {
    if (k in FIELDS || READONLY.includes(k)) continue;
    if (k.length > 255) return refusedAs(ctx, "Custom property should not be greater than 255 characters.");
    const why = reserved(k);
    if (why) return refusedAs(ctx, why, 403);
    properties[k] = v as string;
  }
  const b = shape.data as Record<string, unknown>;
  const opt = <T>(k: string) => (b[k] ?? undefined) as T | undefined;
  return {
    id: opt("id"),
    name: opt("name"),
    visibility: opt("visibility"),
    owner: opt("owner"),
    disk_format: opt("disk_format"),
    container_format: opt("container_format"),
    min_disk: sizes.min_disk!,
    min_ram: sizes.min_ram!,
    properties,
    readonly: READONLY.filter((k) => k !== "id" && k in given),
  };
});

export const imageBody = jsonBody(GLANCE_BODY, createSchema, (f) => bodyRefusal(f.issue));

// ── PATCH: Glance's JSON-patch of an image (RequestDeserializer.update) ──

/** The media types a PATCH may name, and the JSON Schema draft each one's operations follow. */
const PATCH_TYPES: Record<string, 4 | 10> = {
  "application/openstack-images-v2.0-json-patch": 4,
  "application/openstack-images-v2.1-json-patch": 10,
};
const OPERATIONS = ["add", "remove", "replace"] as const;
export type PatchOp = (typeof OPERATIONS)[number];

/** One change: the attribute it names (the pointer's one token), and its value but for a remove. */
export interface ImagePatch {
  op: PatchOp;
  path: string;
  value?: unknown;
  /** draft 4's add refuses an attribute already there */
  draft: 4 | 10;
}

/** The attributes a PATCH sets that are Glance's own (the rest are extra properties). */
export const CORE_ATTRIBUTES = new Set([
  "name",
  "visibility",
  "protected",
  "os_hidden",
  "tags",
  "disk_format",
  "container_format",
  "owner",
  "min_disk",
  "min_ram",
  "locations",
]);

/** Glance's _validate_json_pointer and _decode_json_pointer: one token, `~1` and `~0` decoded. */
function pointer(p: string): string[] {
  const bad = (why: string) => {
    throw new Refusal(400, `Pointer \`${p}\` ${why}`);
  };
  if (!p.startsWith("/")) bad('does not start with "/".');
  if (/\/\s*?\//.test(p.slice(1))) bad('contains adjacent "/".');
  if (p.length > 1 && p.endsWith("/")) bad('end with "/".');
  if (p.slice(1).trim() === "/") bad("does not contains valid token.");
  if (/~[^01]/.test(p) || p.endsWith("~")) bad('contains "~" not part of a recognized escape sequence.');
  return p
    .replace(/^\/+/, "")
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~").trim());
}

/** A change's value against Glance's schema for the attribute (or an extra property's). */
function checkValue(path: string, value: unknown): void {
  let r: { success: boolean; error?: z.ZodError };
  if (path === "min_disk" || path === "min_ram") r = size(path).safeParse(value);
  else if (path in FIELDS) r = FIELDS[path as keyof typeof FIELDS].safeParse(value);
  else if (path === "locations") return;
  else r = extra.safeParse(value);
  if (!r.success) throw new Refusal(400, r.error!.issues[0]!.message);
}

/**
 * A PATCH's operations, checked as Glance's deserializer checks them, in its order and with its
 * texts: the media type (415), a JSON array of objects, each op, its pointer (one token: only
 * locations go deeper, not served here), its value, and what it may not touch (read-only,
 * reserved: 403).
 */
export function imagePatch(contentType: string | undefined, raw: unknown): ImagePatch[] {
  const type = contentType?.split(";")[0]?.trim() ?? "";
  const draft = PATCH_TYPES[type];
  if (draft === undefined) {
    const allowed = Object.keys(PATCH_TYPES).sort().join(", ");
    throw new Refusal(415, `Image PATCH expects Content-Type one of: ${allowed}`, undefined, {
      "accept-patch": allowed,
    });
  }
  if (!Array.isArray(raw)) throw new Refusal(400, "Request body must be a JSON array of operation objects.");
  const available = OPERATIONS.join(", ");
  return raw.map((change): ImagePatch => {
    if (!change || typeof change !== "object" || Array.isArray(change))
      throw new Refusal(400, "Operations must be JSON objects.");
    const c = change as Record<string, unknown>;
    let op: PatchOp;
    let at: unknown;
    if (draft === 10) {
      if (c.op === undefined)
        throw new Refusal(
          400,
          `Unable to find \`op\` in JSON Schema change. It must be one of the following: ${available}.`,
        );
      if (!OPERATIONS.includes(c.op as PatchOp))
        throw new Refusal(
          400,
          `Invalid operation: \`${c.op}\`. It must be one of the following: ${available}.`,
        );
      op = c.op as PatchOp;
      if (!("path" in c)) throw new Refusal(400, "Unable to find 'path' in JSON Schema change");
      at = c.path;
    } else {
      const named = OPERATIONS.filter((o) => o in c);
      if (named.length > 1)
        throw new Refusal(
          400,
          'Operation objects must contain only one member named "add", "remove", or "replace".',
        );
      if (!named.length)
        throw new Refusal(
          400,
          'Operation objects must contain exactly one member named "add", "remove", or "replace".',
        );
      op = named[0]!;
      at = c[op];
    }
    const tokens = pointer(String(at));
    const path = tokens[0]!;
    if (tokens.length !== 1 && !(path === "locations" && op !== "replace" && tokens.length === 2))
      throw new Refusal(400, `Invalid JSON pointer for this resource: '/${tokens.join("/")}'`);
    if (op !== "remove" && !("value" in c))
      throw new Refusal(400, `Operation "${op}" requires a member named "value".`);
    if (READONLY.includes(path)) throw new Refusal(403, readOnly(path));
    const why = reserved(path);
    if (why) throw new Refusal(403, why);
    if (op !== "remove" && tokens.length === 1) checkValue(path, c.value);
    return { op, path, ...(op !== "remove" ? { value: c.value } : {}), draft };
  });
}
