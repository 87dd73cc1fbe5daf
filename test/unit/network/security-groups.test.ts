// Security group rules as Neutron reads them (its converters' and checks' texts, in order), the
// key that makes two rules one, a new group's rules, a port's filter with remote groups resolved,
// and Nova's view of Neutron's rules. Pure.
import { describe, expect, it } from "vitest";
import { novaGroupView, novaRule } from "../../../lib/api/views/security-groups.js";
import { NetworkingError } from "../../../lib/network/cidr.js";
import {
  convertIpPrefix,
  defaultGroupId,
  duplicateOf,
  normalizedCidr,
  portFilterOf,
  ruleKey,
  ruleSpecOf,
  type SecurityGroup,
  type SecurityGroupRule,
  templateRules,
} from "../../../lib/network/security-groups.js";

const G = "11111111-1111-4111-8111-111111111111";
const R = "22222222-2222-4222-8222-222222222222";

function refusal(f: () => unknown): { status: number; type: string; message: string } {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(NetworkingError);
    const n = e as NetworkingError;
    return { status: n.status, type: n.type, message: n.message };
  }
  throw new Error("not refused");
}

const rule = (extra: Record<string, unknown>) =>
  ruleSpecOf({ security_group_id: G, direction: "ingress", ...extra });

function stored(spec: ReturnType<typeof rule>, id: string): SecurityGroupRule {
  return { ...spec, id, project_id: "p", created_at: "t", updated_at: "t", revision_number: 0 };
}

describe("a rule's attributes, as Neutron converts and checks them", () => {
  it("defaults: IPv4, any protocol, no ports, no remote", () => {
    expect(rule({})).toEqual({
      security_group_id: G,
      direction: "ingress",
      ethertype: "IPv4",
      protocol: null,
      port_range_min: null,
      port_range_max: null,
      remote_ip_prefix: null,
      remote_group_id: null,
      description: "",
    });
  });

  it("a direction other than ingress or egress", () => {
    expect(refusal(() => rule({ direction: "in" }))).toEqual({
      status: 400,
      type: "HTTPBadRequest",
      message: "Invalid input for direction. Reason: in is not in ['ingress', 'egress'].",
    });
  });

  it("protocols: names in any case, numbers 0-255 as given, `any` as none; others refused", () => {
    expect(rule({ protocol: "TCP" }).protocol).toBe("tcp");
    expect(rule({ protocol: 17 }).protocol).toBe("17");
    expect(rule({ protocol: "any" }).protocol).toBeNull();
    const bad = refusal(() => rule({ protocol: "bad_protocol_name" }));
    expect(bad.type).toBe("SecurityGroupRuleInvalidProtocol");
    expect(bad.message).toMatch(
      /^Security group rule protocol bad_protocol_name not supported\. Only protocol values \(None, 'any', 'ah', 'dccp', .*'vrrp'\) and integer representations \[0 to 255\] are supported\.$/,
    );
    expect(refusal(() => rule({ protocol: 256 })).type).toBe("SecurityGroupRuleInvalidProtocol");
  });

  it("ethertypes in any case; others refused with the allowed ones", () => {
    expect(rule({ ethertype: "ipv6" }).ethertype).toBe("IPv6");
    expect(refusal(() => rule({ ethertype: "bad_ethertype" }))).toEqual({
      status: 400,
      type: "SecurityGroupRuleInvalidEtherType",
      message:
        "Security group rule for ethertype 'bad_ethertype' not supported. Allowed values are ['IPv4', 'IPv6'].",
    });
  });

  it("tcp ports: each 0-65535, min <= max, both or none; the whole range is none", () => {
    const tcp = (min: unknown, max: unknown) => () =>
      rule({ protocol: "tcp", port_range_min: min, port_range_max: max });
    expect(refusal(tcp(-16, 80)).message).toBe("Invalid value for port -16");
    expect(refusal(tcp(80, 65536)).message).toBe("Invalid value for port 65536");
    expect(refusal(tcp(80, 79))).toEqual({
      status: 400,
      type: "SecurityGroupInvalidPortRange",
      message: "For TCP/UDP protocols, port_range_min must be <= port_range_max",
    });
    expect(refusal(tcp(null, 6)).type).toBe("SecurityGroupInvalidPortRange");
    expect(refusal(tcp(0, 6)).message).toBe("Invalid value for port 0");
    expect(tcp(1, 65535)()).toMatchObject({ port_range_min: null, port_range_max: null });
    expect(tcp("22", 22)()).toMatchObject({ port_range_min: 22, port_range_max: 22 });
  });

  it("icmp type and code: 0-255, a code needs a type", () => {
    const icmp = (min: unknown, max: unknown) => () =>
      rule({ protocol: "icmp", port_range_min: min, port_range_max: max });
    expect(refusal(icmp(1, 256)).message).toBe(
      "Invalid value for ICMP code (port_range_max) 256. It must be 0 to 255.",
    );
    expect(refusal(icmp(300, 1)).message).toBe(
      "Invalid value for ICMP type (port_range_min) 300. It must be 0 to 255.",
    );
    expect(refusal(icmp(-1, 25)).message).toBe("Invalid value for port -1");
    expect(refusal(icmp(null, 6)).message).toBe(
      "ICMP code (port-range-max) 6 is provided but ICMP type (port-range-min) is missing.",
    );
    expect(icmp(11, null)()).toMatchObject({ port_range_min: 11, port_range_max: null });
  });

  it("ports need a protocol, and one that has ports", () => {
    expect(refusal(() => rule({ port_range_min: 22, port_range_max: 22 })).message).toBe(
      "Must also specify protocol if port range is given.",
    );
    expect(refusal(() => rule({ protocol: "gre", port_range_min: 1, port_range_max: 2 })).message).toBe(
      "Ports cannot be specified for protocol 47. Ports are only supported for DCCP, SCTP, TCP, UDP, UDPLITE.",
    );
  });

  it("IPv6's legacy ICMP names are ipv6-icmp; an IPv6 protocol on IPv4 is refused", () => {
    expect(rule({ ethertype: "IPv6", protocol: "icmp" }).protocol).toBe("ipv6-icmp");
    expect(rule({ ethertype: "IPv6", protocol: "1" }).protocol).toBe("58");
    expect(refusal(() => rule({ protocol: "ipv6-icmp" })).message).toBe(
      "Invalid ethertype IPv4 for protocol ipv6-icmp.",
    );
  });

  it("a prefix: netaddr's text, its ethertype's, and not with a remote group", () => {
    expect(rule({ remote_ip_prefix: "10.2.3.124/24" }).remote_ip_prefix).toBe("10.2.3.124/24");
    expect(rule({ remote_ip_prefix: "10.0.0.5" }).remote_ip_prefix).toBe("10.0.0.5/32");
    expect(rule({ ethertype: "IPv6", remote_ip_prefix: "2001:DB8::/32" }).remote_ip_prefix).toBe(
      "2001:db8::/32",
    );
    for (const bad of ["192.168.1./24", "192.168.1.1/33", "bad_prefix", "256"])
      expect(refusal(() => rule({ remote_ip_prefix: bad }))).toEqual({
        status: 400,
        type: "InvalidCIDR",
        message: `Invalid CIDR ${bad} given as IP prefix.`,
      });
    expect(refusal(() => rule({ ethertype: "IPv6", remote_ip_prefix: "10.100.0.0/16" })).message).toBe(
      "Conflicting value ethertype IPv6 for CIDR 10.100.0.0/16",
    );
    expect(refusal(() => rule({ remote_ip_prefix: "10.0.0.0/8", remote_group_id: R })).message).toBe(
      "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.",
    );
    expect(normalizedCidr("10.2.3.124/24")).toBe("10.2.3.0/24");
    expect(convertIpPrefix("")).toBeNull();
  });
});

describe("duplicate rules (Neutron's _rule_to_key)", () => {
  it("an any prefix is no prefix; a protocol is the same by name or number", () => {
    const existing = [stored(rule({ protocol: "tcp", port_range_min: 22, port_range_max: 22 }), "r1")];
    expect(duplicateOf(rule({ protocol: "6", port_range_min: 22, port_range_max: 22 }), existing)?.id).toBe(
      "r1",
    );
    expect(
      duplicateOf(
        rule({ protocol: "tcp", port_range_min: 22, port_range_max: 22, remote_ip_prefix: "0.0.0.0/0" }),
        existing,
      )?.id,
    ).toBe("r1");
    expect(
      duplicateOf(rule({ protocol: "tcp", port_range_min: 22, port_range_max: 23 }), existing),
    ).toBeUndefined();
    expect(
      duplicateOf(
        rule({ direction: "egress", protocol: "tcp", port_range_min: 22, port_range_max: 22 }),
        existing,
      ),
    ).toBeUndefined();
    expect(ruleKey(rule({}))).not.toBe(ruleKey(rule({ ethertype: "IPv6" })));
  });
});

describe("a new group's rules", () => {
  it("every group lets everything out; the default one lets in its own members", () => {
    expect(templateRules(G, false).map((r) => [r.direction, r.ethertype, r.remote_group_id])).toEqual([
      ["egress", "IPv4", null],
      ["egress", "IPv6", null],
    ]);
    expect(templateRules(G, true).map((r) => [r.direction, r.ethertype, r.remote_group_id])).toEqual([
      ["egress", "IPv4", null],
      ["egress", "IPv6", null],
      ["ingress", "IPv4", G],
      ["ingress", "IPv6", G],
    ]);
  });

  it("a project's default group has one id, derived from the project", () => {
    expect(defaultGroupId("demo")).toBe(defaultGroupId("demo"));
    expect(defaultGroupId("demo")).not.toBe(defaultGroupId("other"));
    expect(defaultGroupId("demo")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});

function group(id: string, rules: ReturnType<typeof rule>[], isDefault = false): SecurityGroup {
  return {
    id,
    name: isDefault ? "default" : "web",
    description: "",
    project_id: "p",
    is_default: isDefault,
    rules: rules.map((r, i) => stored({ ...r, security_group_id: id }, `${id}-${i}`)),
    created_at: "t",
    updated_at: "t",
    revision_number: 0,
  };
}

describe("a port's filter", () => {
  const def = group(R, templateRules(R, true), true);
  const web = group(G, [
    rule({ protocol: "tcp", port_range_min: 80, port_range_max: 80, remote_ip_prefix: "10.2.3.124/24" }),
  ]);
  const groups = new Map([
    [R, def],
    [G, web],
  ]);
  const members = (g: string) => (g === R ? ["10.20.0.5", "10.20.0.6", "fd00::6"] : []);
  const port = { id: "p1", fixed_ips: [{ ip_address: "10.20.0.5" }], port_security_enabled: true };

  it("its groups' rules, remote groups as their other members' addresses of the rule's version", () => {
    const f = portFilterOf({ ...port, security_groups: [R, G] }, groups, members);
    expect(f.port_security_enabled).toBe(true);
    expect(f.security_groups).toEqual([R, G]);
    expect(f.rules).toEqual([
      {
        direction: "egress",
        ethertype: "IPv4",
        protocol: null,
        port_range_min: null,
        port_range_max: null,
        remote_ips: ["0.0.0.0/0"],
      },
      {
        direction: "egress",
        ethertype: "IPv6",
        protocol: null,
        port_range_min: null,
        port_range_max: null,
        remote_ips: ["::/0"],
      },
      // its own address left out
      {
        direction: "ingress",
        ethertype: "IPv4",
        protocol: null,
        port_range_min: null,
        port_range_max: null,
        remote_ips: ["10.20.0.6/32"],
      },
      {
        direction: "ingress",
        ethertype: "IPv6",
        protocol: null,
        port_range_min: null,
        port_range_max: null,
        remote_ips: ["fd00::6/128"],
      },
      {
        direction: "ingress",
        ethertype: "IPv4",
        protocol: "tcp",
        port_range_min: 80,
        port_range_max: 80,
        remote_ips: ["10.2.3.0/24"],
      },
    ]);
  });

  it("no groups: nothing let in; no port security: nothing filtered; a group gone: skipped", () => {
    expect(portFilterOf({ ...port, security_groups: [] }, groups, members)).toEqual({
      port_security_enabled: true,
      security_groups: [],
      rules: [],
    });
    expect(
      portFilterOf({ ...port, port_security_enabled: false, security_groups: [R] }, groups, members),
    ).toEqual({
      port_security_enabled: false,
      security_groups: [],
      rules: [],
    });
    expect(portFilterOf({ ...port, security_groups: ["gone"] }, groups, members).rules).toEqual([]);
  });

  it("a remote group with no other member admits nothing", () => {
    const f = portFilterOf({ ...port, security_groups: [R] }, groups, () => ["10.20.0.5"]);
    expect(f.rules.filter((r) => r.direction === "ingress").map((r) => r.remote_ips)).toEqual([[], []]);
  });
});

describe("Nova's view of Neutron's rules", () => {
  it("ingress only; tcp without ports is 1-65535, others -1; no prefix is 0.0.0.0/0", () => {
    const g = group(G, [
      ...templateRules(G, false),
      rule({ protocol: "tcp" }),
      rule({ protocol: "icmp" }),
      rule({ protocol: "tcp", port_range_min: 22, port_range_max: 22, remote_ip_prefix: "10.0.0.0/8" }),
      rule({ protocol: "udp", remote_group_id: R }),
    ]);
    const view = novaGroupView(g, (id) => (id === R ? { name: "default", tenant_id: "p" } : undefined));
    expect(view.rules).toEqual([
      {
        id: `${G}-2`,
        parent_group_id: G,
        ip_protocol: "tcp",
        from_port: 1,
        to_port: 65535,
        group: {},
        ip_range: { cidr: "0.0.0.0/0" },
      },
      {
        id: `${G}-3`,
        parent_group_id: G,
        ip_protocol: "icmp",
        from_port: -1,
        to_port: -1,
        group: {},
        ip_range: { cidr: "0.0.0.0/0" },
      },
      {
        id: `${G}-4`,
        parent_group_id: G,
        ip_protocol: "tcp",
        from_port: 22,
        to_port: 22,
        group: {},
        ip_range: { cidr: "10.0.0.0/8" },
      },
      {
        id: `${G}-5`,
        parent_group_id: G,
        ip_protocol: "udp",
        from_port: 1,
        to_port: 65535,
        group: { name: "default", tenant_id: "p" },
        ip_range: {},
      },
    ]);
    // a rule whose remote group is gone is left out
    expect(novaGroupView(g, () => undefined).rules).toHaveLength(3);
    expect(novaRule(g.rules[0]!)).toMatchObject({ protocol: null, from_port: null, to_port: null });
  });
});
