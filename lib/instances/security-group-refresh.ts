// Keeping the hosts' filters current (Neutron's security group agent RPC, cast as Nova's
// refresh_instance_security_rules): after a rule is added or deleted, or a port joins or leaves a
// group, every server whose ports' filters that changes gets a cast on its host's queue with its
// ports and their fresh filters.
//
// Who is affected:
// - a group's rules changed: its members;
// - a group's members changed: the members of every group whose rules name it as remote (their
//   remote addresses changed), and the port that joined or left itself (its own rules changed).
// Servers are found through their ports' device_id and read in batches of FANOUT_BATCH, with at
// most that many casts in flight: a group with thousands of members costs bounded memory and
// concurrency, and its members' filters share one resolver (each group, member list and port is
// read once; the servers as settled, 25 in one BatchGetItem, and their hosts' queue URLs from the
// warm container's cache). Best effort: a cast that cannot be sent (a host without a queue) is logged; every
// later change, and the server's next cast (a start, a move), carries the filters again.
import { castToCompute } from "../aws/send.js";
import { type Logger, log as rootLog } from "../log.js";
import { referrersOfGroup } from "../network/store/security-groups.js";
import { hostQueueUrl } from "../placement/host-queues.js";
import { guestPortsOf } from "./guest-ports.js";
import { FilterResolver, type Membership } from "./port-filters.js";
import { getSettledInstance } from "./queries.js";
import type { InstanceRecord } from "./types.js";

/** Servers read, and casts in flight, at once. */
const FANOUT_BATCH = 25;

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

/** Nothing to do for this change. */
export const noChange = (c: FilterChange) =>
  !c.ports?.length && !c.rulesOf?.length && !c.joined?.length && !c.left?.length && !c.addressesOf?.length;

/** The hosts that may hold a guest of the server: its own, and both ends of a move. */
function hostsOf(rec: InstanceRecord): string[] {
  const hosts = [rec.host, rec.migration?.source_host, rec.migration?.dest_host];
  return [...new Set(hosts.filter((h): h is string => typeof h === "string" && h !== ""))];
}

/**
 * Cast the fresh filters of every server the change affects to its host. Never throws: a change
 * that went through is not undone by a host that cannot be told (logged, with the server).
 */
export async function refreshPortFilters(
  change: FilterChange,
  requestId: string,
  log: Logger = rootLog,
): Promise<number> {
  if (noChange(change)) return 0;
  try {
    return await fanOut(change, requestId, log);
  } catch (e) {
    log.warn("security_groups.refresh_failed", { request_id: requestId, error: e });
    return 0;
  }
}

async function fanOut(change: FilterChange, requestId: string, log: Logger): Promise<number> {
  const resolver = new FilterResolver(change.joined, change.left);
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
  const servers = new Set<string>();
  for (const p of ports.values()) {
    if (
      p &&
      typeof p.device_id === "string" &&
      p.device_id &&
      String(p.device_owner ?? "").startsWith("compute:")
    )
      servers.add(p.device_id);
  }
  let cast = 0;
  const ids = [...servers];
  for (let i = 0; i < ids.length; i += FANOUT_BATCH) {
    await Promise.all(
      ids.slice(i, i + FANOUT_BATCH).map(async (id) => {
        const rec = await getSettledInstance(id);
        if (!rec || rec.deleted) return;
        const hosts = hostsOf(rec);
        if (!hosts.length) return;
        const guestPorts = await guestPortsOf(rec, resolver);
        // no port yet (a build whose allocation is this very change: its spawn carries them)
        if (!guestPorts.length) return;
        for (const host of hosts) {
          const url = await hostQueueUrl(host);
          if (!url) {
            log.warn("security_groups.host_unknown", { request_id: requestId, instance_uuid: id, host });
            continue;
          }
          await castToCompute(url, {
            version: 1,
            kind: "refresh_instance_security_rules",
            request_id: requestId,
            instance_uuid: id,
            host,
            ports: guestPorts,
            computed_at: Date.now(),
          });
          cast++;
        }
      }),
    );
  }
  log.info("security_groups.refreshed", {
    request_id: requestId,
    servers: servers.size,
    casts: cast,
    groups: groups.size,
  });
  return cast;
}
