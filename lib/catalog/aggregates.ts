// Host aggregates in the Catalog table (pk `aggregate#<uuid>`; Nova's integer id from a counter
// item, `serial#aggregates`). Membership lives only here, as in
// Nova's aggregate_hosts: a host's aggregates (and so its availability zone) are found by joining
// the hosts with this list. Every change is a read-modify-write of the one item, conditioned on
// the `revision` it was read at, so concurrent actions on one aggregate cannot lose each other.
// `aggregates#index` holds every aggregate's id and a revision every change bumps, in the same
// transaction: a reader (the scheduler, every few seconds in every warm container) reads that one
// item and the aggregates again only when it moved, never a Scan of the Catalog (whose size grows
// with keypairs, quotas and groups). The list is cached per process for a few seconds; this
// process's writes drop the cache.
import { GetCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { writeHeld } from "../aws/dynamo-errors.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { perIdentity } from "../aws/identity.js";
import { resources } from "../config.js";
import type { Aggregate } from "./types.js";

const PREFIX = "aggregate#";
/** The counter Nova's integer aggregate ids come from (outside PREFIX, so no list sees it). */
const SERIAL = "serial#aggregates";
/** Every aggregate's id and the revision of the whole list (outside PREFIX too). */
const INDEX = "aggregates#index";
const LIST_TTL_MS = 5_000;

/** Nova's metadata key that puts an aggregate's hosts in an availability zone. */
export const AZ_METADATA_KEY = "availability_zone";

/** An aggregate as read for an update: write it back with this revision or not at all. */
export interface AggregateRevision {
  aggregate: Aggregate;
  revision: number;
}

type Stored = Aggregate & { pk: string; kind: "aggregate"; revision: number };

function table(): string {
  return resources().catalogTable;
}

function fromItem(item: Record<string, unknown>): AggregateRevision {
  const { pk: _pk, kind: _kind, revision, ...rest } = item as unknown as Stored;
  const aggregate = rest as Aggregate;
  return {
    aggregate: { ...aggregate, hosts: [...(aggregate.hosts ?? [])], metadata: { ...aggregate.metadata } },
    revision,
  };
}

function toItem(a: Aggregate, revision: number): Stored {
  return { ...a, pk: `${PREFIX}${a.id}`, kind: "aggregate", revision };
}

// One cache per identity: the API's reads must not serve the scheduler (each is its own Lambda).
const caches = perIdentity<{ list?: { at: number; revision: number; items: Aggregate[] } }>(() => ({}));

/** Forget the cached list (tests and the local runtime switch tables between runs). */
export function resetAggregateCache(): void {
  caches.reset();
}

/** Every aggregate, sorted by name then id. `fresh` bypasses the cache. */
export async function listAggregates(opts: { fresh?: boolean } = {}): Promise<Aggregate[]> {
  const now = Date.now();
  const cache = caches.get();
  if (!opts.fresh && cache.list && now - cache.list.at < LIST_TTL_MS) return cache.list.items.map(clone);
  const { revision, ids } = await readIndex();
  if (cache.list && cache.list.revision === revision) {
    cache.list.at = now;
    return cache.list.items.map(clone);
  }
  const items = (
    await batchGetAll(
      table(),
      [...ids].map((id) => ({ pk: `${PREFIX}${id}` })),
      { ConsistentRead: true },
    )
  ).map((item) => fromItem(item).aggregate);
  items.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  cache.list = { at: now, revision, items };
  return items.map(clone);
}

/** The list's index: every aggregate's id, and the revision of the whole list (0 before any). */
async function readIndex(): Promise<{ revision: number; ids: Set<string> }> {
  const item = (
    await dynamo().send(new GetCommand({ TableName: table(), Key: { pk: INDEX }, ConsistentRead: true }))
  ).Item;
  return {
    revision: (item?.revision as number | undefined) ?? 0,
    ids: (item?.ids as Set<string> | undefined) ?? new Set<string>(),
  };
}

/** The index's update in a change's transaction: the id in (or out), and the revision bumped. */
function indexUpdate(id: string, membership: "ADD" | "DELETE" | undefined) {
  return {
    Update: {
      TableName: table(),
      Key: { pk: INDEX },
      UpdateExpression: {
        ADD: "SET kind = :k ADD revision :one, ids :id",
        DELETE: "SET kind = :k ADD revision :one DELETE ids :id",
        none: "SET kind = :k ADD revision :one",
      }[membership ?? "none"],
      ExpressionAttributeValues: {
        ":k": "aggregates-index",
        ":one": 1,
        ...(membership ? { ":id": new Set([id]) } : {}),
      },
    },
  };
}

/**
 * The index of what an older release stored (aggregates without it): built by the seed with one
 * Scan, never on a request path. Returns how many ids it added.
 */
export async function indexAggregates(): Promise<number> {
  const items = await scanAll({
    TableName: table(),
    FilterExpression: "begins_with(pk, :p)",
    ExpressionAttributeValues: { ":p": PREFIX },
    ConsistentRead: true,
  });
  const known = (await readIndex()).ids;
  const missing = items.map((i) => fromItem(i).aggregate.id).filter((id) => !known.has(id));
  if (missing.length > 0) {
    await dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: INDEX },
        UpdateExpression: "SET kind = :k ADD revision :one, ids :ids",
        ExpressionAttributeValues: { ":k": "aggregates-index", ":one": 1, ":ids": new Set(missing) },
      }),
    );
    caches.reset();
  }
  return missing.length;
}

function clone(a: Aggregate): Aggregate {
  return { ...a, hosts: [...a.hosts], metadata: { ...a.metadata } };
}

export async function getAggregateRevision(id: string): Promise<AggregateRevision | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: table(), Key: { pk: `${PREFIX}${id}` }, ConsistentRead: true }),
  );
  return r.Item ? fromItem(r.Item) : undefined;
}

export async function getAggregate(id: string): Promise<Aggregate | undefined> {
  return (await getAggregateRevision(id))?.aggregate;
}

export type CreateAggregateResult = { ok: true; aggregate: Aggregate } | { ok: false; reason: "name-exists" };

/**
 * Create an aggregate. Names are unique by a fresh scan first (two concurrent creates of one
 * name could both pass: acceptable for an admin API, as for flavors).
 */
export async function createAggregate(a: Aggregate): Promise<CreateAggregateResult> {
  if ((await listAggregates({ fresh: true })).some((x) => x.name === a.name)) {
    return { ok: false, reason: "name-exists" };
  }
  // Nova's integer id: the next value of one atomic counter (a failed create leaves a gap, as
  // an autoincrement does)
  const counter = await dynamo().send(
    new UpdateCommand({
      TableName: table(),
      Key: { pk: SERIAL },
      UpdateExpression: "ADD serial :one",
      ExpressionAttributeValues: { ":one": 1 },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  const created: Aggregate = { ...a, number: counter.Attributes!.serial as number };
  try {
    await dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table(),
              Item: toItem(created, 1),
              ConditionExpression: "attribute_not_exists(pk)",
            },
          },
          indexUpdate(created.id, "ADD"),
        ],
      }),
    );
  } finally {
    caches.reset();
  }
  return { ok: true, aggregate: clone(created) };
}

/** Write an aggregate read at `revision`. False when it changed (or went) meanwhile. */
export async function saveAggregate(a: Aggregate, revision: number): Promise<boolean> {
  return writeHeld(
    dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table(),
              Item: toItem(a, revision + 1),
              ConditionExpression: "revision = :r",
              ExpressionAttributeValues: { ":r": revision },
            },
          },
          indexUpdate(a.id, undefined),
        ],
      }),
    ),
    () => caches.reset(),
  );
}

/** Delete an aggregate read at `revision`. False when it changed (or went) meanwhile. */
export async function deleteAggregate(id: string, revision: number): Promise<boolean> {
  return writeHeld(
    dynamo().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: table(),
              Key: { pk: `${PREFIX}${id}` },
              ConditionExpression: "revision = :r",
              ExpressionAttributeValues: { ":r": revision },
            },
          },
          indexUpdate(id, "DELETE"),
        ],
      }),
    ),
    () => caches.reset(),
  );
}

// ── the join, pure ──

/** host → the availability zone its AZ aggregate gives it (Nova allows one zone per host). */
export function aggregateZoneByHost(aggregates: readonly Aggregate[]): Map<string, string> {
  const zones = new Map<string, string>();
  for (const a of aggregates) {
    const zone = a.metadata[AZ_METADATA_KEY];
    if (!zone) continue;
    for (const h of a.hosts) if (!zones.has(h)) zones.set(h, zone);
  }
  return zones;
}

/**
 * A host's availability zone: its AZ aggregate's, else the zone it registered with, else
 * [DEFAULT] default_availability_zone (Nova's: the aggregate's, else the default).
 */
export function hostAvailabilityZone(
  host: { host: string; availability_zone: string },
  zoneByHost: ReadonlyMap<string, string>,
  defaultZone: string,
): string {
  return zoneByHost.get(host.host) || host.availability_zone || defaultZone;
}

/** Aggregates holding `host`, in list order. */
export function aggregatesOfHost(aggregates: readonly Aggregate[], host: string): Aggregate[] {
  return aggregates.filter((a) => a.hosts.includes(host));
}
