// The API's shapes the console reads (Compute 2.x, novaless's os-fleet, os-scheduling, plan,
// Keystone v3's projects, users, roles and role assignments, Networking v2's networks, subnets
// and ports).
import type { FleetHost } from "../../lib/api/views/fleet-types.js";

export type { FleetHost };

export interface Session {
  token: string;
  user: string;
  userId: string;
  project: string;
  projectId: string;
  admin: boolean;
}

export interface FleetAggregate {
  id: number | null;
  uuid: string;
  name: string;
  availability_zone: string | null;
  hosts: number;
}

export interface Fleet {
  hosts: FleetHost[];
  aggregates: FleetAggregate[];
  resource_classes: string[];
  full: boolean;
  next_changes_since: string;
}

export interface Server {
  id: string;
  name: string;
  status: string;
  tenant_id: string;
  created: string;
  updated: string;
  flavor?: { original_name?: string; vcpus?: number; ram?: number };
  image?: { id?: string } | "";
  fault?: { code: number; message: string; created: string; details?: string };
  "OS-EXT-SRV-ATTR:host"?: string | null;
  "OS-EXT-STS:task_state"?: string | null;
  "OS-EXT-STS:vm_state"?: string;
  "OS-EXT-STS:power_state"?: number;
  "OS-EXT-AZ:availability_zone"?: string;
  /** per network name, the server's addresses on it */
  addresses?: Record<string, ServerAddress[]>;
}

/** An entry of a server's `addresses`. */
export interface ServerAddress {
  version: 4 | 6;
  addr: string;
  "OS-EXT-IPS:type"?: "fixed" | "floating";
  "OS-EXT-IPS-MAC:mac_addr"?: string;
}

export interface ActionEvent {
  event: string;
  start_time: string;
  finish_time: string | null;
  result: string | null;
  host?: string;
  hostId?: string;
  traceback?: string | null;
  details?: string | null;
}

export interface InstanceAction {
  action: string;
  request_id: string;
  start_time: string;
  updated_at?: string;
  message: string | null;
  events?: ActionEvent[];
}

export interface WeigherValues {
  host: string;
  nodename: string;
  raw: number;
  normalized: number;
  multiplier: number;
}

export interface RejectionGroup {
  summary: string;
  count: number;
  sample: string[];
  capacity?: { resource_class: string; requested: number; largest_free: number };
}

export interface Stage {
  stage: string;
  hosts_in: number;
  hosts_passed: number;
  rejected: RejectionGroup[];
  skipped?: string;
}

export interface Explanation {
  index: number;
  requested: Record<string, number>;
  hosts: number;
  stages: Stage[];
  candidates: number;
  weighers: { weigher: string; hosts: WeigherValues[] }[];
  order: { host: string; nodename: string; weight: number }[];
  chosen?: { host: string; rank: number; weight: number };
}

export interface Scheduling {
  attempt: number;
  decided_at: string;
  host: string | null;
  summary: string;
  explanation: Explanation | null;
}

export interface Plan {
  selections: { host: string; nodename: string; alternates: { host: string }[] }[];
  summary: string;
  no_valid_host: boolean;
  warnings: string[];
  explanations: Explanation[];
}

export interface Service {
  id: string;
  binary: string;
  host: string;
  zone: string;
  status: "enabled" | "disabled";
  state: "up" | "down";
  forced_down?: boolean;
  disabled_reason: string | null;
  updated_at: string | null;
}

export interface DeadLetterQueue {
  name: string;
  source: string;
  approximate_messages: number;
  redrivable: boolean;
  not_redrivable_reason?: string;
  messages: { message_id: string; sent_at: string; reason: string; receive_count: number; body: string }[];
}

/** os-migrations' item (admins), at the console's microversion. */
export interface Migration {
  id: number;
  uuid?: string;
  instance_uuid: string;
  migration_type: "resize" | "migration" | "live-migration" | "evacuation";
  status: string;
  source_compute: string;
  dest_compute: string | null;
  /** flavor ids: integers when the flavor's id is all digits */
  old_instance_type_id: number | string;
  new_instance_type_id: number | string;
  created_at: string;
  updated_at: string;
}

/** /servers/{id}/migrations' item (2.23, admins): a live migration in progress and its copy. */
export interface LiveMigration {
  id: number;
  status: string;
  source_compute: string;
  dest_compute: string | null;
  memory_total_bytes: number | null;
  memory_processed_bytes: number | null;
  memory_remaining_bytes: number | null;
}

export interface Image {
  id: string;
  name: string;
}

export interface Flavor {
  id: string;
  name: string;
  vcpus?: number;
  ram?: number;
  disk?: number;
}

type Figure = number | null;

/** GET /servers/{id}/diagnostics at 2.48 and later (admins): Nova's standard shape. */
export interface Diagnostics {
  state: string;
  driver: string;
  hypervisor: string | null;
  hypervisor_os: string | null;
  /** seconds */
  uptime: Figure;
  config_drive: boolean;
  num_cpus: number;
  num_nics: number;
  num_disks: number;
  /** MiB */
  memory_details: { maximum: Figure; used: Figure };
  /** time in ns, utilisation in % */
  cpu_details: { id: Figure; time: Figure; utilisation: Figure }[];
  nic_details: {
    mac_address: string | null;
    rx_octets: Figure;
    rx_packets: Figure;
    rx_errors: Figure;
    rx_drop: Figure;
    tx_octets: Figure;
    tx_packets: Figure;
    tx_errors: Figure;
    tx_drop: Figure;
  }[];
  disk_details: {
    read_bytes: Figure;
    read_requests: Figure;
    write_bytes: Figure;
    write_requests: Figure;
    errors_count: Figure;
  }[];
}

/** Keystone v3's project. */
export interface Project {
  id: string;
  name: string;
  domain_id: string;
  description: string | null;
  enabled: boolean;
}

/** Keystone v3's user (its default project is optional). */
export interface User {
  id: string;
  name: string;
  domain_id: string;
  enabled: boolean;
  default_project_id?: string | null;
}

export interface Role {
  id: string;
  name: string;
}

interface NamedRef {
  id: string;
  name?: string;
  domain?: { id: string; name?: string };
}

/** GET /v3/role_assignments' item, names included (?include_names). */
export interface RoleAssignment {
  role: NamedRef;
  user?: NamedRef;
  group?: NamedRef;
  scope: { project?: NamedRef; domain?: NamedRef; system?: Record<string, unknown> };
}

/** Networking v2's network; provider:* only in an admin's view. */
export interface Network {
  id: string;
  name: string;
  project_id: string;
  status: string;
  shared: boolean;
  subnets: string[];
  mtu?: number;
  "provider:network_type"?: string;
  "provider:physical_network"?: string | null;
  "provider:segmentation_id"?: number | null;
}

/** Networking v2's subnet. */
export interface Subnet {
  id: string;
  name: string;
  network_id: string;
  ip_version: 4 | 6;
  cidr: string;
  gateway_ip: string | null;
  allocation_pools: { start: string; end: string }[];
}

/** Networking v2's port (binding:host_id only in an admin's view). */
export interface Port {
  id: string;
  name: string;
  network_id: string;
  project_id: string;
  mac_address: string;
  status: string;
  device_id: string;
  device_owner: string;
  fixed_ips: { subnet_id: string; ip_address: string }[];
  "binding:host_id"?: string;
}
