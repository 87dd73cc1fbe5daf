// /images: Nova's deprecated image proxy, so users can find image ids and follow their snapshots:
// list (with the proxy's filters) and show the images the caller may see, and delete its own.
import { imageVisibleTo } from "../../catalog/image-create.js";
import type { Image } from "../../catalog/types.js";
import { deleteServerImage } from "../../instances/snapshot.js";
import { badRequest, forbidden, notFound } from "../errors.js";
import { type ApiResult, queryOne, type Route, type RouteCall } from "../request.js";
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
    (await deps.listImages()).filter((i) => imageVisibleTo(i, ctx.auth)),
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

/** Nova's proxy delete (Glance's): the owner's project or an admin; 204. */
export async function deleteImageRoute({ ctx, deps, params }: RouteCall): Promise<ApiResult> {
  const img = await deps.getImage(params.id!);
  if (!img || img.id !== params.id || !imageVisibleTo(img, ctx.auth)) throw notFound("Image not found.");
  if (!ctx.auth.isAdmin && img.owner !== ctx.auth.project_id)
    throw forbidden(`You are not permitted to delete image ${img.id}.`);
  await deleteServerImage(img.id);
  return { status: 204 };
}

export const imageRoutes: Route[] = [
  { method: "GET", pattern: "/images", handler: (c) => listImagesRoute(c, false) },
  { method: "GET", pattern: "/images/detail", handler: (c) => listImagesRoute(c, true) },
  { method: "GET", pattern: "/images/:id", handler: showImage },
  { method: "DELETE", pattern: "/images/:id", handler: deleteImageRoute },
  // DELETE /images/ names no image (the router reads the trailing slash as none): Nova's 404
  {
    method: "DELETE",
    pattern: "/images",
    handler: () => {
      throw notFound("Image not found.");
    },
  },
];
