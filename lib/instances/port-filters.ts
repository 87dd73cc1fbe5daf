// Ports' filters as the hosts enforce them (lib/messages/port-filter.ts), read from the
// Networking store: each port's groups and their rules, each remote group's member ports and
// their addresses. One resolver serves a whole fan-out or a guest's ports, reading each group,
// member list and port once (a group with many members is read in pages, its ports in batches).
import { batchGetAll } from "../aws/dynamo-batch.js";
import type { PortFilter } from "../messages/port-filter.js";
import { type FilteredPort, portFilterOf, type SecurityGroup } from "../network/security-groups.js";
import { securityGroupsOf } from "../network/store/ports.js";
import { getSecurityGroups, membersWithAddresses } from "../network/store/security-groups.js";
import { keyOf, networkingTable, type Port, strip } from "../network/store/table.js";

/** A membership the caller has just written or removed (the index that lists members may lag). */
export type Membership = [group: string, port: string];

/** Whether a port is under security groups: one from before them has no port_security_enabled. */
export const hasPortSecurityState = (port: Port) => typeof port.port_security_enabled === "boolean";

export class FilterResolver {
  private readonly groups = new Map<string, SecurityGroup | undefined>();
  private readonly members = new Map<string, Map<string, string[] | undefined>>();
  private readonly ports = new Map<string, Port | undefined>();

  constructor(
    /** memberships just written: counted whether or not the index shows them yet */
    private readonly joined: readonly Membership[] = [],
    /** memberships just removed: not counted whether or not the index still shows them */
    private readonly left: readonly Membership[] = [],
    /**
     * Ports read strongly consistently (a change that has just written them); false for a sync
     * that runs a window after the changes it applies: half the read units.
     */
    private readonly consistent = true,
    /**
     * A remote group's member ports read strongly consistently; false for a port's own filter at
     * a spawn or start (its members' ports were written before they show in the member index,
     * itself eventually consistent, and a member sync follows every change): half the read units.
     */
    private readonly membersConsistent = consistent,
  ) {}

  /** Ports by id (read once each; a port gone is undefined). */
  async portsById(
    ids: readonly string[],
    consistent = this.consistent,
  ): Promise<Map<string, Port | undefined>> {
    const missing = [...new Set(ids)].filter((id) => !this.ports.has(id));
    if (missing.length) {
      const items = await batchGetAll(
        networkingTable(),
        missing.map((id) => keyOf("port", id)),
        { ConsistentRead: consistent },
      );
      const found = new Map(items.map((i) => strip<Port>(i)).map((p) => [p.id, p]));
      for (const id of missing) this.ports.set(id, found.get(id));
    }
    return new Map(ids.map((id) => [id, this.ports.get(id)]));
  }

  /** A port the caller holds already: what this resolver reads is it. */
  know(port: Port): void {
    this.ports.set(port.id, port);
  }

  /** A group's member ports (the index's, with the memberships the caller knows of). */
  async membersOf(groupId: string): Promise<string[]> {
    return [...(await this.listed(groupId)).keys()];
  }

  /**
   * A group's members by port, each with the addresses its membership holds (undefined: a
   * membership the caller has just written, or one from before addresses were kept).
   */
  private async listed(groupId: string): Promise<Map<string, string[] | undefined>> {
    let members = this.members.get(groupId);
    if (!members) {
      const listed = new Map((await membersWithAddresses(groupId)).map((m) => [m.port_id, m.addresses]));
      for (const [g, p] of this.joined) if (g === groupId && !listed.has(p)) listed.set(p, undefined);
      for (const [g, p] of this.left) if (g === groupId) listed.delete(p);
      members = new Map([...listed].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      this.members.set(groupId, members);
    }
    return members;
  }

  private async loadGroups(ids: readonly string[]): Promise<void> {
    const missing = [...new Set(ids)].filter((id) => !this.groups.has(id));
    if (!missing.length) return;
    const found = await getSecurityGroups(missing);
    for (const id of missing) this.groups.set(id, found.get(id));
  }

  /** The addresses of a group's members, by group, for the groups named (read through). */
  private async memberAddresses(groupIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const g of new Set(groupIds)) {
      const members = await this.listed(g);
      // the membership's own addresses where it holds them; the port itself otherwise (a member
      // this caller has just written, an old membership), or where this resolver read it anyway
      const unknown = [...members].filter(([p, a]) => !a || this.ports.has(p)).map(([p]) => p);
      const ports = await this.portsById(unknown, this.membersConsistent);
      out.set(
        g,
        [...members].flatMap(([id, addresses]) => {
          if (!ports.has(id)) return addresses ?? [];
          const p = ports.get(id);
          return p && securityGroupsOf(p).includes(g) ? p.fixed_ips.map((f) => f.ip_address) : [];
        }),
      );
    }
    return out;
  }

  /**
   * A port's filter; undefined for a port from before security groups (nothing filtered, as the
   * contract says of an absent filter).
   */
  async filterOf(port: Port): Promise<PortFilter | undefined> {
    if (!hasPortSecurityState(port)) return undefined;
    const groupIds = port.port_security_enabled === false ? [] : securityGroupsOf(port);
    await this.loadGroups(groupIds);
    const remotes = groupIds.flatMap((g) =>
      (this.groups.get(g)?.rules ?? []).flatMap((r) =>
        r.remote_group_id === null ? [] : [r.remote_group_id],
      ),
    );
    const addresses = await this.memberAddresses(remotes);
    const groups = new Map(
      groupIds.flatMap((g) => {
        const group = this.groups.get(g);
        return group ? [[g, group] as const] : [];
      }),
    );
    const filtered: FilteredPort = {
      id: port.id,
      fixed_ips: port.fixed_ips,
      security_groups: securityGroupsOf(port),
      port_security_enabled: port.port_security_enabled as boolean,
    };
    return portFilterOf(filtered, groups, (g) => addresses.get(g) ?? []);
  }
}
