// The Catalog table: flavors (pk `flavor#<id>`; their access list a string set `projects`) and
// images (pk `image#<id>`); keypairs are in keypairs.ts. Lists are cached
// per process for a few seconds; every write in this process drops the cache, so what this
// process creates it sees at once (other containers see it within the TTL).
import { DeleteCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { loadItem } from "../aws/dynamo-loader.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { perIdentity } from "../aws/identity.js";
import { resources } from "../config.js";
import { indexAggregates } from "./aggregates.js";
import { SEED_FLAVORS, SEED_IMAGES } from "./seed.js";
import type { Flavor, Image } from "./types.js";

const FLAVOR = "flavor#";
const IMAGE = "image#";
const LIST_TTL_MS = 5_000;

function table(): string {
  return resources().catalogTable;
}

type Stored<T> = T & { pk: string; kind: "flavor" | "image" };

function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, kind: _kind, ...rest } = item;
  return rest as T;
}

// One cache per identity: the API's reads must not serve the scheduler (each is its own Lambda).
const caches = perIdentity<{
  flavors?: { at: number; items: Flavor[] };
  images?: { at: number; items: Image[] };
}>(() => ({}));

/** Forget cached lists (tests and the local runtime switch tables between runs). */
export function resetCatalogCache(): void {
  caches.reset();
}

/** A stored flavor: its access set read back as a sorted list. */
function flavorOf(item: Record<string, unknown>): Flavor {
  const f = strip<Flavor & { projects?: Iterable<string> }>(item);
  return { ...f, projects: f.projects ? [...f.projects].sort() : [] };
}

async function scanPrefix<T>(prefix: string): Promise<T[]> {
  const items = await scanAll({
    TableName: table(),
    FilterExpression: "begins_with(pk, :p)",
    ExpressionAttributeValues: { ":p": prefix },
    ConsistentRead: true,
  });
  return items.map((item) => strip<T>(item));
}

/**
 * One item, read consistently (with the other catalog items asked in the same tick); `settled`:
 * eventually consistent, a miss read again consistently (lib/aws/dynamo-loader.ts).
 */
async function getItem<T>(pk: string, settled = false): Promise<T | undefined> {
  const item = await loadItem(table(), pk, "pk", settled);
  return item ? strip<T>(item) : undefined;
}

// ── flavors ──

/** A flavor; `settled` as getItem's (a create's read: half the read units). */
export async function getFlavor(id: string, settled = false): Promise<Flavor | undefined> {
  const item = await loadItem(table(), `${FLAVOR}${id}`, "pk", settled);
  return item ? flavorOf(item) : undefined;
}

/** Every flavor, disabled and private ones included, sorted by id. `fresh` bypasses the cache. */
export async function listFlavors(opts: { fresh?: boolean } = {}): Promise<Flavor[]> {
  const now = Date.now();
  const cache = caches.get();
  if (!opts.fresh && cache.flavors && now - cache.flavors.at < LIST_TTL_MS) return [...cache.flavors.items];
  const items = (await scanPrefix<Record<string, unknown>>(FLAVOR))
    .map(flavorOf)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  cache.flavors = { at: now, items };
  return [...items];
}

export type CreateFlavorResult =
  | { ok: true; flavor: Flavor }
  | { ok: false; reason: "id-exists" | "name-exists" };

/**
 * Create a flavor. The id is unique by a conditional put; the name by a fresh scan first (two
 * concurrent creates of one name with different ids could both pass: acceptable for an admin API).
 */
export async function createFlavor(flavor: Flavor): Promise<CreateFlavorResult> {
  const existing = await listFlavors({ fresh: true });
  if (existing.some((f) => f.id === flavor.id)) return { ok: false, reason: "id-exists" };
  if (existing.some((f) => f.name === flavor.name)) return { ok: false, reason: "name-exists" };
  // an empty set cannot be stored: a flavor without access has no `projects`
  const { projects: _projects, ...rest } = flavor;
  const item: Stored<Omit<Flavor, "projects">> = { ...rest, pk: `${FLAVOR}${flavor.id}`, kind: "flavor" };
  const put = dynamo().send(
    new PutCommand({ TableName: table(), Item: item, ConditionExpression: "attribute_not_exists(pk)" }),
  );
  if (!(await conditionHeld(put, () => caches.reset()))) return { ok: false, reason: "id-exists" };
  return { ok: true, flavor: { ...flavor, projects: [] } };
}

/** Merge extra specs into a flavor (Nova's os-extra-specs create). Undefined if no such flavor. */
export async function setFlavorExtraSpecs(
  id: string,
  specs: Record<string, string>,
): Promise<Flavor | undefined> {
  const keys = Object.keys(specs);
  if (keys.length === 0) return getFlavor(id);
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets = keys.map((k, i) => {
    names[`#k${i}`] = k;
    values[`:v${i}`] = specs[k];
    return `extra_specs.#k${i} = :v${i}`;
  });
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: `${FLAVOR}${id}` },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(pk)",
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    ),
    () => caches.reset(),
  );
  return r?.Attributes ? flavorOf(r.Attributes) : undefined;
}

/** One conditional update of a flavor item; undefined when the condition fails. */
async function updateFlavor(
  id: string,
  update: Omit<ConstructorParameters<typeof UpdateCommand>[0], "TableName" | "Key" | "ReturnValues">,
): Promise<Flavor | undefined> {
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: `${FLAVOR}${id}` },
        ReturnValues: "ALL_NEW",
        ...update,
      }),
    ),
    () => caches.reset(),
  );
  return r?.Attributes ? flavorOf(r.Attributes) : undefined;
}

/** Remove one extra spec; says which of the flavor or the key was missing. */
export async function deleteFlavorExtraSpec(
  id: string,
  key: string,
): Promise<"deleted" | "no-flavor" | "no-key"> {
  const f = await updateFlavor(id, {
    UpdateExpression: "REMOVE extra_specs.#k",
    ConditionExpression: "attribute_exists(extra_specs.#k)",
    ExpressionAttributeNames: { "#k": key },
  });
  if (f) return "deleted";
  return (await getFlavor(id)) ? "no-key" : "no-flavor";
}

/** Nova's flavor delete (admin); false if there was no such flavor. */
export async function deleteFlavor(id: string): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new DeleteCommand({
        TableName: table(),
        Key: { pk: `${FLAVOR}${id}` },
        ConditionExpression: "attribute_exists(pk)",
      }),
    ),
    () => caches.reset(),
  );
}

/** PUT /flavors/{id} (2.55): the description is the one thing that changes. */
export async function setFlavorDescription(
  id: string,
  description: string | null,
): Promise<Flavor | undefined> {
  return updateFlavor(id, {
    UpdateExpression: "SET description = :d",
    ConditionExpression: "attribute_exists(pk)",
    ExpressionAttributeValues: { ":d": description },
  });
}

export type FlavorAccessResult =
  | { ok: true; flavor: Flavor }
  | { ok: false; reason: "no-flavor" | "exists" | "absent" };

/** Share a flavor with a project (addTenantAccess): "exists" when it already is. */
export async function addFlavorAccess(id: string, projectId: string): Promise<FlavorAccessResult> {
  const f = await updateFlavor(id, {
    UpdateExpression: "ADD projects :p",
    ConditionExpression: "attribute_exists(pk) AND NOT contains(projects, :one)",
    ExpressionAttributeValues: { ":p": new Set([projectId]), ":one": projectId },
  });
  if (f) return { ok: true, flavor: f };
  return { ok: false, reason: (await getFlavor(id)) ? "exists" : "no-flavor" };
}

/** Stop sharing a flavor with a project (removeTenantAccess): "absent" when it was not. */
export async function removeFlavorAccess(id: string, projectId: string): Promise<FlavorAccessResult> {
  const f = await updateFlavor(id, {
    UpdateExpression: "DELETE projects :p",
    ConditionExpression: "contains(projects, :one)",
    ExpressionAttributeValues: { ":p": new Set([projectId]), ":one": projectId },
  });
  if (f) return { ok: true, flavor: f };
  return { ok: false, reason: (await getFlavor(id)) ? "absent" : "no-flavor" };
}

// ── images ──

/** Every image, sorted by name then id. */
export async function listImages(opts: { fresh?: boolean } = {}): Promise<Image[]> {
  const now = Date.now();
  const cache = caches.get();
  if (!opts.fresh && cache.images && now - cache.images.at < LIST_TTL_MS) return [...cache.images.items];
  const items = (await scanPrefix<Image>(IMAGE)).sort(
    (a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id),
  );
  cache.images = { at: now, items };
  return [...items];
}

/** The shape of an image's id (Glance's: a UUID). */
const IMAGE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An image by id or, failing that, by name (a convenience for `imageRef`). When several images
 * share the name, the first by id is returned. `settled` as getItem's.
 */
export async function getImage(idOrName: string, settled = false): Promise<Image | undefined> {
  // Glance's ids are UUIDs (lib/api/image/validation.ts): a create's ref that is not one is a name,
  // and reading it as an id first would cost a miss, and a settled miss's consistent read again
  const byId =
    settled && !IMAGE_ID.test(idOrName) ? undefined : await getItem<Image>(`${IMAGE}${idOrName}`, settled);
  if (byId) return byId;
  const named = (await listImages()).filter((i) => i.name === idOrName);
  return named.sort((a, b) => a.id.localeCompare(b.id))[0];
}

// ── seeding ──

async function putIfAbsent(item: Record<string, unknown>): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new PutCommand({ TableName: table(), Item: item, ConditionExpression: "attribute_not_exists(pk)" }),
    ),
  );
}

/**
 * Write the seed flavors and images that are not there yet (idempotent; never overwrites an
 * operator's change). Returns how many of each were written.
 */
export async function seedCatalog(): Promise<{ flavors: number; images: number }> {
  const flavorsWritten = await Promise.all(
    SEED_FLAVORS.map((f) => putIfAbsent({ ...f, pk: `${FLAVOR}${f.id}`, kind: "flavor" })),
  );
  const imagesWritten = await Promise.all(
    SEED_IMAGES.map((i) => putIfAbsent({ ...i, pk: `${IMAGE}${i.id}`, kind: "image" })),
  );
  resetCatalogCache();
  // what an older release stored, listed before anyone reads the list
  await indexAggregates();
  return {
    flavors: flavorsWritten.filter(Boolean).length,
    images: imagesWritten.filter(Boolean).length,
  };
}
