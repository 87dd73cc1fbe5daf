// Networks on the networking table (./table.ts): a vlan network's VLAN reserved with it, a delete
// refused while a port is on it.
import { DeleteCommand, GetCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { conditionHeld } from "../../aws/dynamo-errors.js";
import { transactUnlessConditionFails } from "../../aws/dynamo-transact.js";
import { NetworkingError } from "../cidr.js";
import { deleteSubnet } from "./subnets.js";
import {
  getNetwork,
  getSubnet,
  keyOf,
  type Network,
  type NewNetwork,
  networkingTable,
  portCountKey,
  portsOn,
  updateAttributes,
} from "./table.js";

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
 * A new network (its subnets come with createSubnet) and its port count (`ports#<network>`, in
 * the same transaction); false when one has its id. A vlan network reserves its VLAN in the same
 * transaction: Neutron's VlanIdInUse (409) when another network holds it.
 */
export async function createNetwork(n: NewNetwork): Promise<boolean> {
  const { subnets: _s, revision_number: _r, ...rest } = n;
  const vlan = vlanKeyOf(n);
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
          Item: { ...portCountKey(n.id), ports: 0 },
          ConditionExpression: "attribute_not_exists(pk)",
        },
      },
      ...(vlan
        ? [
            {
              Put: {
                TableName: networkingTable(),
                Item: { ...vlan, vlan_network: n.id },
                ConditionExpression: "attribute_not_exists(pk)",
              },
            },
          ]
        : []),
    ],
  });
  if (ok || (await getNetwork(n.id)) || !vlan) return ok;
  throw new NetworkingError(
    409,
    "VlanIdInUse",
    `Unable to create the network. The VLAN ${n["provider:segmentation_id"]} on physical network ${n["provider:physical_network"]} is in use.`,
  );
}

/** How many ports the network has, by its count (undefined: no count, the network is gone). */
export async function portCount(networkId: string): Promise<number | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: networkingTable(), Key: portCountKey(networkId), ConsistentRead: true }),
  );
  return r.Item ? Number(r.Item.ports ?? 0) : undefined;
}

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
 * when it was already gone. Its port count (`ports#<network>`, kept by createPort and deletePort
 * in their transactions) decides, not the lagging index: the delete goes with the count's, in one
 * transaction conditioned on it being 0.
 */
export async function deleteNetwork(id: string): Promise<boolean> {
  const network = await getNetwork(id);
  if (!network) return false;
  const counted = (await portCount(id)) ?? Number(network.port_count ?? 0);
  if (counted > 0 || (await portsOn(id)).length > 0) throw networkInUse(id);
  for (const subnetId of network.subnets) {
    const subnet = await getSubnet(subnetId);
    if (subnet) await deleteSubnet(subnet);
  }
  const deleted = await transactUnlessConditionFails({
    TransactItems: [
      {
        Delete: {
          TableName: networkingTable(),
          Key: keyOf("network", id),
          // a network from before its count was an item of its own may still count on its item
          ConditionExpression:
            "attribute_exists(pk) AND (attribute_not_exists(port_count) OR port_count = :zero)",
          ExpressionAttributeValues: { ":zero": 0 },
        },
      },
      {
        Delete: {
          TableName: networkingTable(),
          Key: portCountKey(id),
          ConditionExpression: "attribute_not_exists(ports) OR ports = :zero",
          ExpressionAttributeValues: { ":zero": 0 },
        },
      },
    ],
  });
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
