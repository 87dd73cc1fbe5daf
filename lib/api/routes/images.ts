// /images: Nova's deprecated image proxy, read-only, so users can find image ids.
import { notFound } from "../errors.js";
import type { ApiResult, Route, RouteCall } from "../request.js";
import { imageSummaryView, imageView } from "../views/images.js";

export async function listImagesRoute({ ctx, deps }: RouteCall, detail: boolean): Promise<ApiResult> {
  const images = await deps.listImages();
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
  if (!img) throw notFound("Image not found.");
  return { status: 200, body: { image: imageView(img, ctx.baseUrl) } };
}

export const imageRoutes: Route[] = [
  { method: "GET", pattern: "/images", handler: (c) => listImagesRoute(c, false) },
  { method: "GET", pattern: "/images/detail", handler: (c) => listImagesRoute(c, true) },
  { method: "GET", pattern: "/images/:id", handler: showImage },
];
