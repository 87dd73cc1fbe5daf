// /images: Nova's deprecated image proxy, so users can find image ids and follow their snapshots:
// list (with the proxy's filters) and show the images the caller may see, delete its own, and,
// up to 2.38, their metadata (image_metadata.py): Glance's extra properties, changed as Nova's
// glance client changes them, through Glance's PATCH and its rules (lib/api/image/changes.ts).
import { changeImage, extraProperties, imageListedFor, imageVisibleTo } from "../../catalog/image-create.js";
import type { Image } from "../../catalog/types.js";
import { deleteServerImage } from "../../instances/snapshot.js";
import { badRequest, forbidden, notFound, Refusal } from "../errors.js";
import { patchImage } from "../image/changes.js";
import { imagePatch } from "../image/validation.js";
import { glanceDecision } from "../policy.js";
import { type ApiResult, queryOne, type Route, type RouteCall } from "../request.js";
import { parseJsonBody } from "../validation/common.js";
import { parseMetadataBody, parseMetaItem } from "../validation/servers.js";
import { imageSummaryView, imageView } from "../views/images.js";

/** Nova's image proxy filters (images.py _get_filters) over the images the caller sees. */
function filtered(images: Image[], q: Record<string, string | undefined>): Image[] {
  const id = (v: string) => v.split("/").filter(Boolean).pop() ?? v;
  const since = q["changes-since"] ? Date.parse(q["changes-since"]) : undefined;
  if (since !== undefined && Number.isNaN(since)) throw badRequest(`Invalid changes-since value`);
  const status = q.status?.toUpperCase();
  return images.filter(
    (i) =>
      (q.name === undefined || i.name === q.name) &&
      (status === undefined ||
        status === i.status.toUpperCase() ||
        status === (i.status === "active" ? "ACTIVE" : i.status === "killed" ? "ERROR" : "SAVING")) &&
      (q.server === undefined || i.properties.instance_uuid === id(q.server)) &&
      (q.type === undefined || i.properties.image_type === q.type) &&
      (q.minRam === undefined || i.min_ram >= Number(q.minRam)) &&
      (q.minDisk === undefined || i.min_disk >= Number(q.minDisk)) &&
      (since === undefined || Date.parse(i.updated_at ?? i.created_at) >= since),
  );
}

export async function listImagesRoute({ ctx, deps, query }: RouteCall, detail: boolean): Promise<ApiResult> {
  const q = Object.fromEntries(Object.keys(query).map((k) => [k, queryOne(query, k)]));
  let images = filtered(
    // Nova's glance client lists as Glance's default listing does
    (await deps.listImages()).filter((i) => imageListedFor(i, ctx.auth)),
    q,
  );
  if (q.marker !== undefined) {
    const at = images.findIndex((i) => i.id === q.marker);
    if (at === -1) throw badRequest(`marker [${q.marker}] not found`);
    images = images.slice(at + 1);
  }
  if (q.limit !== undefined) images = images.slice(0, Math.max(0, Number(q.limit) || 0));
  return {
    status: 200,
    body: {
      images: images.map((i) => (detail ? imageView(i, ctx.baseUrl) : imageSummaryView(i, ctx.baseUrl))),
    },
  };
}

/** By id (or, as for imageRef, by name). */
export async function showImage({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const img = await deps.getImage(params.id!);
  if (!img || !imageVisibleTo(img, ctx.auth)) throw notFound("Image not found.");
  return { status: 200, body: { image: imageView(img, ctx.baseUrl) } };
}

/** An image the caller sees, by id, or Nova's 404 (ImageNotFound as its proxy words it). */
async function visibleImage({ ctx, deps, params }: RouteCall): Promise<Image> {
  const img = await deps.getImage(params.id!);
  if (!img || img.id !== params.id || !imageVisibleTo(img, ctx.auth)) throw notFound("Image not found.");
  return img;
}

/**
 * Nova's proxy delete (Glance's): the owner's project or an admin; 204. Glance's refusal of an
 * image the caller sees is Nova's ImageNotAuthorized, which its delete words as its own.
 */
export async function deleteImageRoute(call: RouteCall): Promise<ApiResult> {
  const img = await visibleImage(call);
  if (glanceDecision(call.ctx.auth, "delete_image", { owner: img.owner ?? null }) !== "allow")
    throw forbidden("You are not allowed to delete the image.");
  await deleteServerImage(img.id);
  return { status: 204 };
}

// ── image metadata (image_metadata.py, 2.1–2.38) ──

/** Nova's check_img_metadata_properties_quota: the properties an image would end with, against metadata_items. */
async function checkMetadataQuota(call: RouteCall, properties: Record<string, string>): Promise<void> {
  const limit = (await call.deps.quotas.getProjectLimits(call.ctx.auth.project_id)).metadata_items;
  if (limit >= 0 && Object.keys(properties).length > limit) throw forbidden("Image metadata limit exceeded");
}

/**
 * The image's extra properties made `after`, as Nova's glance client updates with purge_props: a
 * JSON patch of what changed (set, and removed), through Glance's checks and rules. Glance's
 * refusals as Nova translates them: a 403 is ImageNotAuthorized, a 404 ImageNotFound, and the
 * others (a value or a property Glance refuses) the 400 Glance gave.
 */
async function purgeProperties(call: RouteCall, img: Image, after: Record<string, string>): Promise<Image> {
  const before = extraProperties(img);
  const key = (k: string) => `/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`;
  const ops = [
    ...Object.entries(after)
      .filter(([k, v]) => before[k] !== v)
      .map(([k, value]) => ({ op: Object.hasOwn(before, k) ? "replace" : "add", path: key(k), value })),
    ...Object.keys(before)
      .filter((k) => !Object.hasOwn(after, k))
      .map((k) => ({ op: "remove", path: key(k) })),
  ];
  try {
    const patched = patchImage(
      img,
      imagePatch("application/openstack-images-v2.1-json-patch", ops),
      call.ctx.auth,
      call.deps.now(),
    );
    if (!patched) return img;
    const changed = await changeImage(img.id, patched.change, patched.queuedOnly ? ["queued"] : undefined);
    if (!changed) throw notFound("Image not found.");
    return changed;
  } catch (e) {
    if (!(e instanceof Refusal) || e.type !== "") throw e;
    if (e.status === 403) throw forbidden(`Not authorized for image ${img.id}.`);
    if (e.status === 404) throw notFound("Image not found.");
    if (e.status === 413) throw forbidden("Image metadata limit exceeded");
    throw badRequest(e.message);
  }
}

async function listImageMetadata(call: RouteCall): Promise<ApiResult> {
  return { status: 200, body: { metadata: extraProperties(await visibleImage(call)) } };
}

async function showImageMetadataItem(call: RouteCall): Promise<ApiResult> {
  const metadata = extraProperties(await visibleImage(call));
  const key = call.params.key!;
  // webob's HTTPNotFound, its default text
  if (!Object.hasOwn(metadata, key)) throw notFound("The resource could not be found.");
  return { status: 200, body: { meta: { [key]: metadata[key] } } };
}

/** POST merges into the image's metadata and answers all of it; PUT replaces it and answers the body's. */
async function setImageMetadata(call: RouteCall, replace: boolean): Promise<ApiResult> {
  const metadata = parseMetadataBody(parseJsonBody(call.body));
  const img = await visibleImage(call);
  const after = replace ? metadata : { ...extraProperties(img), ...metadata };
  await checkMetadataQuota(call, after);
  const changed = await purgeProperties(call, img, after);
  return { status: 200, body: { metadata: replace ? metadata : extraProperties(changed) } };
}

async function setImageMetadataItem(call: RouteCall): Promise<ApiResult> {
  const key = call.params.key!;
  const value = parseMetaItem(parseJsonBody(call.body), key);
  const img = await visibleImage(call);
  const after = { ...extraProperties(img), [key]: value };
  await checkMetadataQuota(call, after);
  await purgeProperties(call, img, after);
  return { status: 200, body: { meta: { [key]: value } } };
}

async function deleteImageMetadataItem(call: RouteCall): Promise<ApiResult> {
  const key = call.params.key!;
  const img = await visibleImage(call);
  const { [key]: gone, ...rest } = extraProperties(img);
  if (gone === undefined) throw notFound("Invalid metadata key");
  await purgeProperties(call, img, rest);
  return { status: 204 };
}

/** Nova removed its image metadata API at 2.39. */
const METADATA_MAX = "2.38";

export const imageRoutes: Route[] = [
  { method: "GET", pattern: "/images", handler: (c) => listImagesRoute(c, false) },
  { method: "GET", pattern: "/images/detail", handler: (c) => listImagesRoute(c, true) },
  { method: "GET", pattern: "/images/:id", handler: showImage },
  { method: "DELETE", pattern: "/images/:id", handler: deleteImageRoute },
  { method: "GET", pattern: "/images/:id/metadata", handler: listImageMetadata, max: METADATA_MAX },
  {
    method: "POST",
    pattern: "/images/:id/metadata",
    handler: (c) => setImageMetadata(c, false),
    max: METADATA_MAX,
  },
  {
    method: "PUT",
    pattern: "/images/:id/metadata",
    handler: (c) => setImageMetadata(c, true),
    max: METADATA_MAX,
  },
  { method: "GET", pattern: "/images/:id/metadata/:key", handler: showImageMetadataItem, max: METADATA_MAX },
  { method: "PUT", pattern: "/images/:id/metadata/:key", handler: setImageMetadataItem, max: METADATA_MAX },
  {
    method: "DELETE",
    pattern: "/images/:id/metadata/:key",
    handler: deleteImageMetadataItem,
    max: METADATA_MAX,
  },
  // DELETE /images/ names no image (the router reads the trailing slash as none): Nova's 404
  {
    method: "DELETE",
    pattern: "/images",
    handler: () => {
      throw notFound("Image not found.");
    },
  },
];
