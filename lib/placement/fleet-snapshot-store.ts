// Where the fleet snapshot (lib/placement/fleet-snapshot.ts) lives: one gzipped object in the
// stack's bucket, under fleet/, apart from images/ (which hosts may read and write; the snapshot
// only the scheduler, infra/constructs/functions.ts). S3 rather than DynamoDB items: at 10,000
// hosts it is about a megabyte of JSON, hundreds of read units as items, one GET as an object.
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { s3Client } from "../aws/clients.js";
import { resources } from "../config.js";
import {
  decodeSnapshot,
  type EncodedSnapshot,
  encodeSnapshot,
  type FleetSnapshot,
} from "./fleet-snapshot.js";

/** The snapshot's key: one object, rewritten in place. */
export const FLEET_SNAPSHOT_KEY = "fleet/hosts.json.gz";

// zlib on libuv's threads: a write overlaps the decision it follows instead of holding it up
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** The object's user metadata: its feed position, so a writer learns it by a HEAD. */
const POSITION = "position";

function missing(e: unknown): boolean {
  const name = (e as { name?: string }).name;
  const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return name === "NoSuchKey" || name === "NotFound" || status === 404;
}

/** The snapshot, or undefined when there is none yet. */
export async function readFleetSnapshot(): Promise<FleetSnapshot | undefined> {
  try {
    const r = await s3Client().send(
      new GetObjectCommand({ Bucket: resources().imagesBucket, Key: FLEET_SNAPSHOT_KEY }),
    );
    const body = Buffer.from(await r.Body!.transformToByteArray());
    return decodeSnapshot(JSON.parse((await gunzipAsync(body)).toString("utf8")) as EncodedSnapshot);
  } catch (e) {
    if (missing(e)) return undefined;
    throw e;
  }
}

/** The stored snapshot's position, without reading it; undefined when there is none. */
export async function fleetSnapshotPosition(): Promise<string | undefined> {
  try {
    const r = await s3Client().send(
      new HeadObjectCommand({ Bucket: resources().imagesBucket, Key: FLEET_SNAPSHOT_KEY }),
    );
    return r.Metadata?.[POSITION];
  } catch (e) {
    if (missing(e)) return undefined;
    throw e;
  }
}

/**
 * Replaces the snapshot; the bytes written. Two writers at once both land, the last one wins:
 * either is a true image at its own position, so a reader of the older one only reads more of
 * the feed.
 */
export async function writeFleetSnapshot(s: FleetSnapshot): Promise<number> {
  const body = await gzipAsync(Buffer.from(JSON.stringify(encodeSnapshot(s)), "utf8"));
  await s3Client().send(
    new PutObjectCommand({
      Bucket: resources().imagesBucket,
      Key: FLEET_SNAPSHOT_KEY,
      Body: body,
      ContentType: "application/gzip",
      Metadata: { [POSITION]: s.position },
    }),
  );
  return body.length;
}
