// Nova's (deprecated) image proxy views: enough for a user to find an image id.
import { extraProperties } from "../../catalog/image-create.js";
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

/** Nova's views/images.py _get_status and _get_progress of Glance's statuses. */
const STATUS = { queued: "SAVING", saving: "SAVING", active: "ACTIVE", killed: "ERROR" } as const;
const PROGRESS = { queued: 25, saving: 50, active: 100, killed: 0 } as const;

export function imageView(img: Image, baseUrl: string): unknown {
  const created = isoSeconds(img.created_at);
  const server = img.properties.instance_uuid;
  return {
    id: img.id,
    name: img.name,
    status: STATUS[img.status] ?? "UNKNOWN",
    progress: PROGRESS[img.status] ?? 0,
    minDisk: img.min_disk,
    minRam: img.min_ram,
    // Glance's extra properties (Nova's _translate_from_glance leaves its attributes out)
    metadata: extraProperties(img),
    created,
    updated: img.updated_at ? isoSeconds(img.updated_at) : created,
    "OS-EXT-IMG-SIZE:size": img.size ?? 0,
    links: links(img, baseUrl),
    // an image made from a server names it (Nova's instance_uuid property)
    ...(server ? { server: { id: server, links: resourceLinks(baseUrl, "servers", server) } } : {}),
  };
}
