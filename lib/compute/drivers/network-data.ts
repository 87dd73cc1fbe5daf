// What a guest is told of its ports, pure: network_data.json as Nova's
// netutils.get_network_metadata writes it (same keys, same order), and the exec driver's
// NOVALESS_FIXED_IPS. No DHCP server answers on novaless's networks, so every address is static
// (Nova's "ipv4"/"ipv6" types, never "ipv4_dhcp").
import type { GuestPort } from "./driver.js";

/** Nova's NIC_NAME_LEN: a port's tap device is "tap" + the port id, cut to 14 characters. */
const NIC_NAME_LEN = 14;

/** The host-side device of a port (Nova's VIF devname, as its neutron API code names it). */
export const tapName = (portId: string): string => `tap${portId}`.slice(0, NIC_NAME_LEN);

/** Nova's LEGACY_EXPOSED_VIF_TYPES: shown as they are; any other type is shown as "phy". */
const EXPOSED_VIF_TYPES = new Set(["bridge", "dvs", "hw_veb", "hyperv", "ovs", "tap", "vhostuser", "vif"]);

export interface NetworkDataRoute {
  network: string;
  netmask: string;
  gateway: string;
}
export interface NetworkDataService {
  type: "dns";
  address: string;
}
export interface NetworkData {
  links: { id: string; vif_id: string; type: string; mtu: number; ethernet_mac_address: string }[];
  networks: {
    id: string;
    type: "ipv4" | "ipv6";
    link: string;
    ip_address: string;
    netmask: string;
    routes: NetworkDataRoute[];
    network_id: string;
    services: NetworkDataService[];
  }[];
  services: NetworkDataService[];
}

/**
 * network_data.json of the guest's ports. `vifType` is Nova's VIF type as the host binds ports
 * (libvirt on Open vSwitch: "ovs"). As Nova, a port gets its first IPv4 and first IPv6 address
 * only, and a port with no address gets no link.
 */
export function networkData(ports: readonly GuestPort[], vifType = "bridge"): NetworkData {
  const out: NetworkData = { links: [], networks: [], services: [] };
  for (const port of ports) {
    const v4 = port.fixed_ips.find((ip) => ip.version === 4);
    const v6 = port.fixed_ips.find((ip) => ip.version === 6);
    if (!v4 && !v6) continue;
    const link = {
      id: tapName(port.port_id),
      vif_id: port.port_id,
      type: EXPOSED_VIF_TYPES.has(vifType) ? vifType : "phy",
      mtu: port.mtu,
      ethernet_mac_address: port.mac_address,
    };
    out.links.push(link);
    for (const ip of [v4, v6]) {
      if (!ip) continue;
      const services = ip.dns_nameservers.map((address) => ({ type: "dns" as const, address }));
      out.networks.push({
        id: `network${out.networks.length}`,
        type: ip.version === 4 ? "ipv4" : "ipv6",
        link: link.id,
        ip_address: ip.ip_address,
        netmask: netmaskOf(ip.version, prefixOf(ip.cidr)),
        routes: [
          ...(ip.gateway_ip ? [defaultRoute(ip.version, ip.gateway_ip)] : []),
          ...ip.host_routes.map((r) => route(r.destination, r.nexthop)),
        ],
        network_id: port.network_id,
        services,
      });
      for (const s of services) if (!out.services.some((t) => t.address === s.address)) out.services.push(s);
    }
  }
  return out;
}

/**
 * The exec driver's NOVALESS_FIXED_IPS: every address of every port, space-separated, IPv4 ones
 * first (each family in the ports' order), so `${NOVALESS_FIXED_IPS%% *}` is the main IPv4.
 */
export function fixedIps(ports: readonly GuestPort[]): string {
  const all = ports.flatMap((p) => p.fixed_ips);
  return [...all.filter((ip) => ip.version === 4), ...all.filter((ip) => ip.version === 6)]
    .map((ip) => ip.ip_address)
    .join(" ");
}

function defaultRoute(version: 4 | 6, gateway: string): NetworkDataRoute {
  return version === 4
    ? { network: "0.0.0.0", netmask: "0.0.0.0", gateway }
    : { network: "::", netmask: "::", gateway };
}

/** A host route as Nova writes it: the destination's network address and netmask, via nexthop. */
function route(destination: string, nexthop: string): NetworkDataRoute {
  const [address = "", len] = destination.split("/");
  const version = address.includes(":") ? 6 : 4;
  const prefix = len === undefined ? (version === 4 ? 32 : 128) : Number(len);
  const bits = version === 4 ? 32 : 128;
  const mask = maskBits(bits, prefix);
  return {
    network: format(version, toBigInt(version, address) & mask),
    netmask: format(version, mask),
    gateway: nexthop,
  };
}

function prefixOf(cidr: string): number {
  const len = cidr.split("/")[1];
  if (len === undefined) throw new Error(`cidr ${cidr} has no prefix length`);
  return Number(len);
}

/** dotted for IPv4, compressed for IPv6 (netaddr's str of the subnet's netmask, as Nova) */
function netmaskOf(version: 4 | 6, prefix: number): string {
  return format(version, maskBits(version === 4 ? 32 : 128, prefix));
}

function maskBits(bits: number, prefix: number): bigint {
  return ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
}

function toBigInt(version: 4 | 6, address: string): bigint {
  if (version === 4) return address.split(".").reduce((n, o) => (n << 8n) | BigInt(Number(o)), 0n);
  const [head = "", tail] = address.split("::");
  const words = (s: string) => (s ? s.split(":") : []);
  let groups = words(head);
  if (tail !== undefined) {
    const rest = words(tail);
    groups = [...groups, ...Array<string>(8 - groups.length - rest.length).fill("0"), ...rest];
  }
  return groups.reduce((n, g) => (n << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

/** IPv4 dotted; IPv6 in RFC 5952's form (the longest run of two or more zero groups as "::"). */
function format(version: 4 | 6, n: bigint): string {
  if (version === 4) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join(".");
  const groups = Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.len < 2) return groups.join(":");
  return `${groups.slice(0, best.at).join(":")}::${groups.slice(best.at + best.len).join(":")}`;
}
