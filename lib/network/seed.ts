// The network a newcomer's servers get addresses on: a shared flat network `public` on physnet1
// with one IPv4 subnet, 10.20.0.0/16, as DevStack's `public` is there from the start. Fixed ids,
// so seeding again (every `npm start`) finds it and changes nothing, and an operator's deletion
// of it is not undone until the table is new.
import { defaultGateway, defaultPools, parseCidr } from "./cidr.js";
import { createNetwork } from "./store/networks.js";
import { createSubnet } from "./store/subnets.js";
import { getNetwork } from "./store/table.js";

export const PUBLIC_NETWORK_ID = "3f1e6a4c-5b1d-4e8a-9c2f-7d0a1b2c3d4e";
export const PUBLIC_SUBNET_ID = "8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d";
export const PUBLIC_CIDR = "10.20.0.0/16";

/** Seed `public` and its subnet if the network is not there; true when written. */
export async function seedPublicNetwork(project = "admin", now = new Date()): Promise<boolean> {
  if (await getNetwork(PUBLIC_NETWORK_ID)) return false;
  const stamp = now.toISOString().replace(/\.\d+Z$/, "Z");
  await createNetwork({
    id: PUBLIC_NETWORK_ID,
    name: "public",
    description: "seeded by novaless: the network `networks: auto` picks",
    project_id: project,
    admin_state_up: true,
    shared: true,
    mtu: 1500,
    availability_zone_hints: [],
    "provider:network_type": "flat",
    "provider:physical_network": "physnet1",
    "provider:segmentation_id": null,
    created_at: stamp,
    updated_at: stamp,
  });
  const cidr = parseCidr(PUBLIC_CIDR);
  const gateway_ip = defaultGateway(cidr);
  const allocation_pools = defaultPools(cidr, gateway_ip);
  await createSubnet({
    id: PUBLIC_SUBNET_ID,
    network_id: PUBLIC_NETWORK_ID,
    project_id: project,
    ip_version: 4,
    cidr: PUBLIC_CIDR,
    gateway_ip,
    allocation_pools,
    name: "public-subnet",
    description: "",
    dns_nameservers: [],
    host_routes: [],
    enable_dhcp: true,
    revision_number: 0,
    created_at: stamp,
    updated_at: stamp,
  });
  return true;
}
