// The port Nova makes for a build (allocate_for_instance) on the in-process DynamoDB: its address
// won first, then the port written whole and bound in one create (no write of the port item
// after it), the same port and address on a re-run of the step, and a port an earlier run left
// without its address given one, with nothing held twice.
import { randomUUID } from "node:crypto";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamo } from "../../../lib/aws/clients.js";
import { queryAll } from "../../../lib/aws/dynamo-pages.js";
import { meterReading, startMeter, stopMeter } from "../../../lib/aws/meter.js";
import { allocateForInstance, portIdFor } from "../../../lib/instances/networking.js";
import { PUBLIC_NETWORK_ID, seedPublicNetwork } from "../../../lib/network/seed.js";
import { deleteNetwork, portCount } from "../../../lib/network/store/networks.js";
import { createPort, deletePort } from "../../../lib/network/store/ports.js";
import { ensureDefaultSecurityGroup } from "../../../lib/network/store/security-groups.js";
import { getPort, networkingTable } from "../../../lib/network/store/table.js";
import { NETWORKING_BY_HOLDER_INDEX } from "../../../lib/resources.js";
import { useLocalAws } from "../../integration/local-aws.js";
import { instance } from "../conductor/workflow-fixtures.js";

useLocalAws();

/** The addresses the by-holder index says the port holds (keys only: `ip#<subnet>#<address>`). */
const held = async (portId: string) =>
  (
    await queryAll({
      TableName: networkingTable(),
      IndexName: NETWORKING_BY_HOLDER_INDEX,
      KeyConditionExpression: "holder = :p",
      ExpressionAttributeValues: { ":p": portId },
    })
  ).map((i) => (i.pk as string).split("#")[2]);

/** The first attempt on host-1 (the instance is placed with what allocateForInstance answers). */
const AT_HOST_1 = { host: "host-1", attempt: 1, availability_zone: "az1" };

async function building() {
  await seedPublicNetwork();
  return instance({ requested_networks: [{ network_id: PUBLIC_NETWORK_ID }], attempt: 1 });
}

/** DynamoDB requests by operation, summed over callers. */
function requests(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const u of Object.values(meterReading()))
    for (const [op, n] of Object.entries(u.requests)) out[op] = (out[op] ?? 0) + n;
  return out;
}

describe("a build's port", () => {
  it("is written whole, bound and holding its address, in one transaction: no write of it after", async () => {
    const rec = await building();
    // the project's default group, made by its first port (one transaction, once), is there
    await ensureDefaultSecurityGroup(rec.project_id, "2026-01-01T00:00:00Z");
    startMeter();
    let vifs: Awaited<ReturnType<typeof allocateForInstance>>;
    try {
      vifs = await allocateForInstance(rec, AT_HOST_1);
    } finally {
      stopMeter();
    }
    const id = portIdFor(rec.id, 0);
    const port = (await getPort(id))!;
    expect(port).toMatchObject({ device_id: rec.id, "binding:host_id": "host-1", binding_attempt: 1 });
    expect(port.fixed_ips).toHaveLength(1);
    expect(vifs?.[0]).toMatchObject({ port_id: id, mac_address: port.mac_address });
    expect(vifs?.[0]?.fixed_ips[0]?.ip_address).toBe(port.fixed_ips[0]!.ip_address);
    expect(await held(id)).toEqual([port.fixed_ips[0]!.ip_address]);
    // The networking writes: the subnet's cursor (UpdateItem), the address (PutItem), the port with
    // its MAC, the network's count and its membership of the default security group
    // (TransactWriteItems). The network info goes on the record with its placement (no write of
    // its own since 2026-12-08); recording the address on the port after its create was another.
    const ops = requests();
    expect(ops["dynamodb:TransactWriteItems"]).toBe(1);
    expect(ops["dynamodb:PutItem"]).toBe(1);
    // (and the default group's member-sync mark, lib/instances/security-group-refresh.ts)
    expect(ops["dynamodb:UpdateItem"]).toBe(2);
  });

  it("a re-run of the step finds the same port and address and holds nothing more", async () => {
    const rec = await building();
    const first = await allocateForInstance(rec, AT_HOST_1);
    const again = await allocateForInstance(rec, AT_HOST_1);
    expect(again).toEqual(first);
    const id = portIdFor(rec.id, 0);
    expect(await held(id)).toEqual([first![0]!.fixed_ips[0]!.ip_address]);
  });

  it("a port an earlier run made without its address gets one, bound to this attempt's host", async () => {
    const rec = await building();
    const id = portIdFor(rec.id, 0);
    // as a run of the old order left it: made, bound, no address given yet
    await createPort({
      id,
      network_id: PUBLIC_NETWORK_ID,
      project_id: rec.project_id,
      mac_address: "fa:16:3e:00:00:01",
      device_id: rec.id,
      device_owner: "compute:az1",
      "binding:host_id": "host-0",
      binding_attempt: 1,
    });
    const vifs = await allocateForInstance(rec, AT_HOST_1);
    const port = (await getPort(id))!;
    expect(port).toMatchObject({ "binding:host_id": "host-1", mac_address: "fa:16:3e:00:00:01" });
    expect(port.fixed_ips).toHaveLength(1);
    expect(vifs?.[0]?.fixed_ips[0]?.ip_address).toBe(port.fixed_ips[0]!.ip_address);
    // the address this run won before it found the port is free again: one held, the port's
    expect(await held(id)).toEqual([port.fixed_ips[0]!.ip_address]);
  });
});

describe("a network from before its port count was an item of its own", () => {
  it("takes a port (its count adopted from its item's), and is deleted only once the port is gone", async () => {
    const id = randomUUID();
    // as the old createNetwork left it: the network item alone, its count on it
    await dynamo().send(
      new PutCommand({
        TableName: networkingTable(),
        Item: {
          pk: `network#${id}`,
          kind: "network",
          id,
          name: "old",
          project_id: "demo",
          revision_number: 0,
          port_count: 2,
        },
      }),
    );
    const portId = randomUUID();
    expect(await createPort({ id: portId, network_id: id, project_id: "demo" })).toBe(true);
    expect(await portCount(id)).toBe(3);
    await expect(deleteNetwork(id)).rejects.toMatchObject({ type: "NetworkInUse" });
    expect(await deletePort(portId)).toBe(true);
    expect(await portCount(id)).toBe(2);
    // the two ports its old count says it has: still in use
    await expect(deleteNetwork(id)).rejects.toMatchObject({ type: "NetworkInUse" });
  });
});
