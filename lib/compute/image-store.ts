// The images bucket: a snapshot's or backup's data at images/<image id>, put by the host that took
// it and read by any host that boots it (and by Glance's GET /v2/images/{id}/file). S3, so the
// data outlives its host and every host can read it: the host role may only put and get objects
// under images/ (infra/constructs/host-access.ts), as AWS's S3 policies name them
// (arn:aws:s3:::<bucket>/images/*; s3:PutObject, which also authorizes a multipart upload's
// create, parts and complete, s3:AbortMultipartUpload and s3:GetObject: the Service Authorization
// Reference's "Actions, resources, and condition keys for Amazon S3"). The same bucket carries a
// resize's disk between hosts under migrations/ (MIGRATIONS_PREFIX, below).
import { createHash } from "node:crypto";
import {
  closeSync,
  createReadStream,
  createWriteStream,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { s3Client } from "../aws/clients.js";
import { resources } from "../config.js";

export const IMAGES_PREFIX = "images/";
/** What a fetch under way writes beside its file: <file>.part-<pid>, renamed once whole. */
export const PARTIAL_SUFFIX = ".part-";
export const imageKey = (imageId: string): string => `${IMAGES_PREFIX}${imageId}`;

/**
 * A resize's or cold migration's root disk, handed from its source host to its destination at
 * migrations/<migration uuid> in the same bucket (drivers/libvirt-cold.ts); the host role may put,
 * get and delete there, and a lifecycle rule expires what a failed move left.
 */
export const MIGRATIONS_PREFIX = "migrations/";

/** Glance's fields of an image's data. */
export interface StoredImage {
  size: number;
  /** MD5, Glance's legacy checksum */
  checksum: string;
  /** SHA-512, Glance's os_hash_value (os_hash_algo sha512) */
  os_hash_value: string;
}

/** What a driver's snapshot made: the data's formats and, when it kept data, the stored figures. */
export interface SnapshotData extends Partial<StoredImage> {
  disk_format: string;
  container_format: string;
  /** 0: the driver keeps no data (fake: the image is its metadata) */
  size: number;
}

/** Nova's update_task_state as a driver's snapshot calls it: captured, then uploading. */
export type SnapshotStage = (taskState: "image_pending_upload" | "image_uploading") => Promise<void>;

export interface ImageStore {
  /** upload `file` as the image's data */
  put(imageId: string, file: string): Promise<StoredImage>;
  /** download the image's data to `file` (whole, or not at all); false when the store has none */
  fetch(imageId: string, file: string): Promise<boolean>;
  /** the data as a stream (Glance's download); undefined when the store has none */
  open(imageId: string): Promise<{ body: Readable; size: number } | undefined>;
  /** idempotent */
  remove(imageId: string): Promise<void>;
  /**
   * A URL that reads the data for `seconds` without other credentials (S3's presigned GetObject,
   * signed with the caller's): Glance's download points there, as a Lambda answers at most 6 MB.
   */
  downloadUrl(imageId: string, seconds: number): Promise<string>;
  /**
   * A URL that writes the data, one PUT of at most 5 GB, for `seconds` (S3's presigned PutObject,
   * signed with the caller's credentials): Glance's upload goes there, around API Gateway's 10 MB
   * and Lambda's 6 MB (lib/api/image/upload.ts).
   */
  uploadUrl(imageId: string, seconds: number): Promise<string>;
  /** write `body` as the image's data in one PUT (an upload small enough to reach the API) */
  putData(imageId: string, body: Uint8Array): Promise<void>;
}

/**
 * Data up to this size is one PutObject; larger data a multipart upload of parts this size, as
 * the AWS CLI uploads (multipart_threshold and multipart_chunksize, 8 MiB). S3 takes parts of
 * 5 MiB to 5 GiB and at most 10,000 of them (S3 user guide, "Amazon S3 multipart upload limits"),
 * so a disk past 80 GiB gets parts of a tenth of a thousandth of its size. Small parts also keep
 * each body under what the local runtime's S3 (fauxqs) accepts in one request (11 MiB). Each body
 * is whole bytes read from the file, never a stream (the in-process transport takes whole bodies).
 */
const PART_BYTES = 8 * 2 ** 20;
const MAX_PARTS = 10_000;

/** The part size for `size` bytes: `partBytes`, or larger when that would pass S3's 10,000 parts. */
export function partSizeFor(size: number, partBytes: number): number {
  return Math.max(partBytes, Math.ceil(size / MAX_PARTS / 2 ** 20) * 2 ** 20);
}

function readPart(file: string, offset: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buf, 0, length, offset);
  } finally {
    closeSync(fd);
  }
  return buf;
}

/** A multipart upload of `file` (Nova's glance upload, for disks past one PUT); aborted on failure. */
async function multipartPut(Bucket: string, Key: string, file: string, size: number, partBytes: number) {
  const { UploadId } = await s3Client().send(
    new CreateMultipartUploadCommand({ Bucket, Key, ContentType: "application/octet-stream" }),
  );
  try {
    const parts: { ETag: string; PartNumber: number }[] = [];
    for (let offset = 0, n = 1; offset < size; offset += partBytes, n++) {
      const Body = readPart(file, offset, Math.min(partBytes, size - offset));
      const r = await s3Client().send(
        new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: n, Body, ContentLength: Body.length }),
      );
      parts.push({ ETag: r.ETag!, PartNumber: n });
    }
    await s3Client().send(
      new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }),
    );
  } catch (e) {
    await s3Client()
      .send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }))
      .catch(() => undefined);
    throw e;
  }
}

/**
 * Glance's figures of data as it streams by (size, MD5, SHA-512), with its first `headBytes` bytes
 * kept (an upload's format inspection): an upload read back, a snapshot before it is put.
 */
export async function figuresOf(
  body: AsyncIterable<Buffer>,
  headBytes = 0,
): Promise<StoredImage & { head: Buffer }> {
  const md5 = createHash("md5");
  const sha512 = createHash("sha512");
  const head: Buffer[] = [];
  let kept = 0;
  let size = 0;
  for await (const chunk of body) {
    md5.update(chunk);
    sha512.update(chunk);
    size += chunk.length;
    if (kept < headBytes) {
      head.push(chunk);
      kept += chunk.length;
    }
  }
  return {
    size,
    checksum: md5.digest("hex"),
    os_hash_value: sha512.digest("hex"),
    head: Buffer.concat(head).subarray(0, headBytes),
  };
}

async function digest(file: string): Promise<StoredImage> {
  const { size, checksum, os_hash_value } = await figuresOf(createReadStream(file) as AsyncIterable<Buffer>);
  return { size, checksum, os_hash_value };
}

const missing = (e: unknown) => {
  const name = (e as { name?: string }).name;
  const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return name === "NoSuchKey" || name === "NotFound" || status === 404;
};

/**
 * The images bucket; its name read when used (the resource images_bucket, or `bucket`).
 * `partBytes`: the multipart threshold and part size (tests make it small); `prefix`: where its
 * objects are (images/, or MIGRATIONS_PREFIX for the disks moves hand over).
 */
export function s3ImageStore(
  bucket?: string,
  opts: { partBytes?: number; prefix?: string } = {},
): ImageStore {
  const Bucket = () => bucket ?? resources().imagesBucket;
  const partBytes = opts.partBytes ?? PART_BYTES;
  const keyOf = (id: string) => `${opts.prefix ?? IMAGES_PREFIX}${id}`;
  return {
    async put(imageId, file) {
      const stored = await digest(file);
      if (stored.size > partBytes) {
        await multipartPut(Bucket(), keyOf(imageId), file, stored.size, partSizeFor(stored.size, partBytes));
        return stored;
      }
      await s3Client().send(
        new PutObjectCommand({
          Bucket: Bucket(),
          Key: keyOf(imageId),
          Body: readFileSync(file),
          ContentLength: stored.size,
          ContentType: "application/octet-stream",
        }),
      );
      return stored;
    },
    async fetch(imageId, file) {
      const got = await this.open(imageId);
      if (!got) return false;
      const part = `${file}${PARTIAL_SUFFIX}${process.pid}`;
      try {
        await pipeline(got.body, createWriteStream(part));
        renameSync(part, file);
      } finally {
        rmSync(part, { force: true });
      }
      return true;
    },
    async open(imageId) {
      try {
        const r = await s3Client().send(new GetObjectCommand({ Bucket: Bucket(), Key: keyOf(imageId) }));
        return { body: r.Body as Readable, size: Number(r.ContentLength ?? 0) };
      } catch (e) {
        if (missing(e)) return undefined;
        throw e;
      }
    },
    async remove(imageId) {
      await s3Client().send(new DeleteObjectCommand({ Bucket: Bucket(), Key: keyOf(imageId) }));
    },
    downloadUrl(imageId, seconds) {
      return getSignedUrl(s3Client(), new GetObjectCommand({ Bucket: Bucket(), Key: keyOf(imageId) }), {
        expiresIn: seconds,
      });
    },
    uploadUrl(imageId, seconds) {
      // signed for the host and key only: the uploader's Content-Type and length are its own,
      // and no checksum of a body the signer never sees (the SDK would sign one of an empty body)
      return getSignedUrl(s3Client(), new PutObjectCommand({ Bucket: Bucket(), Key: keyOf(imageId) }), {
        expiresIn: seconds,
        unhoistableHeaders: new Set(),
      });
    },
    async putData(imageId, body) {
      await s3Client().send(
        new PutObjectCommand({
          Bucket: Bucket(),
          Key: keyOf(imageId),
          Body: body,
          ContentLength: body.byteLength,
          ContentType: "application/octet-stream",
        }),
      );
    },
  };
}

/**
 * A driver's snapshot from its capture: `capture` writes the guest's image into `file`, then the
 * data is uploaded as the image's (Nova's IMAGE_PENDING_UPLOAD, then IMAGE_UPLOADING); the file
 * goes whatever happens.
 */
export async function captureAndUpload(
  store: ImageStore,
  imageId: string,
  file: string,
  capture: (file: string) => Promise<{ disk_format: string; container_format: string }>,
  stage: SnapshotStage,
): Promise<SnapshotData> {
  try {
    const formats = await capture(file);
    await stage("image_pending_upload");
    statSync(file);
    await stage("image_uploading");
    return { ...formats, ...(await store.put(imageId, file)) };
  } finally {
    rmSync(file, { force: true });
  }
}
