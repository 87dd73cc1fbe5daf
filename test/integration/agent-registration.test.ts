// A compute agent that restarts reporting less than is allocated keeps serving on the inventory
// Placement has (Nova's resource tracker logs InventoryInUse and carries on), and a restart
// never clears an operator's forced_down.
import { expect, it } from "vitest";
import { ComputeAgent } from "../../lib/compute/agent.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { claim } from "../../lib/placement/claims.js";
import { getHost } from "../../lib/placement/hosts.js";
import { setServiceStatus } from "../../lib/placement/services.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

function agent(vcpus: number): ComputeAgent {
  return new ComputeAgent({
    host: "shrinking",
    availability_zone: "az1",
    inventories: inventoriesFor({ vcpus, memory_mb: 8192, local_gb: 100, cpu_allocation_ratio: 1 }),
    host_ip: "10.0.0.9",
    driver: new FakeDriver({ host: "shrinking", buildMs: 0, failAll: false }),
    waitTimeSeconds: 1,
  });
}

it("starts despite an inventory smaller than its allocations, and keeps Placement's inventory", async () => {
  const first = agent(8);
  await first.start();
  expect((await claim("shrinking", "vm-1", { VCPU: 6 }, 1)).claimed).toBe(true);
  await setServiceStatus("shrinking", { forced_down: true });
  await first.stop();

  const second = agent(4); // reports 4 VCPU while 6 are allocated
  await expect(second.start()).resolves.toBeUndefined();
  const h = (await getHost("shrinking"))!;
  expect(h.inventories.VCPU?.total).toBe(8);
  expect(h.usage.VCPU).toBe(6);
  expect(h.service.forced_down).toBe(true);
  await second.stop();
});
