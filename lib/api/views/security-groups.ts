// Nova's views of Neutron's security groups (nova/network/security_group_api.py's conversions,
// then nova/api/openstack/compute/security_groups.py's formats): ingress rules only, a rule's
// port range as Nova's from_port/to_port, its remote group as {name, tenant_id} or its prefix as
// {cidr}. Pure.
import type { SecurityGroup, SecurityGroupRule } from "../../network/security-groups.js";

/** A rule as Nova's API converts Neutron's (_convert_to_nova_security_group_rule_format). */
export interface NovaRule {
  id: string;
  parent_group_id: string;
  protocol: string | null;
  from_port: number | null;
  to_port: number | null;
  group_id: string | null;
  cidr: string;
}

/** _convert_to_nova_security_group_rule_format */
export function novaRule(r: SecurityGroupRule): NovaRule {
  let from: number | null = r.port_range_min;
  let to: number | null = r.port_range_max;
  if (r.protocol !== null && from === null && to === null) {
    const tcpOrUdp = ["TCP", "UDP"].includes(r.protocol.toUpperCase());
    from = tcpOrUdp ? 1 : -1;
    to = tcpOrUdp ? 65535 : -1;
  }
  return {
    id: r.id,
    parent_group_id: r.security_group_id,
    protocol: r.protocol,
    from_port: from,
    to_port: to,
    group_id: r.remote_group_id,
    // parse_cidr: no prefix is 0.0.0.0/0, whatever the rule's ethertype
    cidr: r.remote_ip_prefix ?? "0.0.0.0/0",
  };
}

/** What a rule's `group` shows of its remote group; undefined: the group is gone (the rule is left out). */
export type RemoteGroupData = (groupId: string) => { name: string; tenant_id: string } | undefined;

/** _format_security_group_rule; undefined when its remote group is gone. */
export function novaRuleView(rule: NovaRule, remote: RemoteGroupData): Record<string, unknown> | undefined {
  const view: Record<string, unknown> = {
    id: rule.id,
    parent_group_id: rule.parent_group_id,
    ip_protocol: rule.protocol,
    from_port: rule.from_port,
    to_port: rule.to_port,
    group: {},
    ip_range: {},
  };
  if (rule.group_id) {
    const data = remote(rule.group_id);
    if (!data) return undefined;
    view.group = data;
  } else view.ip_range = { cidr: rule.cidr };
  return view;
}

/** _format_security_group over _convert_to_nova_security_group_format: the ingress rules only. */
export function novaGroupView(g: SecurityGroup, remote: RemoteGroupData): Record<string, unknown> {
  return {
    id: g.id,
    description: g.description,
    name: g.name,
    tenant_id: g.project_id,
    rules: g.rules
      .filter((r) => r.direction === "ingress")
      .flatMap((r) => {
        const v = novaRuleView(novaRule(r), remote);
        return v ? [v] : [];
      }),
  };
}

const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);

/** Nova's lists: sorted by (tenant_id, name), as Python compares strings. */
export const byTenantAndName = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  cmp(String(a.tenant_id), String(b.tenant_id)) || cmp(String(a.name), String(b.name));
