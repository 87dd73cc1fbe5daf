// Nova's server views. What an admin sees beyond a member: the OS-EXT-SRV-ATTR fields and a
// fault's details.
import { withoutHosts } from "../../instances/faults.js";
import type { InstanceRecord, VmState } from "../../instances/types.js";
import { embeddedFlavorView } from "./flavors.js";
import { hostId, isoMicro, isoSeconds, resourceLinks } from "./format.js";

export interface ViewOptions {
  baseUrl: string;
  isAdmin: boolean;
}

const STATUS: Record<VmState, string> = {
  building: "BUILD",
  active: "ACTIVE",
  error: "ERROR",
  deleted: "DELETED",
};

export function serverStatus(rec: Pick<InstanceRecord, "vm_state">): string {
  return STATUS[rec.vm_state] ?? "UNKNOWN";
}

/** Nova's power_state: 1 (RUNNING) once active, else 0 (NOSTATE). */
export function powerState(rec: Pick<InstanceRecord, "vm_state">): number {
  return rec.vm_state === "active" ? 1 : 0;
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

export function serverView(rec: InstanceRecord, opts: ViewOptions): Record<string, unknown> {
  const status = serverStatus(rec);
  const v: Record<string, unknown> = {
    id: rec.id,
    name: rec.name,
    status,
    tenant_id: rec.project_id,
    user_id: rec.user_id,
    metadata: { ...rec.metadata },
    hostId: hostId(rec.project_id, rec.host),
    image: {
      id: rec.image.id,
      links: [{ rel: "bookmark", href: `${opts.baseUrl}/images/${encodeURIComponent(rec.image.id)}` }],
    },
    flavor: embeddedFlavorView(rec.flavor),
    created: isoSeconds(rec.created_at),
    updated: isoSeconds(rec.updated_at),
    addresses: {},
    accessIPv4: "",
    accessIPv6: "",
    key_name: null,
    config_drive: "",
    progress: 0,
    security_groups: [{ name: "default" }],
    "OS-DCF:diskConfig": "MANUAL",
    "OS-EXT-AZ:availability_zone": availabilityZoneOf(rec),
    "OS-EXT-STS:vm_state": rec.vm_state,
    "OS-EXT-STS:task_state": rec.task_state,
    "OS-EXT-STS:power_state": powerState(rec),
    "OS-SRV-USG:launched_at": isoMicro(rec.launched_at),
    "OS-SRV-USG:terminated_at": isoMicro(rec.deleted_at),
    "os-extended-volumes:volumes_attached": [],
    links: resourceLinks(opts.baseUrl, "servers", rec.id),
  };
  if (opts.isAdmin) {
    v["OS-EXT-SRV-ATTR:host"] = rec.host;
    v["OS-EXT-SRV-ATTR:hypervisor_hostname"] = rec.node;
    v["OS-EXT-SRV-ATTR:instance_name"] = instanceName(rec);
  }
  if (status === "ERROR" && rec.fault) {
    const fault: Record<string, unknown> = {
      code: rec.fault.code,
      // Written without host names; a fault recorded before they were kept out still has them.
      message: opts.isAdmin ? rec.fault.message : withoutHosts(rec.fault.message, hostsOf(rec)),
      created: isoSeconds(rec.fault.created),
    };
    // the operator's detail (hosts, filters, attempts) is for admins only
    if (opts.isAdmin) fault.details = rec.fault.details;
    v.fault = fault;
  }
  return v;
}
