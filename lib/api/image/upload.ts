// Glance's image upload (PUT /v2/images/{id}/file): queued → saving → active, the data in the
// images bucket at images/<id>, its size, MD5 checksum and SHA-512 os_hash_value computed from what
// was stored, its format checked against the image's disk_format (image-format.ts), and back to
// queued with the data gone when it fails, as Glance restores a failed upload.
//
// The bytes do not pass through the API function: API Gateway takes at most 10 MB and Lambda 6 MB,
// and an image is larger. On AWS the stack's CloudFront distribution sends the PUT's body straight
// to S3 (edge.ts, functions/image-edge): it asks this API to begin the upload, which answers a
// presigned PutObject URL; the body goes there; it asks the API to complete it, which reads the
// object back and imports it. An upload small enough to reach the API is stored by the API itself,
// through the same begin and complete.
import { updateImage } from "../../catalog/image-create.js";
import { FORMAT_HEADER_BYTES, formatMismatch, inspectFormat } from "../../catalog/image-format.js";
import type { Image } from "../../catalog/types.js";
import { figuresOf, type ImageStore } from "../../compute/image-store.js";
import { Refusal } from "../errors.js";

export { UPLOAD_STEP_HEADER, type UploadStep } from "./edge.js";

/**
 * How long an upload's presigned URL writes, and how long a `saving` upload may go unfinished
 * before another upload may take it over (its uploader is gone: the edge never completed it).
 */
export const UPLOAD_URL_SECONDS = 3600;

const transition = (from: string) =>
  new Refusal(409, `Image status transition from ${from} to saving is not allowed`);

/** A snapshot's own upload (its host's) is never taken over, however long it takes. */
const takeable = (image: Image, now: Date) =>
  image.status === "saving" &&
  image.properties.instance_uuid === undefined &&
  Date.parse(image.updated_at ?? image.created_at) + UPLOAD_URL_SECONDS * 1000 < now.getTime();

/** queued → saving (or a stale upload's saving taken over), else Glance's 409. */
export async function beginUpload(image: Image, now: Date): Promise<Image> {
  if (image.status === "queued" && (!image.properties.disk_format || !image.properties.container_format))
    throw new Refusal(400, "Properties disk_format, container_format must be set prior to saving data.");
  const at = now.toISOString();
  const begun = takeable(image, now)
    ? await updateImage(image.id, ["saving"], { status: "saving", updated_at: at }, image.updated_at)
    : await updateImage(image.id, ["queued"], { status: "saving", updated_at: at });
  if (!begun) throw transition(image.status === "queued" ? "saving" : image.status);
  return begun;
}

/** saving → queued, the data removed: an upload that failed or that S3 refused. */
export async function abortUpload(image: Image, store: ImageStore, now: Date): Promise<void> {
  await store.remove(image.id);
  await updateImage(image.id, ["saving"], { status: "queued", updated_at: now.toISOString() });
}

/**
 * saving → active with the stored data's figures; an image already active is answered as it is
 * (the edge's completion, repeated). Data that does not match its disk_format, or that is unsafe,
 * is removed and the image goes back to queued: Glance's 400. No data: 400 too (the PUT to S3
 * never happened).
 */
export async function completeUpload(image: Image, store: ImageStore, now: Date): Promise<Image> {
  if (image.status === "active" && image.checksum) return image;
  if (image.status !== "saving") throw transition(image.status);
  const stored = await store.open(image.id);
  if (!stored) {
    await updateImage(image.id, ["saving"], { status: "queued", updated_at: now.toISOString() });
    throw new Refusal(400, `Image ${image.id} has no data: the upload did not reach the image store`);
  }
  const data = await figuresOf(stored.body as AsyncIterable<Buffer>, FORMAT_HEADER_BYTES);
  const diskFormat = image.properties.disk_format ?? "raw";
  const inspected = inspectFormat(data.head, data.size);
  const refused = formatMismatch(diskFormat, inspected);
  if (refused) {
    await abortUpload(image, store, now);
    throw new Refusal(400, refused);
  }
  const done = await updateImage(image.id, ["saving"], {
    status: "active",
    size: data.size,
    checksum: data.checksum,
    os_hash_algo: "sha512",
    os_hash_value: data.os_hash_value,
    ...(inspected.virtualSize !== null ? { virtual_size: inspected.virtualSize } : {}),
    updated_at: now.toISOString(),
  });
  // deleted meanwhile (its data with it), or completed by a repeated call
  if (!done) throw new Refusal(409, `Image ${image.id} changed while its upload completed`);
  return done;
}
