// Nova's network API (nova/network/neutron.py) over lib/network: what a create may ask for
// (validate_networks), the ports made or bound once the host is chosen (allocate_for_instance),
// and what goes back when a build fails or the server is deleted (deallocate_for_instance).
//
// Every step is safe to repeat (the conductor's steps run at least once): the port Nova makes for
// the i-th requested network has an id derived from the instance and i, so a re-run, a reschedule
// or a delete finds it whether or not the record came to name it.
import { createHash } from "node:crypto";
import { NetworkingError } from "../network/cidr.js";
import { allocate, type FixedIpRequest, generatedMac, subnetFor, subnetsOf } from "../network/ports.js";
import { addressHolder, freeAddress } from "../network/store/addresses.js";
import {
  bindPort,
  createPort,
  deletePort,
  type PortBinding,
  securityGroupsOf,
} from "../network/store/ports.js";
import { ensureDefaultSecurityGroup } from "../network/store/security-groups.js";
import {
  type FixedIp,
  getNetwork,
  getPort,
  listNetworks,
  type Network,
  type NewPort,
  type Port,
  type Subnet,
} from "../network/store/table.js";
import type { Membership } from "./port-filters.js";
import { getInstance } from "./queries.js";
import { membersChanged } from "./security-group-refresh.js";
import { transition } from "./transition.js";
import type { InstanceRecord, NetworkRequest, Vif } from "./types.js";

/** A create's `networks` as given: 2.37's "auto"/"none", a list, or absent (before 2.37). */
export type RequestedNetworks =
  | "auto"
  | "none"
  | { uuid?: string; port?: string | null; fixed_ip?: string; tag?: string }[]
  | null;

/** Nova's refusal of a create's networks: the API's status and Nova's text. */
export class NetworkRequestRefused extends Error {
  constructor(
    readonly status: 400 | 409,
    message: string,
  ) {
    super(message);
    this.name = "NetworkRequestRefused";
  }
}

const refused400 = (m: string) => new NetworkRequestRefused(400, m);

/** Who asks: a project, and whether an admin (who sees every network and port). */
export interface Asker {
  project_id: string;
  isAdmin: boolean;
}

/** _get_available_networks: the project's own networks (up) and the shared ones. */
export async function availableNetworks(project: string): Promise<Network[]> {
  return (await listNetworks())
    .filter((n) => n.shared === true || (n.project_id === project && n.admin_state_up !== false))
    .sort((a, b) => a.id.localeCompare(b.id));
}

export const visibleNetwork = (n: Network | undefined, who: Asker): n is Network =>
  n !== undefined && (who.isAdmin || n.shared === true || n.project_id === who.project_id);

/**
 * Nova's _ports_needed_per_instance, with the API's own checks (servers.py
 * _get_requested_networks): the resolved requests, one port each. "none" asks for nothing;
 * "auto" and an absent list pick the one network available to the project (Nova's
 * NetworkAmbiguous when more; "auto" with none is UnableToAutoAllocateNetwork, there being no
 * auto-allocated topology; absent with none boots without a port, as Nova does).
 */
export async function validateNetworks(
  requested: RequestedNetworks,
  who: Asker,
  maxCount: number,
  /** filled with the networks read here, by id, for networkZones to use again */
  seen?: Map<string, Network>,
): Promise<NetworkRequest[]> {
  if (requested === "none") return [];
  if (requested === "auto" || requested === null || requested.length === 0) {
    const nets = (await availableNetworks(who.project_id)).filter((n) => n.subnets.length > 0);
    for (const n of nets) seen?.set(n.id, n);
    if (nets.length > 1)
      throw new NetworkRequestRefused(
        409,
        "Multiple possible networks found, use a Network ID to be more specific.",
      );
    if (nets.length === 0) {
      if (requested === "auto")
        throw refused400(`Unable to automatically allocate a network for project ${who.project_id}`);
      return [];
    }
    return [{ network_id: nets[0]!.id }];
  }
  const ports = new Set<string>();
  const out: NetworkRequest[] = [];
  for (const r of requested) {
    const tag = r.tag === undefined ? {} : { tag: r.tag };
    if (r.port) {
      if (ports.has(r.port))
        throw refused400(`Port ID '${r.port}' was specified twice: you cannot attach a port multiple times.`);
      if (r.fixed_ip !== undefined)
        throw refused400(
          `Specified Fixed IP '${r.fixed_ip}' cannot be used with port '${r.port}': the two cannot be specified together.`,
        );
      ports.add(r.port);
      if (maxCount > 1)
        throw refused400(
          "Failed to launch instances: Unable to launch multiple instances with a single configured port ID. Please launch your instance one by one with different ports.",
        );
      const port = await getPort(r.port);
      if (!port || (!who.isAdmin && port.project_id !== who.project_id))
        throw refused400(`Port id ${r.port} could not be found.`);
      if (port.device_id) throw new NetworkRequestRefused(409, `Port ${r.port} is still in use.`);
      if (port.fixed_ips.length === 0)
        throw refused400(`Port ${r.port} requires a FixedIP in order to be used.`);
      out.push({ network_id: port.network_id, port_id: port.id, ...tag });
      continue;
    }
    if (r.uuid === undefined) throw refused400("Bad network format: missing 'uuid'");
    const network = await getNetwork(r.uuid);
    if (!visibleNetwork(network, who)) throw refused400(`Network ${r.uuid} could not be found.`);
    seen?.set(network.id, network);
    if (network.subnets.length === 0)
      throw refused400(`Network ${r.uuid} requires a subnet in order to boot instances on.`);
    if (r.fixed_ip !== undefined) {
      if (maxCount > 1)
        throw refused400(
          "Failed to launch instances: max_count cannot be greater than 1 if an fixed_ip is specified.",
        );
      await checkFixedIpFree(network, r.fixed_ip);
    }
    out.push({
      network_id: network.id,
      ...(r.fixed_ip === undefined ? {} : { fixed_ip: r.fixed_ip }),
      ...tag,
    });
  }
  return out;
}

/**
 * The zones every requested network is available in: its availability_zone_hints, those given
 * intersected; undefined when none gives any. Neutron's hints say where a network reaches (its
 * agents); a server must land where all of its networks do, so the scheduler is told. A network
 * validateNetworks read for the same request (`seen`) is not read again: that read is as fresh as
 * this one would be (½ read unit a create).
 */
export async function networkZones(
  requests: readonly NetworkRequest[],
  seen?: ReadonlyMap<string, Network>,
): Promise<string[] | undefined> {
  let zones: string[] | undefined;
  for (const id of new Set(requests.map((r) => r.network_id))) {
    const hints = (seen?.get(id) ?? (await getNetwork(id, true)))?.availability_zone_hints;
    if (!Array.isArray(hints) || hints.length === 0) continue;
    zones = zones === undefined ? [...hints] : zones.filter((z) => hints.includes(z));
  }
  return zones;
}

/** Nova's FixedIpAlreadyInUse (400), naming the server that holds the address. */
async function checkFixedIpFree(network: Network, address: string): Promise<void> {
  let subnet: Subnet;
  try {
    subnet = subnetFor(await subnetsOf(network), address);
  } catch (e) {
    if (e instanceof NetworkingError) throw refused400(e.message);
    throw e;
  }
  const holder = await addressHolder(subnet.id, address);
  if (holder === undefined) return;
  const port = await getPort(holder);
  throw refused400(`Fixed IP address ${address} is already in use on instance ${port?.device_id ?? ""}.`);
}

/**
 * The id of the port Nova makes for an instance's i-th requested network, or for an interface
 * attach (`attach/<request id>`): a UUID, stable.
 */
export function portIdFor(instanceId: string, index: number | string): string {
  const h = createHash("sha256").update(`novaless-port/${instanceId}/${index}`).digest("hex");
  // shaped as a version 5 (name-based) UUID
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((Number.parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/**
 * Allocation refused (Nova's NoMoreFixedIps, PortInUse, PortNotFound, a fixed IP taken since the
 * API looked): no other host would do better, so the build is aborted, not rescheduled. The
 * message is Nova's reason.
 */
export class NetworkAllocationFailed extends Error {
  constructor(
    message: string,
    /** Neutron's refusal (IpAddressAlreadyAllocated, …), when Neutron refused */
    readonly type?: string,
  ) {
    super(message);
    this.name = "NetworkAllocationFailed";
  }
}

/** Where a build's ports are bound: the attempt's host and zone (the binding's fencing token). */
export interface PortsTarget {
  host: string;
  attempt: number;
  availability_zone: string | null;
}

/**
 * allocate_for_instance: make (or find) the instance's ports and bind every one of them to the
 * attempt's host, and tell the hosts of the groups they join. Idempotent; a reschedule rebinds
 * the same ports to the new host, so the server keeps its addresses. The network info it answers
 * is the record's to keep, in the write that places the instance (lib/instances/build.ts), so a
 * server deleted meanwhile is found by that write. A Neutron refusal is thrown as
 * NetworkAllocationFailed; a binding a later attempt holds, as PortInUse.
 */
export async function allocateForInstance(
  rec: InstanceRecord,
  { host, attempt, availability_zone }: PortsTarget,
  now = new Date(),
): Promise<Vif[]> {
  const requests = rec.requested_networks ?? [];
  if (requests.length === 0) return [];
  const owner = `compute:${availability_zone ?? rec.requested_availability_zone ?? "nova"}`;
  const binding: PortBinding = {
    device_id: rec.id,
    device_owner: owner,
    "binding:host_id": host,
    updated_at: stamp(now),
    binding_attempt: attempt,
  };
  const vifs: Vif[] = [];
  const joined: Membership[] = [];
  for (const [i, req] of requests.entries())
    vifs.push(await allocatePort(rec, portIdFor(rec.id, i), req, binding, now, joined));
  // the servers of the groups naming these ports' groups as remote admit their addresses within
  // the member sync's window (their own filters go with the spawn)
  await membersChanged(joined, rec.request_id);
  return vifs;
}

/**
 * The security groups and port security a port Nova makes on `network` gets (Neutron applies
 * them at the port's create): the create's groups, or the project's default group; none on a
 * network without port security, where asking for groups is Nova's SecurityGroupCannotBeApplied.
 */
async function portSecurityFor(
  rec: InstanceRecord,
  network: Network,
  now: Date,
): Promise<{ port_security_enabled: boolean; security_groups: string[] }> {
  const asked = rec.requested_security_groups ?? [];
  if (network.port_security_enabled === false) {
    if (asked.some((g) => g !== "default"))
      throw new NetworkAllocationFailed(
        "Network requires port_security_enabled and subnet associated in order to apply security groups.",
      );
    return { port_security_enabled: false, security_groups: [] };
  }
  const groups: string[] = [];
  // Nova's _clean_security_groups: only `default` asked is nothing asked (Neutron's default applies)
  for (const g of asked.length && !(asked.length === 1 && asked[0] === "default") ? asked : ["default"])
    groups.push(g === "default" ? await ensureDefaultSecurityGroup(rec.project_id, stamp(now)) : g);
  return { port_security_enabled: true, security_groups: [...new Set(groups)] };
}

/**
 * One request's port, made (with id `id`) or bound; Neutron's refusals as Nova's reasons. A
 * build's ports and an interface attach's are made here, so each gets what a server's port gets
 * (its groups among them). The memberships it writes are appended to `joined`, for the caller to
 * tell the hosts once the port is the server's.
 */
export async function allocatePort(
  rec: InstanceRecord,
  id: string,
  req: NetworkRequest,
  binding: PortBinding,
  now: Date,
  joined: Membership[] = [],
): Promise<Vif> {
  // the API saw it; its port's transaction is conditioned on it still being there
  const network = await getNetwork(req.network_id, true);
  if (!network)
    throw new NetworkAllocationFailed(`Network ${req.network_id} could not be found.`, "NetworkNotFound");
  try {
    let port: Port | undefined;
    if (req.port_id) {
      port = await bindPort(req.port_id, binding, rec.id);
      if (!port) {
        const current = await getPort(req.port_id);
        throw current
          ? new NetworkAllocationFailed(`Port ${req.port_id} is still in use.`, "PortInUse")
          : new NetworkAllocationFailed(`Port id ${req.port_id} could not be found.`, "PortNotFound");
      }
    } else {
      const wanted = req.fixed_ip === undefined ? undefined : [{ ip_address: req.fixed_ip }];
      // Its addresses are won first and the port written whole, bound, in one create: a build's
      // port costs one write of its item and of each index entry, not one per step.
      const won = await allocate({ unwritten: id }, network, wanted);
      const security = await portSecurityFor(rec, network, now);
      port = await createNovaPort({
        id,
        network_id: network.id,
        project_id: rec.project_id,
        name: "",
        description: "",
        admin_state_up: true,
        ...binding,
        ...security,
        revision_number: 0,
        created_at: stamp(now),
        fixed_ips: won,
      });
      if (!port) port = await takeEarlierPort(rec, id, binding, network, wanted, won);
      // (an earlier run's port too: that run may have ended before it told the hosts)
      for (const g of securityGroupsOf(port)) joined.push([g, id]);
    }
    return vifOf(port, network, req, !req.port_id);
  } catch (e) {
    if (!(e instanceof NetworkingError)) throw e;
    // Nova's NoMoreFixedIps names the network; the others are Neutron's own words
    throw new NetworkAllocationFailed(
      e.type === "IpAddressGenerationFailure"
        ? `No fixed IP addresses available for network: ${network.id}`
        : e.message,
      e.type,
    );
  }
}

/**
 * An earlier run made the port (a re-run of the step, a reschedule): bound to this attempt's host
 * as it is, the addresses this run won freed unless it holds them, and given any it lacks.
 */
async function takeEarlierPort(
  rec: InstanceRecord,
  id: string,
  binding: PortBinding,
  network: Network,
  wanted: FixedIpRequest[] | undefined,
  won: FixedIp[],
): Promise<Port> {
  const port = await bindPort(id, binding, rec.id);
  if (!port) throw new NetworkAllocationFailed(`Port ${id} is still in use.`, "PortInUse");
  const holds = (f: FixedIp) =>
    port.fixed_ips.some((g) => g.subnet_id === f.subnet_id && g.ip_address === f.ip_address);
  for (const f of won) if (!holds(f)) await freeAddress(f.subnet_id, f.ip_address, id);
  const given = await allocate(port, network, wanted);
  const held = port.fixed_ips.filter((f) => !given.some((g) => g.subnet_id === f.subnet_id));
  return { ...port, fixed_ips: [...held, ...given] };
}

/**
 * A port with a MAC of Neutron's base (a MAC another port of the network has is drawn again): the
 * port as written, or undefined when one has its id already.
 */
async function createNovaPort(
  port: NewPort & { fixed_ips: FixedIp[]; security_groups: string[] },
): Promise<Port | undefined> {
  for (let tries = 1; ; tries++) {
    try {
      const made = { ...port, mac_address: generatedMac() };
      return (await createPort(made)) ? made : undefined;
    } catch (e) {
      if (!(e instanceof NetworkingError && e.type === "MacAddressInUse") || tries >= 3) throw e;
    }
  }
}

export function vifOf(port: Port, network: Network, req: NetworkRequest, made: boolean): Vif {
  return {
    port_id: port.id,
    network_id: network.id,
    network_name: network.name,
    mac_address: String(port.mac_address),
    fixed_ips: vifAddresses(port),
    ...(securityGroupsOf(port).length ? { security_groups: securityGroupsOf(port) } : {}),
    preexisting: !made,
    ...(req.tag === undefined ? {} : { tag: req.tag }),
  };
}

/** A port's addresses as the network info keeps them. */
function vifAddresses(port: Port): Vif["fixed_ips"] {
  return port.fixed_ips.map((f) => ({
    subnet_id: f.subnet_id,
    ip_address: f.ip_address,
    version: f.ip_address.includes(":") ? 6 : 4,
  }));
}

/**
 * The network info cache on the record (Nova's instance_info_caches), while the server lives;
 * with `over`, only while it is still that list (each VIF's port and detach mark where they were
 * read: an interface attach appends to it and a detach writes by index). Undefined when it did
 * not hold (deleted, or the list changed meanwhile).
 */
export function recordNetworkInfo(
  id: string,
  vifs: Vif[],
  over?: readonly Vif[],
): Promise<InstanceRecord | undefined> {
  const values: Record<string, unknown> = { ":vifs": vifs, ":false": false };
  const same = (over ?? []).map((v, i) => {
    values[`:p${i}`] = v.port_id;
    if (v.detaching === undefined)
      return `network_info[${i}].port_id = :p${i} AND attribute_not_exists(network_info[${i}].detaching)`;
    values[`:d${i}`] = v.detaching;
    return `network_info[${i}].port_id = :p${i} AND network_info[${i}].detaching = :d${i}`;
  });
  if (over) values[":n"] = over.length;
  return transition(id, {
    set: ["network_info = :vifs"],
    condition: ["deleted = :false", ...(over ? ["size(network_info) = :n", ...same] : [])].join(" AND "),
    values,
  });
}

/**
 * A port leaves the server (Nova's _deallocate_port_for_instance, preserve_on_delete): the port
 * Nova made is deleted, the user's unbound and kept, with its address. Only while it is this
 * server's (the unbind is conditioned on the device): idempotent. Answers the memberships the
 * deleted port left.
 */
export async function releasePort(
  instanceId: string,
  portId: string,
  preexisting: boolean,
  now = new Date(),
): Promise<Membership[]> {
  if (!preexisting) {
    const port = await getPort(portId);
    // the groups it leaves: their referrers' hosts are told by the caller
    if (await deletePort(portId))
      return port ? securityGroupsOf(port).map((g): Membership => [g, portId]) : [];
    return [];
  }
  // the user's port keeps its groups (and stays their member) unbound
  await bindPort(
    portId,
    { device_id: "", device_owner: "", "binding:host_id": "", updated_at: stamp(now) },
    instanceId,
  );
  return [];
}

/**
 * deallocate_for_instance: delete the ports Nova made (every index of the requests, whether or
 * not the record names it yet, and those interface attaches made) and unbind the user's (those
 * the create named and those attached since, or still being attached). Idempotent. The network
 * info is left as it was on a deleted record; a live one (a failed build) is emptied.
 */
export async function deallocateForInstance(rec: InstanceRecord, now = new Date()): Promise<void> {
  const ports = new Map<string, boolean>();
  for (const [i, req] of (rec.requested_networks ?? []).entries())
    ports.set(req.port_id ?? portIdFor(rec.id, i), Boolean(req.port_id));
  for (const vif of rec.network_info ?? []) ports.set(vif.port_id, vif.preexisting);
  for (const a of Object.values(rec.actions ?? {}))
    if (a.interface?.state === "pending") ports.set(a.interface.port_id, a.interface.preexisting);
  const left: Membership[] = [];
  for (const [id, preexisting] of ports) left.push(...(await releasePort(rec.id, id, preexisting, now)));
  if (!rec.deleted && rec.network_info?.length) await recordNetworkInfo(rec.id, []);
  // the servers of the groups naming those ports' groups as remote no longer admit their
  // addresses, within the member sync's window
  await membersChanged(left, rec.request_id);
}

/** Whether a server has ports to give back at its delete: requested, attached, or being attached. */
export const holdsPorts = (rec: InstanceRecord): boolean =>
  Boolean(rec.requested_networks?.length) ||
  Boolean(rec.network_info?.length) ||
  Object.values(rec.actions ?? {}).some((a) => a.interface?.state === "pending");

/**
 * The server's ports follow it (Nova's migrate_instance_finish, setup_networks_on_host): bound to
 * the host the record now names, or to none once shelved offloaded. Only the server's own ports
 * are touched (the binding is conditioned on device_id); idempotent.
 */
export async function rebindPorts(rec: InstanceRecord, now = new Date()): Promise<void> {
  for (const vif of rec.network_info ?? []) {
    await bindPort(
      vif.port_id,
      {
        device_id: rec.id,
        device_owner: `compute:${rec.availability_zone ?? "nova"}`,
        "binding:host_id": rec.vm_state === "shelved_offloaded" ? "" : (rec.host ?? ""),
        updated_at: stamp(now),
        // the record's attempt: a late rebind of an earlier step (a finish before its revert)
        // cannot take the port back from the host a later one named
        binding_attempt: rec.attempt,
      },
      rec.id,
    );
  }
}

/**
 * Nova's network-changed and network-vif-deleted events, which Neutron sends when a server's port
 * changes under it: the server's network info read again from its ports (a port gone is dropped,
 * a port's addresses are its own now). A server that is gone or names no port is left alone.
 */
export async function refreshNetworkInfo(instanceId: string): Promise<void> {
  for (let tries = 0; tries < REFRESH_TRIES; tries++) {
    const rec = await getInstance(instanceId);
    if (!rec || rec.deleted || !rec.network_info?.length) return;
    const vifs: Vif[] = [];
    for (const vif of rec.network_info) {
      const port = await getPort(vif.port_id);
      if (!port || port.device_id !== rec.id) continue;
      const { security_groups: _had, ...rest } = vif;
      const groups = securityGroupsOf(port);
      vifs.push({
        ...rest,
        fixed_ips: vifAddresses(port),
        ...(groups.length ? { security_groups: groups } : {}),
      });
    }
    if (await recordNetworkInfo(rec.id, vifs, rec.network_info)) return;
  }
}

/** Tries of a refresh whose network info an interface attach or detach changed meanwhile. */
const REFRESH_TRIES = 5;
