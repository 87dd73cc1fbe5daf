// Nova's interface attach and detach (compute/api.py attach_interface and detach_interface, the
// compute manager's _attach_interface and _detach_interface) on the instance record and the port
// store. Hosts read no database, so what Nova's compute does with Neutron is done here: the API
// makes or binds the port before its cast, compute-events settles it from the host's report.
//
// - Attach: the port the attach is about is written on its instance action (`interface`, state
//   pending) before it is made or bound, so a delete, a failed report or an API that gave up
//   waiting always finds it. The host's report settles it: attached (the port joins the network
//   info) or failed (a port made for the attach is deleted, the user's unbound).
// - Detach: the VIF is marked `detaching` with the request's id; the host's report ends it: the
//   VIF leaves the network info and its port is deleted (Nova's) or unbound (the user's,
//   preserve_on_delete), or the mark is lifted when the host could not.
// Every write is conditioned on the request's mark, so a duplicated or late report changes nothing.
import { NetworkingError } from "../network/cidr.js";
import { subnetFor, subnetsOf } from "../network/ports.js";
import type { PortBinding } from "../network/store/ports.js";
import { getNetwork, getPort } from "../network/store/table.js";
import { fault } from "./faults.js";
import {
  type Asker,
  allocatePort,
  availableNetworks,
  NetworkAllocationFailed,
  portIdFor,
  releasePort,
  vifOf,
  visibleNetwork,
} from "./networking.js";
import type { Membership } from "./port-filters.js";
import { getInstance } from "./queries.js";
import { membersChanged } from "./security-group-refresh.js";
import { beginAction, event, eventClause, merge, transition, transitionWithEvent } from "./transition.js";
import type {
  ActionEvent,
  InstanceAction,
  InstanceRecord,
  InterfaceAttachment,
  NetworkRequest,
  Vif,
} from "./types.js";

/** The host's events (wrap_instance_event on the compute manager's methods). */
export const EVENT_ATTACH = "compute_attach_interface";
export const EVENT_DETACH = "compute_detach_interface";

/** Nova's refusal of an attach or detach: the API's status and Nova's text. */
export class InterfaceRefused extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 500,
    message: string,
  ) {
    super(message);
    this.name = "InterfaceRefused";
  }
}

/** What an attach asks for (attach_interfaces.py's interfaceAttachment). */
export interface AttachRequest {
  net_id?: string;
  port_id?: string;
  fixed_ip?: string;
  tag?: string;
}

/** Nova's texts for what the host could not do. */
export const attachNotSupported = (id: string) => `Attaching interfaces is not supported for instance ${id}.`;
export const attachFailed = (id: string) => `Failed to attach network adapter device to ${id}`;
export const detachFailed = (id: string) => `Failed to detach network adapter device from ${id}`;

/**
 * Nova's checks of allocate_for_instance for one attach (_validate_requested_port_ids,
 * _validate_requested_network_ids), before anything is written: the network request and the
 * attachment its action keeps. A port made for the attach has an id derived from the server and
 * the request, so whatever writes it, and whatever frees it, names the same port.
 */
export async function resolveAttach(
  rec: InstanceRecord,
  req: AttachRequest,
  requestId: string,
  who: Asker,
): Promise<{ request: NetworkRequest; attachment: Omit<InterfaceAttachment, "state"> }> {
  const tag = req.tag === undefined ? {} : { tag: req.tag };
  if (req.port_id) {
    const port = await getPort(req.port_id);
    if (!port || (!who.isAdmin && port.project_id !== who.project_id))
      throw new InterfaceRefused(404, `Port id ${req.port_id} could not be found.`);
    if (port.project_id !== rec.project_id)
      throw new InterfaceRefused(400, `Port ${req.port_id} not usable for instance ${rec.id}.`);
    if (port.device_id) throw new InterfaceRefused(409, `Port ${req.port_id} is still in use.`);
    return {
      request: { network_id: port.network_id, port_id: port.id, ...tag },
      attachment: { port_id: port.id, network_id: port.network_id, preexisting: true, ...tag },
    };
  }
  let networkId = req.net_id;
  if (networkId === undefined) {
    const nets = await availableNetworks(rec.project_id);
    if (nets.length === 0)
      throw new InterfaceRefused(
        400,
        `No specific network was requested and none are available for project '${rec.project_id}'.`,
      );
    if (nets.length > 1)
      throw new InterfaceRefused(
        400,
        "Multiple possible networks found, use a Network ID to be more specific.",
      );
    networkId = nets[0]!.id;
  }
  const network = await getNetwork(networkId);
  if (!visibleNetwork(network, who))
    throw new InterfaceRefused(404, `Network ${networkId} could not be found.`);
  if (req.fixed_ip !== undefined) {
    try {
      subnetFor(await subnetsOf(network), req.fixed_ip);
    } catch (e) {
      if (!(e instanceof NetworkingError)) throw e;
      // Nova's _create_port_minimal on Neutron's InvalidIpForNetwork
      throw new InterfaceRefused(
        400,
        `Invalid input received: Fixed IP ${req.fixed_ip} is not a valid ip address for network ${network.id}.`,
      );
    }
  }
  return {
    request: {
      network_id: network.id,
      ...(req.fixed_ip === undefined ? {} : { fixed_ip: req.fixed_ip }),
      ...tag,
    },
    attachment: {
      port_id: portIdFor(rec.id, `attach/${requestId}`),
      network_id: network.id,
      preexisting: false,
      ...tag,
    },
  };
}

/**
 * API: the attach_interface action, and the port it is about, in one write conditioned on the
 * state the API checked (no task state: Nova's attach has none). Undefined when it changed.
 */
export function beginAttach(
  rec: InstanceRecord,
  action: InstanceAction,
  attachment: Omit<InterfaceAttachment, "state">,
): Promise<InstanceRecord | undefined> {
  return beginAction(rec, null, { ...action, interface: { ...attachment, state: "pending" } });
}

const stamp = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");

/**
 * Nova's allocate_for_instance for the attach: the port made (through the same allocatePort a
 * build's ports are made with, so it gets what theirs get: the server's security groups among
 * them) or the user's bound, to the server's host. Neutron's refusals are
 * Nova's answers to the attach.
 */
export async function allocateAttachment(
  rec: InstanceRecord & { host: string },
  request: NetworkRequest,
  attachment: Omit<InterfaceAttachment, "state">,
  now = new Date(),
): Promise<Vif> {
  const binding: PortBinding = {
    device_id: rec.id,
    device_owner: `compute:${rec.availability_zone ?? "nova"}`,
    "binding:host_id": rec.host,
    updated_at: stamp(now),
    binding_attempt: rec.attempt,
  };
  // A port Nova makes for an attach gets the server's groups (Nova's allocate_for_instance passes
  // instance.security_groups, the project's `default` when none), as a build's ports do;
  // allocatePort is where both get them. A user's port keeps its own. Its filter reaches the host
  // in the cast's port (guestPortsOf), as a build's does.
  try {
    return await allocatePort(rec, attachment.port_id, request, binding, now);
  } catch (e) {
    if (!(e instanceof NetworkAllocationFailed)) throw e;
    switch (e.type) {
      case "IpAddressAlreadyAllocated":
      case "IpAddressInUse":
        // Nova's _create_port_minimal: FixedIpAlreadyInUse, a 409 on attach
        throw new InterfaceRefused(409, `Fixed IP ${request.fixed_ip} is already in use.`);
      case "PortInUse":
        throw new InterfaceRefused(409, e.message);
      case "PortNotFound":
      case "NetworkNotFound":
        throw new InterfaceRefused(404, e.message);
      case "InvalidIpForSubnet":
      case "InvalidIpForNetwork":
        throw new InterfaceRefused(
          400,
          `Invalid input received: Fixed IP ${request.fixed_ip} is not a valid ip address for network ${request.network_id}.`,
        );
      default:
        // NoMoreFixedIps and the rest of Neutron's refusals: Nova's 400s on attach
        throw new InterfaceRefused(400, e.message);
    }
  }
}

/** What a host reports of an attach or detach. */
export interface InterfaceReport {
  request_id: string;
  instance_uuid: string;
  host: string;
  port_id: string;
  started_at: string;
  sent_at: string;
  ok: boolean;
  not_supported?: boolean;
  details: string | null;
}

function hostEvent(name: string, r: InterfaceReport, ok = r.ok, details = r.details): ActionEvent {
  return event(
    name,
    0,
    ok ? "Success" : "Error",
    r.host,
    ok ? null : details,
    new Date(r.started_at),
    new Date(r.sent_at),
  );
}

/** The write that records `ev` under the action `rid` (not the create's: the attach's own). */
const underAction = (rid: string, ev: ActionEvent) => eventClause({ request_id: rid }, ev, "iev");

/**
 * The attach settled as failed (the host could not, the server moved or went away, the API could
 * not cast): the port freed first (a port made for it deleted, the user's unbound), then the
 * attachment marked failed with the event and Nova's fault. Safe to repeat: freeing is idempotent
 * and the mark is conditioned on the attachment still pending. Undefined when settled already.
 */
export async function settleAttachFailed(
  instanceId: string,
  rid: string,
  attachment: Pick<InterfaceAttachment, "port_id" | "preexisting">,
  ev: ActionEvent,
  error: "not_supported" | "failed",
  /** the fault's message when it is not Nova's for the host's failure (a refusal's own) */
  faultMessage?: string,
): Promise<InstanceRecord | undefined> {
  await releasePort(instanceId, attachment.port_id, attachment.preexisting);
  const message =
    faultMessage ?? (error === "not_supported" ? attachNotSupported(instanceId) : attachFailed(instanceId));
  return transition(
    instanceId,
    merge(
      {
        set: [
          "actions.#rid.#iface.#state = :failed",
          "actions.#rid.#iface.#error = :error",
          "updated_at = :now",
          "fault = :fault",
        ],
        condition: "actions.#rid.#iface.#state = :pending",
        names: { "#rid": rid, "#iface": "interface", "#state": "state", "#error": "error" },
        values: {
          ":failed": "failed",
          ":pending": "pending",
          ":error": error,
          ":now": ev.finish_time ?? ev.start_time,
          ":fault": fault(message, ev.details ?? ""),
        },
      },
      underAction(rid, ev),
    ),
  );
}

/**
 * compute-events: the host's report of an attach. Done: the port joins the network info (read
 * from the store, as Nova's cache is refreshed from Neutron) and the attachment is attached, in
 * one write fenced by the host and the pending attachment; one the host could not do, or that the
 * server has left behind (it moved, it was deleted), is settled failed with its port freed.
 */
export async function attachDone(r: InterfaceReport): Promise<"attached" | "failed" | "ignored"> {
  const rec = await getInstance(r.instance_uuid);
  const a = rec?.actions[r.request_id]?.interface;
  if (!rec || !a || a.state !== "pending" || a.port_id !== r.port_id) return "ignored";
  if (!r.ok) {
    await settleAttachFailed(
      rec.id,
      r.request_id,
      a,
      hostEvent(EVENT_ATTACH, r),
      r.not_supported ? "not_supported" : "failed",
    );
    return "failed";
  }
  const [port, network] = await Promise.all([getPort(a.port_id), getNetwork(a.network_id, true)]);
  if (port && network && port.device_id === rec.id && !rec.deleted && rec.host === r.host) {
    const vif = vifOf(
      port,
      network,
      { network_id: a.network_id, ...(a.tag ? { tag: a.tag } : {}) },
      !a.preexisting,
    );
    const ev = hostEvent(EVENT_ATTACH, r);
    const done = await transition(
      rec.id,
      merge(
        {
          set: [
            "network_info = list_append(if_not_exists(network_info, :none), :vifs)",
            "actions.#rid.#iface.#state = :attached",
            "updated_at = :now",
          ],
          condition: "deleted = :false AND host = :h AND actions.#rid.#iface.#state = :pending",
          names: { "#rid": r.request_id, "#iface": "interface", "#state": "state" },
          values: {
            ":none": [],
            ":vifs": [vif],
            ":attached": "attached",
            ":pending": "pending",
            ":false": false,
            ":h": r.host,
            ":now": r.sent_at,
          },
        },
        underAction(r.request_id, ev),
      ),
    );
    if (done) {
      // the port is a new member of its groups: the servers of groups naming them as remote
      // admit its addresses now (its own filter went to its host in the attach's cast)
      await membersChanged(
        (vif.security_groups ?? []).map((g): Membership => [g, vif.port_id]),
        r.request_id,
      );
      return "attached";
    }
    const now = await getInstance(rec.id);
    if (now?.actions[r.request_id]?.interface?.state !== "pending") return "ignored";
  }
  // the port went (deleted under it), or the server was deleted or moved while its host plugged
  // it: the attach did not take, and what it made is freed
  const why = rec.deleted
    ? `instance ${rec.id} was deleted during the attach`
    : rec.host !== r.host
      ? `instance ${rec.id} left host ${r.host} during the attach`
      : `port ${a.port_id} is no longer the instance's`;
  await settleAttachFailed(rec.id, r.request_id, a, hostEvent(EVENT_ATTACH, r, false, why), "failed");
  return "failed";
}

/**
 * API: the detach_interface action and the VIF's mark, in one write conditioned on the state the
 * API checked and on the VIF still being there unmarked. Undefined when either changed.
 */
export function beginDetach(
  rec: InstanceRecord,
  action: InstanceAction,
  index: number,
  portId: string,
): Promise<InstanceRecord | undefined> {
  const vif = `network_info[${index}]`;
  return beginAction(rec, null, action, {
    set: [`${vif}.detaching = :rid`],
    condition: `${vif}.port_id = :port AND attribute_not_exists(${vif}.detaching)`,
    values: { ":rid": action.request_id, ":port": portId },
  });
}

/** The VIF a detach marked, and where it is in the network info now. */
function marked(rec: InstanceRecord, rid: string, portId: string): { index: number; vif: Vif } | undefined {
  const index = (rec.network_info ?? []).findIndex((v) => v.detaching === rid && v.port_id === portId);
  return index < 0 ? undefined : { index, vif: rec.network_info![index]! };
}

/** Tries of a write by index that a concurrent change of the network info moved. */
const INDEX_TRIES = 5;

/**
 * The detach did not happen (the host could not, the API could not cast, the server moved): the
 * VIF's mark lifted, the event (and Nova's fault, when the host failed) recorded. Idempotent.
 */
export async function settleDetachFailed(
  instanceId: string,
  rid: string,
  portId: string,
  ev: ActionEvent,
  withFault: boolean,
): Promise<InstanceRecord | undefined> {
  for (let tries = 0; tries < INDEX_TRIES; tries++) {
    const rec = await getInstance(instanceId);
    const m = rec && marked(rec, rid, portId);
    if (!m) return undefined;
    const vif = `network_info[${m.index}]`;
    const done = await transition(
      instanceId,
      merge(
        {
          set: ["updated_at = :now", ...(withFault ? ["fault = :fault"] : [])],
          remove: [`${vif}.detaching`],
          condition: `${vif}.detaching = :rid AND ${vif}.port_id = :port`,
          values: {
            ":now": ev.finish_time ?? ev.start_time,
            ":rid": rid,
            ":port": portId,
            ...(withFault ? { ":fault": fault(detachFailed(instanceId), ev.details ?? "") } : {}),
          },
        },
        underAction(rid, ev),
      ),
    );
    if (done) return done;
  }
  throw new Error(
    `the network info of instance ${instanceId} kept changing: detach ${rid} of port ${portId} not settled`,
  );
}

/**
 * compute-events: the host's report of a detach. Done on the server's host: the port leaves the
 * server first (Nova's _deallocate_port_for_instance: deleted when Nova made it, unbound when the
 * user's), then the VIF leaves the network info, fenced by its mark. Not done, or done on a host
 * the server has left: the mark is lifted. A report whose mark is gone changes nothing.
 */
export async function detachDone(r: InterfaceReport): Promise<"detached" | "failed" | "ignored"> {
  for (let tries = 0; tries < INDEX_TRIES; tries++) {
    const rec = await getInstance(r.instance_uuid);
    const m = rec && marked(rec, r.request_id, r.port_id);
    if (!rec || !m) return "ignored";
    if (!r.ok || rec.host !== r.host) {
      const why = r.ok ? `instance ${rec.id} left host ${r.host} during the detach` : r.details;
      await settleDetachFailed(
        rec.id,
        r.request_id,
        r.port_id,
        hostEvent(EVENT_DETACH, r, false, why),
        !r.ok,
      );
      return "failed";
    }
    const left = await releasePort(rec.id, m.vif.port_id, m.vif.preexisting);
    const vif = `network_info[${m.index}]`;
    const done = await transitionWithEvent(
      { id: rec.id, request_id: r.request_id },
      hostEvent(EVENT_DETACH, r),
      {
        set: ["updated_at = :now"],
        remove: [vif],
        condition: `host = :h AND ${vif}.detaching = :rid AND ${vif}.port_id = :port`,
        values: { ":now": r.sent_at, ":h": r.host, ":rid": r.request_id, ":port": r.port_id },
      },
    );
    if (done) {
      // a deleted port left its groups: their referrers no longer admit its addresses
      await membersChanged(left, r.request_id);
      return "detached";
    }
  }
  throw new Error(
    `the network info of instance ${r.instance_uuid} kept changing: detach ${r.request_id} of port ${r.port_id} not settled`,
  );
}
