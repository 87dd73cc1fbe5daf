// The catalog's image writes: create (Glance's POST /v2/images, and a server's snapshot or backup,
// recorded `queued` at once), the status moving on as its data is uploaded, a change of its
// metadata (Glance's PATCH), and delete; and who sees an image, and who lists it (Glance's). Its own
// file beside repo.ts so the catalog's reads stay where they are; every write drops the process's
// list cache.
import { DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { inState } from "../aws/dynamo-conditions.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import { resetCatalogCache } from "./repo.js";
import type { Image, ImageStatus, ImageVisibility } from "./types.js";

/** Store a new image; false when an image with its id exists. */
export async function createImage(image: Image): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new PutCommand({
        TableName: resources().catalogTable,
        Item: { ...image, pk: `image#${image.id}`, kind: "image" },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    ),
    () => resetCatalogCache(),
  );
}

/**
 * Move an image on (Glance's queued → saving → active), conditioned on the statuses it may come
 * from: undefined when it is gone (deleted meanwhile) or already past them.
 */
export async function updateImage(
  id: string,
  from: ImageStatus[],
  set: Partial<
    Pick<
      Image,
      "status" | "size" | "virtual_size" | "checksum" | "os_hash_algo" | "os_hash_value" | "updated_at"
    >
  > & {
    /** properties to set (disk_format and container_format, once the data is known) */
    properties?: Record<string, string>;
  },
  /** also only if its updated_at is still this (a stale upload taken over, not a live one) */
  unchangedSince?: string,
): Promise<Image | undefined> {
  const names: Record<string, string> = { "#status": "status" };
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  for (const [k, v] of Object.entries(set)) {
    if (k === "properties" || v === undefined) continue;
    names[`#${k}`] = k;
    values[`:${k}`] = v;
    sets.push(`#${k} = :${k}`);
  }
  Object.entries(set.properties ?? {}).forEach(([k, v], i) => {
    names[`#p${i}`] = k;
    values[`:p${i}`] = v;
    sets.push(`properties.#p${i} = :p${i}`);
  });
  let since = "";
  if (unchangedSince !== undefined) {
    names["#updatedAtSeen"] = "updated_at";
    values[":updatedAtSeen"] = unchangedSince;
    since = " AND #updatedAtSeen = :updatedAtSeen";
  }
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: resources().catalogTable,
        Key: { pk: `image#${id}` },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: `attribute_exists(pk) AND ${inState(values, "#status", from, "from")}${since}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    ),
    () => resetCatalogCache(),
  );
  return r?.Attributes ? imageOf(r.Attributes) : undefined;
}

/** Remove an image record (Glance's delete); the record it was, or undefined if there was none. */
export async function deleteImageRecord(id: string): Promise<Image | undefined> {
  const r = await dynamo().send(
    new DeleteCommand({
      TableName: resources().catalogTable,
      Key: { pk: `image#${id}` },
      ReturnValues: "ALL_OLD",
    }),
  );
  resetCatalogCache();
  return r.Attributes ? imageOf(r.Attributes) : undefined;
}

function imageOf(item: Record<string, unknown>): Image {
  const { pk: _pk, kind: _kind, ...rest } = item;
  return rest as unknown as Image;
}

/** Glance's own attributes the catalog keeps among an image's properties (a host reads them there). */
export const FORMAT_PROPERTIES = ["disk_format", "container_format"] as const;

/** An image's extra properties (Glance's, Nova's image metadata): its properties but Glance's own. */
export function extraProperties(image: Pick<Image, "properties">): Record<string, string> {
  const extra = { ...image.properties };
  for (const k of FORMAT_PROPERTIES) delete extra[k];
  return extra;
}

type Caller = { project_id: string; isAdmin: boolean };

/**
 * Whether a project sees an image (Glance's is_image_visible): an admin every one; the catalog's
 * own (no owner), public and community ones; its own; a shared one it is a member of.
 */
export function imageVisibleTo(image: Image, auth: Caller): boolean {
  const v = image.visibility ?? "public";
  if (auth.isAdmin || image.owner === undefined || v === "public" || v === "community") return true;
  return (
    image.owner === auth.project_id || (v === "shared" && (image.members ?? []).includes(auth.project_id))
  );
}

/**
 * Whether an image is in a project's listing (Glance's image_get_all): those it sees, but a
 * community image only when it is the project's own, unless `visibility` asks for one
 * visibility (or `all`). An admin's listing holds every project's images, community ones too
 * only by `visibility`.
 */
export function imageListedFor(image: Image, auth: Caller, visibility?: string): boolean {
  const v = image.visibility ?? "public";
  const own = image.owner !== undefined && image.owner === auth.project_id;
  const member = v === "shared" && (image.members ?? []).includes(auth.project_id);
  if (!(auth.isAdmin || v === "public" || v === "community" || own || member)) return false;
  if (visibility === undefined) return v !== "community" || own;
  return visibility === "all" || visibility === v;
}

/** A change of an image's metadata (Glance's PATCH, Nova's image metadata proxy). */
export interface ImageChange {
  name?: string;
  min_ram?: number;
  min_disk?: number;
  visibility?: ImageVisibility;
  owner?: string;
  /** properties set (disk_format and container_format among them, which the catalog keeps there) */
  set?: Record<string, string>;
  /** properties removed */
  remove?: string[];
  updated_at: string;
}

/**
 * Change an image's attributes and properties in one write (Glance saves the image whole: the
 * last writer wins, property by property here); undefined when it is gone. `statuses`: only
 * while it is in one of them (a format changes only while queued).
 */
export async function changeImage(
  id: string,
  change: ImageChange,
  statuses?: ImageStatus[],
): Promise<Image | undefined> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const removes: string[] = [];
  for (const k of ["name", "min_ram", "min_disk", "visibility", "owner", "updated_at"] as const) {
    if (change[k] === undefined) continue;
    names[`#${k}`] = k;
    values[`:${k}`] = change[k];
    sets.push(`#${k} = :${k}`);
  }
  Object.entries(change.set ?? {}).forEach(([k, v], i) => {
    names[`#s${i}`] = k;
    values[`:s${i}`] = v;
    sets.push(`properties.#s${i} = :s${i}`);
  });
  (change.remove ?? []).forEach((k, i) => {
    names[`#r${i}`] = k;
    removes.push(`properties.#r${i}`);
  });
  let condition = "attribute_exists(pk)";
  if (statuses) {
    names["#status"] = "status";
    condition += ` AND ${inState(values, "#status", statuses, "from")}`;
  }
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: resources().catalogTable,
        Key: { pk: `image#${id}` },
        UpdateExpression: `SET ${sets.join(", ")}${removes.length ? ` REMOVE ${removes.join(", ")}` : ""}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    ),
    () => resetCatalogCache(),
  );
  return r?.Attributes ? imageOf(r.Attributes) : undefined;
}
