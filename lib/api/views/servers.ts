// Nova's server views. What an admin sees beyond a member: the OS-EXT-SRV-ATTR fields and a
// fault's details.

import { withoutHosts } from "../../instances/faults.js";
import { terminatedAt } from "../../instances/soft-delete.js";
import type { InstanceRecord, VmState } from "../../instances/types.js";
import { type ApiVersion, forVersion, OMIT, viewFields } from "../microversion.js";
import { addressesView } from "./addresses.js";
import { embeddedFlavorView } from "./flavors.js";
import { hostId, isoMicro, isoSeconds, resourceLinks } from "./format.js";

export interface ViewOptions {
  baseUrl: string;
  isAdmin: boolean;
  version: ApiVersion;
  /** Nova's host_status of a host (UP, DOWN, MAINTENANCE, UNKNOWN), for admins from 2.16 */
  hostStatus?: (host: string) => string;
  /** the names of the security groups the servers' ports are in, by id (securityGroupIdsOf) */
  securityGroupNames?: ReadonlyMap<string, string>;
}

/** The security groups of a server's ports, each once, in port order. */
export const securityGroupIdsOf = (rec: InstanceRecord): string[] => [
  ...new Set((rec.network_info ?? []).flatMap((v) => v.security_groups ?? [])),
];

/**
 * Nova's security_groups of a server: the names of its ports' groups (each once); none (the key
 * left out) for a server without ports or whose ports have none.
 */
function securityGroupsView(rec: InstanceRecord, names: ReadonlyMap<string, string> | undefined) {
  const shown = securityGroupIdsOf(rec).flatMap((id) => {
    const name = names?.get(id);
    return name === undefined ? [] : [{ name }];
  });
  return shown.length ? shown : OMIT;
}

const STATUS: Record<VmState, string> = {
  building: "BUILD",
  active: "ACTIVE",
  stopped: "SHUTOFF",
  resized: "VERIFY_RESIZE",
  error: "ERROR",
  paused: "PAUSED",
  suspended: "SUSPENDED",
  shelved: "SHELVED",
  shelved_offloaded: "SHELVED_OFFLOADED",
  "soft-delete": "SOFT_DELETED",
  deleted: "DELETED",
};

const PROGRESS_STATUSES = new Set(["ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING"]);

/** Task states that show as another status (Nova's common._STATE_MAP). */
const RESIZING = {
  resize_prep: "RESIZE",
  resize_migrating: "RESIZE",
  resize_migrated: "RESIZE",
  rebuilding: "REBUILD",
  rebuild_spawning: "REBUILD",
};
const TASK_STATUS: Partial<Record<VmState, Record<string, string>>> = {
  active: {
    rebooting: "REBOOT",
    reboot_started: "REBOOT",
    rebooting_hard: "HARD_REBOOT",
    reboot_started_hard: "HARD_REBOOT",
    ...RESIZING,
    // a live migration (Nova's task_states.MIGRATING)
    migrating: "MIGRATING",
  },
  stopped: { rebooting_hard: "HARD_REBOOT", reboot_started_hard: "HARD_REBOOT", ...RESIZING },
  resized: { resize_reverting: "REVERT_RESIZE" },
  // Nova's _STATE_MAP: a paused server shows MIGRATING while it moves live, SUSPENDED nothing else
  paused: { migrating: "MIGRATING" },
  error: {
    rebooting_hard: "HARD_REBOOT",
    reboot_started_hard: "HARD_REBOOT",
    rebuilding: "REBUILD",
    rebuild_spawning: "REBUILD",
  },
};

/** The vm_states whose servers can show this status (the listings' index on vm_state). */
export function vmStatesShowing(status: string): VmState[] {
  return (Object.keys(STATUS) as VmState[]).filter(
    (v) => STATUS[v] === status || Object.values(TASK_STATUS[v] ?? {}).includes(status),
  );
}

export function serverStatus(rec: Pick<InstanceRecord, "vm_state" | "task_state">): string {
  return (rec.task_state && TASK_STATUS[rec.vm_state]?.[rec.task_state]) || STATUS[rec.vm_state] || "UNKNOWN";
}

/**
 * Nova's power_state: as the host last reported it; for a record from before hosts reported it,
 * 1 (RUNNING) once active, else 0 (NOSTATE).
 */
export function powerState(rec: Pick<InstanceRecord, "vm_state" | "power_state">): number {
  return rec.power_state ?? (rec.vm_state === "active" ? 1 : 0);
}

/**
 * Where it landed, else the zone asked for (Nova sets the requested zone at create), else "".
 * The requested string may carry a forced host (`az:host`); only the zone part is shown.
 */
export function availabilityZoneOf(
  rec: Pick<InstanceRecord, "availability_zone" | "requested_availability_zone">,
): string {
  if (rec.availability_zone) return rec.availability_zone;
  return rec.requested_availability_zone?.split(":")[0] ?? "";
}

/** Stand-in for Nova's instance_name_template `instance-%08x` (there is no integer id here). */
export function instanceName(rec: Pick<InstanceRecord, "id">): string {
  return `instance-${rec.id.replace(/-/g, "").slice(0, 8)}`;
}

/** Every host the instance was on or tried. */
function hostsOf(rec: Pick<InstanceRecord, "host" | "retry_hosts">): string[] {
  return [...(rec.retry_hosts ?? []), ...(rec.host ? [rec.host] : [])];
}

export function serverSummaryView(rec: InstanceRecord, baseUrl: string): unknown {
  return { id: rec.id, name: rec.name, links: resourceLinks(baseUrl, "servers", rec.id) };
}

/**
 * Nova's utils.sanitize_hostname of the display name: the guest hostname it shows (2.3, admin)
 * when none was given.
 */
export function sanitizeHostname(name: string): string {
  const h = name
    .toLowerCase()
    .replace(/[ _]/g, "-")
    .replace(/[^\w.-]+/g, "")
    .slice(0, 63)
    .replace(/^[.-]+|[.-]+$/g, "");
  return h || "server";
}

const hostnameOf = (rec: InstanceRecord) => rec.hostname || sanitizeHostname(rec.name);

function faultView(rec: InstanceRecord, isAdmin: boolean): Record<string, unknown> {
  if (serverStatus(rec) !== "ERROR" || !rec.fault) return {};
  const fault: Record<string, unknown> = {
    code: rec.fault.code,
    // Written without host names; a fault recorded before they were kept out still has them.
    message: isAdmin ? rec.fault.message : withoutHosts(rec.fault.message, hostsOf(rec)),
    created: isoSeconds(rec.fault.created),
  };
  // the operator's detail (hosts, filters, attempts) is for admins only
  if (isAdmin) fault.details = rec.fault.details;
  return { fault };
}

/** The server group a create named (Nova's server_groups, 2.71: at most one). */
function groupsOf(rec: InstanceRecord): string[] {
  const group = rec.request_spec?.scheduler_hints?.group;
  return typeof group === "string" ? [group] : [];
}

/** Admin-only rows: a member's view leaves them out (Nova's policy-gated extended attributes). */
const admin =
  (fields: (r: InstanceRecord, c: ViewOptions) => Record<string, unknown>) =>
  (r: InstanceRecord, c: ViewOptions): Record<string, unknown> =>
    c.isAdmin ? fields(r, c) : {};

/** Nova's server detail (views/servers.py show) per microversion, as a version table. */
const detailView = viewFields<InstanceRecord, ViewOptions>([
  {
    fields: (rec, c) => ({
      id: rec.id,
      name: rec.name,
      status: serverStatus(rec),
      tenant_id: rec.project_id,
      user_id: rec.user_id,
      metadata: { ...rec.metadata },
      hostId: hostId(rec.project_id, rec.host),
      image: {
        id: rec.image.id,
        links: [{ rel: "bookmark", href: `${c.baseUrl}/images/${encodeURIComponent(rec.image.id)}` }],
      },
      // until 2.46 the flavor is a reference to the flavor that may since have changed
      flavor: {
        id: rec.flavor.id,
        links: [{ rel: "bookmark", href: `${c.baseUrl}/flavors/${encodeURIComponent(rec.flavor.id)}` }],
      },
      created: isoSeconds(rec.created_at),
      updated: isoSeconds(rec.updated_at),
      addresses: addressesView(rec, true),
      accessIPv4: rec.access_ip_v4 ?? "",
      accessIPv6: rec.access_ip_v6 ?? "",
      key_name: rec.key_name ?? null,
      config_drive: rec.config_drive ? "True" : "",
      // Nova shows progress only while a server may be making some (views/servers.py
      // _progress_statuses); a SHUTOFF or ERROR server has none.
      ...(PROGRESS_STATUSES.has(serverStatus(rec)) ? { progress: 0 } : {}),
      security_groups: securityGroupsView(rec, c.securityGroupNames),
      "OS-DCF:diskConfig": "MANUAL",
      "OS-EXT-AZ:availability_zone": availabilityZoneOf(rec),
      "OS-EXT-STS:vm_state": rec.vm_state,
      "OS-EXT-STS:task_state": rec.task_state,
      "OS-EXT-STS:power_state": powerState(rec),
      "OS-SRV-USG:launched_at": isoMicro(rec.launched_at),
      "OS-SRV-USG:terminated_at": isoMicro(terminatedAt(rec)),
      "os-extended-volumes:volumes_attached": [],
      links: resourceLinks(c.baseUrl, "servers", rec.id),
      ...faultView(rec, c.isAdmin),
    }),
  },
  {
    fields: admin((rec) => ({
      "OS-EXT-SRV-ATTR:host": rec.host,
      "OS-EXT-SRV-ATTR:hypervisor_hostname": rec.node,
      "OS-EXT-SRV-ATTR:instance_name": instanceName(rec),
    })),
  },
  {
    min: "2.3",
    fields: admin((rec) => ({
      "OS-EXT-SRV-ATTR:reservation_id": rec.reservation_id,
      "OS-EXT-SRV-ATTR:launch_index": rec.launch_index ?? 0,
      "OS-EXT-SRV-ATTR:hostname": hostnameOf(rec),
      "OS-EXT-SRV-ATTR:kernel_id": "",
      "OS-EXT-SRV-ATTR:ramdisk_id": "",
      "OS-EXT-SRV-ATTR:root_device_name": null,
      "OS-EXT-SRV-ATTR:user_data": rec.user_data ?? null,
    })),
  },
  { min: "2.9", fields: (rec) => ({ locked: Boolean(rec.locked_by) }) },
  {
    min: "2.16",
    fields: admin((rec, c) => ({ host_status: rec.host ? (c.hostStatus?.(rec.host) ?? "UNKNOWN") : "" })),
  },
  { min: "2.19", fields: (rec) => ({ description: rec.description ?? null }) },
  { min: "2.26", fields: (rec) => ({ tags: [...(rec.tags ?? [])] }) },
  { min: "2.47", fields: (rec) => ({ flavor: embeddedFlavorView(rec.flavor) }) },
  // no image signature verification: no trusted certificates
  { min: "2.63", fields: () => ({ trusted_image_certificates: null }) },
  { min: "2.71", fields: (rec) => ({ server_groups: groupsOf(rec) }) },
  { min: "2.73", fields: (rec) => ({ locked_reason: rec.locked_by ? (rec.locked_reason ?? null) : null }) },
  // 2.90: the hostname is everyone's, as it can be set
  { min: "2.90", fields: (rec) => ({ "OS-EXT-SRV-ATTR:hostname": hostnameOf(rec) }) },
  // the zone a create asked for (Nova pins it when the request named one)
  {
    min: "2.96",
    fields: (rec) => ({ pinned_availability_zone: rec.requested_availability_zone?.split(":")[0] || null }),
  },
]);

export function serverView(rec: InstanceRecord, opts: ViewOptions): Record<string, unknown> {
  return detailView(rec, opts, opts.version);
}

/**
 * What Nova's update (PUT /servers/{id}) answers: until 2.74 the show without its extensions
 * (servers.py update: show_AZ, show_config_drive, show_extended_attr, show_host_status,
 * show_keypair, show_srv_usg, show_sec_grp, show_extended_status, show_extended_volumes and
 * show_user_data False; server_groups from 2.71); from 2.75 the whole show.
 */
const EXTENSIONS = [
  /^OS-EXT-/,
  /^OS-SRV-USG:/,
  /^os-extended-volumes:/,
  /^(config_drive|host_status|key_name|security_groups)$/,
];
const notInUpdate = [
  { max: "2.70", value: [...EXTENSIONS, /^server_groups$/] },
  { min: "2.71", max: "2.74", value: EXTENSIONS },
  { min: "2.75", value: [] as RegExp[] },
];

export function serverUpdateView(rec: InstanceRecord, opts: ViewOptions): Record<string, unknown> {
  const hidden = forVersion(notInUpdate, opts.version);
  const view = Object.fromEntries(
    Object.entries(serverView(rec, opts)).filter(([k]) => !hidden.some((re) => re.test(k))),
  );
  // extend_address is show_all_attributes too: the addresses' OS-EXT-IPS keys from 2.75 only
  return hidden.length ? { ...view, addresses: addressesView(rec, false) } : view;
}
