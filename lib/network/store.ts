// Neutron's networks, subnets and ports on one DynamoDB table (NOVALESS_NETWORKING_TABLE), and
// the addresses they hold. Items by key: `network#<id>` (its subnet ids in a string set, and a
// revision_number that orders changes to them), `subnet#<id>`, `port#<id>` (the address it holds
// on each subnet, `ips`: subnet id → address), and three kinds the by-kind index never sees (they
// carry no `kind`):
//
// - `ip#<subnet>#<address>`, holding the port's id (`holder`): ONE conditional PutItem
//   (attribute_not_exists) per address is what makes an address a port's, so two ports can never
//   hold one address, whatever runs concurrently. A release deletes it, conditioned on the holder.
// - `vlan#<physical network>#<VLAN id>`, naming the vlan network that holds the VLAN (one
//   network per VLAN, reserved in createNetwork's transaction).
// - `cursor#<subnet>`, a counter advanced with ADD by every unasked allocation: each try takes
//   the next address of the pools in order (wrapping), so concurrent allocations try different
//   addresses instead of all racing for the lowest free one, and a try costs one UpdateItem and
//   one PutItem, whatever the subnet's size. Only when a few tries in a row find their address
//   taken (the subnet is nearly full) does a walk read the pools from the cursor on, 100 addresses
//   a BatchGetItem, and try the free ones it sees; a walk that goes all round finds the subnet
//   full. Random candidates would cost the same on an empty subnet and far more tries on a nearly
//   full one; Neutron's own IPAM reads every allocation of the subnet per allocation.
//   The cursor also keeps a released address out of reuse until the cursor comes round to it (a
//   neighbour's ARP cache may still point at the old port).
//
// Indexes: `by-kind` for whole-kind listings, `by-network` for a network's subnets and ports,
// `by-holder` (sparse, keys only) for the addresses a port holds: a port's delete frees them all,
// including one won but not yet recorded on the port item when a crash came between the two
// writes. Indexes are eventually consistent: a network's delete is conditioned on the port count
// kept on its item instead; a subnet's in-use check reads the index.
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { queryAll } from "../aws/dynamo-pages.js";
import { transactUnlessConditionFails } from "../aws/dynamo-transact.js";
import { resources } from "../config.js";
import {
  NETWORKING_BY_HOLDER_INDEX,
  NETWORKING_BY_KIND_INDEX,
  NETWORKING_BY_NETWORK_INDEX,
} from "../resources.js";
import {
  addressAt,
  checkNoOverlap,
  formatAddress,
  type IpRange,
  invalidInput,
  isValidForSubnet,
  NetworkingError,
  parseAddress,
  parseCidr,
  poolSize,
  type Range,
  rangesOf,
} from "./cidr.js";

/** A Neutron network; what the front adds (provider attributes, mtu, …) is kept as given. */
export interface Network {
  id: string;
  name: string;
  project_id: string;
  /** the network's subnet ids (written by createSubnet and deleteSubnet) */
  subnets: string[];
  /** Neutron's revision_number: bumped by every change of the subnets */
  revision_number: number;
  [attribute: string]: unknown;
}

export interface Subnet {
  id: string;
  network_id: string;
  project_id: string;
  ip_version: 4 | 6;
  cidr: string;
  gateway_ip: string | null;
  allocation_pools: IpRange[];
  [attribute: string]: unknown;
}

export interface FixedIp {
  subnet_id: string;
  ip_address: string;
}

export interface Port {
  id: string;
  network_id: string;
  project_id: string;
  /** the addresses the port holds, derived from its `ips` (IPv4 first, then by address) */
  fixed_ips: FixedIp[];
  /**
   * Set while the front's create gives the port its addresses (epoch ms, the create's deadline):
   * Neutron makes a port and its addresses in one transaction, so no one sees it before.
   */
  creating_until?: number;
  [attribute: string]: unknown;
}

/** A network as created: what createSubnet maintains (subnets, revision_number) is not given. */
export interface NewNetwork {
  id: string;
  name: string;
  project_id: string;
  [attribute: string]: unknown;
}

/** A port as created: it holds no address until allocateAddress gives it one. */
export interface NewPort {
  id: string;
  network_id: string;
  project_id: string;
  [attribute: string]: unknown;
}

type Kind = "network" | "subnet" | "port";

export function networkingTable(): string {
  return resources().networkingTable;
}

const notFound = (kind: "Network" | "Subnet" | "Port", id: string) =>
  new NetworkingError(404, `${kind}NotFound`, `${kind} ${id} could not be found.`);

const keyOf = (kind: Kind, id: string) => ({ pk: `${kind}#${id}` });
const ipKey = (subnetId: string, address: string) => ({ pk: `ip#${subnetId}#${address}` });
const cursorKey = (subnetId: string) => ({ pk: `cursor#${subnetId}` });

function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, kind, ips, ...rest } = item;
  // string sets come back as Sets; the domain speaks arrays
  for (const [k, v] of Object.entries(rest)) if (v instanceof Set) rest[k] = [...v].sort();
  if (kind === "network") rest.subnets ??= [];
  if (kind === "port") {
    rest.fixed_ips = Object.entries((ips ?? {}) as Record<string, string>)
      .map(([subnet_id, ip_address]) => ({ subnet_id, ip_address, a: parseAddress(ip_address)! }))
      .sort(
        (x, y) => x.a.version - y.a.version || (x.a.value < y.a.value ? -1 : x.a.value > y.a.value ? 1 : 0),
      )
      .map(({ subnet_id, ip_address }) => ({ subnet_id, ip_address }));
  }
  return rest as T;
}

async function get<T>(kind: Kind, id: string): Promise<T | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: keyOf(kind, id), ConsistentRead: true }),
  );
  return r.Item ? strip<T>(r.Item) : undefined;
}

/** Every item of a kind, by id: one Query of the by-kind index (eventually consistent). */
async function all<T>(kind: Kind): Promise<T[]> {
  const items = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_KIND_INDEX,
    KeyConditionExpression: "#k = :k",
    ExpressionAttributeNames: { "#k": "kind" },
    ExpressionAttributeValues: { ":k": kind },
  });
  return items.map((i) => strip<T>(i));
}

/** A network's items of one kind, by the by-network index (eventually consistent). */
async function onNetwork<T>(networkId: string, kind: "subnet" | "port"): Promise<T[]> {
  const items = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_NETWORK_INDEX,
    KeyConditionExpression: "network_id = :n AND begins_with(pk, :p)",
    ExpressionAttributeValues: { ":n": networkId, ":p": `${kind}#` },
  });
  return items.map((i) => strip<T>(i));
}

async function putIfAbsent(
  kind: Kind,
  item: { id: string },
  extra: Record<string, unknown> = {},
): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new PutCommand({
        TableName: networkingTable(),
        Item: { ...item, ...extra, ...keyOf(kind, item.id), kind },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    ),
  );
}

/**
 * Change an item's own attributes (the front's PUT) and bump its revision_number, as Neutron's
 * standard attributes do; what the store maintains (subnets, ips, keys) is not the caller's.
 * Undefined when the item is gone. A network's bump also makes a concurrent createSubnet read it
 * again (its transaction is conditioned on the revision).
 */
async function updateAttributes<T>(
  kind: Kind,
  id: string,
  changes: Record<string, unknown>,
  /** a further condition on the item, its names `#c…` and values `:c…` given */
  only?: { condition: string; names: Record<string, string>; values: Record<string, unknown> },
): Promise<T | undefined> {
  const names: Record<string, string> = { ...only?.names };
  const values: Record<string, unknown> = { ":one": 1, ...only?.values };
  const sets: string[] = [];
  for (const [i, [k, v]] of Object.entries(changes)
    .filter(
      ([k]) =>
        !["id", "pk", "kind", "subnets", "ips", "fixed_ips", "revision_number", "port_count"].includes(k),
    )
    .entries()) {
    names[`#a${i}`] = k;
    values[`:a${i}`] = v;
    sets.push(`#a${i} = :a${i}`);
  }
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: keyOf(kind, id),
        UpdateExpression: `${sets.length ? `SET ${sets.join(", ")} ` : ""}ADD revision_number :one`,
        ConditionExpression: `attribute_exists(pk)${only ? ` AND (${only.condition})` : ""}`,
        ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    ),
  );
  return r ? strip<T>(r.Attributes!) : undefined;
}

// ── Networks ──────────────────────────────────────────────────────────────────────────────────

/**
 * The item that reserves a VLAN on a physical network for one network (ML2's vlan allocations):
 * none for a flat network. It carries no kind, holder or network_id, so no index sees it.
 */
function vlanKeyOf(n: Record<string, unknown>): { pk: string } | undefined {
  const physnet = n["provider:physical_network"];
  const vlan = n["provider:segmentation_id"];
  if (n["provider:network_type"] !== "vlan" || typeof physnet !== "string" || typeof vlan !== "number")
    return undefined;
  return { pk: `vlan#${physnet}#${vlan}` };
}

/**
 * A new network (its subnets come with createSubnet); false when one has its id. A vlan network
 * reserves its VLAN in the same transaction: Neutron's VlanIdInUse (409) when another network
 * holds it.
 */
export async function createNetwork(n: NewNetwork): Promise<boolean> {
  const { subnets: _s, revision_number: _r, ...rest } = n;
  const vlan = vlanKeyOf(n);
  if (!vlan) return putIfAbsent("network", { ...rest, id: n.id }, { revision_number: 0 });
  const ok = await transactUnlessConditionFails({
    TransactItems: [
      {
        Put: {
          TableName: networkingTable(),
          Item: { ...rest, id: n.id, revision_number: 0, ...keyOf("network", n.id), kind: "network" },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
      {
        Put: {
          TableName: networkingTable(),
          Item: { ...vlan, vlan_network: n.id },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
    ],
  });
  if (ok || (await getNetwork(n.id))) return ok;
  throw new NetworkingError(
    409,
    "VlanIdInUse",
    `Unable to create the network. The VLAN ${n["provider:segmentation_id"]} on physical network ${n["provider:physical_network"]} is in use.`,
  );
}

export const getNetwork = (id: string) => get<Network>("network", id);
export const listNetworks = () => all<Network>("network");
export const updateNetwork = (id: string, changes: Record<string, unknown>) =>
  updateAttributes<Network>("network", id, changes);

const networkInUse = (id: string) =>
  new NetworkingError(
    409,
    "NetworkInUse",
    `Unable to complete operation on network ${id}. There are one or more ports still in use on the network.`,
  );

/**
 * Delete a network and its subnets: Neutron's NetworkInUse (409) while a port is on it; false
 * when it was already gone. The network's port_count (kept by createPort and deletePort in their
 * transactions) decides, not the lagging index: the delete is conditioned on it.
 */
export async function deleteNetwork(id: string): Promise<boolean> {
  const network = await getNetwork(id);
  if (!network) return false;
  if (((network.port_count as number | undefined) ?? 0) > 0 || (await portsOn(id)).length > 0)
    throw networkInUse(id);
  for (const subnetId of network.subnets) {
    const subnet = await getSubnet(subnetId);
    if (subnet) await deleteSubnet(subnet);
  }
  const deleted = await conditionHeld(
    dynamo().send(
      new DeleteCommand({
        TableName: networkingTable(),
        Key: keyOf("network", id),
        // the index read above lags; the count createPort keeps does not
        ConditionExpression:
          "attribute_exists(pk) AND (attribute_not_exists(port_count) OR port_count = :zero)",
        ExpressionAttributeValues: { ":zero": 0 },
      }),
    ),
  );
  if (!deleted && (await getNetwork(id))) throw networkInUse(id);
  // its VLAN goes free after it (a crash between the two leaves the VLAN held, never shared)
  const vlan = vlanKeyOf(network);
  if (vlan) {
    await conditionHeld(
      dynamo().send(
        new DeleteCommand({
          TableName: networkingTable(),
          Key: vlan,
          ConditionExpression: "vlan_network = :n",
          ExpressionAttributeValues: { ":n": id },
        }),
      ),
    );
  }
  return deleted;
}

// ── Subnets ───────────────────────────────────────────────────────────────────────────────────

/**
 * A new subnet on its network (the cidr, gateway and pools already checked by the caller with
 * cidr.ts): refused with Neutron's 400 when its cidr overlaps another of the network's, 404 when
 * the network is gone; false when a subnet has its id. The network's subnet list and revision
 * change in the same transaction, conditioned on the revision read, so two overlapping subnets
 * created at once cannot both pass the check.
 */
export async function createSubnet(subnet: Subnet): Promise<boolean> {
  const cidr = parseCidr(subnet.cidr);
  for (let attempt = 0; ; attempt++) {
    const network = await getNetwork(subnet.network_id);
    if (!network) throw notFound("Network", subnet.network_id);
    if (network.subnets.includes(subnet.id)) return false;
    const others = await batchGetAll(
      networkingTable(),
      network.subnets.map((id) => keyOf("subnet", id)),
      { ConsistentRead: true },
    );
    checkNoOverlap(
      cidr,
      others.map((o) => o.cidr as string),
      network.id,
    );
    const ok = await transactUnlessConditionFails({
      TransactItems: [
        {
          Put: {
            TableName: networkingTable(),
            Item: { ...subnet, ...keyOf("subnet", subnet.id), kind: "subnet" },
            ConditionExpression: "attribute_not_exists(pk)",
          },
        },
        {
          Update: {
            TableName: networkingTable(),
            Key: keyOf("network", network.id),
            UpdateExpression: "ADD subnets :s SET revision_number = :next",
            ConditionExpression: "revision_number = :r",
            ExpressionAttributeValues: {
              ":s": new Set([subnet.id]),
              ":r": network.revision_number,
              ":next": network.revision_number + 1,
            },
          },
        },
      ],
    });
    if (ok) return true;
    if (await getSubnet(subnet.id)) return false;
    // the network changed under us (another subnet, a delete): read it again
    if (attempt >= 8) throw new Error(`createSubnet ${subnet.id}: the network kept changing`);
  }
}

export const getSubnet = (id: string) => get<Subnet>("subnet", id);
export const listSubnets = () => all<Subnet>("subnet");
export const subnetsOn = (networkId: string) => onNetwork<Subnet>(networkId, "subnet");
export const updateSubnet = (id: string, changes: Record<string, unknown>) =>
  updateAttributes<Subnet>("subnet", id, changes);

/**
 * Delete a subnet: Neutron's SubnetInUse (409) while a port of its network holds an address on
 * it; false when it was already gone. Its allocation cursor goes with it.
 */
export async function deleteSubnet(subnet: Subnet): Promise<boolean> {
  const held = (await portsOn(subnet.network_id)).some((p) =>
    p.fixed_ips.some((f) => f.subnet_id === subnet.id),
  );
  if (held) {
    throw new NetworkingError(
      409,
      "SubnetInUse",
      `Unable to complete operation on subnet ${subnet.id}: One or more ports have an IP allocation from this subnet.`,
    );
  }
  const ok = await transactUnlessConditionFails({
    TransactItems: [
      {
        Delete: {
          TableName: networkingTable(),
          Key: keyOf("subnet", subnet.id),
          ConditionExpression: "attribute_exists(pk)",
        },
      },
      {
        Update: {
          TableName: networkingTable(),
          Key: keyOf("network", subnet.network_id),
          UpdateExpression: "DELETE subnets :s ADD revision_number :one",
          // an update of a missing item would create one: a network of nothing but these two
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeValues: { ":s": new Set([subnet.id]), ":one": 1 },
        },
      },
    ],
  });
  await dynamo().send(new DeleteCommand({ TableName: networkingTable(), Key: cursorKey(subnet.id) }));
  return ok;
}

// ── Ports ─────────────────────────────────────────────────────────────────────────────────────

/**
 * A new port, holding no address yet (allocateAddress gives it them); false when one has its id.
 * Its MAC is the port's on its network (`mac#<network>#<mac>`, in the same transaction):
 * Neutron's MacAddressInUse (409) when another port there has it.
 */
export async function createPort(port: NewPort): Promise<boolean> {
  const { fixed_ips: _f, ...rest } = port;
  const mac = typeof port.mac_address === "string" ? macKey(port.network_id, port.mac_address) : undefined;
  // the network counts its ports in the same transaction (port_count), so a network's delete,
  // conditioned on none, never leaves a port behind however the two race
  const ok = await transactUnlessConditionFails({
    TransactItems: [
      {
        Put: {
          TableName: networkingTable(),
          Item: { ...rest, id: port.id, ips: {}, ...keyOf("port", port.id), kind: "port" },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
      {
        Update: {
          TableName: networkingTable(),
          Key: keyOf("network", port.network_id),
          UpdateExpression: "ADD port_count :one",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeValues: { ":one": 1 },
        },
      },
      ...(mac
        ? [
            {
              Put: {
                TableName: networkingTable(),
                Item: { ...mac, mac_port: port.id },
                ConditionExpression: "attribute_not_exists(pk)",
              },
            },
          ]
        : []),
    ],
  });
  if (ok || (await getPort(port.id))) return ok;
  if (mac) {
    const held = await dynamo().send(
      new GetCommand({ TableName: networkingTable(), Key: mac, ConsistentRead: true }),
    );
    if (held.Item && held.Item.mac_port !== port.id)
      throw new NetworkingError(
        409,
        "MacAddressInUse",
        `Unable to complete operation for network ${port.network_id}. The mac address ${port.mac_address} is in use.`,
      );
  }
  throw notFound("Network", port.network_id);
}

/**
 * Whether a port is there for the front's readers: made, or left half-made by a create that
 * cannot still be running (past its deadline: shown as it is, so its owner can delete it).
 */
export const portShown = (port: Port, now: Date): boolean =>
  port.creating_until === undefined || port.creating_until <= now.getTime();

/** End a port's create (its addresses are given): from now on every reader sees it. */
export async function portCreated(id: string): Promise<void> {
  await conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: keyOf("port", id),
        UpdateExpression: "REMOVE creating_until",
        ConditionExpression: "attribute_exists(pk)",
      }),
    ),
  );
}

/** The item that makes a MAC one port's on its network (no kind: no index sees it). */
const macKey = (networkId: string, mac: string) => ({ pk: `mac#${networkId}#${mac.toLowerCase()}` });

export const getPort = (id: string) => get<Port>("port", id);
export const listPorts = () => all<Port>("port");
export const portsOn = (networkId: string) => onNetwork<Port>(networkId, "port");
export const updatePort = (id: string, changes: Record<string, unknown>) =>
  updateAttributes<Port>("port", id, changes);

/** A port's binding to a device on a host, as compute writes it (Nova's port binding). */
export interface PortBinding {
  device_id: string;
  device_owner: string;
  "binding:host_id": string;
  updated_at: string;
  /**
   * The instance's attempt that wrote it (its fencing token, above every earlier placement's):
   * internal, never shown. A late write of an earlier placement cannot move the port back.
   */
  binding_attempt?: number;
}

/**
 * Bind a port to a device (a server) on a host: only while the port is free or already the
 * device's, so two servers can never take one port, and (given the binding's attempt) never
 * from a later attempt's binding to an earlier's; undefined when refused (or gone).
 * A device_id of "" unbinds, only from the device named in `from`.
 */
export const bindPort = (id: string, binding: PortBinding, from: string) =>
  updateAttributes<Port>(
    "port",
    id,
    { ...binding },
    // (= … OR = …, not IN: dynalite's IN never matches an empty string)
    binding.binding_attempt === undefined
      ? {
          condition: "#cdev = :cfree OR #cdev = :cme",
          names: { "#cdev": "device_id" },
          values: { ":cfree": "", ":cme": from },
        }
      : {
          condition: "#cdev = :cfree OR (#cdev = :cme AND (attribute_not_exists(#cat) OR #cat <= :cat))",
          names: { "#cdev": "device_id", "#cat": "binding_attempt" },
          values: { ":cfree": "", ":cme": from, ":cat": binding.binding_attempt },
        },
  );

/**
 * Delete a port and free every address it holds: those recorded on it, and any the by-holder
 * index knows (won before a crash kept them off the port item). Idempotent: a redelivered delete
 * frees what is left and answers false.
 */
export async function deletePort(id: string): Promise<boolean> {
  const port = await getPort(id);
  for (const f of port?.fixed_ips ?? []) await freeAddress(f.subnet_id, f.ip_address, id);
  const held = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_HOLDER_INDEX,
    KeyConditionExpression: "holder = :p",
    ExpressionAttributeValues: { ":p": id },
  });
  for (const item of held) await freeIpItem(item.pk as string, id);
  if (!port) return false;
  const portGone = {
    Delete: {
      TableName: networkingTable(),
      Key: keyOf("port", id),
      ConditionExpression: "attribute_exists(pk)",
    },
  };
  // its MAC's item goes with it (unconditioned: a port from before MACs were kept has none)
  const macGone =
    typeof port.mac_address === "string"
      ? [{ Delete: { TableName: networkingTable(), Key: macKey(port.network_id, port.mac_address) } }]
      : [];
  const counted = await transactUnlessConditionFails({
    TransactItems: [
      portGone,
      ...macGone,
      {
        Update: {
          TableName: networkingTable(),
          Key: keyOf("network", port.network_id),
          UpdateExpression: "ADD port_count :minus",
          ConditionExpression: "attribute_exists(pk)",
          ExpressionAttributeValues: { ":minus": -1 },
        },
      },
    ],
  });
  if (counted) return true;
  // already gone (a concurrent delete), or a port whose network is gone: nothing to count
  const gone = await conditionHeld(dynamo().send(new DeleteCommand(portGone.Delete)));
  if (gone) for (const m of macGone) await dynamo().send(new DeleteCommand(m.Delete));
  return gone;
}

// ── Addresses ─────────────────────────────────────────────────────────────────────────────────

/** Unasked tries taken from the cursor before a walk (each one UpdateItem and one PutItem). */
const CURSOR_TRIES = 3;
/** Addresses a walk reads per BatchGetItem (its limit of 100 keys a request: lib/aws/dynamo-batch.ts). */
const WALK_BATCH = 100;

/** The one conditional write that makes an address the port's: true when won. */
function claim(subnetId: string, address: string, portId: string): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new PutCommand({
        TableName: networkingTable(),
        Item: { ...ipKey(subnetId, address), holder: portId, subnet_id: subnetId, ip_address: address },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    ),
  );
}

/** Delete an address item if the port holds it; false when it does not (already freed, or another's). */
function freeIpItem(pk: string, portId: string): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new DeleteCommand({
        TableName: networkingTable(),
        Key: { pk },
        ConditionExpression: "holder = :p",
        ExpressionAttributeValues: { ":p": portId },
      }),
    ),
  );
}

const freeAddress = (subnetId: string, address: string, portId: string) =>
  freeIpItem(ipKey(subnetId, address).pk, portId);

async function holderOf(subnetId: string, address: string): Promise<string | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: ipKey(subnetId, address), ConsistentRead: true }),
  );
  return r.Item?.holder as string | undefined;
}

/**
 * The cursor's value before this advance: how many tries it handed out before this one. ADD on a
 * missing item or attribute starts from 0 (DynamoDB API reference, AttributeValueUpdate: "If you
 * use ADD to increment or decrement a number value for an item that doesn't exist before the
 * update, DynamoDB uses 0 as the initial value"), so a new subnet needs no cursor item.
 */
async function advance(subnetId: string, by = 1): Promise<bigint> {
  const r = await dynamo().send(
    new UpdateCommand({
      TableName: networkingTable(),
      Key: cursorKey(subnetId),
      UpdateExpression: "ADD #n :by",
      ExpressionAttributeNames: { "#n": "next" },
      ExpressionAttributeValues: { ":by": by },
      ReturnValues: "UPDATED_NEW",
    }),
  );
  return BigInt(r.Attributes?.next as number) - BigInt(by);
}

const noMoreAddresses = (networkId: string) =>
  new NetworkingError(
    409,
    "IpAddressGenerationFailure",
    `No more IP addresses available on network ${networkId}.`,
  );

/**
 * A free address of the subnet's pools won for the port: the cursor's next few, then a walk from
 * the cursor round the pools. A walk that meets an address the port already holds (a redelivery
 * after a crash) answers it. Neutron's IpAddressGenerationFailure (409) when none is free.
 */
async function claimFree(subnet: Subnet, portId: string): Promise<string> {
  const ranges: Range[] = rangesOf(subnet.allocation_pools);
  const size = poolSize(ranges);
  const version = parseCidr(subnet.cidr).version;
  if (size === 0n) throw noMoreAddresses(subnet.network_id);
  const at = (i: bigint) => formatAddress(addressAt(ranges, ((i % size) + size) % size), version);
  let position = 0n;
  for (let t = 0n; t < BigInt(CURSOR_TRIES) && t < size; t++) {
    position = await advance(subnet.id);
    const address = at(position);
    if (await claim(subnet.id, address, portId)) return address;
  }
  // nearly full: walk the pools from the cursor, reading before trying
  const start = position + 1n;
  for (let offset = 0n; offset < size; offset += BigInt(WALK_BATCH)) {
    const batch: string[] = [];
    for (let i = offset; i < offset + BigInt(WALK_BATCH) && i < size; i++) batch.push(at(start + i));
    const taken = await batchGetAll<{ pk: string; holder: string; ip_address: string }>(
      networkingTable(),
      batch.map((a) => ipKey(subnet.id, a)),
      { ConsistentRead: true },
    );
    const holders = new Map(taken.map((t) => [t.ip_address, t.holder]));
    for (const [i, address] of batch.entries()) {
      const holder = holders.get(address);
      if (holder === portId) return address;
      if (holder !== undefined || !(await claim(subnet.id, address, portId))) continue;
      // move the cursor past what the walk found taken, so the next allocation does not walk it again
      const walked = offset + BigInt(i) + 1n;
      if (walked > 1n) await advance(subnet.id, Number(walked < 1_000_000n ? walked : 1_000_000n));
      return address;
    }
  }
  throw noMoreAddresses(subnet.network_id);
}

/**
 * Give the port an address on the subnet and record it on the port: the requested one (any valid
 * address of the subnet, as Neutron lets a fixed IP be outside the pools), or a free one of the
 * pools. One address per subnet per port. Idempotent: a port that holds an address on the subnet
 * gets it back (a redelivered build), so does one asking again for the address it holds.
 *
 * Refusals, with Neutron's texts: 404 PortNotFound; 400 InvalidInput (a subnet of another
 * network); 400 InvalidIpForSubnet (not an address of the subnet); 409 IpAddressAlreadyAllocated
 * (another port holds it); 409 IpAddressGenerationFailure (no free address in the pools).
 */
export async function allocateAddress(
  subnet: Subnet,
  portId: string,
  requested?: string,
  /** the port as its caller just read or wrote it (saves the read; the writes stay conditioned) */
  known?: Port,
): Promise<string> {
  const port = known?.id === portId ? known : await getPort(portId);
  if (!port) throw notFound("Port", portId);
  if (port.network_id !== subnet.network_id) {
    // Neutron's text for a fixed_ips subnet of another network (ipam_backend_mixin)
    throw invalidInput(
      `Failed to create port on network ${port.network_id}, because fixed_ips included invalid subnet ${subnet.id}`,
    );
  }
  const wanted = requested === undefined ? undefined : parseAddress(requested);
  if (requested !== undefined && (!wanted || !isValidForSubnet(parseCidr(subnet.cidr), wanted))) {
    throw new NetworkingError(
      400,
      "InvalidIpForSubnet",
      `IP address ${requested} is not a valid IP for the specified subnet.`,
    );
  }
  const wantedText = wanted ? formatAddress(wanted.value, wanted.version) : undefined;
  const existing = port.fixed_ips.find((f) => f.subnet_id === subnet.id)?.ip_address;
  if (existing !== undefined) {
    if (wantedText === undefined || wantedText === existing) return existing;
    throw invalidInput(`Port ${portId} already holds address ${existing} on subnet ${subnet.id}`);
  }
  let address: string;
  if (wantedText !== undefined) {
    if (!(await claim(subnet.id, wantedText, portId)) && (await holderOf(subnet.id, wantedText)) !== portId) {
      throw new NetworkingError(
        409,
        "IpAddressAlreadyAllocated",
        `IP address ${wantedText} already allocated in subnet ${subnet.id}`,
      );
    }
    address = wantedText;
  } else {
    address = await claimFree(subnet, portId);
  }
  return record(subnet.id, portId, address);
}

/**
 * Write the won address on the port item, unless the port already has one on the subnet (a
 * concurrent redelivery won first: ours is freed, theirs answered) or is gone (ours freed, 404).
 */
async function record(subnetId: string, portId: string, address: string): Promise<string> {
  // SET of a map's key needs the map itself (the developer guide's update expressions: a nested
  // attribute's parent must exist), which createPort writes empty.
  const recorded = await conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: keyOf("port", portId),
        UpdateExpression: "SET ips.#s = :a",
        ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(ips.#s)",
        ExpressionAttributeNames: { "#s": subnetId },
        ExpressionAttributeValues: { ":a": address },
      }),
    ),
  );
  if (recorded) return address;
  const port = await getPort(portId);
  const theirs = port?.fixed_ips.find((f) => f.subnet_id === subnetId)?.ip_address;
  if (theirs !== address) await freeAddress(subnetId, address, portId);
  if (!port) throw notFound("Port", portId);
  return theirs!;
}

/**
 * Free the port's address on the subnet and take it off the port. Conditioned on the holder, so
 * it never frees another port's address; idempotent: false when the port did not hold it.
 */
export async function releaseAddress(subnetId: string, address: string, portId: string): Promise<boolean> {
  const text = normalize(address);
  // taken off the port if it still shows it (a re-run finds it gone), then freed if it holds it
  await conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: keyOf("port", portId),
        UpdateExpression: "REMOVE ips.#s",
        ConditionExpression: "ips.#s = :a",
        ExpressionAttributeNames: { "#s": subnetId },
        ExpressionAttributeValues: { ":a": text },
      }),
    ),
  );
  return freeAddress(subnetId, text, portId);
}

function normalize(address: string): string {
  const a = parseAddress(address);
  return a ? formatAddress(a.value, a.version) : address;
}

/** Who holds an address of a subnet (a port id), if anyone. */
export const addressHolder = (subnetId: string, address: string) => holderOf(subnetId, normalize(address));
