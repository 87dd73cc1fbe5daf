// A port's security groups as a host enforces them (Neutron's security group agent RPC,
// security_group_info_for_devices): each rule with its remote group already resolved to the
// member ports' addresses, so the host reads no database. Sent with the port in a build's
// network info and again whenever a rule, a group's members or the port's groups change.
import { z } from "zod";

export const portFilterRule = z.object({
  direction: z.enum(["ingress", "egress"]),
  ethertype: z.enum(["IPv4", "IPv6"]),
  /** Neutron's protocol: null (any), a name (tcp, udp, icmp, ipv6-icmp, …) or a number as text */
  protocol: z.string().min(1).nullable(),
  /** tcp/udp: the port range; icmp: type (min) and code (max); null: any */
  port_range_min: z.number().int().min(0).max(65535).nullable(),
  port_range_max: z.number().int().min(0).max(65535).nullable(),
  /**
   * The remote addresses the rule admits (CIDRs of its ethertype): its remote_ip_prefix; or its
   * remote group's member ports' fixed IPs (empty: the group has no other member, the rule admits
   * nothing); or, with neither, everything (0.0.0.0/0 or ::/0).
   */
  remote_ips: z.array(z.string().min(1)),
});
export type PortFilterRule = z.infer<typeof portFilterRule>;

export const portFilter = z.object({
  /** false: Neutron's port_security_enabled off, nothing filtered (and no anti-spoofing) */
  port_security_enabled: z.boolean(),
  /** the groups' ids, for the operator reading a host's rules */
  security_groups: z.array(z.string().min(1)),
  /** the union of the groups' rules; traffic no rule admits is dropped (stateful: replies pass) */
  rules: z.array(portFilterRule),
});
export type PortFilter = z.infer<typeof portFilter>;
