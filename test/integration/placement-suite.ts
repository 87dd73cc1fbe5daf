// Placement against a real DynamoDB implementation, through the real SDK: the same suite runs on
// dynalite (placement-dynalite.test.ts) and on Amazon's DynamoDB Local
// (placement-dynamodb-local.test.ts), so a difference between them shows up here.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditExitCode, formatAuditReport } from "../../bin/novaless-audit.js";
import { dynamo, resetClients } from "../../lib/aws/clients.js";
import { resources } from "../../lib/config.js";
import { getAllocation, listAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { INVENTORY_DEFAULTS, PlacementConflict, sumAllocations } from "../../lib/placement/capacity.js";
import {
  type ClaimResult,
  claim,
  findClaim,
  release,
  releaseAttemptClaims,
} from "../../lib/placement/claims.js";
import { FEED_SHARDS, feedOf } from "../../lib/placement/feed.js";
import {
  getHost,
  readAllHosts,
  readChangedHosts,
  recordBuildResult,
  recordInFlight,
  registerHost,
} from "../../lib/placement/hosts.js";
import { deleteInventory, setInventory } from "../../lib/placement/inventory.js";
import { getServiceHeartbeat } from "../../lib/placement/liveness.js";
import { registerNewHost } from "../../lib/placement/registration.js";
import { deleteComputeService, setServiceStatus } from "../../lib/placement/services.js";
import {
  type AllocationRecord,
  capacity,
  type HostRecord,
  type Inventory,
  MAX_INT,
  type Resources,
} from "../../lib/placement/types.js";
import { applyEnv } from "../../local/emulators.js";
import { createTables, localTables } from "../../local/tables.js";

export interface DynamoBackend {
  name: string;
  start(): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
}

type Inventories = HostRecord["inventories"];

function inv(total: number, more: Partial<Inventory> = {}): Inventory {
  return { total, ...INVENTORY_DEFAULTS, ...more };
}

/** A seeded generator, so a failing race can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function host(name: string, inventories: Inventories): Promise<HostRecord> {
  return registerHost({
    host: name,
    availability_zone: "az1",
    inventories,
    hypervisor_type: "fake",
    hypervisor_version: 1,
    host_ip: "10.0.0.1",
    supported_instances: [],
    queue_url: "http://unused",
  });
}

/** A provider item with the allocation items on its host, by consumer. */
type Checked = HostRecord & { held: Record<string, AllocationRecord> };

/** Read the item and its allocations back and check every counting invariant; returns them. */
async function consistent(name: string): Promise<Checked> {
  const h = (await getHost(name))!;
  const allocations = await listAllocations({ host: name });
  const sum = sumAllocations(allocations) as Record<string, number>;
  for (const [rc, i] of Object.entries(h.inventories) as [keyof Resources, Inventory][]) {
    const used = h.usage[rc] ?? 0;
    expect(used, `${name} ${rc}: usage equals the sum of allocations`).toBe(sum[rc] ?? 0);
    expect(used, `${name} ${rc}: usage within capacity`).toBeLessThanOrEqual(capacity(i));
    expect(h.free[rc], `${name} ${rc}: free is capacity − usage`).toBe(capacity(i) - used);
  }
  for (const rc of Object.keys(sum))
    expect(h.inventories, `${name}: allocated ${rc} has inventory`).toHaveProperty(rc);
  expect(h.num_instances, `${name}: num_instances counts the allocations`).toBe(allocations.length);
  return { ...h, held: Object.fromEntries(allocations.map((a) => [a.consumer, a])) };
}

function fits(h: HostRecord, res: Resources): boolean {
  return Object.entries(res).every(([rc, amount]) => {
    if (!amount) return true;
    const i = h.inventories[rc as keyof Resources];
    return Boolean(
      i &&
        amount >= i.min_unit &&
        amount <= i.max_unit &&
        amount % i.step_size === 0 &&
        amount <= (h.free[rc as keyof Resources] ?? 0),
    );
  });
}

async function putInstance(id: string, fields: Record<string, unknown>): Promise<void> {
  await dynamo().send(
    new PutCommand({
      TableName: resources().instancesTable,
      // an unplaced instance has no host attribute (the by-host index takes no null key)
      Item: Object.fromEntries(
        Object.entries({
          id,
          deleted: false,
          vm_state: "building",
          host: null,
          attempt: 0,
          ...fields,
        }).filter(([k, v]) => !(k === "host" && v === null)),
      ),
    }),
  );
}

/** Write an allocation item and, when `countIt`, its counts on the host (what a bug or a crash would leave). */
async function plantAllocation(
  hostName: string,
  consumer: string,
  res: Resources,
  attempt: number,
  claimedAt: Date,
  countIt = true,
): Promise<void> {
  const h = (await getHost(hostName))!;
  const usage = { ...h.usage } as Record<string, number>;
  const free = { ...h.free } as Record<string, number>;
  if (countIt) {
    for (const [rc, n] of Object.entries(res)) {
      usage[rc] = (usage[rc] ?? 0) + (n ?? 0);
      free[rc] = (free[rc] ?? 0) - (n ?? 0);
    }
  }
  const item: AllocationRecord = {
    consumer,
    host: hostName,
    attempt,
    resources: res,
    claimed_at: claimedAt.toISOString(),
  };
  await dynamo().send(new PutCommand({ TableName: resources().allocationsTable, Item: item }));
  await dynamo().send(
    new UpdateCommand({
      TableName: resources().hostsTable,
      Key: { host: hostName },
      UpdateExpression: "SET #usage = :u, #free = :f, num_instances = num_instances + :n",
      ExpressionAttributeNames: { "#usage": "usage", "#free": "free" },
      ExpressionAttributeValues: { ":u": usage, ":f": free, ":n": countIt ? 1 : 0 },
    }),
  );
}

/**
 * DynamoDB's item size: attribute names plus values (strings UTF-8, numbers ~1 byte per two
 * digits + 1, a map or list 3 bytes + 1 per element, booleans and null 1 byte).
 */
function dynamoItemSize(item: Record<string, unknown>): number {
  const value = (v: unknown): number => {
    if (typeof v === "string") return Buffer.byteLength(v);
    if (typeof v === "number")
      return Math.ceil(String(Math.abs(v)).replace(/[.-]/g, "").replace(/^0+/, "").length / 2) + 1;
    if (typeof v === "boolean" || v === null) return 1;
    if (Array.isArray(v)) return 3 + v.reduce((n: number, x) => n + 1 + value(x), 0);
    return (
      3 +
      Object.entries(v as Record<string, unknown>).reduce(
        (n, [k, x]) => n + 1 + Buffer.byteLength(k) + value(x),
        0,
      )
    );
  };
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + value(v), 0);
}

const AUDITED = ["audit-a", "audit-b"];

const CONFLICT = /insufficient|concurrent update|below min_unit|exceeds max_unit|step_size|no .* inventory/;

export function placementSuite(backend: DynamoBackend): void {
  let stopBackend: (() => Promise<void>) | undefined;
  let restore: (() => void) | undefined;

  beforeAll(async () => {
    const started = await backend.start();
    stopBackend = started.stop;
    const tables = localTables();
    restore = applyEnv({ ...started.env, ...Object.fromEntries(tables.map((t) => [t.env, t.localName])) });
    resetClients();
    await createTables(new DynamoDBClient({}), tables);
  });
  afterAll(async () => {
    resetClients();
    restore?.();
    await stopBackend?.();
  });

  describe("racing claimers", () => {
    it("64 claimers of one unit for 5 free slots: exactly 5 win, the rest are conflicts", async () => {
      await host("race-1", { VCPU: inv(5), MEMORY_MB: inv(1_000_000) });
      const results = await Promise.all(
        Array.from({ length: 64 }, (_, i) => claim("race-1", `consumer-${i}`, { VCPU: 1, MEMORY_MB: 64 }, 1)),
      );
      expect(results.filter((r) => r.claimed)).toHaveLength(5);
      for (const r of results) if (!r.claimed) expect(r.reason).toMatch(/insufficient VCPU/);
      const h = await consistent("race-1");
      expect(Object.keys(h.held)).toHaveLength(5);
      expect(h.free.VCPU).toBe(0);
    });

    it("64 claimers of random sizes over 4 hosts: usage never above capacity, and no failed claim would still fit", async () => {
      const random = rng(4);
      const hosts = ["fill-a", "fill-b", "fill-c", "fill-d"];
      // Different shapes: ratios, reserved, a step size, a min_unit and a custom class.
      await host("fill-a", {
        VCPU: inv(8, { allocation_ratio: 2 }),
        MEMORY_MB: inv(16384, { reserved: 512 }),
      });
      await host("fill-b", { VCPU: inv(12), MEMORY_MB: inv(8192, { step_size: 256 }) });
      await host("fill-c", { VCPU: inv(6, { min_unit: 2 }), MEMORY_MB: inv(32768), CUSTOM_GPU: inv(2) });
      await host("fill-d", { VCPU: inv(4, { allocation_ratio: 4, max_unit: 4 }), MEMORY_MB: inv(12000) });
      const requests: Resources[] = Array.from({ length: 64 }, () => {
        const r: Resources = {
          VCPU: 1 + Math.floor(random() * 4),
          MEMORY_MB: 256 * (1 + Math.floor(random() * 16)),
        };
        if (random() < 0.15) r.CUSTOM_GPU = 1;
        return r;
      });
      const outcomes: (ClaimResult & { tried: number })[] = await Promise.all(
        requests.map(async (res, i) => {
          // Nova's claim loop: try the hosts in some order, move on after a conflict.
          const order = [...hosts].sort(() => random() - 0.5);
          let last: ClaimResult | undefined;
          for (const h of order) {
            last = await claim(h, `vm-${i}`, res, 1);
            if (last.claimed) return { ...last, tried: order.indexOf(h) + 1 };
            expect(last.reason).toMatch(CONFLICT);
          }
          return { ...last!, tried: order.length };
        }),
      );
      const final = await Promise.all(hosts.map((h) => consistent(h)));
      // Every claim that succeeded is counted exactly once, where it says.
      const won = outcomes.flatMap((o, i) =>
        o.claimed ? [{ host: o.host, consumer: `vm-${i}`, res: requests[i]! }] : [],
      );
      expect(won.length).toBeGreaterThan(0);
      for (const w of won)
        expect(final.find((h) => h.host === w.host)!.held[w.consumer]?.resources).toEqual(w.res);
      expect(final.reduce((n, h) => n + Object.keys(h.held).length, 0)).toBe(won.length);
      // "Exactly fills what fits": free only shrank during the race, so a claim that lost
      // everywhere must not fit anywhere now either.
      const lost = outcomes.flatMap((o, i) => (o.claimed ? [] : [requests[i]!]));
      for (const res of lost)
        for (const h of final) expect(fits(h, res), `${JSON.stringify(res)} on ${h.host}`).toBe(false);
    });

    it("claims and releases racing: usage always equals the sum of allocations", async () => {
      await host("race-2", { VCPU: inv(8) });
      for (let i = 0; i < 8; i++)
        expect((await claim("race-2", `held-${i}`, { VCPU: 1 }, 1)).claimed).toBe(true);
      const ops = [
        ...Array.from({ length: 4 }, (_, i) => release("race-2", `held-${i}`, 1)),
        ...Array.from({ length: 32 }, (_, i) => claim("race-2", `new-${i}`, { VCPU: 1 }, 1)),
      ];
      await Promise.all(ops);
      const h = await consistent("race-2");
      expect(Object.keys(h.held).filter((c) => c.startsWith("held-"))).toHaveLength(4);
    });

    it("random claims and releases of random sizes, many rounds: the item always re-sums", async () => {
      const random = rng(7);
      await host("churn", { VCPU: inv(16), MEMORY_MB: inv(16384, { step_size: 512 }) });
      const held = new Set<string>();
      for (let round = 0; round < 4; round++) {
        const ops: Promise<unknown>[] = [];
        for (let i = 0; i < 32; i++) {
          const id = `churn-${round}-${i}`;
          ops.push(
            claim(
              "churn",
              id,
              { VCPU: 1 + Math.floor(random() * 3), MEMORY_MB: 512 * (1 + Math.floor(random() * 4)) },
              1,
            ).then((r) => r.claimed && held.add(id)),
          );
        }
        for (const id of [...held].filter(() => random() < 0.5)) {
          ops.push(release("churn", id, 1).then(() => held.delete(id)));
          ops.push(release("churn", id, 1)); // a duplicated release
        }
        await Promise.all(ops);
        const h = await consistent("churn");
        expect(new Set(Object.keys(h.held))).toEqual(held);
      }
    });
  });

  describe("idempotency by consumer", () => {
    it("a repeated claim succeeds without counting twice; a repeated release is a no-op", async () => {
      await host("idem", { VCPU: inv(4) });
      expect(await claim("idem", "vm-a", { VCPU: 2 }, 1)).toMatchObject({ claimed: true, duplicate: false });
      expect(await claim("idem", "vm-a", { VCPU: 2 }, 1)).toMatchObject({ claimed: true, duplicate: true });
      expect((await getHost("idem"))!.usage.VCPU).toBe(2);
      expect(await release("idem", "vm-a", 1)).toBe(true);
      expect(await release("idem", "vm-a", 1)).toBe(false);
      expect((await consistent("idem")).usage.VCPU).toBe(0);
    });

    it("16 copies of one claim at once count once; 16 copies of its release remove it once", async () => {
      await host("dup", { VCPU: inv(64) });
      // Copies made at different times (a retried Lambda's): one claims, the others are duplicates.
      const t0 = Date.now();
      const claims = await Promise.all(
        Array.from({ length: 16 }, (_, i) => claim("dup", "vm-d", { VCPU: 3 }, 2, new Date(t0 + i))),
      );
      expect(claims.every((r) => r.claimed)).toBe(true);
      expect(claims.filter((r) => r.claimed && !r.duplicate)).toHaveLength(1);
      expect((await consistent("dup")).usage.VCPU).toBe(3);
      // Identical copies (one request, its request token): all answered as the first, applied once.
      const same = new Date(t0 + 100);
      const copies = await Promise.all(
        Array.from({ length: 16 }, () => claim("dup", "vm-e", { VCPU: 1 }, 2, same)),
      );
      expect(copies.every((r) => r.claimed)).toBe(true);
      expect((await consistent("dup")).usage.VCPU).toBe(4);
      expect(await release("dup", "vm-e", 2)).toBe(true);
      const releases = await Promise.all(Array.from({ length: 16 }, () => release("dup", "vm-d", 2)));
      // Copies that read the allocation before it went carry one request token: DynamoDB answers
      // each as the first (so several may say true), and applies it once.
      expect(releases.filter(Boolean).length).toBeGreaterThanOrEqual(1);
      const after = await consistent("dup");
      expect(after.usage.VCPU).toBe(0);
      expect(after.held).toEqual({});
      expect(await release("dup", "vm-d", 2)).toBe(false);
    });

    it("a release for another attempt leaves the newer claim alone (fencing)", async () => {
      await host("fence", { VCPU: inv(4) });
      expect((await claim("fence", "vm-b", { VCPU: 1 }, 2)).claimed).toBe(true);
      expect(await release("fence", "vm-b", 1)).toBe(false);
      expect((await getAllocation("vm-b", "fence"))?.attempt).toBe(2);
      const other = await claim("fence", "vm-b", { VCPU: 1 }, 3);
      expect(other).toMatchObject({
        claimed: false,
        reason: expect.stringMatching(/already holds .* attempt 2/),
      });
    });
  });

  describe("what a claim checks", () => {
    it("capacity, max_unit, min_unit, step_size, missing classes and unknown hosts are conflicts with a reason", async () => {
      await host("units", {
        VCPU: inv(8, { min_unit: 2, max_unit: 4 }),
        MEMORY_MB: inv(4096, { step_size: 512 }),
        CUSTOM_FPGA: inv(1),
      });
      const reason = async (res: Resources) => {
        const r = await claim("units", `vm-${Math.random()}`, res, 1);
        expect(r.claimed).toBe(false);
        return r.claimed ? "" : r.reason;
      };
      expect(await reason({ VCPU: 5 })).toMatch(/VCPU request 5 exceeds max_unit 4/);
      expect(await reason({ VCPU: 1 })).toMatch(/VCPU request 1 is below min_unit 2/);
      expect(await reason({ VCPU: 2, MEMORY_MB: 768 })).toMatch(
        /MEMORY_MB request 768 is not a multiple of step_size 512/,
      );
      expect(await reason({ VCPU: 2, MEMORY_MB: 8192 })).toMatch(
        /insufficient MEMORY_MB .* needs 8192, free 4096/,
      );
      expect(await reason({ VCPU: 2, CUSTOM_GPU: 1 })).toMatch(/no CUSTOM_GPU inventory/);
      expect(await reason({ VCPU: 2.5 })).toMatch(/not a positive integer/);
      expect((await claim("nowhere", "vm-x", { VCPU: 1 }, 1)).claimed).toBe(false);
      // max_unit of a class without other unit rules, below what is free (ratio 4)
      await host("max-unit", { VCPU: inv(8, { allocation_ratio: 4, max_unit: 4 }) });
      expect(await claim("max-unit", "vm-big", { VCPU: 5 }, 1)).toMatchObject({
        claimed: false,
        reason: expect.stringMatching(/VCPU request 5 exceeds max_unit 4/),
      });
      expect((await claim("max-unit", "vm-fits", { VCPU: 4 }, 1)).claimed).toBe(true);
      expect((await claim("units", "vm-ok", { VCPU: 2, MEMORY_MB: 1024, CUSTOM_FPGA: 1 }, 1)).claimed).toBe(
        true,
      );
      expect(await reason({ VCPU: 2, CUSTOM_FPGA: 1 })).toMatch(/insufficient CUSTOM_FPGA/);
      const h = await consistent("units");
      expect(Object.keys(h.held)).toEqual(["vm-ok"]);
    });

    it("a class with unit rules is claimed through a read, conditioned on the rules it checked", async () => {
      await host("stepped", { MEMORY_MB: inv(1_000_000, { step_size: 7 }), VCPU: inv(4) });
      expect((await getHost("stepped"))!.claim_limit).toEqual({ VCPU: MAX_INT });
      expect(await claim("stepped", "vm-1", { MEMORY_MB: 700, VCPU: 1 }, 1)).toMatchObject({ claimed: true });
      expect(await claim("stepped", "vm-2", { MEMORY_MB: 701 }, 1)).toMatchObject({
        claimed: false,
        reason: expect.stringMatching(/not a multiple of step_size 7/),
      });
      await setInventory("stepped", "MEMORY_MB", inv(1_000_000, { step_size: 100 }));
      expect(await claim("stepped", "vm-3", { MEMORY_MB: 700 }, 1)).toMatchObject({ claimed: true });
      expect(await claim("stepped", "vm-4", { MEMORY_MB: 770 }, 1)).toMatchObject({
        claimed: false,
        reason: expect.stringMatching(/not a multiple of step_size 100/),
      });
      await setInventory("stepped", "MEMORY_MB", inv(1_000_000));
      expect((await getHost("stepped"))!.claim_limit).toEqual({ VCPU: MAX_INT, MEMORY_MB: MAX_INT });
      expect(await claim("stepped", "vm-5", { MEMORY_MB: 770 }, 1)).toMatchObject({ claimed: true });
      await consistent("stepped");
    });

    it("64 claimers of a stepped class for 10 slots: exactly 10 win", async () => {
      await host("stepped-race", { CUSTOM_SLOT: inv(20, { step_size: 2, min_unit: 2 }) });
      const results = await Promise.all(
        Array.from({ length: 64 }, (_, i) => claim("stepped-race", `vm-${i}`, { CUSTOM_SLOT: 2 }, 1)),
      );
      expect(results.filter((r) => r.claimed)).toHaveLength(10);
      for (const r of results)
        if (!r.claimed) expect(r.reason).toMatch(/insufficient CUSTOM_SLOT|concurrent update/);
      expect((await consistent("stepped-race")).free.CUSTOM_SLOT).toBe(0);
    });

    it("every claim bumps the generation, and so does every release", async () => {
      const g0 = (await host("gen", { VCPU: inv(4) })).generation;
      await claim("gen", "vm-g", { VCPU: 1 }, 1);
      expect((await getHost("gen"))!.generation).toBe(g0 + 1);
      await release("gen", "vm-g", 1);
      expect((await getHost("gen"))!.generation).toBe(g0 + 2);
    });
  });

  describe("inventory updates", () => {
    it("an update that still holds what is allocated applies and recomputes free; one that does not is a 409 naming class, usage and capacity", async () => {
      await host("inv-1", { VCPU: inv(8), MEMORY_MB: inv(8192) });
      await claim("inv-1", "vm-1", { VCPU: 6, MEMORY_MB: 4096 }, 1);
      const g = (await getHost("inv-1"))!.generation;
      const after = (await setInventory("inv-1", "VCPU", inv(8, { allocation_ratio: 2, reserved: 1 }), g))!;
      expect(after.generation).toBe(g + 1);
      expect(after.free.VCPU).toBe(14 - 6);
      expect(after.inventories.VCPU).toMatchObject({ allocation_ratio: 2, reserved: 1 });
      const refused = setInventory("inv-1", "VCPU", inv(8, { reserved: 4 }), g + 1);
      await expect(refused).rejects.toThrow(PlacementConflict);
      await expect(refused).rejects.toThrow(
        "Inventory for 'VCPU' on resource provider 'inv-1' in use: VCPU usage 6 exceeds the new capacity 4.",
      );
      await expect(deleteInventory("inv-1", "MEMORY_MB", g + 1)).rejects.toThrow(
        /MEMORY_MB has 4096 allocated and would be removed/,
      );
      await expect(setInventory("inv-1", "VCPU", inv(16), g)).rejects.toThrow(
        "resource provider generation conflict",
      );
      await release("inv-1", "vm-1", 1);
      expect((await deleteInventory("inv-1", "MEMORY_MB"))!.inventories).not.toHaveProperty("MEMORY_MB");
      await consistent("inv-1");
    });

    it("two admins updating at the same generation: exactly one wins, the other gets a generation conflict", async () => {
      const g = (await host("inv-2", { VCPU: inv(8) })).generation;
      const results = await Promise.allSettled([
        setInventory("inv-2", "VCPU", inv(8, { allocation_ratio: 2 }), g),
        setInventory("inv-2", "VCPU", inv(8, { allocation_ratio: 3 }), g),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      expect(rejected.reason).toBeInstanceOf(PlacementConflict);
      expect((rejected.reason as PlacementConflict).code).toBe("placement.concurrent_update");
      expect((await getHost("inv-2"))!.generation).toBe(g + 1);
    });

    it("inventory updates racing claims and releases: never over capacity, usage always the sum of allocations", async () => {
      const random = rng(11);
      await host("inv-3", { VCPU: inv(16), MEMORY_MB: inv(32768) });
      const outcomes: string[] = [];
      const ops: Promise<unknown>[] = [];
      for (let i = 0; i < 48; i++) {
        ops.push(claim("inv-3", `vm-${i}`, { VCPU: 1 + Math.floor(random() * 2), MEMORY_MB: 1024 }, 1));
        if (i % 6 === 0) {
          const ratio = [1, 1.5, 2, 0.5][Math.floor(random() * 4)]!;
          ops.push(
            setInventory("inv-3", "VCPU", inv(16, { allocation_ratio: ratio })).then(
              () => outcomes.push(`ratio ${ratio}`),
              (e: unknown) => {
                expect(e).toBeInstanceOf(PlacementConflict);
                outcomes.push("in use");
              },
            ),
          );
        }
        if (i % 5 === 4) ops.push(release("inv-3", `vm-${i - 4}`, 1));
      }
      await Promise.all(ops);
      expect(outcomes).toHaveLength(8);
      await consistent("inv-3");
    });

    it("the agent's re-registration keeps an admin's reserved and allocation_ratio, and is refused when usage would not fit", async () => {
      await host("inv-4", { VCPU: inv(8), MEMORY_MB: inv(8192) });
      await setInventory("inv-4", "VCPU", inv(8, { allocation_ratio: 4, reserved: 2 }));
      const again = await host("inv-4", { VCPU: inv(10), MEMORY_MB: inv(8192) });
      expect(again.inventories.VCPU).toMatchObject({ total: 10, allocation_ratio: 4, reserved: 2 });
      expect(again.free.VCPU).toBe(32);
      await claim("inv-4", "vm-1", { MEMORY_MB: 6000 }, 1);
      await expect(host("inv-4", { VCPU: inv(10), MEMORY_MB: inv(4096) })).rejects.toThrow(
        /MEMORY_MB usage 6000 exceeds the new capacity 4096/,
      );
      expect((await consistent("inv-4")).inventories.MEMORY_MB?.total).toBe(8192);
    });
  });

  describe("the last slot", () => {
    it("32 claimers of the last free slot: exactly one wins, every other says why", async () => {
      await host("last", { VCPU: inv(4) });
      for (let i = 0; i < 3; i++)
        expect((await claim("last", `first-${i}`, { VCPU: 1 }, 1)).claimed).toBe(true);
      const results = await Promise.all(
        Array.from({ length: 32 }, (_, i) => claim("last", `racer-${i}`, { VCPU: 1 }, 1)),
      );
      expect(results.filter((r) => r.claimed)).toHaveLength(1);
      for (const r of results)
        if (!r.claimed) expect(r.reason).toMatch(/^(insufficient VCPU on last|concurrent update on last)/);
      const h = await consistent("last");
      expect(h.free.VCPU).toBe(0);
      expect(h.num_instances).toBe(4);
      // The winner asking again on the now full host is a duplicate, not "insufficient".
      const winner = results.find((r) => r.claimed)!;
      const again = await claim("last", `racer-${results.indexOf(winner)}`, { VCPU: 1 }, 1);
      expect(again).toMatchObject({ claimed: true, duplicate: true });
      expect(await claim("last", "first-0", { VCPU: 1 }, 2)).toMatchObject({
        claimed: false,
        reason: "consumer first-0 already holds an allocation on last for attempt 1",
      });
    });
  });

  describe("claims by consumer", () => {
    it("findClaim and releaseAttemptClaims read the consumer's allocations, not the hosts", async () => {
      await host("by-c-1", { VCPU: inv(4) });
      await host("by-c-2", { VCPU: inv(4) });
      expect((await claim("by-c-1", "vm-q", { VCPU: 1 }, 1)).claimed).toBe(true);
      expect((await claim("by-c-2", "vm-q", { VCPU: 1 }, 2)).claimed).toBe(true);
      expect((await claim("by-c-2", "vm-r", { VCPU: 2 }, 2)).claimed).toBe(true);
      expect(await findClaim("vm-q", 2)).toBe("by-c-2");
      expect(await findClaim("vm-q", 1)).toBe("by-c-1");
      expect(await findClaim("vm-q", 1, ["by-c-2"])).toBeUndefined();
      expect(await findClaim("vm-q", 3)).toBeUndefined();
      expect((await releaseAttemptClaims(["vm-q", "vm-r", "vm-none"], 2)).sort()).toEqual([
        "vm-q@by-c-2",
        "vm-r@by-c-2",
      ]);
      expect(await releaseAttemptClaims(["vm-q", "vm-r"], 2)).toEqual([]);
      expect(Object.keys((await consistent("by-c-1")).held)).toEqual(["vm-q"]);
      expect((await consistent("by-c-2")).held).toEqual({});
    });

    it("the same consumer, host and attempt claimed again after its release counts again (its own request token)", async () => {
      await host("again", { VCPU: inv(2) });
      const t0 = new Date();
      expect((await claim("again", "vm-z", { VCPU: 2 }, 1, t0)).claimed).toBe(true);
      expect(await release("again", "vm-z", 1)).toBe(true);
      expect(await claim("again", "vm-z", { VCPU: 2 }, 1, new Date(t0.getTime() + 1))).toMatchObject({
        claimed: true,
        duplicate: false,
      });
      expect((await consistent("again")).usage.VCPU).toBe(2);
    });
  });

  describe("the provider item and its change feed", () => {
    it("a typical host's item stays under 1 KB and carries no allocations", async () => {
      const h = await registerHost({
        host: "compute-0042.example.org",
        availability_zone: "az1",
        inventories: {
          VCPU: inv(64, { allocation_ratio: 4 }),
          MEMORY_MB: inv(262144, { reserved: 512, allocation_ratio: 1.5 }),
          DISK_GB: inv(2000, { allocation_ratio: 1 }),
        },
        aggregates: ["agg-rack-17"],
        traits: ["COMPUTE_STATUS_ENABLED", "HW_CPU_X86_AVX2"],
        hypervisor_type: "QEMU",
        hypervisor_version: 8002000,
        host_ip: "10.20.30.42",
        supported_instances: [["x86_64", "qemu", "hvm"]],
        queue_url: "https://sqs.us-east-1.amazonaws.com/123456789012/novalessstack-compute-compute-0042",
      });
      for (let i = 0; i < 20; i++)
        expect(
          (await claim(h.host, `vm-size-${i}`, { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 40 }, 1)).claimed,
        ).toBe(true);
      const item = (await getHost(h.host))!;
      expect(item).not.toHaveProperty("allocations");
      expect(item.service).not.toHaveProperty("last_heartbeat");
      const bytes = dynamoItemSize(item as unknown as Record<string, unknown>);
      console.log(
        `provider item of a typical host (3 classes, 2 traits, 1 aggregate, 20 claims): ${bytes} bytes`,
      );
      expect(bytes).toBeLessThanOrEqual(1024);
    });

    it("every write stamps changed_at; readChangedHosts returns only what changed since, readAllHosts everything", async () => {
      const names = Array.from({ length: 12 }, (_, i) => `feed-${i}`);
      for (const n of names) await host(n, { VCPU: inv(8) });
      const all = await readAllHosts(3);
      for (const n of names) expect(all.map((h) => h.host)).toContain(n);
      const byName = new Map(all.map((h) => [h.host, h]));
      expect(new Set(names.map(feedOf)).size).toBe(FEED_SHARDS.length);
      const since = names
        .map((n) => byName.get(n)!.changed_at)
        .sort()
        .at(-1)!;
      await new Promise((r) => setTimeout(r, 5));
      // One write of each kind, each to its own host.
      await claim("feed-1", "vm-f", { VCPU: 1 }, 1);
      await setInventory("feed-2", "VCPU", inv(16));
      await recordBuildResult("feed-3", false, 0);
      await host("feed-4", { VCPU: inv(10) });
      await setServiceStatus("feed-5", { disabled: true, disabled_reason: "feed" });
      await recordInFlight("feed-6", 0);
      expect(await deleteComputeService("feed-7", new Date().toISOString())).toBe("deleted");
      const before = (await getHost("feed-1"))!.changed_at;
      await new Promise((r) => setTimeout(r, 5));
      await release("feed-1", "vm-f", 1);
      expect((await getHost("feed-1"))!.changed_at > before).toBe(true);
      const changed = async () =>
        (await readChangedHosts(since))
          .map((h) => h.host)
          .filter((n) => n.startsWith("feed-"))
          .sort();
      // Reads are eventually consistent: wait until they have caught up.
      const want = ["feed-1", "feed-2", "feed-3", "feed-4", "feed-5", "feed-6", "feed-7"];
      for (let i = 0; i < 50 && JSON.stringify(await changed()) !== JSON.stringify(want); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await changed()).toEqual(want);
      const latest = (await readChangedHosts(since)).find((h) => h.host === "feed-1")!;
      expect(latest.num_instances).toBe(0);
    });

    it("a new host's registration is one transaction: provider, feed entry and heartbeat; a known host's is refused whole", async () => {
      const reg = {
        host: "fresh",
        availability_zone: "az1",
        inventories: { VCPU: inv(8) },
        hypervisor_type: "fake",
        hypervisor_version: 1,
        host_ip: "10.0.0.1",
        supported_instances: [] as [string, string, string][],
        queue_url: "http://unused",
      };
      const since = new Date(Date.now() - 1000).toISOString();
      const now = new Date();
      const created = (await registerNewHost(reg, now))!;
      expect(created.generation).toBe(1);
      expect(await getHost("fresh")).toEqual(created);
      expect(await getServiceHeartbeat("fresh")).toEqual({
        host: "fresh",
        last_heartbeat: now.toISOString(),
      });
      const fed = async () => (await readChangedHosts(since)).filter((h) => h.host === "fresh");
      for (let i = 0; i < 50 && (await fed()).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await fed()).map((h) => h.changed_at)).toEqual([created.changed_at]);
      // there already: nothing of the three is written, not even the heartbeat
      expect(
        await registerNewHost({ ...reg, inventories: { VCPU: inv(16) } }, new Date(now.getTime() + 1000)),
      ).toBeUndefined();
      expect(await getHost("fresh")).toEqual(created);
      expect((await getServiceHeartbeat("fresh"))?.last_heartbeat).toBe(now.toISOString());
    });

    it("recordBuildResult sets num_io_ops to what is in flight and counts failures in one write", async () => {
      await host("io", { VCPU: inv(8) });
      for (let i = 0; i < 3; i++) await claim("io", `vm-io-${i}`, { VCPU: 1 }, 1);
      expect((await getHost("io"))!.num_io_ops).toBe(3);
      await recordBuildResult("io", false, 2);
      await recordBuildResult("io", false, 1);
      expect((await getHost("io"))!).toMatchObject({ num_io_ops: 1, stats: { failed_builds: 2 } });
      await recordBuildResult("io", true, 0);
      expect((await getHost("io"))!).toMatchObject({ num_io_ops: 0, stats: { failed_builds: 0 } });
      await expect(recordBuildResult("no-such-host", true, 0)).rejects.toThrow();
    });

    it("recordInFlight sets num_io_ops alone; a restarted service's registration counts its stats from 0", async () => {
      await host("io-2", { VCPU: inv(8) });
      for (let i = 0; i < 2; i++) await claim("io-2", `vm-io2-${i}`, { VCPU: 1 }, 1);
      await recordBuildResult("io-2", false, 1);
      expect((await getHost("io-2"))!).toMatchObject({ num_io_ops: 1, stats: { failed_builds: 1 } });
      await claim("io-2", "vm-io2-2", { VCPU: 1 }, 1);
      await recordInFlight("io-2", 1);
      expect((await getHost("io-2"))!).toMatchObject({ num_io_ops: 1, stats: { failed_builds: 1 } });
      await claim("io-2", "vm-io2-3", { VCPU: 1 }, 1);
      // a deleted service's host has nothing to set: the heartbeat goes on
      expect(await recordInFlight("no-such-host", 0)).toBe(false);
      // the agent restarts (Nova's compute stats are the service's memory)
      await host("io-2", { VCPU: inv(8) });
      expect((await getHost("io-2"))!).toMatchObject({ num_io_ops: 0, stats: { failed_builds: 0 } });
    });
  });

  describe("audit", () => {
    it("finds each kind of leak, repairs it once, and a second run finds nothing", async () => {
      const now = new Date();
      const old = new Date(now.getTime() - 3600_000);
      await host("audit-a", { VCPU: inv(16), MEMORY_MB: inv(16384) });
      await host("audit-b", { VCPU: inv(16), MEMORY_MB: inv(16384) });
      const res = { VCPU: 1, MEMORY_MB: 512 };
      // Healthy: active on a, building on a.
      await putInstance("ok-active", { vm_state: "active", host: "audit-a", attempt: 1 });
      await claim("audit-a", "ok-active", res, 1);
      await putInstance("ok-building", { host: "audit-a", attempt: 2 });
      await claim("audit-a", "ok-building", res, 2);
      // Mid-placement: claimed for attempt 1 a second ago, not yet recorded.
      await putInstance("mid-placement", { attempt: 0 });
      await claim("audit-b", "mid-placement", res, 1);
      // Leaks.
      await plantAllocation("audit-a", "no-such-instance", res, 1, old);
      await putInstance("deleted-one", { deleted: true, vm_state: "deleted", host: "audit-a", attempt: 1 });
      await plantAllocation("audit-a", "deleted-one", res, 1, old);
      await putInstance("errored", { vm_state: "error", host: null, attempt: 1 });
      await plantAllocation("audit-b", "errored", res, 1, old);
      await putInstance("moved", { vm_state: "active", host: "audit-a", attempt: 2 });
      await claim("audit-a", "moved", res, 2);
      await plantAllocation("audit-b", "moved", res, 1, old);
      await putInstance("stale-build", { host: "audit-a", attempt: 1 });
      await claim("audit-a", "stale-build", res, 1);
      await plantAllocation("audit-b", "stale-build", res, 1, old);
      // Counting drift: usage and free edited behind placement's back.
      await dynamo().send(
        new UpdateCommand({
          TableName: resources().hostsTable,
          Key: { host: "audit-b" },
          UpdateExpression:
            "SET #usage.VCPU = #usage.VCPU + :three, #free.MEMORY_MB = :bogus, num_instances = num_instances + :three",
          ExpressionAttributeNames: { "#usage": "usage", "#free": "free" },
          ExpressionAttributeValues: { ":three": 3, ":bogus": 7 },
        }),
      );

      const report = await auditPlacement({ hosts: AUDITED, now, graceSeconds: 300 });
      const kinds = report.findings
        .map((f) => `${f.kind} ${f.host} ${f.consumer ?? f.resource_class}`)
        .sort();
      expect(kinds).toEqual(
        [
          "consumer_deleted audit-a deleted-one",
          "consumer_elsewhere audit-b moved",
          "consumer_elsewhere audit-b stale-build",
          "consumer_error audit-b errored",
          "consumer_missing audit-a no-such-instance",
          "free_mismatch audit-b MEMORY_MB",
          "free_mismatch audit-b VCPU",
          "instances_mismatch audit-b undefined",
          "usage_mismatch audit-b VCPU",
        ].sort(),
      );
      expect(report.pending.map((f) => f.consumer)).toEqual(["mid-placement"]);
      expect(report.findings.every((f) => f.repaired === undefined)).toBe(true);

      const repaired = await auditPlacement({ hosts: AUDITED, now, graceSeconds: 300, repair: true });
      expect(repaired.findings).toHaveLength(9);
      for (const f of repaired.findings) expect(f.repaired, `${f.kind} ${f.consumer}`).toBeTruthy();
      const a = await consistent("audit-a");
      const b = await consistent("audit-b");
      expect(Object.keys(a.held).sort()).toEqual(["moved", "ok-active", "ok-building", "stale-build"]);
      expect(Object.keys(b.held)).toEqual(["mid-placement"]);

      const clean = await auditPlacement({ hosts: AUDITED, now, graceSeconds: 300, repair: true });
      expect(clean.findings).toEqual([]);
      expect(clean.pending).toHaveLength(1);
      // Past the grace period the mid-placement claim that was never recorded is a leak too.
      const later = await auditPlacement({
        hosts: AUDITED,
        now: new Date(now.getTime() + 3600_000),
        graceSeconds: 300,
      });
      expect(later.findings.map((f) => `${f.kind} ${f.consumer}`)).toEqual([
        "consumer_elsewhere mid-placement",
      ]);
    });

    it("an instance running on a host without its allocation is a missing claim: reported, never repaired", async () => {
      await host("audit-m", { VCPU: inv(8) });
      await putInstance("unclaimed", { vm_state: "active", host: "audit-m", attempt: 1 });
      await putInstance("claimed", { vm_state: "active", host: "audit-m", attempt: 1 });
      await claim("audit-m", "claimed", { VCPU: 1 }, 1);
      await putInstance("still-building", { host: "audit-m", attempt: 1 });
      const report = await auditPlacement({ hosts: ["audit-m"], repair: true, graceSeconds: 0 });
      expect(report.findings.map((f) => `${f.kind} ${f.consumer} ${f.repaired}`)).toEqual([
        "claim_missing unclaimed undefined",
      ]);
      expect(auditExitCode(report)).toBe(3);
      expect(formatAuditReport(report)).toMatch(
        /missing\s+audit-m {2}consumer unclaimed: instance unclaimed is active on audit-m/,
      );
      expect(Object.keys((await consistent("audit-m")).held)).toEqual(["claimed"]);
    });

    it("repair racing claims and releases loses none of them", async () => {
      await host("audit-c", { VCPU: inv(64) });
      for (let i = 0; i < 8; i++) await plantAllocation("audit-c", `leak-${i}`, { VCPU: 1 }, 1, new Date(0));
      const claims = Array.from({ length: 24 }, (_, i) =>
        putInstance(`live-${i}`, { vm_state: "active", host: "audit-c", attempt: 1 }).then(() =>
          claim("audit-c", `live-${i}`, { VCPU: 1 }, 1),
        ),
      );
      const audit = auditPlacement({ hosts: ["audit-c"], repair: true, graceSeconds: 0 });
      await Promise.all([...claims, audit]);
      await auditPlacement({ hosts: ["audit-c"], repair: true, graceSeconds: 0 });
      const h = await consistent("audit-c");
      expect(Object.keys(h.held).filter((c) => c.startsWith("live-"))).toHaveLength(24);
      expect(Object.keys(h.held).filter((c) => c.startsWith("leak-"))).toHaveLength(0);
    });
  });
}
