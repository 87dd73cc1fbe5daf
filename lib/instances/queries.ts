// Reading instance records: one by id (consistent, or as settled), a project's or every project's, a host's, and
// the servers listings' pages. The indexes carry only keys (and what a filter needs): the records
// are then read whole by BatchGetItem.
import { createHash } from "node:crypto";
import { GetCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { inState } from "../aws/dynamo-conditions.js";
import { loadItem } from "../aws/dynamo-loader.js";
import { queryAll } from "../aws/dynamo-pages.js";
import {
  INSTANCES_BY_HOST_INDEX,
  INSTANCES_BY_PROJECT_INDEX,
  INSTANCES_BY_VM_STATE_INDEX,
  INSTANCES_CHANGES_INDEX,
} from "../resources.js";
import { instancesTable, recordOf } from "./codec.js";
import type { InstanceRecord, VmState } from "./types.js";

export async function getInstance(id: string): Promise<InstanceRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: instancesTable(), Key: { id }, ConsistentRead: true }),
  );
  return r.Item ? recordOf(r.Item) : undefined;
}

/**
 * The instance as written before the caller was asked: read eventually consistent (half the
 * units; the reads asked in the same tick go as one BatchGetItem), a miss read again
 * consistently so a record just made is never missed. For a reader that acts on what an earlier
 * step wrote and whose own writes are conditioned (a decision's request spec, whose claim is the
 * authority) or best effort (a security group fan-out), never for the state a fenced write is
 * decided on.
 */
export async function getSettledInstance(id: string): Promise<InstanceRecord | undefined> {
  const item = await loadItem(instancesTable(), id, "id", true);
  return item ? recordOf(item) : undefined;
}

/**
 * Live (not deleted, SOFT_DELETED ones included) instances of one project, or of every project when none is given, newest
 * first. Read by index (the project's, or every live vm_state's): never a Scan, so the table's
 * other items (console outputs, lib/instances/power.ts) and deleted ones are not read.
 */
export async function listInstances(
  projectId?: string,
  opts: { withDeleted?: boolean } = {},
): Promise<InstanceRecord[]> {
  // deleted ones (until their TTL) only for usage reports (os-simple-tenant-usage)
  const q: ServerListing = {
    project: projectId,
    deleted: opts.withDeleted ? undefined : false,
    // a SOFT_DELETED server is live here: its claim, ports and guest are still held
    softDeleted: true,
    match: () => true,
    limit: Number.POSITIVE_INFINITY,
  };
  const keys = await Promise.all(
    partitionsOf(q).map((p) =>
      queryAll<Position>({
        TableName: instancesTable(),
        IndexName: p.index,
        KeyConditionExpression: "#k = :k",
        FilterExpression: p.filter?.expression,
        ExpressionAttributeNames: { "#k": p.key },
        ExpressionAttributeValues: { ":k": p.value, ...p.filter?.values },
      }),
    ),
  );
  return (await recordsOf(keys.flat().sort(before))).filter((r) => selected(q, r));
}

/** Live instances in one vm_state (the watchdog's SHELVED servers): its partition of `by-vm-state`. */
export async function listInstancesInVmState(vmState: VmState): Promise<InstanceRecord[]> {
  return (await instanceIdsInVmState(vmState).then(getInstances)).filter((r) => r.vm_state === vmState);
}

/** The ids in one vm_state's partition of `by-vm-state` (keys only: read the items for the rest). */
export async function instanceIdsInVmState(vmState: VmState): Promise<string[]> {
  const keys = await queryAll<Pick<InstanceRecord, "id">>({
    TableName: instancesTable(),
    IndexName: INSTANCES_BY_VM_STATE_INDEX,
    KeyConditionExpression: "vm_state = :v",
    ExpressionAttributeValues: { ":v": vmState },
    ProjectionExpression: "id",
  });
  return keys.map((r) => r.id);
}

/**
 * Live instances placed on `host` (Nova's InstanceList.get_by_host): what a starting compute
 * service reconciles its guests with. The index carries the keys and `deleted`.
 */
export async function listInstancesOnHost(host: string): Promise<InstanceRecord[]> {
  const keys = await queryAll<Pick<InstanceRecord, "id">>({
    TableName: instancesTable(),
    IndexName: INSTANCES_BY_HOST_INDEX,
    KeyConditionExpression: "host = :h",
    FilterExpression: "deleted = :f",
    ExpressionAttributeValues: { ":h": host, ":f": false },
  });
  return (await getInstances(keys.map((r) => r.id))).filter((r) => r.host === host);
}

/**
 * The instances with these ids (those that exist), by BatchGetItem. A deleted one may be read
 * after its index entry said live: callers filter on `deleted` again.
 */
async function getInstances(ids: string[], withDeleted = false): Promise<InstanceRecord[]> {
  const items = await batchGetAll(
    instancesTable(),
    ids.map((id) => ({ id })),
  );
  const out = items.map(recordOf);
  return withDeleted ? out : out.filter((r) => !r.deleted);
}

// ---- Listings (GET /servers, /servers/detail) ----------------------------------------------------
// Nova's order (created_at newest first; equal times by id, as before), read from an index in that
// order and paged with Nova's limit/marker: never a Scan. Which index reads the selection:
//   - changes-since / changes-before: `changes` (by updated_at, deleted ones included, in
//     CHANGE_SHARDS partitions), only the keys changed in the window; and the builds in flight
//     from `by-vm-state` (see below);
//   - a host: `by-host`; a project (a member's own, or an admin's project filter): `by-project`;
//   - otherwise (all tenants, with or without a status): `by-vm-state`, one partition per vm_state
//     asked for (a status is Nova's vm_state plus a task_state checked on the item), merged.
// Filters no index answers (name, ip, flavor, image, tags, a task_state's status...) are checked on
// the items read, in order, until the page is full or LIST_READ_BUDGET items were read.
//
// An instance enters the `changes` index when it leaves BUILD (markActive, setError, the delete
// set its change_shard), not at create: a build's own writes (placed, spawning...) would each
// move its entry (a delete and a put) and so cost about 7 write units a build. The builds in
// flight are the `building` partition of `by-vm-state` instead, read whole (keys only) by a
// changes-since request and checked on the items: what a build's writes cost is then 1 unit.

/** Partitions of the `changes` index: every write of an instance moves its entry there. */
export const CHANGE_SHARDS = 8;

/** The `changes` index's partition of an instance: `changes#<n>`, n from a hash of its id. */
export function changeShard(id: string): string {
  return `changes#${createHash("sha256").update(id, "utf8").digest().readUInt32BE(0) % CHANGE_SHARDS}`;
}

/** Every vm_state, whether it is live: a record, so that a new vm_state cannot be left out. */
const VM_STATE_LIVE: Record<VmState, boolean> = {
  building: true,
  active: true,
  stopped: true,
  resized: true,
  error: true,
  paused: true,
  suspended: true,
  shelved: true,
  shelved_offloaded: true,
  // a SOFT_DELETED server's record is live (deleted is false) until it is reclaimed
  "soft-delete": true,
  deleted: false,
};

/** The vm_states of live instances (every one but `deleted`): the all-tenant listing's partitions. */
export const LIVE_VM_STATES: readonly VmState[] = (Object.keys(VM_STATE_LIVE) as VmState[]).filter(
  (v) => VM_STATE_LIVE[v],
);

/**
 * Items one listing request reads at most when filters no index answers reject what it reads
 * (2 × Nova's max_limit). A page cut short by it still has its `next` link, whose marker is the
 * last server read (matching or not), so a client following the links sees every server.
 */
export const LIST_READ_BUDGET = 2000;

/** What a listing asks for: the selection (answered by an index), the other filters, the page. */
export interface ServerListing {
  /** one project's (a member's own; an admin's project_id filter) */
  project?: string;
  host?: string;
  /** the vm_states of the statuses asked for */
  vmStates?: readonly VmState[];
  /** true: deleted only; false: live only; undefined: both (Nova's changes-since without `deleted`) */
  deleted?: boolean;
  /**
   * Nova's `soft_deleted` beside `deleted`: SOFT_DELETED servers (their records live) count as
   * deleted, so `deleted: false` leaves them out unless this is true, and `deleted: true` takes
   * them in unless this is false. Undefined `deleted` selects them with the rest.
   */
  softDeleted?: boolean;
  /** ISO times, on updated_at */
  changesSince?: string;
  changesBefore?: string;
  /** the filters no index answers */
  match: (r: InstanceRecord) => boolean;
  marker?: string;
  limit: number;
  /** items this request may read (LIST_READ_BUDGET unless a test says otherwise) */
  readBudget?: number;
  /** Nova's sort_key/sort_dir: the whole selection is then read (by its index) and sorted here */
  compare?: (a: InstanceRecord, b: InstanceRecord) => number;
}

export interface ServerPage {
  records: InstanceRecord[];
  /** the id the next page starts after, when there may be more */
  next?: string;
}

/** Nova's MarkerNotFound: the API answers 400 "marker [x] not found". */
export class MarkerNotFound extends Error {
  constructor(readonly marker: string) {
    super(`marker [${marker}] not found`);
  }
}

interface Position {
  id: string;
  created_at: string;
}

/** Nova's default order: created_at newest first, then (here) id ascending. */
function before(a: Position, b: Position): number {
  return b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id);
}

/** One partition of an index with created_at as its sort key. */
interface Partition {
  index: string;
  key: string;
  value: string;
  /** a filter on attributes the index projects */
  filter?: { expression: string; values: Record<string, unknown> };
}

/**
 * The keys of one partition in Nova's order, after `after` if given. Entries with equal created_at
 * come in no documented order, so a run of them is held until it is complete and sorted by id.
 */
async function* partitionKeys(p: Partition, pageSize: number, after?: Position): AsyncGenerator<Position> {
  let start: Record<string, unknown> | undefined;
  let held: Position[] = [];
  // the first page as the listing's; doubled after each (filters may reject what was read)
  let size = pageSize;
  do {
    const r = await dynamo().send(
      new QueryCommand({
        TableName: instancesTable(),
        IndexName: p.index,
        KeyConditionExpression: `#k = :k${after ? " AND created_at <= :c" : ""}`,
        FilterExpression: p.filter?.expression,
        ExpressionAttributeNames: { "#k": p.key },
        ExpressionAttributeValues: {
          ":k": p.value,
          ...(after ? { ":c": after.created_at } : {}),
          ...p.filter?.values,
        },
        ScanIndexForward: false,
        Limit: size,
        ExclusiveStartKey: start,
      }),
    );
    start = r.LastEvaluatedKey;
    size = Math.min(1000, size * 2);
    for (const it of r.Items ?? []) {
      const k = { id: it.id as string, created_at: it.created_at as string };
      if (!after || before(after, k) < 0) held.push(k);
    }
    held.sort(before);
    // what is older than the last entry read is complete; the last run may go on in the next page
    const last = held[held.length - 1]?.created_at;
    const done = start ? held.filter((k) => k.created_at !== last) : held;
    held = start ? held.filter((k) => k.created_at === last) : [];
    yield* done;
  } while (start);
}

/** Several partitions' keys merged in Nova's order (each partition is in that order already). */
async function* merged(sources: AsyncGenerator<Position>[]): AsyncGenerator<Position> {
  const heads = await Promise.all(sources.map((s) => s.next()));
  // an index is eventually consistent: an instance whose vm_state just changed may show in two
  const seen = new Set<string>();
  for (;;) {
    let best = -1;
    heads.forEach((h, i) => {
      if (!h.done && (best === -1 || before(h.value, (heads[best] as { value: Position }).value) < 0))
        best = i;
    });
    if (best === -1) return;
    const k = (heads[best] as { value: Position }).value;
    if (!seen.has(k.id)) yield k;
    seen.add(k.id);
    heads[best] = await sources[best]!.next();
  }
}

/** Whether SOFT_DELETED servers are among those a `deleted: true` listing selects (Nova's default). */
const withSoftDeleted = (q: ServerListing) => q.softDeleted ?? q.deleted === true;

/** Is the record deleted as the listing means it (soft-deleted ones as `softDeleted` says)? */
function deletedMatches(q: ServerListing, r: InstanceRecord): boolean {
  if (q.deleted === undefined) return true;
  const soft = !r.deleted && r.vm_state === "soft-delete";
  if (soft) return withSoftDeleted(q);
  return r.deleted === q.deleted;
}

/** The partitions that hold a listing's selection (see above; changes-since is apart). */
function partitionsOf(q: ServerListing): Partition[] {
  // (the by-host and by-project indexes project `deleted`, not the vm_state: a listing of deleted
  // servers with the soft-deleted ones reads the live entries too, and the items decide)
  const deletedFilter =
    q.deleted === undefined || (q.deleted && withSoftDeleted(q))
      ? undefined
      : { expression: "deleted = :d", values: { ":d": q.deleted } };
  if (q.host) return [{ index: INSTANCES_BY_HOST_INDEX, key: "host", value: q.host, filter: deletedFilter }];
  if (q.project) {
    return [
      { index: INSTANCES_BY_PROJECT_INDEX, key: "project_id", value: q.project, filter: deletedFilter },
    ];
  }
  const states = (q.vmStates ?? (Object.keys(VM_STATE_LIVE) as VmState[])).filter(
    (s) =>
      q.deleted === undefined || (s === "soft-delete" ? withSoftDeleted(q) : (s === "deleted") === q.deleted),
  );
  return states.map((s) => ({ index: INSTANCES_BY_VM_STATE_INDEX, key: "vm_state", value: s }));
}

/**
 * The keys changed in the changes-since/changes-before window, of every shard, that the index's
 * projected attributes do not rule out; in Nova's order.
 */
async function changedKeys(q: ServerListing): Promise<Position[]> {
  const range =
    q.changesSince && q.changesBefore
      ? "updated_at BETWEEN :since AND :before"
      : q.changesSince
        ? "updated_at >= :since"
        : "updated_at <= :before";
  const filters: string[] = [];
  const values: Record<string, unknown> = {};
  if (q.changesSince) values[":since"] = q.changesSince;
  if (q.changesBefore) values[":before"] = q.changesBefore;
  if (q.project) {
    filters.push("project_id = :p");
    values[":p"] = q.project;
  }
  if (q.host) {
    filters.push("host = :h");
    values[":h"] = q.host;
  }
  if (q.deleted !== undefined) {
    // (soft-deleted ones are live records: the items decide which side they are on)
    const orSoft = q.deleted && withSoftDeleted(q);
    filters.push(orSoft ? "(deleted = :d OR vm_state = :sd)" : "deleted = :d");
    values[":d"] = q.deleted;
    if (orSoft) values[":sd"] = "soft-delete";
  }
  if (q.vmStates) {
    filters.push(inState(values, "vm_state", q.vmStates, "v"));
  }
  // the builds in flight are not in the changes index yet: their keys, their items checked later
  const building =
    q.deleted !== true && (!q.vmStates || q.vmStates.includes("building"))
      ? queryAll<Position>({
          TableName: instancesTable(),
          IndexName: INSTANCES_BY_VM_STATE_INDEX,
          KeyConditionExpression: "vm_state = :b",
          ExpressionAttributeValues: { ":b": "building" },
        })
      : Promise.resolve([]);
  const shards = await Promise.all([
    building,
    ...Array.from({ length: CHANGE_SHARDS }, (_, n) =>
      queryAll<Position>({
        TableName: instancesTable(),
        IndexName: INSTANCES_CHANGES_INDEX,
        KeyConditionExpression: `change_shard = :s AND ${range}`,
        FilterExpression: filters.length ? filters.join(" AND ") : undefined,
        ExpressionAttributeValues: { ":s": `changes#${n}`, ...values },
        ProjectionExpression: "id, created_at",
      }),
    ),
  ]);
  // an entry may show in both for a moment (an index is eventually consistent)
  const byId = new Map(shards.flat().map((k) => [k.id, k]));
  return [...byId.values()].sort(before);
}

/** The index's answer may be stale (indexes are eventually consistent): the item decides. */
function selected(q: ServerListing, r: InstanceRecord): boolean {
  return (
    deletedMatches(q, r) &&
    (!q.project || r.project_id === q.project) &&
    (!q.host || r.host === q.host) &&
    (!q.vmStates || q.vmStates.includes(r.vm_state)) &&
    (!q.changesSince || r.updated_at >= q.changesSince) &&
    (!q.changesBefore || r.updated_at <= q.changesBefore) &&
    q.match(r)
  );
}

/** The records of these keys, in their order (those still there). */
async function recordsOf(keys: Position[]): Promise<InstanceRecord[]> {
  // BatchGetItem refuses a key twice (a stale index entry can repeat one)
  const ids = [...new Set(keys.map((k) => k.id))];
  const byId = new Map(
    (
      await batchGetAll(
        instancesTable(),
        ids.map((id) => ({ id })),
      )
    ).map((it) => [it.id as string, recordOf(it)]),
  );
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * One page of a server listing (Nova's limit/marker). The marker is any instance's id, deleted
 * ones included (Nova looks it up with read_deleted); one that does not exist is MarkerNotFound.
 */
export async function listServerPage(q: ServerListing): Promise<ServerPage> {
  // statuses none of which a vm_state can show (a member's unknown status) match nothing
  if (q.vmStates?.length === 0) return { records: [] };
  if (q.compare) return sortedPage(q, q.compare);
  let after: Position | undefined;
  if (q.marker) {
    const m = await getInstance(q.marker);
    if (!m) throw new MarkerNotFound(q.marker);
    after = { id: m.id, created_at: m.created_at };
  }
  const changes = q.changesSince !== undefined || q.changesBefore !== undefined;
  // one more key than the page, so that whether more follow is known in the same round
  const pageSize = Math.min(1000, q.limit + 1);
  const keys: AsyncIterator<Position> = changes
    ? (async function* () {
        for (const k of await changedKeys(q)) if (!after || before(after, k) < 0) yield k;
      })()
    : merged(partitionsOf(q).map((p) => partitionKeys(p, pageSize, after)));
  const budget = q.readBudget ?? LIST_READ_BUDGET;
  const out: InstanceRecord[] = [];
  let read = 0;
  let lastRead: string | undefined;
  for (;;) {
    // a full page: a next link if any key is left (Nova links a full page without looking further)
    if (out.length === q.limit) {
      const n = await keys.next();
      return { records: out, next: n.done || !out.length ? undefined : out[out.length - 1]!.id };
    }
    // cut short by the budget: the next page starts after the last one read (a server or not)
    if (read >= budget) {
      const n = await keys.next();
      return { records: out, next: n.done ? undefined : lastRead };
    }
    const batch: Position[] = [];
    // the page's remainder first; when filters reject what was read, at least 25 a round
    const need = q.limit - out.length;
    const want = Math.min(read ? Math.max(need, 25) : need, budget - read, 100);
    while (batch.length < want) {
      const n = await keys.next();
      if (n.done) break;
      batch.push(n.value);
    }
    if (!batch.length) return { records: out };
    read += batch.length;
    lastRead = batch[batch.length - 1]!.id;
    for (const r of await recordsOf(batch)) if (selected(q, r)) out.push(r);
    if (out.length > q.limit) return { records: out.slice(0, q.limit), next: out[q.limit - 1]!.id };
  }
}

/**
 * Nova's sort_key/sort_dir: the whole selection is read through its index and sorted here; the
 * marker is then a server of that list (else MarkerNotFound).
 */
async function sortedPage(q: ServerListing, compare: (a: InstanceRecord, b: InstanceRecord) => number) {
  const changes = q.changesSince !== undefined || q.changesBefore !== undefined;
  const keys: Position[] = [];
  if (changes) keys.push(...(await changedKeys(q)));
  else for await (const k of merged(partitionsOf(q).map((p) => partitionKeys(p, 1000)))) keys.push(k);
  let all = (await recordsOf(keys)).filter((r) => selected(q, r)).sort(compare);
  if (q.marker) {
    const i = all.findIndex((r) => r.id === q.marker);
    if (i === -1) throw new MarkerNotFound(q.marker);
    all = all.slice(i + 1);
  }
  const records = all.slice(0, q.limit);
  return { records, next: all.length > q.limit ? records[records.length - 1]?.id : undefined };
}
