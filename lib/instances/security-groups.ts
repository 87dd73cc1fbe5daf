// Nova's security group API over Neutron's groups (nova/network/security_group_api.py and the
// compute API's _check_requested_secgroups): a create's security_groups checked and resolved, a
// server's groups (its ports'), and addSecurityGroup / removeSecurityGroup changing its ports.
// Refusals carry Nova's statuses and texts (those Nova repeats from neutronclient included).
import type { SecurityGroup } from "../network/security-groups.js";
import { securityGroupsOf, setPortSecurityGroups } from "../network/store/ports.js";
import { getSecurityGroups, listSecurityGroups } from "../network/store/security-groups.js";
import { getPorts, type Port } from "../network/store/table.js";
import { type Asker, refreshNetworkInfo } from "./networking.js";
import type { Membership } from "./port-filters.js";
import { refreshPortFilters } from "./security-group-refresh.js";
import type { InstanceRecord } from "./types.js";

/** Nova's refusal: its API's status and text. */
export class SecurityGroupRefused extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    message: string,
  ) {
    super(message);
    this.name = "SecurityGroupRefused";
  }
}

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** The groups the asker sees (Neutron lists an admin's all, a member's its project's). */
const seen = (g: SecurityGroup, who: Asker) => who.isAdmin || g.project_id === who.project_id;

/**
 * neutronclient's find_resourceid_by_name_or_id as Nova calls it: by id among the groups the asker
 * sees, then by name among the project's; its refusals as Nova words them (`notFound`), and
 * NoUniqueMatch (409) for a name two of the project's groups have.
 */
async function findGroup(
  nameOrId: string,
  who: Asker,
  notFound: () => SecurityGroupRefused,
): Promise<SecurityGroup> {
  const groups = await listSecurityGroups();
  if (UUID.test(nameOrId)) {
    const byId = groups.find((g) => g.id === nameOrId && seen(g, who));
    if (byId) return byId;
  }
  const named = groups.filter((g) => g.name === nameOrId && g.project_id === who.project_id);
  if (named.length > 1)
    throw new SecurityGroupRefused(
      409,
      `Multiple security_group matches found for name '${nameOrId}', use an ID to be more specific.`,
    );
  if (!named.length) throw notFound();
  return named[0]!;
}

/**
 * _check_requested_secgroups: each name (or id) a group of the project, resolved to its id;
 * `default` kept as it is (the conductor makes the project's default group if need be). Nova's
 * 400 for one it cannot find, 409 for an ambiguous name.
 */
export async function resolveRequestedGroups(names: readonly string[], who: Asker): Promise<string[]> {
  const out: string[] = [];
  for (const name of new Set(names)) {
    if (name === "default") {
      out.push(name);
      continue;
    }
    const g = await findGroup(
      name,
      who,
      () => new SecurityGroupRefused(400, `Unable to find security_group with name or id '${name}'`),
    );
    out.push(g.id);
  }
  return out;
}

/** The server's ports (those of its network info that still name it as their device). */
async function serverPorts(rec: InstanceRecord): Promise<Port[]> {
  const ids = (rec.network_info ?? []).map((v) => v.port_id);
  if (!ids.length) return [];
  const byId = new Map((await getPorts(ids)).map((p) => [p.id, p]));
  return ids.flatMap((id) => {
    const p = byId.get(id);
    return p && p.device_id === rec.id ? [p] : [];
  });
}

/** get_instance_security_groups: the groups of the server's ports, each once, in port order. */
export async function instanceSecurityGroups(rec: InstanceRecord, who: Asker): Promise<SecurityGroup[]> {
  const ids = [...new Set((await serverPorts(rec)).flatMap(securityGroupsOf))];
  const groups = await getSecurityGroups(ids);
  return ids.flatMap((id) => {
    const g = groups.get(id);
    return g && seen(g, who) ? [g] : [];
  });
}

/** The names of groups by id (Nova shows a nameless group by its id), for the servers' views. */
export async function securityGroupNames(ids: readonly string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const groups = await getSecurityGroups(ids);
  return new Map([...groups.values()].map((g) => [g.id, g.name || g.id]));
}

const notOnAnyPort = (rec: InstanceRecord) =>
  new SecurityGroupRefused(404, `instance_id ${rec.id} could not be found as device id on any ports`);
const notFoundForProject = (name: string, who: Asker) => () =>
  new SecurityGroupRefused(404, `Security group ${name} is not found for project ${who.project_id}`);

/** Port changes made: the server's view and its filters follow, and those of its groups' peers. */
async function portsChanged(
  rec: InstanceRecord,
  changed: string[],
  joined: Membership[],
  left: Membership[],
  requestId: string,
) {
  if (!changed.length) return;
  await refreshNetworkInfo(rec.id);
  await refreshPortFilters({ ports: changed, joined, left }, requestId);
}

/**
 * add_to_instance: the group added to every port of the server. Nova's 404s (no such group for
 * the project, no port), 400 SecurityGroupCannotBeApplied for a port without port security or an
 * address, and Neutron's 400 for a group the port has already (Nova repeats its text).
 */
export async function addToInstance(
  rec: InstanceRecord,
  name: string,
  who: Asker,
  requestId: string,
): Promise<void> {
  const group = await findGroup(name, who, notFoundForProject(name, who));
  const ports = await serverPorts(rec);
  if (!ports.length) throw notOnAnyPort(rec);
  const changed: string[] = [];
  const joined: Membership[] = [];
  try {
    for (const port of ports) {
      if (port.port_security_enabled !== true || port.fixed_ips.length === 0)
        throw new SecurityGroupRefused(
          400,
          "Network requires port_security_enabled and subnet associated in order to apply security groups.",
        );
      const groups = securityGroupsOf(port);
      if (groups.includes(group.id))
        throw new SecurityGroupRefused(
          400,
          `Invalid input for security_groups. Reason: Duplicate items in the list: '${group.id}'.`,
        );
      const set = await setPortSecurityGroups(
        port.id,
        { security_groups: [...groups, group.id], port_security_enabled: true },
        stamp(new Date()),
      );
      if (!set) continue;
      changed.push(port.id);
      for (const g of set.joined) joined.push([g, port.id]);
    }
  } finally {
    await portsChanged(rec, changed, joined, [], requestId);
  }
}

/**
 * remove_from_instance: the group taken off every port of the server that has it; Nova's 404
 * when no port has it (or there is no such group, or no port).
 */
export async function removeFromInstance(
  rec: InstanceRecord,
  name: string,
  who: Asker,
  requestId: string,
): Promise<void> {
  const group = await findGroup(name, who, notFoundForProject(name, who));
  const ports = await serverPorts(rec);
  if (!ports.length) throw notOnAnyPort(rec);
  const changed: string[] = [];
  const left: Membership[] = [];
  try {
    for (const port of ports) {
      const groups = securityGroupsOf(port);
      if (!groups.includes(group.id)) continue;
      const set = await setPortSecurityGroups(
        port.id,
        {
          security_groups: groups.filter((g) => g !== group.id),
          port_security_enabled: port.port_security_enabled !== false,
        },
        stamp(new Date()),
      );
      if (!set) continue;
      changed.push(port.id);
      for (const g of set.left) left.push([g, port.id]);
    }
  } finally {
    await portsChanged(rec, changed, [], left, requestId);
  }
  if (!changed.length)
    throw new SecurityGroupRefused(404, `Security group ${name} not associated with the instance ${rec.id}`);
}

const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");
