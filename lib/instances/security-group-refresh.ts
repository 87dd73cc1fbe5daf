// Keeping the hosts' filters current (Neutron's security group agent RPC: security_groups_rule_updated
// and security_groups_member_updated, which each host's agent applies to its own ports).
//
// Who is affected:
// - a group's rules changed: its members;
// - a group's members changed: the members of every group whose rules name it as remote (their
//   remote addresses changed), and the port that joined or left itself (its own rules changed).
//
// Two paths, as Neutron has them:
// - At once (refreshPortFilters): a user's rule create or delete, add/removeSecurityGroup, a
//   port's groups or addresses updated. Rare, and a rule change reaches a guest within seconds.
// - Coalesced (membersChanged, then syncGroupMembers): a build's, a delete's, a port's joining or
//   leaving. The change marks the group (one small conditional write); the first mark of a window
//   sends one delayed member sync to build-requests, and build-intake applies it a window later
//   for every change in between, as Neutron's agents apply member updates in their rpc_loop every
//   polling_interval. A build's cost so does not grow with the group's members or the fleet.
//
// Either way one cast goes to each affected host (refresh_port_filters), with the fresh filters
// of its guests' affected ports, however many of its servers there are. A server's host is its
// ports' binding; only a server with a move in flight (an open migration) has its record read, for
// both ends of the move. Ports, groups and member lists are read once per fan-out (one resolver).

import { DeleteCommand, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { castPortFilters, sendMemberSync } from "../aws/send.js";
import type { GuestPort } from "../compute/drivers/driver.js";
import { optionValue } from "../config.js";
import { type Logger, log as rootLog } from "../log.js";
import type { RefreshPortFilters } from "../messages/compute.js";
import {
  SECURITY_GROUPS_MEMBER_UPDATED,
  type SecurityGroupsMemberUpdated,
} from "../messages/security-group-sync.js";
import { referrersOfGroup } from "../network/store/security-groups.js";
import { networkingTable, type Port } from "../network/store/table.js";
import { hostQueueUrl } from "../placement/host-queues.js";
import { GuestPorts } from "./guest-ports.js";
import { listOpenMigrations } from "./migrations.js";
import { FilterResolver, type Membership } from "./port-filters.js";
import { getInstance } from "./queries.js";
import type { InstanceRecord } from "./types.js";

/** Hosts cast to, and move records read, at once. */
const FANOUT_BATCH = 25;

/** The most a refresh_port_filters body holds (SQS takes 256 KiB): more is sent in several. */
export const MAX_REFRESH_CHARS = 200_000;

/**
 * A mark older than this is taken as lost (its sync never ran: the message was lost, or its sync
 * dead-lettered): the next change marks the group again and sends another. A sync still retrying
 * past it runs twice, harmlessly.
 */
export const MARK_STALE_MS = 60_000;

/** What changed, as a fan-out needs it. */
export interface FilterChange {
  /** ports whose own filter changed (their groups, their port security) */
  ports?: readonly string[];
  /** groups whose rules changed: their members are affected */
  rulesOf?: readonly string[];
  /** memberships written (the port joined the group): members of groups naming it are affected */
  joined?: readonly Membership[];
  /** memberships removed */
  left?: readonly Membership[];
  /** groups whose members' addresses changed (a member's fixed IPs): as a membership change */
  addressesOf?: readonly string[];
}

/** Where a host's casts go (undefined: a host without a queue). */
export type QueueOf = (host: string) => Promise<string | undefined>;

/** Nothing to do for this change. */
export const noChange = (c: FilterChange) =>
  !c.ports?.length && !c.rulesOf?.length && !c.joined?.length && !c.left?.length && !c.addressesOf?.length;

/** The hosts that may hold a guest of the server: its own, and both ends of a move. */
function hostsOf(rec: InstanceRecord): string[] {
  const hosts = [rec.host, rec.migration?.source_host, rec.migration?.dest_host];
  return [...new Set(hosts.filter((h): h is string => typeof h === "string" && h !== ""))];
}

/** A host's queue URL (a host's queue does not move: one read per container, shared with the casts). */
const hostQueue: QueueOf = hostQueueUrl;

/**
 * At once: cast the fresh filters of every guest port the change affects to its host. Never
 * throws: a change that went through is not undone by a host that cannot be told (logged).
 */
export async function refreshPortFilters(
  change: FilterChange,
  requestId: string,
  log: Logger = rootLog,
): Promise<number> {
  if (noChange(change)) return 0;
  try {
    return await fanOut(change, requestId, log, { consistent: true, queueOf: hostQueue });
  } catch (e) {
    log.warn("security_groups.refresh_failed", { request_id: requestId, error: e });
    return 0;
  }
}

// --- the coalesced path -------------------------------------------------------------------------

const markKey = (group: string) => ({ pk: `sgsync#${group}` });

/**
 * Ports joined or left groups (a build's, a delete's, a port's create or delete): each group is
 * marked as needing a member sync, and the first mark of a window sends the one sync of the window.
 * Never throws: a mark that cannot be made or sent is logged (and, unsent, taken back, so the next
 * change sends one).
 */
export async function membersChanged(
  memberships: readonly Membership[],
  requestId: string,
  log: Logger = rootLog,
): Promise<void> {
  for (const group of new Set(memberships.map(([g]) => g))) {
    try {
      const at = Date.now();
      if (!(await mark(group, at))) continue;
      try {
        await sendMemberSync(
          {
            version: 1,
            kind: SECURITY_GROUPS_MEMBER_UPDATED,
            request_id: requestId,
            security_group_id: group,
            marked_at: at,
          },
          optionValue<number>("security_group_member_sync_window"),
        );
      } catch (e) {
        await clearMark(group, at).catch(() => undefined);
        throw e;
      }
    } catch (e) {
      log.warn("security_groups.member_sync_not_sent", {
        request_id: requestId,
        security_group_id: group,
        error: e,
      });
    }
  }
}

/** Mark the group unless it is marked already (and not stale): whether this call marked it. */
async function mark(group: string, at: number): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: markKey(group),
        UpdateExpression: "SET marked_at = :at",
        ConditionExpression: "attribute_not_exists(marked_at) OR marked_at < :stale",
        ExpressionAttributeValues: { ":at": at, ":stale": at - MARK_STALE_MS },
      }),
    ),
  );
}

/** The mark of `at` gone (a newer one, re-armed after it went stale, stays for its own sync). */
async function clearMark(group: string, at: number): Promise<void> {
  await conditionHeld(
    dynamo().send(
      new DeleteCommand({
        TableName: networkingTable(),
        Key: markKey(group),
        ConditionExpression: "marked_at = :at",
        ExpressionAttributeValues: { ":at": at },
      }),
    ),
  );
}

/** Whether the group is marked now (tests, operators). */
export async function markedAt(group: string): Promise<number | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: markKey(group), ConsistentRead: true }),
  );
  return r.Item?.marked_at as number | undefined;
}

/**
 * build-intake's member sync: the group's mark cleared first (a change from now on marks it again
 * and sends the next sync), then one fan-out for every change of the window. Throws when a host
 * could not be told, so that SQS delivers it again (every cast again: idempotent).
 */
export async function syncGroupMembers(
  msg: SecurityGroupsMemberUpdated,
  log: Logger = rootLog,
  queueOf: QueueOf = hostQueue,
): Promise<number> {
  await clearMark(msg.security_group_id, msg.marked_at);
  return fanOut({ addressesOf: [msg.security_group_id] }, msg.request_id, log, {
    consistent: false,
    queueOf,
    throws: true,
  });
}

// --- the fan-out ------------------------------------------------------------------------------------

interface FanOutOptions {
  /** ports read strongly consistently (the change was just written) */
  consistent: boolean;
  queueOf: QueueOf;
  /** a host that cannot be told fails the fan-out (after every other host was told) */
  throws?: boolean;
}

async function fanOut(
  change: FilterChange,
  requestId: string,
  log: Logger,
  opts: FanOutOptions,
): Promise<number> {
  // stamped before anything is read: of two fan-outs, the one that read later wins on the host
  const computedAt = Date.now();
  const resolver = new FilterResolver(change.joined, change.left, opts.consistent);
  const groups = new Set(change.rulesOf ?? []);
  const changedMembers = new Set([
    ...(change.joined ?? []).map(([g]) => g),
    ...(change.left ?? []).map(([g]) => g),
    ...(change.addressesOf ?? []),
  ]);
  for (const g of changedMembers) for (const r of await referrersOfGroup(g)) groups.add(r);
  const portIds = new Set(change.ports ?? []);
  for (const g of groups) for (const p of await resolver.membersOf(g)) portIds.add(p);
  const ports = await resolver.portsById([...portIds]);
  // the guests' ports, by server: a port bound to a server (a free port filters nothing)
  const byServer = new Map<string, Port[]>();
  for (const p of ports.values()) {
    if (!p || typeof p.device_id !== "string" || !p.device_id) continue;
    if (!String(p.device_owner ?? "").startsWith("compute:")) continue;
    byServer.set(p.device_id, [...(byServer.get(p.device_id) ?? []), p]);
  }
  if (!byServer.size) return 0;
  const hosts = await hostsOfServers(byServer);
  const maker = new GuestPorts(resolver);
  const byHost = new Map<string, RefreshPortFilters["instances"]>();
  for (const [server, serverPorts] of byServer) {
    const on = hosts.get(server) ?? [];
    if (!on.length) continue;
    const guestPorts: GuestPort[] = [];
    for (const p of serverPorts) guestPorts.push(await maker.fromPort(p));
    for (const host of on)
      byHost.set(host, [...(byHost.get(host) ?? []), { instance_uuid: server, ports: guestPorts }]);
  }
  let casts = 0;
  const failed: string[] = [];
  const entries = [...byHost];
  for (let i = 0; i < entries.length; i += FANOUT_BATCH) {
    await Promise.all(
      entries.slice(i, i + FANOUT_BATCH).map(async ([host, instances]) => {
        const url = await opts.queueOf(host);
        if (!url) {
          log.warn("security_groups.host_unknown", { request_id: requestId, host });
          return;
        }
        for (const part of chunks(instances)) {
          try {
            await castPortFilters(url, {
              version: 1,
              kind: "refresh_port_filters",
              request_id: requestId,
              host,
              computed_at: computedAt,
              instances: part,
            });
            casts++;
          } catch (e) {
            log.warn("security_groups.host_not_told", { request_id: requestId, host, error: e });
            failed.push(host);
            return;
          }
        }
      }),
    );
  }
  log.info("security_groups.refreshed", {
    request_id: requestId,
    servers: byServer.size,
    hosts: byHost.size,
    casts,
    groups: groups.size,
  });
  if (opts.throws && failed.length)
    throw new Error(
      `security group filters of ${requestId} not cast to host(s) ${[...new Set(failed)].join(", ")}`,
    );
  return casts;
}

/**
 * Each server's hosts: its ports' binding, or for a server with a move in flight (an open
 * migration: a guest may be on both ends) both ends from its record. Servers unbound (shelved
 * offloaded, or between hosts) have none: their next spawn carries their filters.
 */
async function hostsOfServers(
  byServer: ReadonlyMap<string, readonly Port[]>,
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const [server, ports] of byServer) {
    const bound = ports
      .map((p) => p["binding:host_id"])
      .filter((h): h is string => typeof h === "string" && h !== "");
    out.set(server, [...new Set(bound)]);
  }
  const moving = [...new Set((await listOpenMigrations()).map((m) => m.instance_uuid))].filter((id) =>
    byServer.has(id),
  );
  for (let i = 0; i < moving.length; i += FANOUT_BATCH)
    await Promise.all(
      moving.slice(i, i + FANOUT_BATCH).map(async (id) => {
        const rec = await getInstance(id);
        out.set(id, rec && !rec.deleted ? [...new Set([...(out.get(id) ?? []), ...hostsOf(rec)])] : []);
      }),
    );
  return out;
}

/** A host's servers in casts of at most MAX_REFRESH_CHARS (a server alone may be more: sent alone). */
export function chunks<T>(items: readonly T[], max = MAX_REFRESH_CHARS): T[][] {
  const out: T[][] = [];
  let part: T[] = [];
  let size = 0;
  for (const item of items) {
    const n = JSON.stringify(item).length + 1;
    if (part.length && size + n > max) {
      out.push(part);
      part = [];
      size = 0;
    }
    part.push(item);
    size += n;
  }
  if (part.length) out.push(part);
  return out;
}
