// Instance records and their guarded transitions. Every transition is ONE conditional UpdateItem
// that also writes its os-instance-actions event, so a transition and its event never disagree
// and a repeated transition (a duplicated message, a re-run step) changes nothing.
import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { queryAll, scanAll } from "../aws/dynamo-pages.js";
import { instanceBuildTimeout, resources } from "../config.js";
import { type Destination, destinationOf } from "../messages/common.js";
import {
  BUILD_WATCH_SHARDS,
  INSTANCES_BUILDING_INDEX,
  INSTANCES_BY_HOST_INDEX,
  INSTANCES_BY_PROJECT_INDEX,
  WATCHED_ATTRIBUTES,
} from "../resources.js";
import type {
  ActionEvent,
  Fault,
  InstanceAction,
  InstanceRecord,
  SchedulingRecord,
  StoredRequestSpec,
  WatchedBuild,
} from "./types.js";

export const EVENT_SCHEDULE = "conductor_schedule_and_build_instances";
export const EVENT_BUILD = "compute_build_and_run_instance";

// Nova's event names are long and every write of the item pays for them: stored under short
// codes, read back whole.
const EVENT_CODES: Record<string, string> = { [EVENT_SCHEDULE]: "s", [EVENT_BUILD]: "b" };
const EVENT_NAMES: Record<string, string> = Object.fromEntries(
  Object.entries(EVENT_CODES).map(([name, code]) => [code, name]),
);

/** An event's key in the item: its (short) name and its attempt. */
export function eventKey(name: string, attempt: number): string {
  return `${EVENT_CODES[name] ?? name}#${attempt}`;
}

function table(): string {
  return resources().instancesTable;
}

/** When an attempt started now must be done (the watchdog's deadline). */
export function buildDeadline(now = new Date()): string {
  return new Date(now.getTime() + instanceBuildTimeout() * 1000).toISOString();
}

/** The building index's shard key of an instance: `building#<n>`, n from a hash of its id. */
export function buildWatchKey(id: string): string {
  return `building#${createHash("sha256").update(id, "utf8").digest().readUInt32BE(0) % BUILD_WATCH_SHARDS}`;
}

/** The request spec as stored: what the record carries already, and the defaults, are not written. */
function storedSpec(spec: StoredRequestSpec): StoredRequestSpec {
  const {
    flavor: _flavor,
    image: _image,
    project_id: _project,
    user_id: _user,
    num_instances: _one,
    scheduler_hints,
    ...rest
  } = spec;
  return scheduler_hints && Object.keys(scheduler_hints).length ? { ...rest, scheduler_hints } : rest;
}

// What an item does not repeat, and recordOf puts back when it is read: an action's request id
// (its key), user, project and start (the record's and its created_at), an event's name and
// attempt (its key) and nulls, an alternate's nodename when it is its host's, and the nulls of
// fields only set later (host and node also because the by-host index cannot take a null key).
const NULL_UNTIL_SET = ["requested_availability_zone", "launched_at", "deleted_at", "host", "node"] as const;

/** The item createInstances writes for a record. */
function itemOf(r: InstanceRecord): Record<string, unknown> {
  const item: Record<string, unknown> = { ...r };
  for (const k of NULL_UNTIL_SET) if (item[k] === null) delete item[k];
  if (r.request_spec) item.request_spec = storedSpec(r.request_spec);
  item.actions = Object.fromEntries(
    Object.entries(r.actions).map(([rid, a]) => {
      const { request_id, user_id, project_id, start_time, events, message, ...rest } = a;
      return [
        rid,
        {
          ...rest,
          ...(message === null ? {} : { message }),
          ...(request_id === rid ? {} : { request_id }),
          ...(user_id === r.user_id ? {} : { user_id }),
          ...(project_id === r.project_id ? {} : { project_id }),
          ...(start_time === r.created_at ? {} : { start_time }),
          events: Object.fromEntries(
            Object.values(events).map((ev) => [eventKey(ev.event, ev.attempt), storedEvent(ev)]),
          ),
        },
      ];
    }),
  );
  return item;
}

export function storedEvent(ev: ActionEvent): Partial<ActionEvent> {
  const { event: _event, attempt: _attempt, finish_time, ...rest } = ev;
  return {
    ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== null)),
    // a finished event that took no time keeps one timestamp
    ...(finish_time !== null && finish_time !== ev.start_time ? { finish_time } : {}),
  };
}

/** An alternate as stored: its nodename only when it is not its host's name (Nova's usual case). */
function storedDestination(d: Destination): Partial<Destination> {
  const { host, nodename, availability_zone } = destinationOf(d);
  return nodename === host ? { host, availability_zone } : { host, nodename, availability_zone };
}

function destinationFrom(d: Partial<Destination>): Destination {
  return destinationOf({ ...d, nodename: d.nodename ?? d.host } as Destination);
}

/** An event as stored: its name and attempt are its key's, its nulls left out. */
function eventFrom(key: string, ev: Partial<ActionEvent>): ActionEvent {
  const at = key.lastIndexOf("#");
  const code = key.slice(0, at);
  return {
    event: EVENT_NAMES[code] ?? code,
    attempt: Number(key.slice(at + 1)),
    start_time: ev.start_time!,
    finish_time: ev.finish_time ?? (ev.result ? ev.start_time! : null),
    result: ev.result ?? null,
    host: ev.host ?? null,
    details: ev.details ?? null,
  };
}

/** A record from its item: what itemOf and the event writes left out, put back. */
function recordOf(item: Record<string, unknown>): InstanceRecord {
  const rec = { ...item } as unknown as InstanceRecord;
  for (const k of NULL_UNTIL_SET) rec[k] ??= null;
  if (rec.alternates) rec.alternates = rec.alternates.map(destinationFrom);
  rec.actions = Object.fromEntries(
    Object.entries(rec.actions ?? {}).map(([rid, a]) => [
      rid,
      {
        ...a,
        request_id: a.request_id ?? rid,
        user_id: a.user_id ?? rec.user_id,
        project_id: a.project_id ?? rec.project_id,
        start_time: a.start_time ?? rec.created_at,
        message: a.message ?? null,
        events: Object.fromEntries(
          Object.entries(a.events ?? {}).map(([k, ev]) => {
            const e = eventFrom(k, ev);
            return [`${e.event}#${e.attempt}`, e];
          }),
        ),
      },
    ]),
  );
  return rec;
}

export async function createInstances(records: InstanceRecord[]): Promise<void> {
  const deadline = buildDeadline();
  await Promise.all(
    records.map((r) =>
      dynamo().send(
        new PutCommand({
          TableName: table(),
          // Watched from the start: a build request lost before the conductor is found too.
          Item: { ...itemOf(r), build_watch: buildWatchKey(r.id), build_deadline: deadline },
          ConditionExpression: "attribute_not_exists(id)",
        }),
      ),
    ),
  );
}

/**
 * Every instance still in BUILD (the sparse index holds nothing else), with what the watchdog
 * reads: each shard queried in parallel for its keys, then the items read by BatchGetItem. The
 * index carries only its keys so that the writes of a build (its placement, its spawn) do not
 * rewrite the index entry: a build costs the index one put and one delete. Oldest deadline first.
 */
export async function listBuilding(): Promise<WatchedBuild[]> {
  const shards = await Promise.all(
    Array.from({ length: BUILD_WATCH_SHARDS }, (_, n) =>
      queryAll<Pick<WatchedBuild, "id">>({
        TableName: table(),
        IndexName: INSTANCES_BUILDING_INDEX,
        KeyConditionExpression: "build_watch = :b",
        ExpressionAttributeValues: { ":b": `building#${n}` },
      }),
    ),
  );
  const ids = shards.flat().map((k) => k.id);
  const names = Object.fromEntries(WATCHED.map((a, i) => [`#w${i}`, a]));
  const out: WatchedBuild[] = [];
  for (let i = 0; i < ids.length; i += BATCH_GET_MAX) {
    let keys: Record<string, unknown>[] | undefined = ids.slice(i, i + BATCH_GET_MAX).map((id) => ({ id }));
    for (let round = 0; keys?.length; round++) {
      if (round > 0) await new Promise((done) => setTimeout(done, Math.min(1000, 50 * 2 ** round)));
      const page: BatchGetCommandOutput = await dynamo().send(
        new BatchGetCommand({
          RequestItems: {
            [table()]: {
              Keys: keys,
              ProjectionExpression: Object.keys(names).join(", "),
              ExpressionAttributeNames: names,
            },
          },
        }),
      );
      for (const item of page.Responses?.[table()] ?? []) {
        // Ended between the index read and this one: no longer a build to watch.
        if (item.build_watch === undefined) continue;
        const b = item as WatchedBuild;
        out.push(b.alternates ? { ...b, alternates: b.alternates.map(destinationFrom) } : b);
      }
      keys = page.UnprocessedKeys?.[table()]?.Keys;
    }
  }
  return out.sort((a, b) => (a.build_deadline ?? "").localeCompare(b.build_deadline ?? ""));
}

/** What the watchdog reads of a build in flight. */
const WATCHED = ["id", "build_watch", "build_deadline", ...WATCHED_ATTRIBUTES];

export async function getInstance(id: string): Promise<InstanceRecord | undefined> {
  const r = await dynamo().send(new GetCommand({ TableName: table(), Key: { id }, ConsistentRead: true }));
  return r.Item ? recordOf(r.Item) : undefined;
}

/**
 * Live (not deleted) instances of one project, or of every project when none is given. The
 * project's index carries only the keys and `deleted`: the live ones are then read whole.
 */
export async function listInstances(
  projectId?: string,
  opts: { withDeleted?: boolean } = {},
): Promise<InstanceRecord[]> {
  // deleted ones (until their TTL) only for usage reports (os-simple-tenant-usage)
  // (a whole-table read skips the items that are not instances: console outputs, lib/instances/power.ts)
  const live = opts.withDeleted
    ? projectId
      ? { ExpressionAttributeValues: { ":p": projectId } }
      : { FilterExpression: "attribute_exists(created_at)", ExpressionAttributeValues: undefined }
    : { FilterExpression: "deleted = :f", ExpressionAttributeValues: { ":f": false } };
  const items = projectId
    ? await getInstances(
        (
          await queryAll<Pick<InstanceRecord, "id">>({
            TableName: table(),
            IndexName: INSTANCES_BY_PROJECT_INDEX,
            KeyConditionExpression: "project_id = :p",
            ...live,
            ExpressionAttributeValues: { ...live.ExpressionAttributeValues, ":p": projectId },
          })
        ).map((r) => r.id),
        opts.withDeleted,
      )
    : (await scanAll({ TableName: table(), ...live })).map(recordOf);
  return items.sort((a, b) => b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id));
}

/**
 * Live instances placed on `host` (Nova's InstanceList.get_by_host): what a starting compute
 * service reconciles its guests with. The index carries the keys and `deleted`.
 */
export async function listInstancesOnHost(host: string): Promise<InstanceRecord[]> {
  const keys = await queryAll<Pick<InstanceRecord, "id">>({
    TableName: table(),
    IndexName: INSTANCES_BY_HOST_INDEX,
    KeyConditionExpression: "host = :h",
    FilterExpression: "deleted = :f",
    ExpressionAttributeValues: { ":h": host, ":f": false },
  });
  return (await getInstances(keys.map((r) => r.id))).filter((r) => r.host === host);
}

/** BatchGetItem takes 100 keys at most. */
const BATCH_GET_MAX = 100;

/**
 * The instances with these ids (those that exist), by BatchGetItem. A deleted one may be read
 * after its index entry said live: callers filter on `deleted` again.
 */
async function getInstances(ids: string[], withDeleted = false): Promise<InstanceRecord[]> {
  const out: InstanceRecord[] = [];
  for (let i = 0; i < ids.length; i += BATCH_GET_MAX) {
    let keys: Record<string, unknown>[] | undefined = ids.slice(i, i + BATCH_GET_MAX).map((id) => ({ id }));
    for (let round = 0; keys?.length; round++) {
      // Unprocessed keys (throttling) are asked again after a growing pause, as the SDK retries.
      if (round > 0) await new Promise((done) => setTimeout(done, Math.min(1000, 50 * 2 ** round)));
      const page: BatchGetCommandOutput = await dynamo().send(
        new BatchGetCommand({ RequestItems: { [table()]: { Keys: keys } } }),
      );
      out.push(...(page.Responses?.[table()] ?? []).map(recordOf));
      keys = page.UnprocessedKeys?.[table()]?.Keys;
    }
  }
  return withDeleted ? out : out.filter((r) => !r.deleted);
}

export interface Update {
  set: string[];
  remove?: string[];
  condition: string;
  names?: Record<string, string>;
  values: Record<string, unknown>;
}

/** Apply one guarded transition; false when its condition did not hold. */
export async function transition(
  id: string,
  u: Update,
  returnValues: "ALL_NEW" | "ALL_OLD" = "ALL_NEW",
): Promise<InstanceRecord | undefined> {
  try {
    const r = await dynamo().send(
      new UpdateCommand({
        TableName: table(),
        Key: { id },
        UpdateExpression: `SET ${u.set.join(", ")}${u.remove?.length ? ` REMOVE ${u.remove.join(", ")}` : ""}`,
        ConditionExpression: `attribute_exists(id) AND ${u.condition}`,
        ExpressionAttributeNames: u.names && Object.keys(u.names).length ? u.names : undefined,
        ExpressionAttributeValues: u.values,
        ReturnValues: returnValues,
      }),
    );
    return r.Attributes ? recordOf(r.Attributes) : undefined;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return undefined;
    throw e;
  }
}

/** The SET clause and names/values that record `event` under the instance's create action. */
function eventClause(rec: { request_id: string }, ev: ActionEvent, tag = "ev"): Update {
  return {
    set: [`actions.#rid.events.#${tag} = :${tag}`],
    condition: "attribute_exists(actions.#rid)",
    names: { "#rid": rec.request_id, [`#${tag}`]: eventKey(ev.event, ev.attempt) },
    values: { [`:${tag}`]: storedEvent(ev) },
  };
}

function merge(...parts: Update[]): Update {
  return {
    set: parts.flatMap((p) => p.set),
    remove: parts.flatMap((p) => p.remove ?? []),
    condition: parts.map((p) => `(${p.condition})`).join(" AND "),
    names: Object.assign({}, ...parts.map((p) => p.names ?? {})),
    values: Object.assign({}, ...parts.map((p) => p.values)),
  };
}

export function event(
  name: string,
  attempt: number,
  result: ActionEvent["result"],
  host: string | null,
  details: string | null,
  start: Date,
  finish: Date | null = new Date(),
): ActionEvent {
  return {
    event: name,
    attempt,
    start_time: start.toISOString(),
    finish_time: finish ? finish.toISOString() : null,
    result,
    host,
    details,
  };
}

export type PlaceOutcome =
  | { kind: "placed"; record: InstanceRecord }
  | { kind: "already-placed"; record: InstanceRecord }
  | { kind: "gone"; record: InstanceRecord | undefined };

/**
 * Conductor: point the instance at its host for attempt `attempt` (the fencing token every later
 * compute write is conditioned on), with the alternates a reschedule of this attempt goes to
 * (so no cast carries them). Succeeds only from the previous attempt; a re-run for the same
 * attempt and host is `already-placed`; anything else (deleted, a newer attempt, placed on
 * another host by a concurrent run) is `gone`.
 */
export async function placeInstance(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  attempt: number,
  { host, nodename, availability_zone }: Destination,
  alternates: readonly Destination[],
  ev: ActionEvent,
): Promise<PlaceOutcome> {
  const now = new Date().toISOString();
  const placed = await transition(
    rec.id,
    merge(
      {
        set: [
          "attempt = :n",
          "host = :h",
          "node = :node",
          "availability_zone = :az",
          "alternates = :alts",
          "updated_at = :now",
          // The first attempt keeps the deadline it was created with (instance_build_timeout
          // counts from creation, as Nova's does); a reschedule gets a whole timeout again.
          ...(attempt > 1 ? ["build_deadline = :deadline"] : []),
        ],
        condition: "deleted = :false AND vm_state = :building AND attempt = :prev",
        values: {
          ...(attempt > 1 ? { ":deadline": buildDeadline() } : {}),
          ":n": attempt,
          ":prev": attempt - 1,
          ":h": host,
          ":node": nodename,
          ":az": availability_zone,
          ":alts": alternates.map(storedDestination),
          ":now": now,
          ":false": false,
          ":building": "building",
        },
      },
      eventClause(rec, ev),
    ),
  );
  if (placed) return { kind: "placed", record: placed };
  const current = await getInstance(rec.id);
  if (current && !current.deleted && current.attempt === attempt && current.host === host) {
    return { kind: "already-placed", record: current };
  }
  return { kind: "gone", record: current };
}

export type SpawnOutcome =
  | { outcome: "started" | "in-progress" | "failure-recorded" | "finished"; record: InstanceRecord }
  | { outcome: "fenced"; record: InstanceRecord | undefined };

/**
 * Compute: take the build for `attempt` on `host`. `in-progress` means this attempt was already
 * taken (a duplicate delivery or an agent restarted mid-build); `failure-recorded` means it
 * already failed and only the reschedule may be unfinished; `finished` means it ran its course
 * on this host (a late duplicate).
 */
export async function startSpawn(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  host: string,
  attempt: number,
  ev: ActionEvent,
): Promise<SpawnOutcome> {
  const started = await transition(
    rec.id,
    merge(
      {
        set: ["task_state = :spawning", "spawn_attempt = :n", "updated_at = :now"],
        condition:
          "deleted = :false AND vm_state = :building AND host = :h AND attempt = :n AND " +
          "spawn_attempt < :n",
        values: {
          ":spawning": "spawning",
          ":n": attempt,
          ":h": host,
          ":now": new Date().toISOString(),
          ":false": false,
          ":building": "building",
        },
      },
      eventClause(rec, ev),
    ),
  );
  if (started) return { outcome: "started", record: started };
  const current = await getInstance(rec.id);
  const mine =
    current &&
    !current.deleted &&
    current.vm_state === "building" &&
    current.host === host &&
    current.attempt === attempt &&
    current.spawn_attempt === attempt;
  if (!mine) {
    // This attempt already ran its course here (ACTIVE, or ERROR keeping its guest): a late
    // duplicate, not a build to undo.
    const finished =
      current &&
      !current.deleted &&
      current.vm_state !== "building" &&
      current.host === host &&
      current.attempt === attempt;
    return finished ? { outcome: "finished", record: current } : { outcome: "fenced", record: current };
  }
  return { outcome: current.task_state === "spawning" ? "in-progress" : "failure-recorded", record: current };
}

const FENCE = "deleted = :false AND vm_state = :building AND host = :h AND attempt = :n";

/** Compute: the build succeeded. False when fenced (deleted or moved meanwhile). */
export async function markActive(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  host: string,
  attempt: number,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  const now = new Date().toISOString();
  return transition(
    rec.id,
    merge(
      {
        set: [
          "vm_state = :active",
          "task_state = :null",
          "launched_at = :now",
          "updated_at = :now",
          "fault = :null",
        ],
        // The alternates were for a reschedule of this attempt: the build is over.
        remove: ["build_watch", "build_deadline", "alternates"],
        condition: `${FENCE} AND task_state = :spawning`,
        values: {
          ":active": "active",
          ":null": null,
          ":now": now,
          ":spawning": "spawning",
          ":false": false,
          ":building": "building",
          ":h": host,
          ":n": attempt,
        },
      },
      eventClause(rec, ev),
    ),
  );
}

/**
 * Compute: the build failed on `host`; record it and hand the instance back to scheduling (Nova's
 * reschedule sets task_state back to scheduling). Keeps host and attempt, so the failure path is
 * resumable if the agent dies before it re-enqueues.
 */
export async function recordBuildFailure(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  host: string,
  attempt: number,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  return failAttempt(rec, host, attempt, ev, "task_state = :spawning");
}

/**
 * An attempt ends in failure on `host`: back to scheduling, the host added to those tried, and
 * spawn_attempt = n so no late start of this attempt can succeed. `guard` says from which states.
 */
async function failAttempt(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  host: string,
  attempt: number,
  ev: ActionEvent,
  guard: string,
): Promise<InstanceRecord | undefined> {
  return transition(
    rec.id,
    merge(
      {
        set: [
          "task_state = :scheduling",
          "spawn_attempt = :n",
          "retry_hosts = list_append(if_not_exists(retry_hosts, :empty), :host)",
          "updated_at = :now",
          "build_deadline = :deadline",
        ],
        condition: `${FENCE} AND (${guard})`,
        values: {
          ":deadline": buildDeadline(),
          ":scheduling": "scheduling",
          ":spawning": "spawning",
          ":empty": [],
          ":host": [host],
          ":now": new Date().toISOString(),
          ":false": false,
          ":building": "building",
          ":h": host,
          ":n": attempt,
        },
      },
      eventClause(rec, ev),
    ),
  );
}

/**
 * Conductor: the build ends in ERROR (NoValidHost, MaxRetriesExceeded, an unexpected failure).
 * Only from `attempt` (the last one made), so a stale message cannot fail a newer build.
 */
export async function setError(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  attempt: number,
  fault: Fault,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  return transition(
    rec.id,
    merge(
      {
        set: ["vm_state = :error", "task_state = :null", "fault = :fault", "updated_at = :now"],
        remove: ["build_watch", "build_deadline", "alternates"],
        condition: "deleted = :false AND vm_state = :building AND attempt = :n",
        values: {
          ":error": "error",
          ":null": null,
          ":fault": fault,
          ":now": new Date().toISOString(),
          ":false": false,
          ":building": "building",
          ":n": attempt,
        },
      },
      eventClause(rec, ev),
    ),
  );
}

/**
 * API: soft-delete (the item stays so late messages find it deleted; `expires_at` lets DynamoDB's
 * TTL remove it later). Returns the record as it was just before the delete (its state then tells
 * who must release the claim), or undefined if it was already deleted.
 */
export async function markDeleted(id: string, now = new Date()): Promise<InstanceRecord | undefined> {
  return transition(id, deleteUpdate(now), "ALL_OLD");
}

function deleteUpdate(now: Date): Update {
  return {
    set: [
      "deleted = :true",
      "vm_state = :deleted",
      "task_state = :null",
      "deleted_at = :now",
      "updated_at = :now",
      "expires_at = :ttl",
    ],
    remove: ["build_watch", "build_deadline"],
    condition: "deleted = :false",
    values: {
      ":true": true,
      ":false": false,
      ":deleted": "deleted",
      ":null": null,
      ":now": now.toISOString(),
      ":ttl": Math.floor(now.getTime() / 1000) + 7 * 86400,
    },
  };
}

/**
 * markDeleted as a transaction item, for a delete that must write something else atomically (the
 * quota release): conditioned on the record being still as `seen` (its attempt, state and last
 * update), since a transaction cannot return the record it changed.
 */
export function markDeletedItem(seen: InstanceRecord, now = new Date(), action?: InstanceAction) {
  const u = merge(deleteUpdate(now), {
    // Nova's delete instance action, kept with the (soft-deleted) record: os-instance-actions reads
    // it from 2.21
    set: action ? ["actions.#rid = :action"] : [],
    condition: "attempt = :seen_attempt AND vm_state = :seen_vm AND updated_at = :seen_updated",
    values: {
      ":seen_attempt": seen.attempt,
      ":seen_vm": seen.vm_state,
      ":seen_updated": seen.updated_at,
      ...(action ? { ":action": action } : {}),
    },
  });
  return {
    Update: {
      TableName: table(),
      Key: { id: seen.id },
      UpdateExpression: `SET ${u.set.join(", ")} REMOVE ${u.remove!.join(", ")}`,
      ConditionExpression: `attribute_exists(id) AND ${u.condition}`,
      ExpressionAttributeValues: u.values,
      ...(action ? { ExpressionAttributeNames: { "#rid": action.request_id } } : {}),
    },
  };
}

/** What a user may change of a live server: PUT /servers/{id}, its metadata, tags and lock. */
export type ServerFields = Partial<
  Pick<
    InstanceRecord,
    "name" | "description" | "hostname" | "metadata" | "tags" | "locked_by" | "locked_reason"
  >
>;

export interface ServerUpdate {
  fields: ServerFields;
  /** an action to record with the change, in the same write (lock, unlock) */
  action?: InstanceAction;
  /**
   * Optimistic concurrency: the write applies only if the record is still as read (its
   * updated_at), so a read-modify-write of a whole map (metadata, tags) cannot lose another's
   * change.
   */
  ifUpdatedAt?: string;
  now?: Date;
}

/**
 * API: change a live server's user-visible fields. Returns the record after the change, or
 * undefined when it is deleted (or gone) or was changed since `ifUpdatedAt`.
 */
export async function updateServer(id: string, u: ServerUpdate): Promise<InstanceRecord | undefined> {
  const now = (u.now ?? new Date()).toISOString();
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":false": false, ":now": now };
  const set = ["updated_at = :now"];
  Object.entries(u.fields).forEach(([k, v], i) => {
    names[`#f${i}`] = k;
    values[`:f${i}`] = v;
    set.push(`#f${i} = :f${i}`);
  });
  const conditions = ["deleted = :false"];
  if (u.ifUpdatedAt !== undefined) {
    values[":seen"] = u.ifUpdatedAt;
    conditions.push("updated_at = :seen");
  }
  if (u.action) {
    names["#rid"] = u.action.request_id;
    values[":action"] = u.action;
    set.push("actions.#rid = :action");
  }
  return transition(id, { set, condition: conditions.join(" AND "), names, values });
}

/**
 * Scheduler: keep the explanation of its decision for `attempt` apart from the instance (one
 * item per instance in the Scheduling table, its explanation gzipped), so no transition of the
 * instance pays for it. A stale re-run for an older attempt cannot overwrite a newer decision.
 */
export async function recordSchedulingDecision(id: string, decision: SchedulingRecord): Promise<boolean> {
  const { explanation, ...rest } = decision;
  try {
    await dynamo().send(
      new PutCommand({
        TableName: resources().schedulingTable,
        Item: { id, ...rest, explanation_gz: gzipSync(JSON.stringify(explanation ?? null)) },
        ConditionExpression: "attribute_not_exists(id) OR attempt <= :n",
        ExpressionAttributeValues: { ":n": decision.attempt },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return false;
    throw e;
  }
}

/** The last scheduling decision recorded for an instance (admins: os-scheduling). */
export async function getSchedulingDecision(id: string): Promise<SchedulingRecord | undefined> {
  const r = await dynamo().send(new GetCommand({ TableName: resources().schedulingTable, Key: { id } }));
  if (!r.Item) return undefined;
  const {
    id: _id,
    explanation_gz,
    ...rest
  } = r.Item as Omit<SchedulingRecord, "explanation"> & {
    id: string;
    explanation_gz: Uint8Array;
  };
  return { ...rest, explanation: JSON.parse(gunzipSync(explanation_gz).toString("utf8")) };
}

/**
 * Watchdog: attempt `attempt` on `host` is dead (its host stopped heartbeating, or it passed its
 * deadline). Record the failure on the host's behalf, exactly as compute would: afterwards
 * neither a late start nor a late finish of that attempt can succeed (spawn_attempt = n and
 * task_state = scheduling fence both), and the attempt counts.
 */
export async function fenceAttempt(
  rec: Pick<InstanceRecord, "id" | "request_id">,
  host: string,
  attempt: number,
  ev: ActionEvent,
): Promise<InstanceRecord | undefined> {
  // Taken (spawning) or cast but not yet taken: either way the attempt is still live.
  return failAttempt(rec, host, attempt, ev, "task_state = :spawning OR spawn_attempt < :n");
}

/**
 * Watchdog: give a build that is only waiting (queued, or rescheduling) a new deadline before
 * sending its request again; conditioned on nothing having moved since it was read.
 */
export async function extendDeadline(rec: WatchedBuild): Promise<boolean> {
  const done = await transition(rec.id, {
    set: ["build_deadline = :deadline"],
    condition: "deleted = :false AND vm_state = :building AND attempt = :n AND build_deadline = :was",
    values: {
      ":deadline": buildDeadline(),
      ":false": false,
      ":building": "building",
      ":n": rec.attempt,
      ":was": rec.build_deadline ?? "",
    },
  });
  return Boolean(done);
}
