// The host's view of a server's ports (Nova's network_info as the driver gets it): each VIF with
// its subnets' gateway, DNS and routes, the segment it is bridged to, and its filter (its
// security groups' rules, remote groups resolved: lib/instances/port-filters.ts).
import type { GuestPort } from "../compute/drivers/driver.js";
import { getNetwork, getSubnet, type Network, type Subnet } from "../network/store/table.js";
import { FilterResolver } from "./port-filters.js";
import type { InstanceRecord } from "./types.js";

/**
 * The server's ports as its host needs them. `resolver` is shared by a fan-out over many servers
 * (each group, member list and port read once); a port gone meanwhile is sent without a filter.
 */
export async function guestPortsOf(
  rec: Pick<InstanceRecord, "network_info">,
  resolver = new FilterResolver(),
): Promise<GuestPort[]> {
  const vifs = rec.network_info ?? [];
  if (vifs.length === 0) return [];
  const networks = new Map<string, Network | undefined>();
  const subnets = new Map<string, Subnet | undefined>();
  const ports = await resolver.portsById(vifs.map((v) => v.port_id));
  const out: GuestPort[] = [];
  for (const vif of vifs) {
    // the server's own network and subnets, made before it: read as settled
    if (!networks.has(vif.network_id)) networks.set(vif.network_id, await getNetwork(vif.network_id, true));
    const network = networks.get(vif.network_id);
    const fixed_ips: GuestPort["fixed_ips"] = [];
    for (const f of vif.fixed_ips) {
      if (!subnets.has(f.subnet_id)) subnets.set(f.subnet_id, await getSubnet(f.subnet_id, true));
      const s = subnets.get(f.subnet_id);
      if (!s) continue;
      fixed_ips.push({
        subnet_id: f.subnet_id,
        ip_address: f.ip_address,
        version: f.version,
        cidr: s.cidr,
        gateway_ip: s.gateway_ip,
        dns_nameservers: (s.dns_nameservers as string[] | undefined) ?? [],
        host_routes: (s.host_routes as { destination: string; nexthop: string }[] | undefined) ?? [],
      });
    }
    const type = network?.["provider:network_type"] === "vlan" ? "vlan" : "flat";
    const port = ports.get(vif.port_id);
    const filter = port ? await resolver.filterOf(port) : undefined;
    out.push({
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
    });
  }
  return out;
}
