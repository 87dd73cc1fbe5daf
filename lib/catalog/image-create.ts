// Creating an image record (Glance's POST /v2/images, metadata only). Its own file beside repo.ts
// so the catalog's reads stay where they are; it drops the process's list cache like every write.
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import { resetCatalogCache } from "./repo.js";
import type { Image } from "./types.js";

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
