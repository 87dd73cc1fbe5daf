// What the drivers that keep a guest in `<instances_path>/<uuid>/` (exec, libvirt) share about its
// files: the console log's end, sparse disks, and where snapshots and server images come and go.
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { type ImageStore, s3ImageStore } from "../image-store.js";

/** Nova's image_type of the images it makes from a server: their data is in the images bucket. */
export const SERVER_IMAGE_TYPES: ReadonlySet<string> = new Set(["snapshot", "backup"]);

/** Where snapshots go and server images come from: the driver's own store, else the images bucket. */
export const imageStoreOf = (store: ImageStore | undefined): ImageStore => store ?? s3ImageStore();

/** Where snapshots are captured (and exec's snapshot images fetched to), beside the instances. */
export function snapshotsDir(instancesPath: string): string {
  const work = join(instancesPath, "_snapshots");
  mkdirSync(work, { recursive: true });
  return work;
}

/** The last `maxBytes` of a log file, read from its end ("" when there is none yet). */
export function tailFile(file: string, maxBytes: number): string {
  if (!existsSync(file)) return "";
  const size = statSync(file).size;
  const length = Math.min(size, maxBytes);
  const buf = Buffer.alloc(length);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buf, 0, length, size - length);
  } finally {
    closeSync(fd);
  }
  return buf.toString("utf8");
}

/** A sparse file of `bytes` (a disk the guest fills). */
export function sparse(path: string, bytes: number): void {
  const fd = openSync(path, "w");
  try {
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
}
