// Glance v2 on DevStack's path, /image: the catalog's images in Glance's shape (list with name,
// visibility, status, owner and property filters and marker/limit paging, show), and what a
// project's members do with their own, as Glance's default policy lets them: create (private,
// shared or community; public ones an admin's), upload (./upload.ts), change (PATCH, ./changes.ts),
// download and delete. What a project sees and lists is Glance's: public and community images,
// its own, those shared with it. Nova's own /v2.1/images proxy stays. On the one front
// (lib/api/front.ts): errors in Glance's plain-text shape, a missing or unknown token Keystone's
// 401 (keystonemiddleware in front of Glance), the query and the bodies checked with zod
// (./validation.ts).
import { randomUUID } from "node:crypto";
import type { Context, Hono, MiddlewareHandler } from "hono";
import { changeImage, createImage, imageListedFor, imageVisibleTo } from "../../catalog/image-create.js";
import type { Image } from "../../catalog/types.js";
import { type ImageStore, s3ImageStore } from "../../compute/image-store.js";
import { deleteServerImage } from "../../instances/snapshot.js";
import type { AuthDeps } from "../auth.js";
import type { ApiDeps } from "../deps.js";
import { Refusal } from "../errors.js";
import { createFront, type FrontEnv, readJson, type Service } from "../front.js";
import { type GlanceRule, glanceDecision, glanceRefusal } from "../policy.js";
import { checkPropertyQuota, enforceOnImage, patchImage, visibilityRule } from "./changes.js";
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
  imagePatch,
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
  413: "Request Entity Too Large",
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

/** Glance's policy check on no image (a list): 403 with its text. */
function enforce(c: C, rule: GlanceRule): void {
  if (glanceDecision(c.get("auth"), rule) !== "allow") throw new Refusal(403, glanceRefusal(rule));
}

/** The same check as a step before the route's validators, where it comes first. */
const enforced =
  (rule: GlanceRule): MiddlewareHandler<ImageEnv> =>
  async (c, next) => {
    enforce(c, rule);
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
    const shown = (i: Image) => imageListedFor(i, auth, q.visibility);
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
    enforceOnImage(c.get("auth"), "get_image", image);
    return c.json(imageView(image));
  });

  // Glance's PATCH: its operations checked (./validation.ts) before the image is looked up, then
  // applied as Glance applies them (./changes.ts), in one write
  app.patch("/v2/images/:id", async (c: C) => {
    const patches = imagePatch(c.req.header("content-type"), await readJson(c, GLANCE_BODY));
    const image = await visible(c);
    const patched = patchImage(image, patches, c.get("auth"), deps.now());
    if (!patched) return c.json(imageView(image));
    const changed = await changeImage(image.id, patched.change, patched.queuedOnly ? ["queued"] : undefined);
    if (!changed) {
      // deleted meanwhile, or its upload began: Glance's answers for each
      const now = await deps.getImage(image.id);
      if (!now) throw new Refusal(404, `No image found with ID ${image.id}`);
      throw new Refusal(403, "Attribute disk_format can be only replaced for a queued image.");
    }
    return c.json(imageView(changed));
  });

  // Glance's delete: the owner's project or an admin; a server's image takes its data along
  app.delete("/v2/images/:id", async (c: C) => {
    const image = await visible(c);
    enforceOnImage(c.get("auth"), "delete_image", image);
    await deleteServerImage(image.id);
    return c.body(null, 204);
  });

  // The data of a server's snapshot: a redirect to the images bucket, where a presigned URL reads
  // it (Glance streams it itself; a Lambda's buffered answer holds at most 6 MB, Lambda quotas).
  // An image without data is Glance's 204.
  app.get("/v2/images/:id/file", async (c: C) => {
    const image = await visible(c);
    enforceOnImage(c.get("auth"), "download_image", image);
    if (image.status !== "active" || !image.size) return c.body(null, 204);
    return c.redirect(await imageData().downloadUrl(image.id, DOWNLOAD_URL_SECONDS), 302);
  });

  // Glance's create: the body first (its deserializer), then add_image on the owner it proposes
  // (the caller's project unless an admin names another), the visibility's own rule, the
  // read-only attributes named (new_image), the property quota (the repository's add)
  app.post("/v2/images", imageBody, async (c) => {
    const body = c.req.valid("json");
    const auth = c.get("auth");
    const owner = body.owner ?? auth.project_id;
    if (glanceDecision(auth, "add_image", { owner, proposed: true }) !== "allow")
      throw new Refusal(
        403,
        owner !== auth.project_id
          ? `You are not permitted to create images owned by '${owner}'`
          : glanceRefusal("add_image"),
      );
    const rule = visibilityRule(body.visibility);
    if (rule && glanceDecision(auth, rule, { owner, proposed: true }) !== "allow")
      throw new Refusal(403, glanceRefusal(rule));
    if (body.readonly.length) throw new Refusal(403, `Attribute '${body.readonly[0]}' is read-only.`);
    checkPropertyQuota(body.properties);
    const image = imageFrom(body, owner, deps.now());
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
    enforceOnImage(c.get("auth"), "upload_image", image);
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

/**
 * The record a create makes: Glance's `queued` until its data is uploaded, owned by the creator's
 * project (or the one an admin names), `shared` unless asked (Glance's default visibility).
 */
function imageFrom(body: ImageBody, owner: string, now: Date): Image {
  const { properties, disk_format, container_format } = body;
  return {
    id: body.id ?? randomUUID(),
    name: body.name ?? "",
    status: "queued",
    owner,
    visibility: body.visibility ?? "shared",
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
