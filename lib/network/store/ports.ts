// Ports on the networking table (./table.ts): a MAC one port's on its network, the network's
// port count kept in the same transactions, a binding conditioned on the device; a delete frees
// every address the port holds (./addresses.ts).
import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../../aws/clients.js";
import { conditionHeld } from "../../aws/dynamo-errors.js";
import { queryAll } from "../../aws/dynamo-pages.js";
import { transactUnlessConditionFails } from "../../aws/dynamo-transact.js";
import { NETWORKING_BY_HOLDER_INDEX } from "../../resources.js";
import { NetworkingError } from "../cidr.js";
import { defaultGroupId } from "../security-groups.js";
import { freeAddress, freeIpItem } from "./addresses.js";
import {
  ensureDefaultSecurityGroup,
  forgetDefaultSecurityGroup,
  groupNotFound,
  membershipWrites,
  missingGroups,
  setMemberAddresses,
} from "./security-groups.js";
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
  portItems,
  updateAttributes,
} from "./table.js";

/**
 * A new port; false when one has its id. It holds the `fixed_ips` given, won for it already
 * (claimAddress: Nova's ports are written whole, once), or none yet (the front's: allocateAddress
 * gives it them after). Its MAC is the port's on its network (`mac#<network>#<mac>`, in the same
 * transaction): Neutron's MacAddressInUse (409) when another port there has it. It joins its
 * `security_groups` in the same transaction too: Neutron's SecurityGroupNotFound (404) when one
 * is not there.
 */
export async function createPort(
  port: NewPort & { fixed_ips?: FixedIp[]; security_groups?: string[] },
  retried = false,
): Promise<boolean> {
  const { fixed_ips, ...rest } = port;
  const groups = [...new Set(port.security_groups ?? [])];
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
      ...membershipWrites(
        port.id,
        groups,
        [],
        (fixed_ips ?? []).map((f) => f.ip_address),
      ),
    ],
  });
  if (ok || (await getPort(port.id))) return ok;
  const missing = groups.length ? await missingGroups(groups) : [];
  // the project's default group, seen by this container, was deleted since (an admin may): made
  // again, and the port with it (its id is the project's, so the port's is still right)
  const defaultId = defaultGroupId(port.project_id);
  if (missing.length === 1 && missing[0] === defaultId && !retried) {
    forgetDefaultSecurityGroup(port.project_id);
    await ensureDefaultSecurityGroup(port.project_id, new Date().toISOString().replace(/\.\d+Z$/, "Z"));
    return createPort(port, true);
  }
  if (missing.length) throw groupNotFound(missing.join(", "));
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
  const items = await portItems();
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
  for (let attempt = 0, current = port; current; attempt++) {
    const done = await deleteOnce(current);
    if (done !== undefined) return done;
    // its security groups changed meanwhile: read it again
    if (attempt >= 8) throw new Error(`port ${id}: its security groups kept changing`);
    current = await getPort(id);
  }
  return false;
}

/**
 * One try at a port's delete: the port, its MAC's item and its memberships in one transaction
 * with its network's count (without it for a port whose network is gone); false when the port
 * is gone, undefined when its security groups changed since it was read.
 */
async function deleteOnce(port: Port): Promise<boolean | undefined> {
  const portGone = {
    Delete: { TableName: networkingTable(), Key: keyOf("port", port.id), ...unchanged(port) },
  };
  // its MAC's item goes with it (unconditioned: a port from before MACs were kept has none)
  const macGone =
    typeof port.mac_address === "string"
      ? [{ Delete: { TableName: networkingTable(), Key: macKey(port.network_id, port.mac_address) } }]
      : [];
  const gone = [portGone, ...macGone, ...membershipWrites(port.id, [], securityGroupsOf(port))];
  const counted = await transactUnlessConditionFails({
    TransactItems: [
      ...gone,
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
  if (!(await getPort(port.id))) return false;
  if (await transactUnlessConditionFails({ TransactItems: gone })) return true;
  return undefined;
}

/**
 * A write's condition that the port is as it was read: its revision (every change of its groups
 * bumps it, so its memberships are those read).
 */
function unchanged(port: Port): {
  ConditionExpression: string;
  ExpressionAttributeValues?: Record<string, unknown>;
} {
  return typeof port.revision_number === "number"
    ? {
        ConditionExpression: "revision_number = :rev",
        ExpressionAttributeValues: { ":rev": port.revision_number },
      }
    : { ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(revision_number)" };
}

/** A port's security groups as stored (none on a port from before security groups). */
export const securityGroupsOf = (port: Port): string[] =>
  Array.isArray(port.security_groups) ? (port.security_groups as string[]) : [];

/**
 * Change a port's security groups and port security (Neutron's update of security_groups and
 * port_security_enabled): its memberships follow in the same transaction, conditioned on the
 * groups it had, so two changes at once cannot leave a membership behind. Neutron's
 * SecurityGroupNotFound (404) for a group that is not there; undefined when the port is gone.
 * Answers the port as written and the groups it joined and left.
 */
export async function setPortSecurityGroups(
  id: string,
  to: { security_groups: string[]; port_security_enabled: boolean },
  updatedAt: string,
): Promise<{ port: Port; joined: string[]; left: string[] } | undefined> {
  const wanted = [...new Set(to.security_groups)];
  for (let attempt = 0; ; attempt++) {
    const port = await getPort(id);
    if (!port) return undefined;
    const had = securityGroupsOf(port);
    const joined = wanted.filter((g) => !had.includes(g));
    const left = had.filter((g) => !wanted.includes(g));
    const ok = await transactUnlessConditionFails({
      TransactItems: [
        {
          Update: {
            TableName: networkingTable(),
            Key: keyOf("port", id),
            UpdateExpression:
              "SET security_groups = :to, port_security_enabled = :pse, updated_at = :at ADD revision_number :one",
            ConditionExpression: unchanged(port).ConditionExpression,
            ExpressionAttributeValues: {
              ":to": wanted,
              ":pse": to.port_security_enabled,
              ":at": updatedAt,
              ":one": 1,
              ...unchanged(port).ExpressionAttributeValues,
            },
          },
        },
        ...membershipWrites(
          id,
          joined,
          left,
          port.fixed_ips.map((f) => f.ip_address),
        ),
      ],
    });
    if (ok) {
      const written = (await getPort(id))!;
      // its addresses changed between the read and the write: the new memberships say so
      const addresses = written.fixed_ips.map((f) => f.ip_address);
      if (joined.length && addresses.join() !== port.fixed_ips.map((f) => f.ip_address).join())
        await setMemberAddresses(id, joined, addresses, Date.now());
      return { port: written, joined, left };
    }
    const missing = joined.length ? await missingGroups(joined) : [];
    if (missing.length) throw groupNotFound(missing.join(", "));
    if (attempt >= 8) throw new Error(`port ${id}: its security groups kept changing`);
  }
}
