// The catalog's image writes: create (Glance's POST /v2/images, and a server's snapshot or backup,
// recorded `queued` at once), the status moving on as its data is uploaded, and delete. Its own
// file beside repo.ts so the catalog's reads stay where they are; every write drops the process's
// list cache.
import { DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { inState } from "../aws/dynamo-conditions.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import { resetCatalogCache } from "./repo.js";
import type { Image, ImageStatus } from "./types.js";

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

/**
 * Whether a project sees an image (Glance's visibility): public ones, its own, those shared with
 * it; an admin sees every one.
 */
export function imageVisibleTo(image: Image, auth: { project_id: string; isAdmin: boolean }): boolean {
  if (auth.isAdmin || (image.visibility ?? "public") === "public") return true;
  return image.owner === auth.project_id || (image.members ?? []).includes(auth.project_id);
}
