// Subnets on the networking table (./table.ts): a create checked against the network's other
// subnets in one transaction with the network's revision; a delete refused while an address is held.
import { DeleteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { batchGetAll } from "../../aws/dynamo-batch.js";
import { transactUnlessConditionFails } from "../../aws/dynamo-transact.js";
import { checkNoOverlap, NetworkingError, parseCidr } from "../cidr.js";
import {
  cursorKey,
  getNetwork,
  getSubnet,
  keyOf,
  networkingTable,
  notFound,
  portsOn,
  type Subnet,
  updateAttributes,
} from "./table.js";

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
