// Instance records as items of the Instances table: what an item leaves out (the defaults, its
// keys' parts, nulls) and how a read puts it back, the short codes of Nova's long event names, and
// a build's deadline.
import { instanceBuildTimeout, resources } from "../config.js";
import { type Destination, destinationOf } from "../messages/common.js";
import type { ActionEvent, InstanceRecord, StoredRequestSpec } from "./types.js";

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

/** The Instances table. */
export function instancesTable(): string {
  return resources().instancesTable;
}

/** When an attempt started now must be done (the watchdog's deadline). */
export function buildDeadline(now = new Date()): string {
  return new Date(now.getTime() + instanceBuildTimeout() * 1000).toISOString();
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
// Not written while null: a build's item stays under 1 KB (one write unit per transition, where
// 1,029 bytes cost two), and the record has them null again when read.
const NULL_UNTIL_SET = [
  "requested_availability_zone",
  "launched_at",
  "deleted_at",
  "host",
  "node",
  "fault",
  "access_ip_v4",
  "access_ip_v6",
  "description",
  "key_name",
  "user_data",
] as const;

/** The item createInstances writes for a record. */
export function itemOf(r: InstanceRecord): Record<string, unknown> {
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
export function storedDestination(d: Destination): Partial<Destination> {
  const { host, nodename, availability_zone } = destinationOf(d);
  return nodename === host ? { host, availability_zone } : { host, nodename, availability_zone };
}

export function destinationFrom(d: Partial<Destination>): Destination {
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
export function recordOf(item: Record<string, unknown>): InstanceRecord {
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
