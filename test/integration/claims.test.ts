// Claims are single conditional writes: racing claimers never overcommit a host, and claims and
// releases are idempotent by consumer. Against dynalite, through the real SDK.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEnv, type Emulators, startEmulators } from "../../infra/local/emulators.js";
import { createTables, localTables } from "../../infra/local/tables.js";
import { resetClients } from "../../lib/aws/clients.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { claim, release } from "../../lib/placement/claims.js";
import { getHost, registerHost } from "../../lib/placement/hosts.js";
import type { HostRecord } from "../../lib/placement/types.js";

let emulators: Emulators;
let restore: () => void;

beforeAll(async () => {
  emulators = await startEmulators();
  const tables = localTables();
  restore = applyEnv({ ...emulators.env, ...Object.fromEntries(tables.map((t) => [t.env, t.localName])) });
  resetClients();
  await createTables(new DynamoDBClient({}), tables);
});
afterAll(async () => {
  resetClients();
  restore?.();
  await emulators?.stop();
});

async function host(name: string, vcpus: number): Promise<void> {
  await registerHost({
    host: name,
    availability_zone: "az1",
    // ratio 1.0 and nothing reserved: capacity is exactly `vcpus` slots of one VCPU
    inventories: inventoriesFor({ vcpus, memory_mb: 1_000_000, local_gb: 10_000, cpu_allocation_ratio: 1 }),
    hypervisor_type: "fake",
    hypervisor_version: 1,
    host_ip: "10.0.0.1",
    supported_instances: [],
    queue_url: "http://unused",
  });
}

function resum(h: HostRecord, rc: "VCPU" | "MEMORY_MB" | "DISK_GB"): number {
  return Object.values(h.allocations).reduce((s, a) => s + (a.resources[rc] ?? 0), 0);
}

describe("racing claimers", () => {
  it("64 claimers for 5 free slots: exactly 5 win, the rest are conflicts, usage never above capacity", async () => {
    await host("race-1", 5);
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) => claim("race-1", `consumer-${i}`, { VCPU: 1, MEMORY_MB: 64 }, 1)),
    );
    const won = results.filter((r) => r.claimed);
    expect(won).toHaveLength(5);
    for (const r of results) if (!r.claimed) expect(r.reason).toMatch(/insufficient VCPU|concurrent update/);
    const h = (await getHost("race-1"))!;
    expect(Object.keys(h.allocations)).toHaveLength(5);
    expect(h.usage.VCPU).toBe(5);
    expect(h.free.VCPU).toBe(0);
    expect(resum(h, "VCPU")).toBe(h.usage.VCPU);
    expect(resum(h, "MEMORY_MB")).toBe(h.usage.MEMORY_MB);
  });

  it("claims and releases racing: usage always equals the sum of allocations", async () => {
    await host("race-2", 8);
    for (let i = 0; i < 8; i++)
      expect((await claim("race-2", `held-${i}`, { VCPU: 1 }, 1)).claimed).toBe(true);
    // Release four while 32 others race for the slots they free.
    const ops = [
      ...Array.from({ length: 4 }, (_, i) => release("race-2", `held-${i}`, 1)),
      ...Array.from({ length: 32 }, (_, i) => claim("race-2", `new-${i}`, { VCPU: 1 }, 1)),
    ];
    await Promise.all(ops);
    const h = (await getHost("race-2"))!;
    expect(h.usage.VCPU).toBeLessThanOrEqual(8);
    expect(resum(h, "VCPU")).toBe(h.usage.VCPU);
    expect(h.free.VCPU).toBe(8 - h.usage.VCPU!);
  });
});

describe("idempotency by consumer", () => {
  it("a repeated claim succeeds without counting twice; a repeated release is a no-op", async () => {
    await host("idem", 4);
    const first = await claim("idem", "vm-a", { VCPU: 2 }, 1);
    const again = await claim("idem", "vm-a", { VCPU: 2 }, 1);
    expect(first).toMatchObject({ claimed: true, duplicate: false });
    expect(again).toMatchObject({ claimed: true, duplicate: true });
    expect((await getHost("idem"))!.usage.VCPU).toBe(2);

    expect(await release("idem", "vm-a", 1)).toBe(true);
    expect(await release("idem", "vm-a", 1)).toBe(false);
    expect((await getHost("idem"))!.usage.VCPU).toBe(0);
  });

  it("a release for another attempt leaves the newer claim alone (fencing)", async () => {
    await host("fence", 4);
    expect((await claim("fence", "vm-b", { VCPU: 1 }, 2)).claimed).toBe(true);
    expect(await release("fence", "vm-b", 1)).toBe(false);
    expect((await getHost("fence"))!.allocations["vm-b"]?.attempt).toBe(2);
  });

  it("a claim over capacity or max_unit is a conflict with the reason", async () => {
    await host("small", 2);
    const r = await claim("small", "vm-c", { VCPU: 3 }, 1);
    expect(r.claimed).toBe(false);
    if (!r.claimed) expect(r.reason).toMatch(/VCPU/);
    expect((await claim("nowhere", "vm-d", { VCPU: 1 }, 1)).claimed).toBe(false);
  });
});
