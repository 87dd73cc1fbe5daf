// The addresses ports hold (IPAM): one conditional PutItem per address, a cursor per subnet
// (./table.ts describes both items).
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { batchGetAll } from "../../aws/dynamo-batch.js";
import { conditionHeld } from "../../aws/dynamo-errors.js";
import {
  addressAt,
  formatAddress,
  invalidInput,
  isValidForSubnet,
  NetworkingError,
  parseAddress,
  parseCidr,
  poolSize,
  type Range,
  rangesOf,
} from "../cidr.js";
import {
  cursorKey,
  getPort,
  ipKey,
  keyOf,
  networkingTable,
  notFound,
  type Port,
  type Subnet,
} from "./table.js";

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
export function freeIpItem(pk: string, portId: string): Promise<boolean> {
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

export const freeAddress = (subnetId: string, address: string, portId: string) =>
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
  const wantedText = requested === undefined ? undefined : validAddress(subnet, requested);
  const existing = port.fixed_ips.find((f) => f.subnet_id === subnet.id)?.ip_address;
  if (existing !== undefined) {
    if (wantedText === undefined || wantedText === existing) return existing;
    throw invalidInput(`Port ${portId} already holds address ${existing} on subnet ${subnet.id}`);
  }
  return record(subnet.id, portId, await claimAddress(subnet, portId, wantedText));
}

/** A requested address of the subnet, normalized; Neutron's InvalidIpForSubnet (400) when not one. */
function validAddress(subnet: Subnet, requested: string): string {
  const wanted = parseAddress(requested);
  if (!wanted || !isValidForSubnet(parseCidr(subnet.cidr), wanted)) {
    throw new NetworkingError(
      400,
      "InvalidIpForSubnet",
      `IP address ${requested} is not a valid IP for the specified subnet.`,
    );
  }
  return formatAddress(wanted.value, wanted.version);
}

/**
 * Win an address of the subnet for a port that is not written yet (or not told yet): the
 * requested one, or a free one of the pools. The port's create writes it with its other
 * addresses (Nova's ports: one write of the port whole); until then, the by-holder index finds it
 * for the port's delete. Idempotent for a requested address the port already holds.
 * Refusals as allocateAddress's: InvalidIpForSubnet, IpAddressAlreadyAllocated,
 * IpAddressGenerationFailure.
 */
export async function claimAddress(subnet: Subnet, portId: string, requested?: string): Promise<string> {
  if (requested === undefined) return claimFree(subnet, portId);
  const text = validAddress(subnet, requested);
  if (!(await claim(subnet.id, text, portId)) && (await holderOf(subnet.id, text)) !== portId) {
    throw new NetworkingError(
      409,
      "IpAddressAlreadyAllocated",
      `IP address ${text} already allocated in subnet ${subnet.id}`,
    );
  }
  return text;
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
