// Glance v2's documents and image view over the catalog's images. The seeded images are records
// only (the compute driver boots from the record alone): their size and checksums are null. A
// server's snapshot has its data in the images bucket, and its figures.
import type { Image } from "../../catalog/types.js";

/** GET /image: Glance answers 300 Multiple Choices with every API version it speaks. */
export function versionsDocument(base: string) {
  const href = `${base}/image/v2/`;
  const v = (id: string, status: string) => ({ id, status, links: [{ rel: "self", href }] });
  return {
    versions: [
      v("v2.16", "CURRENT"),
      ...["v2.15", "v2.9", "v2.7", "v2.6", "v2.5", "v2.4", "v2.3", "v2.2", "v2.1", "v2.0"].map((id) =>
        v(id, "SUPPORTED"),
      ),
    ],
  };
}

/** Glance's own fields; a catalog property by one of these names never shadows them. */
const CORE = new Set([
  "id",
  "name",
  "status",
  "visibility",
  "protected",
  "os_hidden",
  "checksum",
  "os_hash_algo",
  "os_hash_value",
  "size",
  "virtual_size",
  "min_disk",
  "min_ram",
  "owner",
  "tags",
  "created_at",
  "updated_at",
  "self",
  "file",
  "schema",
  "direct_url",
  "locations",
]);

const glanceTime = (iso: string): string => iso.replace(/\.\d+Z$/, "Z");

export function imageView(img: Image): Record<string, unknown> {
  const extra = Object.fromEntries(Object.entries(img.properties).filter(([k]) => !CORE.has(k)));
  const created = glanceTime(img.created_at);
  // a seeded record has no formats and is booted as qcow2; an image made here has what it was given
  const seeded = img.status === "active" && img.owner === undefined;
  return {
    container_format: seeded ? "bare" : null,
    disk_format: seeded ? "qcow2" : null,
    ...extra,
    id: img.id,
    name: img.name,
    status: img.status,
    visibility: img.visibility ?? "public",
    protected: false,
    os_hidden: false,
    checksum: img.checksum ?? null,
    os_hash_algo: img.os_hash_algo ?? null,
    os_hash_value: img.os_hash_value ?? null,
    size: img.status === "active" ? (img.size ?? null) : null,
    virtual_size: img.status === "active" ? (img.virtual_size ?? null) : null,
    min_disk: img.min_disk,
    min_ram: img.min_ram,
    owner: img.owner ?? null,
    tags: [],
    created_at: created,
    updated_at: img.updated_at ? glanceTime(img.updated_at) : created,
    self: `/v2/images/${img.id}`,
    file: `/v2/images/${img.id}/file`,
    schema: "/v2/schemas/image",
  };
}
