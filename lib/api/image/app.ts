// Glance v2 on DevStack's path, /image: the catalog's images in Glance's shape (list with name,
// visibility, status, owner and property filters and marker/limit paging, show, delete, a
// snapshot's data) and, for the admin, a metadata-only create. What a project sees is Glance's:
// public images, its own, those shared with it. Nova's own /v2.1/images proxy stays. On the one
// front (lib/api/front.ts): errors in Glance's plain-text shape, a missing or unknown token
// Keystone's 401 (keystonemiddleware in front of Glance), the query and the create's body checked
// with zod (./validation.ts).
import { randomUUID } from "node:crypto";
import type { Context, Hono, MiddlewareHandler } from "hono";
import { createImage, imageVisibleTo } from "../../catalog/image-create.js";
import type { Image } from "../../catalog/types.js";
import { type ImageStore, s3ImageStore } from "../../compute/image-store.js";
import { deleteServerImage } from "../../instances/snapshot.js";
import type { AuthDeps } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { Refusal } from "../errors.js";
import { createFront, type FrontEnv, type Service } from "../front.js";
import { type GlanceRule, glanceDecision, glanceRefusal } from "../policy.js";
import {
  abortUpload,
  beginUpload,
  completeUpload,
  UPLOAD_STEP_HEADER,
  UPLOAD_URL_SECONDS,
  type UploadStep,
} from "./upload.js";
import {
  GLANCE_BODY,
  type ImageBody,
  type ImageListQuery,
  imageBody,
  imageListQuery,
  LIST_PARAMS,
  UUID,
} from "./validation.js";
import { imageView, versionsDocument } from "./views.js";

type ImageEnv = FrontEnv;
type C = Context<ImageEnv>;

/** How long a download's presigned URL reads the data. */
const DOWNLOAD_URL_SECONDS = 3600;

let store: ImageStore | undefined;
const imageData = (): ImageStore => {
  store ??= s3ImageStore();
  return store;
};

const TITLES: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  415: "Unsupported Media Type",
};

/** webob's HTTPNotFound() as Glance raises it, with its default text. */
const NOT_FOUND = () => new Refusal(404, "The resource could not be found.");

/** How Glance's front differs from the others. */
const GLANCE: Service<ImageEnv> = {
  ...GLANCE_BODY,
  errorBody: (r) => ({ text: `${r.status} ${TITLES[r.status]}\n\n${r.message}\n\n   ` }),
  versions: [
    { path: "/", document: versionsDocument, status: 300 },
    { path: "/versions", document: versionsDocument },
  ],
  tokenPaths: ["/v2/*"],
  notFound: NOT_FOUND,
};

/** Glance's policy check (lib/api/policy.ts): 403 with its text, or 404 where it hides the image. */
function enforce(c: C, rule: GlanceRule, onImage: boolean): void {
  const d = glanceDecision(c.get("auth"), rule, onImage);
  if (d === 403) throw new Refusal(403, glanceRefusal(rule));
  if (d === 404) throw NOT_FOUND();
}

/** The same check as a step before the route's validators, where it comes first. */
const enforced =
  (rule: GlanceRule): MiddlewareHandler<ImageEnv> =>
  async (c, next) => {
    enforce(c, rule, false);
    await next();
  };

export type ImageAppDeps = AuthDeps & Pick<ApiDeps, "listImages" | "getImage">;

export function imageApp(deps: ImageAppDeps): Hono<ImageEnv> {
  return createFront(GLANCE, deps, (app) => routes(app, deps));
}

function routes(app: Hono<ImageEnv>, deps: ImageAppDeps): void {
  app.get("/v2/images", enforced("get_images"), imageListQuery, async (c) => {
    const { q, limit, sort } = c.req.valid("query");
    const auth = c.get("auth");
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
    images = sorted(images, sort);
    if (q.marker !== undefined) {
      const at = images.findIndex((i) => i.id === q.marker);
      if (at === -1) throw new Refusal(400, `marker [${q.marker}] not found`);
      images = images.slice(at + 1);
    }
    const page = images.slice(0, limit.shown);
    const rest = new URLSearchParams(
      Object.entries(q).filter(([k]) => k !== "marker" && k !== "limit"),
    ).toString();
    const more = page.length > 0 && images.length > page.length;
    return c.json({
      images: page.map(imageView),
      first: `/v2/images${rest ? `?${rest}` : ""}`,
      schema: "/v2/schemas/images",
      ...(more
        ? {
            next: `/v2/images?${rest ? `${rest}&` : ""}marker=${page[page.length - 1]!.id}&limit=${limit.asked}`,
          }
        : {}),
    });
  });

  /** By id only: Glance has no lookup by name here (clients list with ?name=). */
  const visible = async (c: C): Promise<Image> => {
    const id = c.req.param("id")!;
    const image = UUID.test(id) ? await deps.getImage(id) : undefined;
    if (!image || image.id !== id || !imageVisibleTo(image, c.get("auth")))
      throw new Refusal(404, `No image found with ID ${id}`);
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
    const auth = c.get("auth");
    if (!auth.isAdmin && image.owner !== auth.project_id)
      throw new Refusal(403, "You are not permitted to delete this image.");
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

  const adminOnly: MiddlewareHandler<ImageEnv> = async (c, next) => {
    if (!c.get("auth").isAdmin)
      throw new Refusal(403, "You are not authorized to complete add_image action.");
    await next();
  };
  app.post("/v2/images", adminOnly, imageBody, async (c) => {
    const image = imageFrom(c.req.valid("json"), c.get("auth").project_id, deps.now());
    if (!(await createImage(image)))
      throw new Refusal(409, `Image with identifier ${image.id} already exists!`);
    c.header("Location", `${c.get("baseUrl")}/image/v2/images/${image.id}`);
    return c.json(imageView(image), 201);
  });

  // Glance's upload. The edge (on AWS, the CloudFront distribution's upload behaviour; locally, the
  // front) asks for each step by UPLOAD_STEP_HEADER and sends the body straight to the images
  // bucket; a body that reaches the API itself is stored here (./upload.ts).
  app.put("/v2/images/:id/file", async (c: C) => {
    const image = await visible(c);
    enforce(c, "upload_image", true);
    const auth = c.get("auth");
    if (!auth.isAdmin && image.owner !== auth.project_id)
      throw new Refusal(403, "You are not permitted to upload data for this image.");
    const step = c.req.header(UPLOAD_STEP_HEADER) as UploadStep | undefined;
    const now = deps.now();
    if (step === "complete") {
      await completeUpload(image, imageData(), now);
      return c.body(null, 204);
    }
    if (step === "abort") {
      if (image.status === "saving") await abortUpload(image, imageData(), now);
      return c.body(null, 204);
    }
    const type = c.req.header("content-type")?.split(";")[0]?.trim();
    if (type !== undefined && type !== "application/octet-stream")
      throw new Refusal(415, `Content type ${type} is not supported, use application/octet-stream`);
    const begun = await beginUpload(image, now);
    if (step === "begin") {
      c.header("Location", await imageData().uploadUrl(image.id, UPLOAD_URL_SECONDS));
      return c.body(null, 307);
    }
    try {
      await imageData().putData(image.id, new Uint8Array(await c.req.arrayBuffer()));
    } catch (e) {
      await abortUpload(begun, imageData(), now);
      throw e;
    }
    await completeUpload(begun, imageData(), now);
    return c.body(null, 204);
  });
}

/**
 * Glance's sort (the first key only, checked by the query's schema); without one, the catalog's
 * order (name, then id).
 */
function sorted(images: Image[], sort: ImageListQuery["sort"]): Image[] {
  if (!sort) return images;
  const value = (i: Image) => {
    const v =
      (i as unknown as Record<string, unknown>)[sort.key] ?? (sort.key === "updated_at" ? i.created_at : "");
    return typeof v === "number" ? v : String(v);
  };
  const sign = sort.dir === "asc" ? 1 : -1;
  return [...images].sort((a, b) => {
    const [x, y] = [value(a), value(b)];
    return (x < y ? -1 : x > y ? 1 : a.id.localeCompare(b.id)) * sign;
  });
}

/** The record a create makes: Glance's `queued`, owned by the creator's project, until its data is uploaded. */
function imageFrom(body: ImageBody, owner: string, now: Date): Image {
  const { properties, disk_format, container_format } = body;
  return {
    id: body.id ?? randomUUID(),
    name: body.name ?? "",
    status: "queued",
    owner,
    min_disk: body.min_disk,
    min_ram: body.min_ram,
    properties: {
      ...(disk_format ? { disk_format } : {}),
      ...(container_format ? { container_format } : {}),
      ...properties,
    },
    created_at: now.toISOString(),
  };
}
