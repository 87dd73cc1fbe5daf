// Glance v2 on DevStack's path, /image: the catalog's images in Glance's shape (list with name,
// visibility, status, owner and property filters and marker/limit paging, show, delete, a
// snapshot's data) and, for the admin, a metadata-only create. What a project sees is Glance's:
// public images, its own, those shared with it. Nova's own /v2.1/images proxy stays. Errors in Glance's plain-text shape; a missing or
// unknown token is Keystone's 401, as keystonemiddleware answers it in front of Glance.
import { randomUUID } from "node:crypto";
import { type Context, Hono } from "hono";
import { createImage, imageVisibleTo } from "../../catalog/image-create.js";
import type { Image } from "../../catalog/types.js";
import { type ImageStore, s3ImageStore } from "../../compute/image-store.js";
import { deleteServerImage } from "../../instances/snapshot.js";
import { type AuthContext, type AuthDeps, authenticate } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { UNAUTHORIZED_BODY } from "../errors.js";
import { type GlanceRule, glanceDecision, glanceRefusal } from "../policy.js";
import { imageView, versionsDocument } from "./views.js";

type ImageEnv = { Variables: { baseUrl: string; imageAuth: AuthContext } };
type C = Context<ImageEnv>;

/** The list's own parameters; any other filters on a property. */
const LIST_PARAMS = new Set([
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

/** How long a download's presigned URL reads the data. */
const DOWNLOAD_URL_SECONDS = 3600;

let store: ImageStore | undefined;
const imageData = (): ImageStore => {
  store ??= s3ImageStore();
  return store;
};

/** Glance's api_limit_max and limit_param_default. */
const LIMIT_MAX = 1000;
const LIMIT_DEFAULT = 25;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DISK_FORMATS = ["ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop"];
const CONTAINER_FORMATS = ["ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed"];

class GlanceError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

const TITLES = { 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 409: "Conflict" } as const;

/** Glance's policy check (lib/api/policy.ts): 403 with its text, or 404 where it hides the image. */
function enforce(c: C, rule: GlanceRule, onImage: boolean): void {
  const d = glanceDecision(c.get("imageAuth"), rule, onImage);
  if (d === 403) throw new GlanceError(403, glanceRefusal(rule));
  // webob's HTTPNotFound() as Glance raises it, with its default text
  if (d === 404) throw new GlanceError(404, "The resource could not be found.");
}

export type ImageAppDeps = AuthDeps & Pick<ApiDeps, "listImages" | "getImage">;

export function imageApp(deps: ImageAppDeps): Hono<ImageEnv> {
  const app = new Hono<ImageEnv>({ strict: false });
  app.onError((e, c) => {
    if (!(e instanceof GlanceError)) throw e;
    return c.text(`${e.status} ${TITLES[e.status]}\n\n${e.message}\n\n   `, e.status);
  });

  app.get("/", (c) => c.json(versionsDocument(c.get("baseUrl")), 300));
  app.get("/versions", (c) => c.json(versionsDocument(c.get("baseUrl"))));

  app.use("/v2/*", async (c, next) => {
    const auth = await authenticate(Object.fromEntries(c.req.raw.headers), deps);
    if (!auth) return c.json(UNAUTHORIZED_BODY, 401);
    c.set("imageAuth", auth);
    await next();
  });

  app.get("/v2/images", async (c: C) => {
    enforce(c, "get_images", false);
    const q = c.req.query();
    const limit = q.limit === undefined ? LIMIT_DEFAULT : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 0) throw new GlanceError(400, "limit param must be positive");
    const auth = c.get("imageAuth");
    const own = (i: Image) => i.owner === auth.project_id;
    // Glance's default listing: public, own and shared-with-me images; an admin's, every one
    const shown = (i: Image) => {
      const v = i.visibility ?? "public";
      if (q.visibility === undefined || q.visibility === "all") return imageVisibleTo(i, auth);
      if (q.visibility !== v) return false;
      return v === "public" || auth.isAdmin || own(i) || (i.members ?? []).includes(auth.project_id);
    };
    // any other parameter filters on a property (Glance's ?<property>=<value>)
    const props = Object.entries(q).filter(([k]) => !LIST_PARAMS.has(k));
    let images = (await deps.listImages()).filter(
      (i) =>
        shown(i) &&
        (q.name === undefined || i.name === q.name) &&
        (q.status === undefined || i.status === q.status) &&
        (q.owner === undefined || i.owner === q.owner) &&
        props.every(([k, v]) => i.properties[k] === v),
    );
    images = sorted(images, q);
    if (q.marker !== undefined) {
      const at = images.findIndex((i) => i.id === q.marker);
      if (at === -1) throw new GlanceError(400, `marker [${q.marker}] not found`);
      images = images.slice(at + 1);
    }
    const page = images.slice(0, Math.min(limit, LIMIT_MAX));
    const rest = new URLSearchParams(
      Object.entries(q).filter(([k]) => k !== "marker" && k !== "limit"),
    ).toString();
    const more = page.length > 0 && images.length > page.length;
    return c.json({
      images: page.map(imageView),
      first: `/v2/images${rest ? `?${rest}` : ""}`,
      schema: "/v2/schemas/images",
      ...(more
        ? { next: `/v2/images?${rest ? `${rest}&` : ""}marker=${page[page.length - 1]!.id}&limit=${limit}` }
        : {}),
    });
  });

  /** By id only: Glance has no lookup by name here (clients list with ?name=). */
  const visible = async (c: C): Promise<Image> => {
    const id = c.req.param("id")!;
    const image = UUID.test(id) ? await deps.getImage(id) : undefined;
    if (!image || image.id !== id || !imageVisibleTo(image, c.get("imageAuth")))
      throw new GlanceError(404, `No image found with ID ${id}`);
    return image;
  };

  app.get("/v2/images/:id", async (c: C) => {
    const image = await visible(c);
    enforce(c, "get_image", true);
    return c.json(imageView(image));
  });

  // Glance's delete: the owner's project or an admin; a server's image takes its data along
  app.delete("/v2/images/:id", async (c: C) => {
    const image = await visible(c);
    enforce(c, "delete_image", true);
    const auth = c.get("imageAuth");
    if (!auth.isAdmin && image.owner !== auth.project_id)
      throw new GlanceError(403, "You are not permitted to delete this image.");
    await deleteServerImage(image.id);
    return c.body(null, 204);
  });

  // The data of a server's snapshot: a redirect to the images bucket, where a presigned URL reads
  // it (Glance streams it itself; a Lambda's buffered answer holds at most 6 MB, Lambda quotas).
  // An image without data is Glance's 204.
  app.get("/v2/images/:id/file", async (c: C) => {
    const image = await visible(c);
    enforce(c, "download_image", true);
    if (image.status !== "active" || !image.size) return c.body(null, 204);
    return c.redirect(await imageData().downloadUrl(image.id, DOWNLOAD_URL_SECONDS), 302);
  });

  app.post("/v2/images", async (c: C) => {
    if (!c.get("imageAuth").isAdmin)
      throw new GlanceError(403, "You are not authorized to complete add_image action.");
    let body: Record<string, unknown>;
    try {
      body = await c.req.json();
    } catch {
      throw new GlanceError(400, "Malformed JSON in request body.");
    }
    if (!body || typeof body !== "object" || Array.isArray(body))
      throw new GlanceError(400, "Malformed JSON in request body.");
    const image = imageFromBody(body, deps.now());
    if (!(await createImage(image)))
      throw new GlanceError(409, `Image with identifier ${image.id} already exists!`);
    c.header("Location", `${c.get("baseUrl")}/image/v2/images/${image.id}`);
    return c.json(imageView(image), 201);
  });

  // Image data comes from servers' snapshots only (the compute driver boots a seeded image from its
  // record): an upload is refused as Glance refuses one to an image that is already active.
  app.put("/v2/images/:id/file", async (c: C) => {
    await visible(c);
    enforce(c, "upload_image", true);
    throw new GlanceError(
      409,
      "Image status transition from active to saving is not allowed: novaless keeps no image data, an image is its metadata",
    );
  });

  app.all("*", () => {
    throw new GlanceError(404, "The resource could not be found.");
  });
  return app;
}

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

/**
 * Glance's sort_key/sort_dir (or sort=<key>:<dir>,…), the first key only; without either, the
 * catalog's order (name, then id).
 */
function sorted(images: Image[], q: Record<string, string>): Image[] {
  const [spec] = (q.sort ?? "").split(",");
  const [sortKey, sortDir] = q.sort ? (spec ?? "").split(":") : [q.sort_key, q.sort_dir];
  if (sortKey === undefined) return images;
  if (!SORT_KEYS.has(sortKey)) throw new GlanceError(400, `Invalid sort key: ${sortKey}.`);
  const dir = sortDir ?? "desc";
  if (dir !== "asc" && dir !== "desc") throw new GlanceError(400, `Invalid sort direction: ${dir}`);
  const value = (i: Image) => {
    const v =
      (i as unknown as Record<string, unknown>)[sortKey] ?? (sortKey === "updated_at" ? i.created_at : "");
    return typeof v === "number" ? v : String(v);
  };
  const sign = dir === "asc" ? 1 : -1;
  return [...images].sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    return (x < y ? -1 : x > y ? 1 : a.id.localeCompare(b.id)) * sign;
  });
}

const intField = (body: Record<string, unknown>, k: string): number => {
  const v = body[k] ?? 0;
  if (!Number.isInteger(v) || (v as number) < 0)
    throw new GlanceError(
      400,
      `Provided object does not match schema 'image': ${JSON.stringify(v)} is not valid under any of the given schemas\n\nFailed validating 'type' in schema['properties']['${k}']`,
    );
  return v as number;
};

function enumField(body: Record<string, unknown>, k: string, allowed: string[]): string | undefined {
  const v = body[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string" || !allowed.includes(v))
    throw new GlanceError(
      400,
      `Provided object does not match schema 'image': ${JSON.stringify(v)} is not one of ${JSON.stringify(allowed)}`,
    );
  return v;
}

/**
 * The record a create makes. Its status is `active`, not Glance's `queued`: the catalog has no
 * image data anywhere (the compute driver boots from the record), so there is nothing to upload and
 * a queued image would be one Nova could never boot.
 */
function imageFromBody(body: Record<string, unknown>, now: Date): Image {
  const id = body.id ?? randomUUID();
  if (typeof id !== "string" || !UUID.test(id))
    throw new GlanceError(
      400,
      `Provided object does not match schema 'image': ${JSON.stringify(id)} does not match '^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$'`,
    );
  const name = body.name ?? null;
  if (name !== null && (typeof name !== "string" || name.length > 255))
    throw new GlanceError(
      400,
      "Provided object does not match schema 'image': name must be a string of at most 255 characters",
    );
  if (body.visibility !== undefined && body.visibility !== "public")
    throw new GlanceError(
      400,
      "Only public images are served here: the catalog's images are every project's.",
    );
  // Not kept by the catalog: refused rather than silently dropped.
  if (body.protected === true) throw new GlanceError(400, "Protected images are not supported here.");
  if (Array.isArray(body.tags) && body.tags.length)
    throw new GlanceError(400, "Image tags are not supported here.");
  const properties: Record<string, string> = {};
  const diskFormat = enumField(body, "disk_format", DISK_FORMATS);
  const containerFormat = enumField(body, "container_format", CONTAINER_FORMATS);
  if (diskFormat) properties.disk_format = diskFormat;
  if (containerFormat) properties.container_format = containerFormat;
  const known = new Set([
    "id",
    "name",
    "visibility",
    "disk_format",
    "container_format",
    "min_disk",
    "min_ram",
    "protected",
    "tags",
    "os_hidden",
  ]);
  for (const [k, v] of Object.entries(body)) {
    if (known.has(k)) continue;
    if (typeof v !== "string")
      throw new GlanceError(
        400,
        `Provided object does not match schema 'image': ${JSON.stringify(v)} is not of type 'string'\n\nFailed validating 'type' in schema['additionalProperties']`,
      );
    properties[k] = v;
  }
  return {
    id,
    name: name ?? "",
    status: "active",
    min_disk: intField(body, "min_disk"),
    min_ram: intField(body, "min_ram"),
    properties,
    created_at: now.toISOString(),
  };
}
