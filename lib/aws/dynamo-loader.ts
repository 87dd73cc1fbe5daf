// Reads of single items, the ones asked in the same tick sent as one BatchGetItem (DataLoader's
// batching, no cache): a create's quota and quota class are one consistent request, its flavor
// and image (read as settled) one eventually consistent request. The items come back as stored.
import DataLoader from "dataloader";
import { batchGetAll } from "./dynamo-batch.js";
import { perIdentity } from "./identity.js";

type Item = Record<string, unknown>;

/**
 * One loader per caller and table: a batch is sent with the credentials of whoever asked (the
 * local runtime runs several functions' identities in one thread), and to one table.
 */
const loaders = perIdentity(() => new Map<string, DataLoader<string, Item | undefined>>());

function loaderFor(
  table: string,
  keyName: string,
  consistent: boolean,
): DataLoader<string, Item | undefined> {
  const key = `${table}\n${keyName}\n${consistent}`;
  let loader = loaders.get().get(key);
  if (!loader) {
    loader = new DataLoader(
      async (ids) => {
        // BatchGetItem refuses a key asked twice
        const found = await batchGetAll(
          table,
          [...new Set(ids)].map((id) => ({ [keyName]: id })),
          { ConsistentRead: consistent },
        );
        const byId = new Map(found.map((item) => [String(item[keyName]), item]));
        return ids.map((id) => byId.get(id));
      },
      // no maxBatchSize: batchGetAll splits a batch at BatchGetItem's 100 keys
      { cache: false },
    );
    loaders.get().set(key, loader);
  }
  return loader;
}

/**
 * The item of `table` (keyed by the string attribute `keyName` alone) with this key, read
 * consistently; `settled` (what changes seldom and was written well before: a flavor, an image)
 * reads it eventually consistent, at half the read units, and reads a miss again consistently,
 * so an item just made is never missed.
 */
export async function loadItem(
  table: string,
  id: string,
  keyName = "pk",
  settled = false,
): Promise<Item | undefined> {
  const item = await loaderFor(table, keyName, !settled).load(id);
  return item === undefined && settled ? loaderFor(table, keyName, true).load(id) : item;
}
