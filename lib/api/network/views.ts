// Neutron's shapes for networks, subnets and ports, with its default policy's hidden attributes:
// provider:* (get_network:provider:*) and binding:host_id, vif_type, vif_details, profile
// (get_port:binding:*) are shown to admins only, as Neutron leaves them out for others.
import { normalizedCidr, type SecurityGroup, type SecurityGroupRule } from "../../network/security-groups.js";
import type { Network, Port, Subnet } from "../../network/store/table.js";
import type { AuthContext } from "../auth.js";

type View = Record<string, unknown>;

const PROVIDER = ["provider:network_type", "provider:physical_network", "provider:segmentation_id"];
const BINDING_ADMIN = ["binding:host_id", "binding:vif_type", "binding:vif_details", "binding:profile"];

/** Neutron's standard attributes (timestamps, revision, description, tags). */
function standard(item: Record<string, unknown>): View {
  return {
    description: item.description ?? "",
    tags: item.tags ?? [],
    created_at: item.created_at ?? null,
    updated_at: item.updated_at ?? item.created_at ?? null,
    revision_number: item.revision_number ?? 0,
  };
}

export function networkView(n: Network, auth: AuthContext): View {
  const view: View = {
    id: n.id,
    name: n.name,
    project_id: n.project_id,
    tenant_id: n.project_id,
    status: "ACTIVE",
    admin_state_up: n.admin_state_up ?? true,
    shared: n.shared ?? false,
    "router:external": false,
    subnets: n.subnets,
    mtu: n.mtu ?? 1500,
    "provider:network_type": n["provider:network_type"] ?? "flat",
    "provider:physical_network": n["provider:physical_network"] ?? null,
    "provider:segmentation_id": n["provider:segmentation_id"] ?? null,
    availability_zone_hints: n.availability_zone_hints ?? [],
    availability_zones: [],
    ipv4_address_scope: null,
    ipv6_address_scope: null,
    // Neutron's port-security extension: on unless the network was made without it
    port_security_enabled: n.port_security_enabled ?? true,
    is_default: false,
    ...standard(n),
  };
  if (!auth.isAdmin) for (const k of PROVIDER) delete view[k];
  return view;
}

export function subnetView(s: Subnet): View {
  return {
    id: s.id,
    name: s.name ?? "",
    network_id: s.network_id,
    project_id: s.project_id,
    tenant_id: s.project_id,
    ip_version: s.ip_version,
    cidr: s.cidr,
    gateway_ip: s.gateway_ip,
    allocation_pools: s.allocation_pools,
    dns_nameservers: s.dns_nameservers ?? [],
    host_routes: s.host_routes ?? [],
    enable_dhcp: s.enable_dhcp ?? true,
    ipv6_ra_mode: null,
    ipv6_address_mode: null,
    subnetpool_id: null,
    service_types: [],
    ...standard(s),
  };
}

/** A port is bound once a host is set (binding:host_id): ACTIVE, on a bridge; before, DOWN and unbound. */
export function portView(p: Port, auth: AuthContext): View {
  const host = typeof p["binding:host_id"] === "string" ? (p["binding:host_id"] as string) : "";
  const view: View = {
    id: p.id,
    name: p.name ?? "",
    network_id: p.network_id,
    project_id: p.project_id,
    tenant_id: p.project_id,
    mac_address: p.mac_address,
    admin_state_up: p.admin_state_up ?? true,
    status: host ? "ACTIVE" : "DOWN",
    device_id: p.device_id ?? "",
    device_owner: p.device_owner ?? "",
    fixed_ips: p.fixed_ips,
    allowed_address_pairs: [],
    extra_dhcp_opts: [],
    // a port from before security groups shows none, and no port security (nothing is filtered)
    security_groups: Array.isArray(p.security_groups) ? p.security_groups : [],
    port_security_enabled: p.port_security_enabled ?? false,
    "binding:vnic_type": "normal",
    "binding:host_id": host,
    "binding:vif_type": host ? "bridge" : "unbound",
    "binding:vif_details": {},
    "binding:profile": {},
    ...standard(p),
  };
  if (!auth.isAdmin) for (const k of BINDING_ADMIN) delete view[k];
  return view;
}

/** A rule as Neutron shows it (securitygroups_db.py _make_security_group_rule_dict and its extensions). */
export function securityGroupRuleView(r: SecurityGroupRule, defaultGroup?: boolean): View {
  return {
    id: r.id,
    project_id: r.project_id,
    tenant_id: r.project_id,
    security_group_id: r.security_group_id,
    ethertype: r.ethertype,
    direction: r.direction,
    protocol: r.protocol,
    port_range_min: r.port_range_min,
    port_range_max: r.port_range_max,
    remote_ip_prefix: r.remote_ip_prefix,
    remote_address_group_id: null,
    normalized_cidr: normalizedCidr(r.remote_ip_prefix),
    remote_group_id: r.remote_group_id,
    // security-groups-rules-belongs-to-default-sg
    ...(defaultGroup === undefined ? {} : { belongs_to_default_sg: defaultGroup }),
    description: r.description ?? "",
    created_at: r.created_at,
    updated_at: r.updated_at,
    revision_number: r.revision_number,
  };
}

/** A group with its rules (_make_security_group_dict). */
export function securityGroupView(g: SecurityGroup): View {
  return {
    id: g.id,
    name: g.name,
    tenant_id: g.project_id,
    project_id: g.project_id,
    description: g.description,
    security_group_rules: g.rules.map((r) => securityGroupRuleView(r, g.is_default)),
    ...standard({ ...g }),
  };
}

/** Every attribute a view may show (an admin's view): what a list may filter on. */
const keysOf = (view: (auth: AuthContext) => View) =>
  Object.keys(view({ user_id: "", project_id: "", roles: ["admin"], isAdmin: true }));
export const NETWORK_ATTRIBUTES = keysOf((auth) =>
  networkView({ id: "", name: "", project_id: "", subnets: [], revision_number: 0 }, auth),
);
export const SUBNET_ATTRIBUTES = keysOf(() =>
  subnetView({
    id: "",
    network_id: "",
    project_id: "",
    ip_version: 4,
    cidr: "",
    gateway_ip: null,
    allocation_pools: [],
  }),
);
export const PORT_ATTRIBUTES = keysOf((auth) =>
  portView({ id: "", network_id: "", project_id: "", fixed_ips: [] }, auth),
);
const EMPTY_GROUP: SecurityGroup = {
  id: "",
  name: "",
  description: "",
  project_id: "",
  is_default: false,
  rules: [],
  created_at: "",
  updated_at: "",
  revision_number: 0,
};
export const SECURITY_GROUP_ATTRIBUTES = Object.keys(securityGroupView(EMPTY_GROUP));
export const SECURITY_GROUP_RULE_ATTRIBUTES = Object.keys(
  securityGroupRuleView(
    {
      id: "",
      project_id: "",
      security_group_id: "",
      direction: "ingress",
      ethertype: "IPv4",
      protocol: null,
      port_range_min: null,
      port_range_max: null,
      remote_ip_prefix: null,
      remote_group_id: null,
      description: "",
      created_at: "",
      updated_at: "",
      revision_number: 0,
    },
    false,
  ),
);

/** Neutron's `fields` query: only the named attributes (and always none other). */
export function selectFields(view: View, fields: readonly string[]): View {
  if (!fields.length) return view;
  return Object.fromEntries(Object.entries(view).filter(([k]) => fields.includes(k)));
}

/** GET /networking/: the one version, v2.0. */
export const versionsDocument = (baseUrl: string) => ({
  versions: [
    {
      id: "v2.0",
      status: "CURRENT",
      links: [{ href: `${baseUrl}/networking/v2.0/`, rel: "self" }],
    },
  ],
});

/** GET /networking/v2.0: the core collections served (Neutron lists its core resources only). */
export const resourcesDocument = (baseUrl: string) => ({
  resources: ["network", "subnet", "port"].map((name) => ({
    name,
    collection: `${name}s`,
    links: [{ href: `${baseUrl}/networking/v2.0/${name}s`, rel: "self" }],
  })),
});

/** The extensions whose attributes the front serves (what clients check before using them). */
const EXTENSIONS = [
  ["provider", "Provider Network", "Expose mapping of virtual networks to physical networks"],
  ["binding", "Port Binding", "Expose port bindings of a virtual port to external application"],
  ["external-net", "Neutron external network", "Adds external network attribute to network resource."],
  ["net-mtu", "Network MTU", "Provides MTU attribute for a network resource."],
  ["security-group", "security-group", "The security groups extension."],
  ["port-security", "Port Security", "Provides port security"],
  [
    "security-groups-normalized-cidr",
    "Normalized CIDR field for security group rules",
    "Add new field with normalized remote_ip_prefix cidr in SG rule",
  ],
  [
    "security-groups-rules-belongs-to-default-sg",
    "Security group rule belongs to the project's default security group",
    "Flag to determine if the security group rule belongs to the project's default security group",
  ],
  [
    "standard-attr-description",
    "standard-attr-description",
    "Extension to add descriptions to standard attributes",
  ],
  [
    "standard-attr-revisions",
    "Resource revision numbers",
    "This extension will display the revision number of neutron resources.",
  ],
  [
    "standard-attr-timestamp",
    "Resource timestamps",
    "Adds created_at and updated_at fields to all Neutron resources that have Neutron standard attributes.",
  ],
] as const;

export const extensionsDocument = () => ({
  extensions: EXTENSIONS.map(([alias, name, description]) => ({
    alias,
    name,
    description,
    updated: "2013-01-01T00:00:00-00:00",
    links: [],
  })),
});
