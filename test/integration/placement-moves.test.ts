// Moving a consumer (Nova's reschedule onto an alternate): an instance is never counted on two
// hosts longer than the move, and a step that runs twice leaves no claim behind. On dynalite,
// through the conductor's own steps.
import { randomUUID } from "node:crypto";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { dynamo } from "../../lib/aws/clients.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { claimAlternate } from "../../lib/conductor/tasks.js";
import { resources } from "../../lib/config.js";
import type { ConductorInput } from "../../lib/messages/scheduled.js";
import { destinationAt, type Scheduled } from "../../lib/messages/scheduled.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { claim, release } from "../../lib/placement/claims.js";
import { registerHost } from "../../lib/placement/hosts.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const FLAVOR = {
  id: "1",
  name: "m1.small",
  vcpus: 1,
  memory_mb: 2048,
  root_gb: 1,
  ephemeral_gb: 0,
  swap: 0,
  extra_specs: {},
};
const REQUESTED = { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 1 };

async function host(name: string, memoryMb: number): Promise<void> {
  await registerHost({
    host: name,
    availability_zone: "nova",
    inventories: inventoriesFor({ vcpus: 4, memory_mb: memoryMb, local_gb: 100 }),
    hypervisor_type: "fake",
    hypervisor_version: 1,
    host_ip: "10.0.0.1",
    supported_instances: [["x86_64", "fake", "hvm"]],
    queue_url: "http://unused",
  });
}

async function instance(attempt = 0, hostName: string | null = null): Promise<string> {
  const id = randomUUID();
  await dynamo().send(
    new PutCommand({
      TableName: resources().instancesTable,
      Item: {
        id,
        deleted: false,
        vm_state: "building",
        task_state: "scheduling",
        // an unplaced instance has no host attribute (the by-host index takes no null key)
        ...(hostName === null ? {} : { host: hostName }),
        attempt,
        flavor: FLAVOR,
      },
    }),
  );
  return id;
}

function request(ids: string[], attempt: number, tried: string[], alternates?: string[]): ConductorInput {
  return {
    version: 2,
    request_id: `req-${randomUUID()}`,
    reservation_id: "r-1",
    project_id: "p",
    user_id: "u",
    instance_uuids: ids,
    retry: { num_attempts: attempt, hosts: tried },
    ...(alternates
      ? {
          alternates: alternates.map((h) => ({
            host: h,
            nodename: h,
            availability_zone: "nova",
          })),
        }
      : {}),
    config: { max_attempts: 3 },
  };
}

/** The host the (one instance's) answer selected. */
function selectedHost(s: Scheduled): string | undefined {
  const sel = s.selections[0];
  return sel && destinationAt(s, sel.host).host;
}

/** Every host holding a claim of `consumer`. */
async function holders(consumer: string): Promise<string[]> {
  return (await consumerAllocations(consumer)).map((a) => a.host);
}

describe("moving a consumer", () => {
  it("the reschedule path releases the failed host before claiming an alternate: never on two hosts", async () => {
    await host("mv-a", 8192);
    await host("mv-b", 8192);
    await host("mv-c", 8192);
    const id = await instance(1, "mv-a");
    expect((await claim("mv-a", id, REQUESTED, 1)).claimed).toBe(true);
    // The compute agent's failure path: release attempt 1's claim, then the conductor claims
    // an alternate for attempt 2. The build failed, so nothing runs in between.
    expect(await release("mv-a", id, 1)).toBe(true);
    expect(await holders(id)).toEqual([]);
    const s = await claimAlternate(request([id], 2, ["mv-a"], ["mv-b", "mv-c"]));
    expect(selectedHost(s)).toBe("mv-b");
    expect(await holders(id)).toEqual(["mv-b"]);
  });

  it("ClaimAlternate run twice keeps the claim of the first run, even if an earlier alternate fits by now", async () => {
    await host("alt-full", 2048);
    await host("alt-free", 8192);
    const id = await instance(1, "mv-a");
    const blocker = await instance();
    expect((await claim("alt-full", blocker, REQUESTED, 1)).claimed).toBe(true);
    const req = request([id], 2, ["mv-a"], ["alt-full", "alt-free"]);
    expect(selectedHost(await claimAlternate(req))).toBe("alt-free");
    await release("alt-full", blocker, 1);
    // The first run's answer was lost; the state machine runs the step again.
    expect(selectedHost(await claimAlternate(req))).toBe("alt-free");
    expect(await holders(id)).toEqual(["alt-free"]);
  });
});
