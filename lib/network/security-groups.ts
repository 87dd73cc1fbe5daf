// Neutron's security groups, pure: what a rule may say and how Neutron reads it (the converters of
// neutron/extensions/securitygroup.py, then SecurityGroupDbMixin's checks in
// neutron/db/securitygroups_db.py, in their order and with their texts), the key that makes two
// rules one (_rule_to_key), the rules a new group starts with (the default rule templates of
// Neutron's 2023.2 migration), and a port's filter: its groups' rules with each remote group
// resolved to its member ports' addresses (what the security group agent RPC hands a host).
import { createHash } from "node:crypto";
import type { PortFilter, PortFilterRule } from "../messages/port-filter.js";
import { type Address, formatAddress, NetworkingError, parseAddress } from "./cidr.js";

export type Direction = "ingress" | "egress";
export type Ethertype = "IPv4" | "IPv6";

/** A rule as stored and shown (Neutron's SecurityGroupRule, its standard attributes with it). */
export interface SecurityGroupRule {
  id: string;
  project_id: string;
  security_group_id: string;
  direction: Direction;
  ethertype: Ethertype;
  /** null: any; a protocol name as Neutron keeps it (lower case) or a number as text */
  protocol: string | null;
  port_range_min: number | null;
  port_range_max: number | null;
  /** as given, with its mask (netaddr's text: host bits kept) */
  remote_ip_prefix: string | null;
  remote_group_id: string | null;
  description: string;
  created_at: string;
  updated_at: string;
  revision_number: number;
}

/** A group with its rules (Neutron's SecurityGroup and its security_group_rules). */
export interface SecurityGroup {
  id: string;
  name: string;
  description: string;
  project_id: string;
  /** the project's `default` group (Neutron's DefaultSecurityGroup row) */
  is_default: boolean;
  rules: SecurityGroupRule[];
  created_at: string;
  updated_at: string;
  revision_number: number;
}

/** What a rule says, checked and in Neutron's form; the caller adds id, project and stamps. */
export type RuleSpec = Pick<
  SecurityGroupRule,
  | "security_group_id"
  | "direction"
  | "ethertype"
  | "protocol"
  | "port_range_min"
  | "port_range_max"
  | "remote_ip_prefix"
  | "remote_group_id"
  | "description"
>;

const IPV4_ANY = "0.0.0.0/0";
const IPV6_ANY = "::/0";

/** neutron-lib's IP_PROTOCOL_MAP, in its order (sg_supported_protocols follows it). */
const IP_PROTOCOL_MAP: readonly [string, number][] = [
  ["ah", 51],
  ["dccp", 33],
  ["egp", 8],
  ["esp", 50],
  ["gre", 47],
  ["hopopt", 0],
  ["icmp", 1],
  ["igmp", 2],
  ["ip", 0],
  ["ipip", 4],
  ["ipv6-encap", 41],
  ["ipv6-frag", 44],
  ["ipv6-icmp", 58],
  ["icmpv6", 58],
  ["ipv6-nonxt", 59],
  ["ipv6-opts", 60],
  ["ipv6-route", 43],
  ["ospf", 89],
  ["pgm", 113],
  ["rsvp", 46],
  ["sctp", 132],
  ["tcp", 6],
  ["udp", 17],
  ["udplite", 136],
  ["vrrp", 112],
];
const PROTOCOL_NUMBER = new Map(IP_PROTOCOL_MAP);
/** IP_PROTOCOL_NUM_TO_NAME_MAP: the last name of a number wins (0 is `ip`), never the legacy icmpv6. */
const PROTOCOL_NAME = new Map(
  IP_PROTOCOL_MAP.filter(([n]) => n !== "icmpv6").map(([name, num]) => [String(num), name]),
);
/** The protocols whose rules take a port range (_constants.SG_PORT_PROTO_NUMS). */
const PORT_PROTOCOLS = [33, 132, 6, 17, 136];
const PORT_PROTOCOL_NAMES = ["dccp", "sctp", "tcp", "udp", "udplite"];
/** Protocols that are IPv6's only (_validate_ethertype_and_protocol). */
const IPV6_ONLY = new Set([
  "ipv6-encap",
  "ipv6-frag",
  "ipv6-icmp",
  "icmpv6",
  "ipv6-nonxt",
  "ipv6-opts",
  "ipv6-route",
  "41",
  "44",
  "58",
  "59",
  "60",
  "43",
]);

/** Python's repr of sg_supported_protocols, as SecurityGroupRuleInvalidProtocol prints it. */
const SUPPORTED_PROTOCOLS = `(None, 'any', ${IP_PROTOCOL_MAP.map(([n]) => `'${n}'`).join(", ")})`;

const bad = (type: string, message: string) => new NetworkingError(400, type, message);

/** Python's str() of a value as Neutron's messages print it. */
function pyStr(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** Python's int() of an int, a float (truncated) or a decimal string; undefined when it raises. */
function pyInt(v: unknown): number | undefined {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") return Number.isFinite(v) ? Math.trunc(v) : undefined;
  if (typeof v === "string" && /^\s*[+-]?\d+\s*$/.test(v)) return Number.parseInt(v, 10);
  return undefined;
}

/** convert_protocol: none or `any` is null; a number 0-255 as given; a known name in lower case. */
export function convertProtocol(value: unknown): string | null {
  if (value === null || value === undefined || value === "any") return null;
  const invalid = () =>
    bad(
      "SecurityGroupRuleInvalidProtocol",
      `Security group rule protocol ${pyStr(value)} not supported. Only protocol values ${SUPPORTED_PROTOCOLS} and integer representations [0 to 255] are supported.`,
    );
  const n = pyInt(value);
  if (n !== undefined) {
    if (n >= 0 && n <= 255) return typeof value === "string" ? value : String(value);
    throw invalid();
  }
  if (
    typeof value === "string" &&
    (value.toLowerCase() === "any" || PROTOCOL_NUMBER.has(value.toLowerCase()))
  )
    return value.toLowerCase() === "any" ? null : value.toLowerCase();
  throw invalid();
}

/** convert_ethertype_to_case_insensitive */
export function convertEthertype(value: unknown): Ethertype {
  if (typeof value === "string") {
    if (value.toLowerCase() === "ipv4") return "IPv4";
    if (value.toLowerCase() === "ipv6") return "IPv6";
  }
  throw bad(
    "SecurityGroupRuleInvalidEtherType",
    `Security group rule for ethertype '${pyStr(value)}' not supported. Allowed values are ['IPv4', 'IPv6'].`,
  );
}

/** convert_validate_port_value: none, or a port 0-65535 (oslo's is_valid_port). */
export function convertPort(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const n = pyInt(value);
  if (n !== undefined && n >= 0 && n <= 65535) return n;
  throw bad("SecurityGroupInvalidPortValue", `Invalid value for port ${pyStr(value)}`);
}

/** A prefix as netaddr reads one strictly: an address, then an optional mask within its length. */
export function parsePrefix(text: string): { address: Address; prefixlen: number } | undefined {
  const [addr, len, ...more] = text.split("/");
  if (more.length || addr === undefined) return undefined;
  const address = parseAddress(addr);
  if (!address) return undefined;
  const max = address.version === 4 ? 32 : 128;
  if (len === undefined) return { address, prefixlen: max };
  if (!/^\d{1,3}$/.test(len) || Number(len) > max) return undefined;
  return { address, prefixlen: Number(len) };
}

/** convert_ip_prefix_to_cidr: netaddr's text of the prefix (its mask added, host bits kept). */
export function convertIpPrefix(value: unknown): string | null {
  if (value === null || value === undefined || value === "") return null;
  const p = typeof value === "string" ? parsePrefix(value) : undefined;
  if (!p) throw bad("InvalidCIDR", `Invalid CIDR ${pyStr(value)} given as IP prefix.`);
  return `${formatAddress(p.address.value, p.address.version)}/${p.prefixlen}`;
}

/** The network of a prefix, host bits cleared (Neutron's normalized_cidr). */
export function normalizedCidr(prefix: string | null): string | null {
  const p = prefix === null ? undefined : parsePrefix(prefix);
  if (!p) return null;
  const bits = p.address.version === 4 ? 32n : 128n;
  const mask = ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(p.prefixlen))) - 1n);
  return `${formatAddress(p.address.value & mask, p.address.version)}/${p.prefixlen}`;
}

/** The protocol's number (_get_ip_proto_number); undefined for any. */
function protocolNumber(protocol: string | null): number | undefined {
  if (protocol === null) return undefined;
  const named = PROTOCOL_NUMBER.get(protocol);
  return named ?? Number(protocol);
}

/**
 * A rule's attributes as POST /security-group-rules gives them, converted and checked as Neutron
 * does: the attribute map's converters (in its order: protocol, the ports, ethertype, the
 * prefix), then _validate_base_security_group_rule_attributes (the legacy IPv6 ICMP names made
 * ipv6-icmp, a 1-65535 range made none, the port range, the prefix against the ethertype, an
 * IPv6 protocol on IPv4, one remote only). The groups' existence is the store's question.
 */
export function ruleSpecOf(body: Record<string, unknown>): RuleSpec {
  const direction = body.direction;
  if (direction !== "ingress" && direction !== "egress")
    throw bad(
      "HTTPBadRequest",
      `Invalid input for direction. Reason: ${pyStr(direction)} is not in ['ingress', 'egress'].`,
    );
  let protocol = convertProtocol(body.protocol);
  let min = convertPort(body.port_range_min);
  let max = convertPort(body.port_range_max);
  const ethertype = body.ethertype === undefined ? "IPv4" : convertEthertype(body.ethertype);
  const prefix = convertIpPrefix(body.remote_ip_prefix);
  const remoteGroup =
    body.remote_group_id === undefined || body.remote_group_id === null ? null : String(body.remote_group_id);
  // _make_canonical_ipv6_icmp_protocol
  if (ethertype === "IPv6" && (protocol === "icmp" || protocol === "icmpv6")) protocol = "ipv6-icmp";
  else if (ethertype === "IPv6" && protocol === "1") protocol = "58";
  // _make_canonical_port_range: the whole range is no range
  if (min === 1 && max === 65535) min = max = null;
  checkPortRange(protocol, min, max);
  if (prefix !== null) {
    const version = parsePrefix(prefix)!.address.version;
    if (ethertype !== `IPv${version}`)
      throw bad(
        "SecurityGroupRuleParameterConflict",
        `Conflicting value ethertype ${ethertype} for CIDR ${prefix}`,
      );
  }
  if (protocol !== null && IPV6_ONLY.has(protocol) && ethertype === "IPv4")
    throw bad(
      "SecurityGroupEthertypeConflictWithProtocol",
      `Invalid ethertype ${ethertype} for protocol ${protocol}.`,
    );
  if (prefix !== null && remoteGroup !== null)
    throw bad(
      "SecurityGroupMultipleRemoteEntites",
      "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.",
    );
  return {
    security_group_id: String(body.security_group_id),
    direction,
    ethertype,
    protocol,
    port_range_min: min,
    port_range_max: max,
    remote_ip_prefix: prefix,
    remote_group_id: remoteGroup,
    description: typeof body.description === "string" ? body.description : "",
  };
}

/** _validate_port_range */
function checkPortRange(protocol: string | null, min: number | null, max: number | null): void {
  if (min === null && max === null) return;
  if (protocol === null)
    throw bad("SecurityGroupProtocolRequiredWithPorts", "Must also specify protocol if port range is given.");
  const number = protocolNumber(protocol);
  if (PORT_PROTOCOLS.includes(number!)) {
    if (min === 0 || max === 0) throw bad("SecurityGroupInvalidPortValue", "Invalid value for port 0");
    if (!(min !== null && max !== null && min <= max))
      throw bad(
        "SecurityGroupInvalidPortRange",
        "For TCP/UDP protocols, port_range_min must be <= port_range_max",
      );
  } else if (number === 1 || number === 58) {
    for (const [value, attr, field] of [
      [min, "port_range_min", "type"],
      [max, "port_range_max", "code"],
    ] as const) {
      if (value !== null && !(value >= 0 && value <= 255))
        throw bad(
          "SecurityGroupInvalidIcmpValue",
          `Invalid value for ICMP ${field} (${attr}) ${value}. It must be 0 to 255.`,
        );
    }
    if (min === null && max !== null)
      throw bad(
        "SecurityGroupMissingIcmpType",
        `ICMP code (port-range-max) ${max} is provided but ICMP type (port-range-min) is missing.`,
      );
  } else {
    throw bad(
      "SecurityGroupInvalidProtocolForPort",
      `Ports cannot be specified for protocol ${number}. Ports are only supported for ${PORT_PROTOCOL_NAMES.map((n) => n.toUpperCase()).join(", ")}.`,
    );
  }
}

/** A protocol's name and number as _get_ip_proto_name_and_num pairs them (its ethertype's ICMP). */
function protocolKey(protocol: string | null, ethertype: Ethertype): string {
  if (protocol === null) return "+";
  let p = protocol;
  if (ethertype === "IPv6") {
    if (p === "icmp" || p === "icmpv6") p = "ipv6-icmp";
    else if (p === "1") p = "58";
  }
  const num = PROTOCOL_NUMBER.get(p);
  if (num !== undefined) return `${p}/${num}`;
  const name = PROTOCOL_NAME.get(p);
  return name !== undefined ? `${name}/${p}` : `${p}/${p}`;
}

/**
 * _rule_to_key: what makes two rules of a group one. Any remote address (0.0.0.0/0, ::/0) is no
 * prefix; a protocol is the same by name or by number.
 */
export function ruleKey(r: RuleSpec): string {
  const prefix =
    r.remote_ip_prefix === null || r.remote_ip_prefix === IPV4_ANY || r.remote_ip_prefix === IPV6_ANY
      ? "+"
      : r.remote_ip_prefix;
  const v = (x: unknown) => (x === null || x === undefined ? "+" : String(x));
  return [
    r.direction,
    r.ethertype,
    v(r.port_range_max),
    v(r.port_range_min),
    protocolKey(r.protocol, r.ethertype),
    v(r.remote_group_id),
    "+",
    prefix,
    r.security_group_id,
  ].join("_");
}

/** The rule of `rules` that `spec` duplicates (SecurityGroupRuleExists names it), if any. */
export const duplicateOf = (spec: RuleSpec, rules: readonly SecurityGroupRule[]) =>
  rules.find((r) => ruleKey(r) === ruleKey(spec));

/**
 * The rules a group starts with: Neutron's default templates (its 2023.2 migration). Every group
 * lets everything out, IPv4 and IPv6; the project's default group also lets in what comes from
 * its own members (remote_group_id = itself).
 */
export function templateRules(groupId: string, isDefault: boolean): RuleSpec[] {
  const rule = (direction: Direction, ethertype: Ethertype, remote: string | null): RuleSpec => ({
    security_group_id: groupId,
    direction,
    ethertype,
    protocol: null,
    port_range_min: null,
    port_range_max: null,
    remote_ip_prefix: null,
    remote_group_id: remote,
    description: "",
  });
  return [
    rule("egress", "IPv4", null),
    rule("egress", "IPv6", null),
    ...(isDefault ? [rule("ingress", "IPv4", groupId), rule("ingress", "IPv6", groupId)] : []),
  ];
}

/** A name-based UUID (shaped as version 5): a key derived from stable parts, the same every time. */
export function derivedUuid(...parts: string[]): string {
  const h = createHash("sha256").update(parts.join("/")).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((Number.parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The id of a project's default group, derived from the project: concurrent first uses (a list,
 * a port, a server) all make the same group, so one conditional write makes it exactly once.
 */
export const defaultGroupId = (project: string) => derivedUuid("novaless-default-security-group", project);

/** A port as its filter needs it: its addresses, groups and port security. */
export interface FilteredPort {
  id: string;
  fixed_ips: { ip_address: string }[];
  security_groups?: string[];
  port_security_enabled?: boolean;
}

/**
 * A port's filter (lib/messages/port-filter.ts), pure: the union of its groups' rules (groups
 * missing from `groups` are skipped: deleted meanwhile), each rule's remote group resolved to its
 * members' addresses of the rule's ethertype (/32 or /128, the port's own left out: its traffic
 * to itself never crosses its tap). No port security: nothing filtered.
 */
export function portFilterOf(
  port: FilteredPort,
  groups: ReadonlyMap<string, SecurityGroup>,
  /** a group's member ports' addresses, by group id */
  memberAddresses: (groupId: string) => readonly string[],
): PortFilter {
  if (port.port_security_enabled === false)
    return { port_security_enabled: false, security_groups: [], rules: [] };
  const ids = port.security_groups ?? [];
  const own = new Set(port.fixed_ips.map((f) => f.ip_address));
  const rules: PortFilterRule[] = [];
  const seen = new Set<string>();
  for (const id of ids) {
    for (const r of groups.get(id)?.rules ?? []) {
      const remote_ips =
        r.remote_ip_prefix !== null
          ? [normalizedCidr(r.remote_ip_prefix)!]
          : r.remote_group_id !== null
            ? hostPrefixes(memberAddresses(r.remote_group_id), r.ethertype, own)
            : [r.ethertype === "IPv4" ? IPV4_ANY : IPV6_ANY];
      const rule: PortFilterRule = {
        direction: r.direction,
        ethertype: r.ethertype,
        protocol: r.protocol,
        port_range_min: r.port_range_min,
        port_range_max: r.port_range_max,
        remote_ips,
      };
      // two groups' identical rules filter as one
      const key = JSON.stringify(rule);
      if (!seen.has(key)) {
        seen.add(key);
        rules.push(rule);
      }
    }
  }
  return { port_security_enabled: true, security_groups: [...ids], rules };
}

/** Addresses of one version as host prefixes, sorted, without `own`. */
function hostPrefixes(
  addresses: readonly string[],
  ethertype: Ethertype,
  own: ReadonlySet<string>,
): string[] {
  const out = new Set<string>();
  for (const a of addresses) {
    const parsed = parseAddress(a);
    if (!parsed || `IPv${parsed.version}` !== ethertype || own.has(a)) continue;
    out.add(`${formatAddress(parsed.value, parsed.version)}/${parsed.version === 4 ? 32 : 128}`);
  }
  return [...out].sort();
}
