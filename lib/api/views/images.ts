// Nova's (deprecated) image proxy views: enough for a user to find an image id.
import type { Image } from "../../catalog/types.js";
import { isoSeconds, type Link, resourceLinks } from "./format.js";

function links(img: Image, baseUrl: string): Link[] {
  return [
    ...resourceLinks(baseUrl, "images", img.id),
    { rel: "alternate", type: "application/vnd.openstack.image", href: `${baseUrl}/images/${img.id}` },
  ];
}

export function imageSummaryView(img: Image, baseUrl: string): unknown {
  return { id: img.id, name: img.name, links: links(img, baseUrl) };
}

export function imageView(img: Image, baseUrl: string): unknown {
  const created = isoSeconds(img.created_at);
  return {
    id: img.id,
    name: img.name,
    status: "ACTIVE",
    progress: 100,
    minDisk: img.min_disk,
    minRam: img.min_ram,
    metadata: { ...img.properties },
    created,
    updated: created,
    "OS-EXT-IMG-SIZE:size": 0,
    links: links(img, baseUrl),
  };
}
