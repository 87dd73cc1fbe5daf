// A port's security groups as nftables rules on its host, pure: Neutron's firewall drivers
// (neutron/agent/linux/iptables_firewall.py, openvswitch_firewall/firewall.py) written for nft.
//
// One table per host, `bridge novaless`: its base chains at the bridge's forward, input and output
// hooks send each frame a guest's tap sends to the port's egress chain (o-<tap>, Neutron's "o"
// chain: out of the guest) and each frame the bridge sends to the tap to its ingress chain
// (i-<tap>), through two verdict maps keyed by the tap's name. The port chains return what they
// admit and drop the rest, so a frame between two guests of the host passes both ports' chains.
// A chain matches the tap by name, so it is in place before libvirt makes the tap: a guest's
// first packet already meets it.
//
// Stateful, as Neutron's: replies pass. The bridge family cannot read conntrack on a kernel
// without nf_conntrack_bridge, so the state comes from where br_netfilter tracks bridged IP
// traffic (net.bridge.bridge-nf-call-iptables and -ip6tables): a second table, `inet novaless`,
// reads `ct state` at prerouting and output (after conntrack, priority -150) on bridges, and
// writes it into two bits of the packet's mark for the bridge chains: CT_ACCEPT for a related
// packet or a reply of an established connection, CT_INVALID for an invalid one. A packet in the
// original direction of an established connection is checked against the rules again, as a new
// one is: a rule removed stops the connections it admitted at once (Neutron deletes their
// conntrack entries; here nothing is left to delete).
//
// Every transaction (`nft -f`) redefines the base chains and the ports it names: a port's chains
// are flushed and filled, and its map entries set, in one kernel transaction, so a refresh never
// opens a gap. A port without a filter or with port security off has no chains: nothing filtered.
import { isIP } from "node:net";
import type { PortFilter, PortFilterRule } from "../../messages/port-filter.js";
import type { GuestPort } from "./driver.js";
import { tapName } from "./network-data.js";

/** The tables' name, in the `bridge` and the `inet` family. */
export const NFT_TABLE = "novaless";

/**
 * The mark's bits the inet table writes and the bridge chains read (bits 24 and 25: clear of the
 * bits kube-proxy, Docker and libvirt's networks use).
 */
export const CT_MARK_MASK = 0x03000000;
/** a related packet, or a reply of an established connection: it passes */
export const CT_ACCEPT = 0x01000000;
/** conntrack finds the packet invalid: dropped */
export const CT_INVALID = 0x02000000;

const hex = (n: number) => `0x${n.toString(16).padStart(8, "0")}`;

/** What a port's chains are made of. */
export interface FilteredPort {
  /** the tap (network-data.ts tapName) */
  tap: string;
  port_id: string;
  instance_uuid: string;
  mac_address: string;
  /** its fixed IPs, both versions */
  fixed_ips: string[];
  filter: PortFilter;
}

/** The port as its chains are made, or undefined when nothing of it is filtered. */
export function filteredPort(instanceUuid: string, port: GuestPort): FilteredPort | undefined {
  if (!port.filter?.port_security_enabled) return undefined;
  return {
    tap: tapName(port.port_id),
    port_id: port.port_id,
    instance_uuid: instanceUuid,
    mac_address: port.mac_address,
    fixed_ips: port.fixed_ips.map((ip) => ip.ip_address),
    filter: port.filter,
  };
}

/** neutron-lib's IP_PROTOCOL_MAP (and its alias icmpv6). */
const PROTOCOLS: Readonly<Record<string, number>> = {
  ah: 51,
  dccp: 33,
  egp: 8,
  esp: 50,
  gre: 47,
  hopopt: 0,
  icmp: 1,
  igmp: 2,
  ip: 0,
  ipip: 4,
  "ipv6-encap": 41,
  "ipv6-frag": 44,
  "ipv6-icmp": 58,
  icmpv6: 58,
  "ipv6-nonxt": 59,
  "ipv6-opts": 60,
  "ipv6-route": 43,
  ospf: 89,
  pgm: 113,
  rsvp: 46,
  sctp: 132,
  tcp: 6,
  udp: 17,
  udplite: 136,
  vrrp: 112,
};

/** neutron's SG_PORT_PROTO_NUMS: the protocols a port range applies to (dccp, tcp, udp, udplite, sctp). */
const PORT_PROTOCOLS = new Set([33, 6, 17, 136, 132]);
const ICMP = 1;
const IPV6_ICMP = 58;

/**
 * A rule's protocol as a number: null for any (Neutron's null, "any", and protocol 0, which its
 * drivers leave unmatched); IPv6's "icmp" is ipv6-icmp (IPV6_ICMP_LEGACY_PROTO_LIST); undefined for
 * what Neutron does not know.
 */
export function protocolNumber(
  protocol: string | null,
  ethertype: "IPv4" | "IPv6",
): number | null | undefined {
  if (protocol === null || protocol === "any") return null;
  const n = /^\d+$/.test(protocol) ? Number(protocol) : PROTOCOLS[protocol.toLowerCase()];
  if (n === undefined || n > 255) return undefined;
  if (n === 0) return null;
  return ethertype === "IPv6" && n === ICMP ? IPV6_ICMP : n;
}

const familyOf = (ethertype: "IPv4" | "IPv6") => (ethertype === "IPv4" ? "ip" : "ip6");
const versionOf = (address: string) => isIP(address.split("/")[0]!);
const everything = (cidr: string) => /\/0$/.test(cidr);

/** an nft set of addresses or one address */
const nftSet = (items: readonly string[]) => (items.length === 1 ? items[0]! : `{ ${items.join(", ")} }`);

/**
 * One security group rule as a match that returns (admits), or undefined when it admits nothing:
 * its remote group has no member of its ethertype, or its protocol is unknown.
 */
export function ruleMatch(rule: PortFilterRule): string | undefined {
  const family = familyOf(rule.ethertype);
  const version = rule.ethertype === "IPv4" ? 4 : 6;
  const proto = protocolNumber(rule.protocol, rule.ethertype);
  if (proto === undefined) return undefined;
  const remotes = [...new Set(rule.remote_ips.filter((ip) => versionOf(ip) === version))];
  if (!remotes.length) return undefined;
  const parts = [`ether type ${family}`];
  const min = rule.port_range_min;
  const max = rule.port_range_max ?? min;
  if (proto !== null && (proto === ICMP || proto === IPV6_ICMP) && min !== null) {
    // port_range_min and max are the ICMP type and code
    const icmp = proto === ICMP ? "icmp" : "icmpv6";
    parts.push(`${icmp} type ${min}`);
    if (rule.port_range_max !== null) parts.push(`${icmp} code ${rule.port_range_max}`);
  } else if (proto !== null) {
    parts.push(`meta l4proto ${proto}`);
    if (PORT_PROTOCOLS.has(proto) && min !== null)
      parts.push(`th dport ${min === max ? min : `${min}-${max}`}`);
  }
  // an ingress rule's remote is the source, an egress rule's the destination
  if (!remotes.some(everything))
    parts.push(`${family} ${rule.direction === "ingress" ? "saddr" : "daddr"} ${nftSet(remotes)}`);
  return `${parts.join(" ")} return`;
}

/** The IPv6 link-local address of a MAC (EUI-64 under fe80::/64), as the guest's kernel makes it. */
export function linkLocalOf(mac: string): string {
  const b = mac.split(":").map((h) => Number.parseInt(h, 16));
  if (b.length !== 6 || b.some((x) => Number.isNaN(x))) throw new Error(`not a MAC address: ${mac}`);
  const word = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
  return `fe80::${word(b[0]! ^ 0x02, b[1]!)}:${word(b[2]!, 0xff)}:${word(0xfe, b[3]!)}:${word(b[4]!, b[5]!)}`;
}

const egressChain = (tap: string) => `o-${tap}`;
const ingressChain = (tap: string) => `i-${tap}`;

/** Interface names nft and the kernel take (IFNAMSIZ), quoted as they are. */
function checkTap(tap: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_.-]{0,14}$/.test(tap)) throw new Error(`not a tap name nft can key on: ${tap}`);
  return tap;
}

/** The connection's state, as the inet table marked it: invalid dropped, replies and related admitted. */
const STATE_RULES = [
  `meta mark & ${hex(CT_MARK_MASK)} == ${hex(CT_INVALID)} drop`,
  `meta mark & ${hex(CT_MARK_MASK)} == ${hex(CT_ACCEPT)} return`,
];

/**
 * What leaves the guest (the "o" chain): Neutron's anti-spoofing (its MAC, its addresses; a DHCP
 * client's discovery from 0.0.0.0; ARP for its own IPv4 addresses; IPv6 duplicate address
 * detection from ::), no DHCP server and no router advertisements of its own, then the egress
 * rules.
 */
function egressRules(p: FilteredPort): string[] {
  const mac = p.mac_address.toLowerCase();
  const v4 = p.fixed_ips.filter((ip) => versionOf(ip) === 4);
  const v6 = [...p.fixed_ips.filter((ip) => versionOf(ip) === 6), linkLocalOf(mac)];
  const rules = [`ether saddr != ${mac} drop`];
  if (v4.length) rules.push(`ether type arp arp saddr ether ${mac} arp saddr ip ${nftSet(v4)} return`);
  rules.push(
    "ether type != { ip, ip6 } drop",
    "ether type ip ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp sport 68 udp dport 67 return",
    v4.length ? `ether type ip ip saddr != ${nftSet(v4)} drop` : "ether type ip drop",
    // neutron-lib's ICMPV6_ALLOWED_UNSPEC_ADDR_TYPES: MLD reports and neighbour solicitation
    "ether type ip6 ip6 saddr :: ip6 daddr ff02::/16 icmpv6 type { 131, 135, 143 } return",
    `ether type ip6 ip6 saddr != ${nftSet(v6)} drop`,
    "ether type ip udp sport 68 udp dport 67 return",
    "ether type ip6 udp sport 546 udp dport 547 return",
    "ether type ip udp sport 67 udp dport 68 drop",
    "ether type ip6 udp sport 547 udp dport 546 drop",
    "icmpv6 type nd-router-advert drop",
    // the iptables driver's: any other ICMPv6 from its own addresses (neighbour discovery,
    // router solicitation, MLD)
    "meta l4proto ipv6-icmp return",
    ...STATE_RULES,
  );
  return rules;
}

/**
 * What reaches the guest (the "i" chain): ARP, the ICMPv6 of neighbour discovery (MLD queries,
 * router advertisements, neighbour solicitations and advertisements) and DHCP offers, as Neutron's
 * Open vSwitch firewall lets them in, then the ingress rules.
 */
function ingressRules(): string[] {
  return [
    "ether type arp return",
    "ether type != { ip, ip6 } drop",
    "icmpv6 type { 130, 134, 135, 136 } return",
    "ether type ip udp sport 67 udp dport 68 return",
    "ether type ip6 udp sport 547 udp dport 546 return",
    ...STATE_RULES,
  ];
}

/** The port's security group rules of one direction, each once (groups may repeat a rule). */
function admitted(filter: PortFilter, direction: "ingress" | "egress"): string[] {
  const out = new Set<string>();
  for (const rule of filter.rules) {
    if (rule.direction !== direction) continue;
    const m = ruleMatch(rule);
    if (m) out.add(m);
  }
  return [...out];
}

function chainCommands(chain: string, rules: readonly string[], comment: string): string[] {
  const at = `bridge ${NFT_TABLE} ${chain}`;
  return [
    `add chain ${at} { comment ${JSON.stringify(comment)}; }`,
    `flush chain ${at}`,
    ...rules.map((r) => `add rule ${at} ${r}`),
  ];
}

/** A port's two chains and its entries in the maps, replacing what was there. */
export function definePort(p: FilteredPort): string[] {
  const tap = checkTap(p.tap);
  const about = `port ${p.port_id} of instance ${p.instance_uuid}`;
  // nft keeps at most 128 characters of a comment: the groups' ids while they fit
  const groups = `no rule of security groups ${p.filter.security_groups.join(" ")} admits it`;
  const comment = `drop comment ${JSON.stringify(groups.length <= 128 ? groups : "no rule of its security groups admits it")}`;
  return [
    ...chainCommands(
      egressChain(tap),
      [...egressRules(p), ...admitted(p.filter, "egress"), comment],
      `${about}: from the guest`,
    ),
    ...chainCommands(
      ingressChain(tap),
      [...ingressRules(), ...admitted(p.filter, "ingress"), comment],
      `${about}: to the guest`,
    ),
    `add element bridge ${NFT_TABLE} from_guest { "${tap}" : jump ${egressChain(tap)} }`,
    `add element bridge ${NFT_TABLE} to_guest { "${tap}" : jump ${ingressChain(tap)} }`,
  ];
}

/**
 * A tap's chains and map entries gone, whether they were there or not (each is added first: nft
 * 1.0.6 has no `destroy`, and a delete of what is not there fails the whole transaction).
 */
export function removePort(tapIn: string): string[] {
  const tap = checkTap(tapIn);
  const commands: string[] = [];
  for (const [map, chain] of [
    ["from_guest", egressChain(tap)],
    ["to_guest", ingressChain(tap)],
  ] as const) {
    commands.push(
      `add chain bridge ${NFT_TABLE} ${chain}`,
      `add element bridge ${NFT_TABLE} ${map} { "${tap}" : jump ${chain} }`,
      `delete element bridge ${NFT_TABLE} ${map} { "${tap}" }`,
      `flush chain bridge ${NFT_TABLE} ${chain}`,
      `delete chain bridge ${NFT_TABLE} ${chain}`,
    );
  }
  return commands;
}

/** The connection's state into the mark, at one hook of the inet table. */
function markChain(name: string, hook: "prerouting" | "output", device: "iifkind" | "oifkind"): string[] {
  const at = `inet ${NFT_TABLE} ${name}`;
  const on = `meta ${device} "bridge"`;
  return [
    `add chain ${at} { type filter hook ${hook} priority -150; policy accept; }`,
    `flush chain ${at}`,
    `add rule ${at} ${on} meta mark set meta mark & ${hex(~CT_MARK_MASK >>> 0)}`,
    `add rule ${at} ${on} ct state invalid meta mark set meta mark | ${hex(CT_INVALID)}`,
    `add rule ${at} ${on} ct state related meta mark set meta mark | ${hex(CT_ACCEPT)}`,
    `add rule ${at} ${on} ct state established ct direction reply meta mark set meta mark | ${hex(CT_ACCEPT)}`,
  ];
}

/** A base chain of the bridge table, sending frames to the ports' chains. */
function baseChain(name: string, hook: "forward" | "input" | "output", lookups: readonly string[]): string[] {
  const at = `bridge ${NFT_TABLE} ${name}`;
  return [
    `add chain ${at} { type filter hook ${hook} priority filter; policy accept; }`,
    `flush chain ${at}`,
    ...lookups.map((l) => `add rule ${at} ${l}`),
  ];
}

/** Both tables, their maps and base chains (made, or made again as they are). */
export function baseCommands(): string[] {
  const fromGuest = "iifname vmap @from_guest";
  const toGuest = "oifname vmap @to_guest";
  return [
    `add table inet ${NFT_TABLE}`,
    ...markChain("ct-mark-prerouting", "prerouting", "iifkind"),
    ...markChain("ct-mark-output", "output", "oifkind"),
    `add table bridge ${NFT_TABLE}`,
    `add map bridge ${NFT_TABLE} from_guest { type ifname : verdict; }`,
    `add map bridge ${NFT_TABLE} to_guest { type ifname : verdict; }`,
    // a guest to a guest of this host: the sender's chain, then the receiver's
    ...baseChain("guest-forward", "forward", [fromGuest, toGuest]),
    // a guest to this host, and this host to a guest
    ...baseChain("guest-input", "input", [fromGuest]),
    ...baseChain("guest-output", "output", [toGuest]),
  ];
}

/**
 * One `nft -f` transaction: the tables made (again), the ports in `define` replaced, the taps in
 * `remove` gone. All of it or nothing, at once.
 */
export function nftTransaction(change: {
  define?: readonly FilteredPort[];
  remove?: readonly string[];
}): string {
  const lines = [
    `# novaless: security groups of this host's ports (lib/compute/drivers/port-filter-nft.ts)`,
    ...baseCommands(),
    ...(change.remove ?? []).flatMap(removePort),
    ...(change.define ?? []).flatMap(definePort),
  ];
  return `${lines.join("\n")}\n`;
}

/** The taps that have chains in the bridge table, from `nft -j list table bridge novaless`. */
export function tapsInTable(listing: string): string[] {
  const taps = new Set<string>();
  const doc = JSON.parse(listing) as { nftables?: { chain?: { name?: string; hook?: string } }[] };
  for (const item of doc.nftables ?? []) {
    const name = item.chain?.name;
    if (!name || item.chain?.hook) continue;
    const m = /^[io]-(.+)$/.exec(name);
    if (m) taps.add(m[1]!);
  }
  return [...taps];
}
