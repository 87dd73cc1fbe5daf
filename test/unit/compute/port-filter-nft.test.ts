// A port's security groups as nftables rules, pure (lib/compute/drivers/port-filter-nft.ts): each
// rule's protocol, ports, ICMP type and code and remote addresses per ethertype; the anti-spoofing
// and the neighbour discovery Neutron's firewalls allow; the state from the inet table's mark; a
// port's chains replaced in one transaction, removed whether there or not; nothing for a port
// without port security. That nft loads it and a guest's traffic obeys it,
// test/drivers/libvirt-qemu.test.ts shows on a real guest.
import { describe, expect, it } from "vitest";
import type { GuestPort } from "../../../lib/compute/drivers/driver.js";
import {
  CT_ACCEPT,
  CT_INVALID,
  definePort,
  filteredPort,
  linkLocalOf,
  nftTransaction,
  protocolNumber,
  removePort,
  ruleMatch,
  tapsInTable,
} from "../../../lib/compute/drivers/port-filter-nft.js";
import { guestPort } from "../../../lib/messages/compute.js";
import type { PortFilterRule } from "../../../lib/messages/port-filter.js";

const INSTANCE = "11111111-2222-4333-8444-555555555555";
const GROUP = "5f0b6b7a-0000-4000-8000-0000000000aa";

const rule = (over: Partial<PortFilterRule>): PortFilterRule => ({
  direction: "ingress",
  ethertype: "IPv4",
  protocol: null,
  port_range_min: null,
  port_range_max: null,
  remote_ips: ["0.0.0.0/0"],
  ...over,
});

const port: GuestPort = {
  port_id: "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9",
  network_id: "9f8e7d6c-0000-4000-8000-000000000001",
  network_name: "public",
  mac_address: "FA:16:3E:11:22:33",
  fixed_ips: [
    {
      subnet_id: "5e6f7a8b-0000-4000-8000-000000000001",
      ip_address: "10.20.0.5",
      version: 4,
      cidr: "10.20.0.0/16",
      gateway_ip: "10.20.0.1",
      dns_nameservers: [],
      host_routes: [],
    },
    {
      subnet_id: "5e6f7a8b-0000-4000-8000-000000000002",
      ip_address: "2001:db8::5",
      version: 6,
      cidr: "2001:db8::/64",
      gateway_ip: null,
      dns_nameservers: [],
      host_routes: [],
    },
  ],
  network_type: "flat",
  physical_network: "physnet1",
  segmentation_id: null,
  mtu: 1500,
  filter: {
    port_security_enabled: true,
    security_groups: [GROUP],
    rules: [
      // Neutron's default group: all egress, ingress from its members
      rule({ direction: "egress" }),
      rule({ direction: "egress", ethertype: "IPv6", remote_ips: ["::/0"] }),
      rule({ remote_ips: ["10.20.0.7", "10.20.0.8"] }),
      rule({ ethertype: "IPv6", remote_ips: [] }),
      rule({ protocol: "icmp" }),
      rule({ protocol: "tcp", port_range_min: 22, port_range_max: 22, remote_ips: ["192.0.2.0/24"] }),
    ],
  },
};

describe("a security group rule as an nft match", () => {
  it("protocols by Neutron's names and numbers; any, 0 and unknown ones", () => {
    expect(protocolNumber("tcp", "IPv4")).toBe(6);
    expect(protocolNumber("UDP", "IPv4")).toBe(17);
    expect(protocolNumber("132", "IPv4")).toBe(132);
    expect(protocolNumber("vrrp", "IPv6")).toBe(112);
    // IPv6's legacy names of ICMPv6
    expect(protocolNumber("icmp", "IPv6")).toBe(58);
    expect(protocolNumber("icmpv6", "IPv6")).toBe(58);
    expect(protocolNumber("ipv6-icmp", "IPv6")).toBe(58);
    expect(protocolNumber("1", "IPv6")).toBe(58);
    expect(protocolNumber("icmp", "IPv4")).toBe(1);
    for (const any of [null, "any", "0", "ip", "hopopt"]) expect(protocolNumber(any, "IPv4")).toBeNull();
    expect(protocolNumber("nosuch", "IPv4")).toBeUndefined();
    expect(protocolNumber("256", "IPv4")).toBeUndefined();
  });

  it("a port, a range, a protocol without ports, ICMP's type and code", () => {
    expect(ruleMatch(rule({ protocol: "tcp", port_range_min: 22, port_range_max: 22 }))).toBe(
      "ether type ip meta l4proto 6 th dport 22 return",
    );
    expect(ruleMatch(rule({ protocol: "udp", port_range_min: 1000, port_range_max: 2000 }))).toBe(
      "ether type ip meta l4proto 17 th dport 1000-2000 return",
    );
    expect(ruleMatch(rule({ protocol: "sctp", port_range_min: 9, port_range_max: null }))).toBe(
      "ether type ip meta l4proto 132 th dport 9 return",
    );
    // ports mean nothing to other protocols
    expect(ruleMatch(rule({ protocol: "gre", port_range_min: 1, port_range_max: 2 }))).toBe(
      "ether type ip meta l4proto 47 return",
    );
    expect(ruleMatch(rule({ protocol: "tcp" }))).toBe("ether type ip meta l4proto 6 return");
    expect(ruleMatch(rule({ protocol: "icmp" }))).toBe("ether type ip meta l4proto 1 return");
    expect(ruleMatch(rule({ protocol: "icmp", port_range_min: 8, port_range_max: 0 }))).toBe(
      "ether type ip icmp type 8 icmp code 0 return",
    );
    expect(ruleMatch(rule({ protocol: "icmp", port_range_min: 3, port_range_max: null }))).toBe(
      "ether type ip icmp type 3 return",
    );
    expect(
      ruleMatch(rule({ ethertype: "IPv6", protocol: "icmp", port_range_min: 128, remote_ips: ["::/0"] })),
    ).toBe("ether type ip6 icmpv6 type 128 return");
    expect(ruleMatch(rule({}))).toBe("ether type ip return");
    expect(ruleMatch(rule({ protocol: "nosuch" }))).toBeUndefined();
  });

  it("remote addresses: the source of an ingress rule, the destination of an egress one, of its ethertype only", () => {
    expect(ruleMatch(rule({ remote_ips: ["10.0.0.0/8"] }))).toBe("ether type ip ip saddr 10.0.0.0/8 return");
    expect(ruleMatch(rule({ direction: "egress", remote_ips: ["10.0.0.0/8", "10.1.2.3", "10.1.2.3"] }))).toBe(
      "ether type ip ip daddr { 10.0.0.0/8, 10.1.2.3 } return",
    );
    expect(
      ruleMatch(rule({ ethertype: "IPv6", remote_ips: ["2001:db8::/64", "10.1.2.3", "2001:db8:1::9"] })),
    ).toBe("ether type ip6 ip6 saddr { 2001:db8::/64, 2001:db8:1::9 } return");
    // everything is no constraint
    expect(ruleMatch(rule({ remote_ips: ["10.0.0.0/8", "0.0.0.0/0"] }))).toBe("ether type ip return");
    // a remote group without members (of this ethertype) admits nothing
    expect(ruleMatch(rule({ remote_ips: [] }))).toBeUndefined();
    expect(ruleMatch(rule({ ethertype: "IPv6", remote_ips: ["10.0.0.1"] }))).toBeUndefined();
  });

  it("the link-local address of a MAC, as the guest's kernel makes it", () => {
    expect(linkLocalOf("fa:16:3e:11:22:33")).toBe("fe80::f816:3eff:fe11:2233");
    expect(linkLocalOf("00:00:00:00:00:01")).toBe("fe80::200:ff:fe00:1");
    expect(() => linkLocalOf("nope")).toThrow("not a MAC address: nope");
  });
});

describe("a port's chains", () => {
  const p = filteredPort(INSTANCE, port)!;
  const commands = definePort(p);
  const rulesOf = (chain: string) =>
    commands
      .filter((c) => c.startsWith(`add rule bridge novaless ${chain} `))
      .map((c) => c.slice(`add rule bridge novaless ${chain} `.length));
  const mark = (v: number) => `meta mark & 0x03000000 == 0x0${v.toString(16)}`;

  it("nothing for a port without a filter or with port security off", () => {
    expect(filteredPort(INSTANCE, { ...port, filter: undefined })).toBeUndefined();
    expect(
      filteredPort(INSTANCE, { ...port, filter: { ...port.filter!, port_security_enabled: false } }),
    ).toBeUndefined();
    expect(p).toMatchObject({ tap: "tap0a1b2c3d-4e", fixed_ips: ["10.20.0.5", "2001:db8::5"] });
  });

  it("from the guest: its own MAC and addresses only, DHCP and neighbour discovery, then the egress rules", () => {
    expect(rulesOf("o-tap0a1b2c3d-4e")).toEqual([
      "ether saddr != fa:16:3e:11:22:33 drop",
      "ether type arp arp saddr ether fa:16:3e:11:22:33 arp saddr ip 10.20.0.5 return",
      "ether type != { ip, ip6 } drop",
      "ether type ip ip saddr 0.0.0.0 ip daddr 255.255.255.255 udp sport 68 udp dport 67 return",
      "ether type ip ip saddr != 10.20.0.5 drop",
      "ether type ip6 ip6 saddr :: ip6 daddr ff02::/16 icmpv6 type { 131, 135, 143 } return",
      "ether type ip6 ip6 saddr != { 2001:db8::5, fe80::f816:3eff:fe11:2233 } drop",
      "ether type ip udp sport 68 udp dport 67 return",
      "ether type ip6 udp sport 546 udp dport 547 return",
      "ether type ip udp sport 67 udp dport 68 drop",
      "ether type ip6 udp sport 547 udp dport 546 drop",
      "icmpv6 type nd-router-advert drop",
      "meta l4proto ipv6-icmp return",
      `${mark(CT_INVALID)} drop`,
      `${mark(CT_ACCEPT)} return`,
      "ether type ip return",
      "ether type ip6 return",
      `drop comment "no rule of security groups ${GROUP} admits it"`,
    ]);
  });

  it("to the guest: ARP, neighbour discovery and DHCP offers, replies, then the ingress rules", () => {
    expect(rulesOf("i-tap0a1b2c3d-4e")).toEqual([
      "ether type arp return",
      "ether type != { ip, ip6 } drop",
      "icmpv6 type { 130, 134, 135, 136 } return",
      "ether type ip udp sport 67 udp dport 68 return",
      "ether type ip6 udp sport 547 udp dport 546 return",
      `${mark(CT_INVALID)} drop`,
      `${mark(CT_ACCEPT)} return`,
      "ether type ip ip saddr { 10.20.0.7, 10.20.0.8 } return",
      "ether type ip meta l4proto 1 return",
      "ether type ip meta l4proto 6 th dport 22 ip saddr 192.0.2.0/24 return",
      `drop comment "no rule of security groups ${GROUP} admits it"`,
    ]);
  });

  it("a port without IPv4 addresses sends no IPv4 but a DHCP discovery, and no ARP", () => {
    const v6only = filteredPort(INSTANCE, { ...port, fixed_ips: [port.fixed_ips[1]!] })!;
    const rules = definePort(v6only).join("\n");
    expect(rules).toContain("add rule bridge novaless o-tap0a1b2c3d-4e ether type ip drop");
    expect(rules).not.toContain("arp saddr");
  });

  it("a rule repeated by two groups once; many groups named in the drop's comment while they fit", () => {
    const twice = filteredPort(INSTANCE, {
      ...port,
      filter: {
        port_security_enabled: true,
        security_groups: [GROUP, GROUP.replace("aa", "bb"), GROUP.replace("aa", "cc")],
        rules: [rule({ protocol: "icmp" }), rule({ protocol: "icmp" })],
      },
    })!;
    const cmds = definePort(twice);
    expect(cmds.filter((c) => c.endsWith("ether type ip meta l4proto 1 return"))).toHaveLength(1);
    expect(
      cmds.filter((c) => c.endsWith('drop comment "no rule of its security groups admits it"')),
    ).toHaveLength(2);
  });

  it("chains flushed and filled, then put in the maps: one transaction, after the tables", () => {
    expect(commands[0]).toBe(
      `add chain bridge novaless o-tap0a1b2c3d-4e { comment "port ${port.port_id} of instance ${INSTANCE}: from the guest"; }`,
    );
    expect(commands[1]).toBe("flush chain bridge novaless o-tap0a1b2c3d-4e");
    expect(commands.slice(-2)).toEqual([
      'add element bridge novaless from_guest { "tap0a1b2c3d-4e" : jump o-tap0a1b2c3d-4e }',
      'add element bridge novaless to_guest { "tap0a1b2c3d-4e" : jump i-tap0a1b2c3d-4e }',
    ]);
    const all = nftTransaction({ define: [p], remove: ["tap99999999-99"] }).split("\n");
    const at = (line: string) => all.indexOf(line);
    expect(at("add table bridge novaless")).toBeGreaterThan(at("add table inet novaless"));
    expect(at("flush chain bridge novaless guest-forward")).toBeGreaterThan(-1);
    expect(all).toContain("add rule bridge novaless guest-forward iifname vmap @from_guest");
    expect(all).toContain("add rule bridge novaless guest-forward oifname vmap @to_guest");
    expect(all).toContain("add rule bridge novaless guest-input iifname vmap @from_guest");
    expect(all).toContain("add rule bridge novaless guest-output oifname vmap @to_guest");
    // the state: after conntrack, on bridges, at prerouting and output
    expect(all).toContain(
      "add chain inet novaless ct-mark-prerouting { type filter hook prerouting priority -150; policy accept; }",
    );
    expect(all).toContain(
      'add rule inet novaless ct-mark-output meta oifkind "bridge" ct state established ct direction reply meta mark set meta mark | 0x01000000',
    );
    expect(at("delete chain bridge novaless o-tap99999999-99")).toBeLessThan(at(commands[0]!));
  });

  it("a tap's chains removed whether they are there or not (each added first)", () => {
    expect(removePort("tap0a1b2c3d-4e").slice(0, 5)).toEqual([
      "add chain bridge novaless o-tap0a1b2c3d-4e",
      'add element bridge novaless from_guest { "tap0a1b2c3d-4e" : jump o-tap0a1b2c3d-4e }',
      'delete element bridge novaless from_guest { "tap0a1b2c3d-4e" }',
      "flush chain bridge novaless o-tap0a1b2c3d-4e",
      "delete chain bridge novaless o-tap0a1b2c3d-4e",
    ]);
    expect(() => removePort('tap"; flush ruleset')).toThrow("not a tap name nft can key on");
  });

  it("the taps with chains, from nft's JSON listing; the base chains are none", () => {
    const listing = JSON.stringify({
      nftables: [
        { metainfo: { version: "1.0.6" } },
        { table: { family: "bridge", name: "novaless" } },
        { chain: { name: "guest-forward", hook: "forward" } },
        { chain: { name: "o-tap0a1b2c3d-4e" } },
        { chain: { name: "i-tap0a1b2c3d-4e" } },
        { chain: { name: "i-tap1b2c3d4e-5f" } },
      ],
    });
    expect(tapsInTable(listing).sort()).toEqual(["tap0a1b2c3d-4e", "tap1b2c3d4e-5f"]);
  });

  it("the build message carries the filter to the host", () => {
    expect(guestPort.parse(port).filter).toEqual(port.filter);
  });
});
