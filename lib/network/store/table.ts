// The networking table's items: their layout, the reads, and the generic writes every resource's
// store uses (./networks.ts, ./subnets.ts, ./ports.ts, ./addresses.ts).
//
// Neutron's networks, subnets and ports on one DynamoDB table (NOVALESS_NETWORKING_TABLE), and
// the addresses they hold. Items by key: `network#<id>` (its subnet ids in a string set, and a
// revision_number that orders changes to them), `subnet#<id>`, `port#<id>` (the address it holds
// on each subnet, `ips`: subnet id → address), and four kinds the by-kind index never sees (they
// carry no `kind`):
//
// - `ip#<subnet>#<address>`, holding the port's id (`holder`): ONE conditional PutItem
//   (attribute_not_exists) per address is what makes an address a port's, so two ports can never
//   hold one address, whatever runs concurrently. A release deletes it, conditioned on the holder.
// - `vlan#<physical network>#<VLAN id>`, naming the vlan network that holds the VLAN (one
//   network per VLAN, reserved in createNetwork's transaction).
// - `mac#<network>#<MAC>`, naming the port that has the MAC on the network (createPort's
//   transaction).
// - `ports#<network>`, the count of the network's ports (`ports`), made and deleted with the
//   network in one transaction and kept by every port's create and delete in theirs: a network's
//   delete is conditioned on it. An item of its own, not an attribute of the network's: the
//   network item is in the by-kind index whole, so a count on it cost every port's create and
//   delete a rewrite of that entry too.
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
// Indexes: `by-kind` for whole-kind listings (not ports: they carry no kind, and every port is
// listed from its network's `by-network` entries), `by-network` for a network's subnets and ports,
// `by-holder` (sparse, keys only) for the addresses a port holds: a port's delete frees them all,
// including one won but not yet recorded on the port item when a crash came between the two
// writes; `by-device` (sparse) for a device's ports, keyed on `device`, which every write of a
// port's device_id sets to it, or removes when it is "" (an index key cannot be empty). Indexes are eventually consistent: a network's delete is conditioned on its port count
// (`ports#<network>`) instead; a subnet's in-use check reads the index.
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { batchGetAll } from "../../aws/dynamo-batch.js";
import { conditionHeld, unlessConditionFails } from "../../aws/dynamo-errors.js";
import { queryAll } from "../../aws/dynamo-pages.js";
import { resources } from "../../config.js";
import {
  NETWORKING_BY_DEVICE_INDEX,
  NETWORKING_BY_KIND_INDEX,
  NETWORKING_BY_NETWORK_INDEX,
} from "../../resources.js";
import { type IpRange, NetworkingError, parseAddress } from "../cidr.js";

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

export type Kind = "network" | "subnet" | "port";

export function networkingTable(): string {
  return resources().networkingTable;
}

export const notFound = (kind: "Network" | "Subnet" | "Port", id: string) =>
  new NetworkingError(404, `${kind}NotFound`, `${kind} ${id} could not be found.`);

export const keyOf = (kind: Kind, id: string) => ({ pk: `${kind}#${id}` });
export const ipKey = (subnetId: string, address: string) => ({ pk: `ip#${subnetId}#${address}` });
export const cursorKey = (subnetId: string) => ({ pk: `cursor#${subnetId}` });
export const portCountKey = (networkId: string) => ({ pk: `ports#${networkId}` });

/**
 * A network made before its port count was an item of its own kept the count on its item
 * (`port_count`): its `ports#` item is made from it, once (true when made here). The old count
 * stays on the network item, and its delete is conditioned on it too.
 */
export async function adoptPortCount(network: Network): Promise<boolean> {
  return conditionHeld(
    dynamo().send(
      new PutCommand({
        TableName: networkingTable(),
        Item: { ...portCountKey(network.id), ports: Number(network.port_count ?? 0) },
        ConditionExpression: "attribute_not_exists(pk)",
      }),
    ),
  );
}

/**
 * The by-device index's key for a port's device_id: the id while it names one, nothing (the
 * attribute removed) while the port is free.
 */
export const deviceKey = (deviceId: unknown): string | undefined =>
  typeof deviceId === "string" && deviceId !== "" ? deviceId : undefined;

export function strip<T>(item: Record<string, unknown>): T {
  const { pk, kind, ips, device: _device, ...rest } = item;
  // string sets come back as Sets; the domain speaks arrays
  for (const [k, v] of Object.entries(rest)) if (v instanceof Set) rest[k] = [...v].sort();
  if (kind === "network") rest.subnets ??= [];
  // a port carries no kind (it is in no whole-kind listing: see listPorts); an older one does
  if (kind === "port" || String(pk).startsWith("port#")) {
    rest.fixed_ips = Object.entries((ips ?? {}) as Record<string, string>)
      .map(([subnet_id, ip_address]) => ({ subnet_id, ip_address, a: parseAddress(ip_address)! }))
      .sort(
        (x, y) => x.a.version - y.a.version || (x.a.value < y.a.value ? -1 : x.a.value > y.a.value ? 1 : 0),
      )
      .map(({ subnet_id, ip_address }) => ({ subnet_id, ip_address }));
  }
  return rest as T;
}

/**
 * One item by id; a strongly consistent read unless `settled` says the caller reads what was
 * written well before (a build's network and subnets): half the read units, and one not found
 * is read again consistently, so a network just made is never missed.
 */
export async function get<T>(kind: Kind, id: string, settled = false): Promise<T | undefined> {
  const read = (consistent: boolean) =>
    dynamo().send(
      new GetCommand({ TableName: networkingTable(), Key: keyOf(kind, id), ConsistentRead: consistent }),
    );
  let r = await read(!settled);
  if (!r.Item && settled) r = await read(true);
  return r.Item ? strip<T>(r.Item) : undefined;
}

/** Every item of a kind, by id: one Query of the by-kind index (eventually consistent). */
export async function all<T>(kind: Kind): Promise<T[]> {
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
export async function onNetwork<T>(networkId: string, kind: "subnet" | "port"): Promise<T[]> {
  return (await onNetworkItems(networkId, kind)).map((i) => strip<T>(i));
}

const onNetworkItems = (networkId: string, kind: "subnet" | "port") =>
  queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_NETWORK_INDEX,
    KeyConditionExpression: "network_id = :n AND begins_with(pk, :p)",
    ExpressionAttributeValues: { ":n": networkId, ":p": `${kind}#` },
  });

/**
 * Change an item's own attributes (the front's PUT) and bump its revision_number, as Neutron's
 * standard attributes do; what the store maintains (subnets, ips, keys) is not the caller's.
 * Undefined when the item is gone. A network's bump also makes a concurrent createSubnet read it
 * again (its transaction is conditioned on the revision).
 */
export async function updateAttributes<T>(
  kind: Kind,
  id: string,
  changes: Record<string, unknown>,
  /** a further condition on the item, its names `#c…` and values `:c…` given */
  only?: { condition: string; names: Record<string, string>; values: Record<string, unknown> },
): Promise<T | undefined> {
  const names: Record<string, string> = { ...only?.names };
  const values: Record<string, unknown> = { ":one": 1, ...only?.values };
  const sets: string[] = [];
  const removes: string[] = [];
  for (const [i, [k, v]] of Object.entries(changes)
    .filter(
      ([k]) => !["id", "pk", "kind", "subnets", "ips", "fixed_ips", "revision_number", "device"].includes(k),
    )
    .entries()) {
    names[`#a${i}`] = k;
    values[`:a${i}`] = v;
    sets.push(`#a${i} = :a${i}`);
  }
  // a port's device_id keeps its by-device key in step
  if (kind === "port" && "device_id" in changes) {
    names["#device"] = "device";
    const device = deviceKey(changes.device_id);
    if (device === undefined) removes.push("#device");
    else {
      values[":device"] = device;
      sets.push("#device = :device");
    }
  }
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: networkingTable(),
        Key: keyOf(kind, id),
        UpdateExpression: `${sets.length ? `SET ${sets.join(", ")} ` : ""}${removes.length ? `REMOVE ${removes.join(", ")} ` : ""}ADD revision_number :one`,
        ConditionExpression: `attribute_exists(pk)${only ? ` AND (${only.condition})` : ""}`,
        ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    ),
  );
  return r ? strip<T>(r.Attributes!) : undefined;
}

export const getNetwork = (id: string, settled = false) => get<Network>("network", id, settled);
export const listNetworks = () => all<Network>("network");
export const getSubnet = (id: string, settled = false) => get<Subnet>("subnet", id, settled);
export const listSubnets = () => all<Subnet>("subnet");
export const subnetsOn = (networkId: string) => onNetwork<Subnet>(networkId, "subnet");
export const getPort = (id: string) => get<Port>("port", id);
/** Ports by id, those that exist (strongly consistent, one BatchGetItem per 100). */
export async function getPorts(ids: readonly string[]): Promise<Port[]> {
  const items = await batchGetAll(
    networkingTable(),
    [...new Set(ids)].map((id) => keyOf("port", id)),
    { ConsistentRead: true },
  );
  return items.map((i) => strip<Port>(i));
}
/**
 * Every port, by id: each network's ports from the by-network index (eventually consistent), the
 * networks from by-kind. Ports carry no `kind`, so a port's writes cost no by-kind entry (every
 * port is on a network: a network's delete is conditioned on its port count). A port an older
 * release wrote still has a by-kind entry; it is not read.
 */
export async function listPorts(): Promise<Port[]> {
  return (await portItems()).map((i) => strip<Port>(i));
}

/** Every port's item as stored (listPorts' reads), by id. */
export async function portItems(): Promise<Record<string, unknown>[]> {
  const networks = await all<Network>("network");
  const items = (await Promise.all(networks.map((n) => onNetworkItems(n.id, "port")))).flat();
  return items.sort((a, b) => (String(a.pk) < String(b.pk) ? -1 : String(a.pk) > String(b.pk) ? 1 : 0));
}
export const portsOn = (networkId: string) => onNetwork<Port>(networkId, "port");

/** A device's ports (a server's), by the by-device index (eventually consistent). */
export async function portsOfDevice(deviceId: string): Promise<Port[]> {
  if (deviceKey(deviceId) === undefined) return [];
  const items = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_DEVICE_INDEX,
    KeyConditionExpression: "#d = :d",
    ExpressionAttributeNames: { "#d": "device" },
    ExpressionAttributeValues: { ":d": deviceId },
  });
  return items.map((i) => strip<Port>(i));
}
