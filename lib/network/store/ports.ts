// Ports on the networking table (./table.ts): a MAC one port's on its network, the network's
// port count kept in the same transactions, a binding conditioned on the device; a delete frees
// every address the port holds (./addresses.ts).
import { DeleteCommand, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { conditionHeld } from "../../aws/dynamo-errors.js";
import { queryAll } from "../../aws/dynamo-pages.js";
import { transactUnlessConditionFails } from "../../aws/dynamo-transact.js";
import { NETWORKING_BY_HOLDER_INDEX, NETWORKING_BY_KIND_INDEX } from "../../resources.js";
import { NetworkingError } from "../cidr.js";
import { freeAddress, freeIpItem } from "./addresses.js";
import {
  adoptPortCount,
  deviceKey,
  type FixedIp,
  getNetwork,
  getPort,
  keyOf,
  type NewPort,
  networkingTable,
  notFound,
  type Port,
  portCountKey,
  updateAttributes,
} from "./table.js";

/**
 * A new port; false when one has its id. It holds the `fixed_ips` given, won for it already
 * (claimAddress: Nova's ports are written whole, once), or none yet (the front's: allocateAddress
 * gives it them after). Its MAC is the port's on its network (`mac#<network>#<mac>`, in the same
 * transaction): Neutron's MacAddressInUse (409) when another port there has it.
 */
export async function createPort(port: NewPort & { fixed_ips?: FixedIp[] }): Promise<boolean> {
  const { fixed_ips, ...rest } = port;
  const ips = Object.fromEntries((fixed_ips ?? []).map((f) => [f.subnet_id, f.ip_address]));
  const mac = typeof port.mac_address === "string" ? macKey(port.network_id, port.mac_address) : undefined;
  // the network's count of its ports goes up in the same transaction (`ports#<network>`, there
  // while the network is), so a network's delete, conditioned on none, never leaves a port
  // behind however the two race
  const ok = await transactUnlessConditionFails({
    TransactItems: [
      {
        Put: {
          TableName: networkingTable(),
          Item: {
            ...rest,
            id: port.id,
            ips,
            ...keyOf("port", port.id),
            kind: "port",
            ...(deviceKey(port.device_id) ? { device: deviceKey(port.device_id) } : {}),
          },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
      {
        Update: {
          TableName: networkingTable(),
          Key: portCountKey(port.network_id),
          UpdateExpression: "ADD ports :one",
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
  // a network from before its count was an item of its own: the count adopted, and once more
  const network = await getNetwork(port.network_id);
  if (network && (await adoptPortCount(network))) return createPort(port);
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
 * The by-device key of ports written before the index (an older release's table): `device` set
 * from each port's device_id where it names one and the key is missing. Run by the seed, never
 * on a request path; conditioned on the device_id read, so a port rebound meanwhile keeps its own.
 * Returns how many it wrote.
 */
export async function indexPortDevices(): Promise<number> {
  const items = await queryAll({
    TableName: networkingTable(),
    IndexName: NETWORKING_BY_KIND_INDEX,
    KeyConditionExpression: "#k = :k",
    ExpressionAttributeNames: { "#k": "kind" },
    ExpressionAttributeValues: { ":k": "port" },
  });
  let written = 0;
  for (const item of items) {
    const device = deviceKey(item.device_id);
    if (device === undefined || item.device === device) continue;
    const ok = await conditionHeld(
      dynamo().send(
        new UpdateCommand({
          TableName: networkingTable(),
          Key: { pk: item.pk },
          UpdateExpression: "SET #d = :d",
          ConditionExpression: "attribute_exists(pk) AND device_id = :d",
          ExpressionAttributeNames: { "#d": "device" },
          ExpressionAttributeValues: { ":d": device },
        }),
      ),
    );
    if (ok) written++;
  }
  return written;
}

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
          Key: portCountKey(port.network_id),
          UpdateExpression: "ADD ports :minus",
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
