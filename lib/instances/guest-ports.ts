// The host's view of a server's ports (Nova's network_info as the driver gets it): each VIF with
// its subnets' gateway, DNS and routes, the segment it is bridged to, and its filter (its
// security groups' rules, remote groups resolved: lib/instances/port-filters.ts).
import type { GuestPort } from "../compute/drivers/driver.js";
import { getNetwork, getSubnet, type Network, type Port, type Subnet } from "../network/store/table.js";
import { FilterResolver } from "./port-filters.js";
import type { InstanceRecord, Vif } from "./types.js";

/**
 * Guest ports made with one resolver and one read of each network and subnet: a server's ports,
 * or a fan-out's ports of many servers. A server's own network and subnets were made before it:
 * read as settled.
 */
export class GuestPorts {
  private readonly networks = new Map<string, Promise<Network | undefined>>();
  private readonly subnets = new Map<string, Promise<Subnet | undefined>>();

  constructor(readonly resolver = new FilterResolver()) {}

  private network(id: string) {
    if (!this.networks.has(id)) this.networks.set(id, getNetwork(id, true));
    return this.networks.get(id)!;
  }

  private subnet(id: string) {
    if (!this.subnets.has(id)) this.subnets.set(id, getSubnet(id, true));
    return this.subnets.get(id)!;
  }

  /** The port a record's VIF names (`port` undefined: gone meanwhile, sent without a filter). */
  fromVif(vif: Vif, port: Port | undefined): Promise<GuestPort> {
    return this.make(vif, vif.fixed_ips, port);
  }

  /** A port as its item has it (a fan-out that reads no server record). */
  async fromPort(port: Port): Promise<GuestPort> {
    const network = await this.network(port.network_id);
    return this.make(
      {
        port_id: port.id,
        network_id: port.network_id,
        network_name: network?.name ?? "",
        mac_address: String(port.mac_address ?? ""),
      },
      port.fixed_ips.map((f) => ({ ...f, version: undefined })),
      port,
    );
  }

  private async make(
    vif: Pick<Vif, "port_id" | "network_id" | "network_name" | "mac_address">,
    addresses: { subnet_id: string; ip_address: string; version: 4 | 6 | undefined }[],
    port: Port | undefined,
  ): Promise<GuestPort> {
    const network = await this.network(vif.network_id);
    const fixed_ips: GuestPort["fixed_ips"] = [];
    for (const f of addresses) {
      const s = await this.subnet(f.subnet_id);
      if (!s) continue;
      fixed_ips.push({
        subnet_id: f.subnet_id,
        ip_address: f.ip_address,
        version: f.version ?? s.ip_version,
        cidr: s.cidr,
        gateway_ip: s.gateway_ip,
        dns_nameservers: (s.dns_nameservers as string[] | undefined) ?? [],
        host_routes: (s.host_routes as { destination: string; nexthop: string }[] | undefined) ?? [],
      });
    }
    const type = network?.["provider:network_type"] === "vlan" ? "vlan" : "flat";
    const filter = port ? await this.resolver.filterOf(port) : undefined;
    return {
      port_id: vif.port_id,
      network_id: vif.network_id,
      network_name: vif.network_name,
      mac_address: vif.mac_address,
      fixed_ips,
      network_type: type,
      physical_network: (network?.["provider:physical_network"] as string | null | undefined) ?? null,
      segmentation_id:
        type === "vlan"
          ? ((network?.["provider:segmentation_id"] as number | null | undefined) ?? null)
          : null,
      mtu: (network?.mtu as number | undefined) ?? 1500,
      ...(filter ? { filter } : {}),
    };
  }
}

/**
 * The server's ports as its host needs them (a port gone meanwhile is sent without a filter): its
 * own ports read strongly consistently, its remote groups' members eventually (a member sync
 * follows every membership change).
 */
export async function guestPortsOf(
  rec: Pick<InstanceRecord, "network_info">,
  maker = new GuestPorts(new FilterResolver([], [], true, false)),
): Promise<GuestPort[]> {
  const vifs = rec.network_info ?? [];
  if (vifs.length === 0) return [];
  const ports = await maker.resolver.portsById(vifs.map((v) => v.port_id));
  const out: GuestPort[] = [];
  for (const vif of vifs) out.push(await maker.fromVif(vif, ports.get(vif.port_id)));
  return out;
}
