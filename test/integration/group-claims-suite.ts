// Server group (anti-)affinity's late check in the claim's transaction (lib/placement/group-claims.ts),
// against a real DynamoDB implementation through the real SDK: the same suite runs on dynalite
// (group-claims-dynalite.test.ts) and on DynamoDB Local (group-claims-dynamodb-local.test.ts).
// Racing claimers stand for concurrent scheduler containers and conductors: nothing in-process
// serializes them, only the transaction.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DeleteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo, resetClients } from "../../lib/aws/clients.js";
import { resources } from "../../lib/config.js";
import { getAllocation, listAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { countedByAllocations } from "../../lib/placement/audit-groups.js";
import { INVENTORY_DEFAULTS } from "../../lib/placement/capacity.js";
import { claim, moveAllocation, release } from "../../lib/placement/claims.js";
import { type ClaimGroup, ledgerKey, readLedger } from "../../lib/placement/group-claims.js";
import { getHost, registerHost } from "../../lib/placement/hosts.js";
import type { Inventory } from "../../lib/placement/types.js";
import { applyEnv } from "../../local/emulators.js";
import { createTables, localTables } from "../../local/tables.js";
import type { DynamoBackend } from "./placement-suite.js";

function inv(total: number): Inventory {
  return { total, ...INVENTORY_DEFAULTS };
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

function shuffled<T>(xs: readonly T[], random: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

async function hosts(names: string[]): Promise<void> {
  for (const host of names)
    await registerHost({
      host,
      availability_zone: "az1",
      inventories: { VCPU: inv(64), MEMORY_MB: inv(1_000_000) },
      hypervisor_type: "fake",
      hypervisor_version: 1,
      host_ip: "10.0.0.1",
      supported_instances: [],
      queue_url: "http://unused",
    });
}

const ONE = { VCPU: 1, MEMORY_MB: 64 };

/** A scheduler's claim loop over `candidates` in a random order: the host claimed, and the refusals. */
async function place(
  consumer: string,
  candidates: string[],
  group: ClaimGroup,
  random: () => number,
): Promise<{ host?: string; refusals: string[] }> {
  const refusals: string[] = [];
  for (const host of shuffled(candidates, random)) {
    const r = await claim(host, consumer, ONE, 0, { group });
    if (r.claimed) return { host, refusals };
    refusals.push(r.reason);
  }
  return { refusals };
}

/** The group's members per host, by the allocation items that carry the group. */
async function membersByHost(groupId: string): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (const a of await listAllocations()) {
    if (a.group?.id !== groupId) continue;
    out.set(a.host, (out.get(a.host) ?? new Set()).add(a.group.instance));
  }
  return out;
}

/** Every ledger of the group equals what its allocation items count. */
async function ledgersMatch(group: ClaimGroup, onHosts: string[]): Promise<void> {
  const actual = countedByAllocations(await listAllocations());
  for (const pk of new Set(onHosts.map((h) => ledgerKey(group, h)))) {
    expect((await readLedger(pk)).members, `${pk} counts what the allocations hold`).toEqual(
      actual.get(pk) ?? {},
    );
  }
}

export function groupClaimsSuite(backend: DynamoBackend): void {
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

  describe("racing claimers of one group", () => {
    for (const max of [1, 2]) {
      it(`anti-affinity, max_server_per_host ${max}: 12 claimers over 3 hosts never put more than ${max} members on one`, async () => {
        const names = [`anti${max}-a`, `anti${max}-b`, `anti${max}-c`];
        await hosts(names);
        const group: ClaimGroup = { id: `g-anti-${max}`, policy: "anti-affinity", max_server_per_host: max };
        const random = rng(max);
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) => place(`vm-anti${max}-${i}`, names, group, random)),
        );
        const byHost = await membersByHost(group.id);
        for (const [host, members] of byHost)
          expect(members.size, `${host} runs at most ${max} members`).toBeLessThanOrEqual(max);
        // every slot is taken: a claimer refused everywhere was refused by the group
        expect(results.filter((r) => r.host)).toHaveLength(3 * max);
        for (const r of results.filter((x) => !x.host))
          expect(
            r.refusals.some((why) =>
              /policy anti-affinity: host .* already runs \d+ of its members/.test(why),
            ),
          ).toBe(true);
        await ledgersMatch(group, names);
      });
    }

    it("affinity: 10 claimers over 4 hosts, in random orders, never use two hosts", async () => {
      const names = ["aff-a", "aff-b", "aff-c", "aff-d"];
      await hosts(names);
      for (let round = 0; round < 3; round++) {
        const group: ClaimGroup = { id: `g-aff-${round}`, policy: "affinity" };
        const random = rng(10 + round);
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => place(`vm-aff${round}-${i}`, names, group, random)),
        );
        const byHost = await membersByHost(group.id);
        expect([...byHost.keys()], "one host for the whole group").toHaveLength(1);
        expect(results.filter((r) => r.host).length).toBeGreaterThan(0);
        for (const r of results)
          for (const why of r.refusals)
            expect(why).toMatch(/policy affinity: its members run on|concurrent update/);
        await ledgersMatch(group, names);
      }
    });

    it("claims and releases of one anti-affinity group racing: the ledger always equals the allocations", async () => {
      const names = ["churn-a", "churn-b"];
      await hosts(names);
      const group: ClaimGroup = { id: "g-churn", policy: "anti-affinity", max_server_per_host: 2 };
      const random = rng(7);
      for (let round = 0; round < 4; round++) {
        const placed = await Promise.all(
          Array.from({ length: 6 }, (_, i) => place(`vm-churn-${round}-${i}`, names, group, random)),
        );
        const held = await membersByHost(group.id);
        for (const members of held.values()) expect(members.size).toBeLessThanOrEqual(2);
        await Promise.all(
          placed.map((p, i) =>
            p.host && random() < 0.6 ? release(p.host, `vm-churn-${round}-${i}`) : undefined,
          ),
        );
        await ledgersMatch(group, names);
      }
    });
  });

  describe("what the ledger counts", () => {
    it("a release frees the member's slot, and the refusal names the group, the host and the count", async () => {
      await hosts(["free-a"]);
      const group: ClaimGroup = { id: "g-free", policy: "anti-affinity" };
      expect(await claim("free-a", "vm-free-1", ONE, 0, { group })).toMatchObject({ claimed: true });
      expect(await claim("free-a", "vm-free-2", ONE, 0, { group })).toEqual({
        claimed: false,
        host: "free-a",
        reason:
          "server group g-free policy anti-affinity: host free-a already runs 1 of its members (max_server_per_host 1)",
      });
      // the refused claim wrote nothing
      expect(await getAllocation("vm-free-2", "free-a")).toBeUndefined();
      expect(await release("free-a", "vm-free-1")).toBe(true);
      expect((await readLedger(ledgerKey(group, "free-a"))).members).toEqual({});
      expect(await claim("free-a", "vm-free-2", ONE, 0, { group })).toMatchObject({ claimed: true });
      // a repeated claim is a duplicate, not a second member
      expect(await claim("free-a", "vm-free-2", ONE, 0, { group })).toMatchObject({
        claimed: true,
        duplicate: true,
      });
      expect((await readLedger(ledgerKey(group, "free-a"))).members).toEqual({
        "vm-free-2": { "free-a": 1 },
      });
    });

    it("a same-host resize and its migration consumer count the instance once; confirm and revert leave nothing behind", async () => {
      await hosts(["rs-a", "rs-b"]);
      const group: ClaimGroup = { id: "g-rs", policy: "anti-affinity" };
      const pk = ledgerKey(group, "rs-a");
      expect(await claim("rs-a", "vm-rs", ONE, 0, { group })).toMatchObject({ claimed: true });
      // the move: the source's allocation becomes the migration's, still counting the instance
      expect(await moveAllocation("rs-a", "vm-rs", "mig-rs", { fromAttempt: 0 })).toBe(true);
      expect((await getAllocation("mig-rs", "rs-a"))?.group).toEqual({
        ...group,
        instance: "vm-rs",
        max_server_per_host: undefined,
      });
      // the instance claims the same host again (allow_resize_to_same_host): itself is no other member
      expect(await claim("rs-a", "vm-rs", ONE, 1, { group })).toMatchObject({ claimed: true });
      expect((await readLedger(pk)).members).toEqual({ "vm-rs": { "rs-a": 2 } });
      // another member is refused: one member (not two) runs there
      expect(await claim("rs-a", "vm-rs-2", ONE, 0, { group })).toMatchObject({
        claimed: false,
        reason: expect.stringContaining("already runs 1 of its members"),
      });
      // confirm: the migration's allocation released, the instance still counted
      expect(await release("rs-a", "mig-rs")).toBe(true);
      expect((await readLedger(pk)).members).toEqual({ "vm-rs": { "rs-a": 1 } });

      // a move to another host, reverted: the destination's slot is free again
      expect(await moveAllocation("rs-a", "vm-rs", "mig-rs2", { fromAttempt: 1 })).toBe(true);
      expect(await claim("rs-b", "vm-rs", ONE, 2, { group })).toMatchObject({ claimed: true });
      expect(await moveAllocation("rs-a", "mig-rs2", "vm-rs", { attempt: 1 })).toBe(true);
      expect(await release("rs-b", "vm-rs", 2)).toBe(true);
      expect((await readLedger(pk)).members).toEqual({ "vm-rs": { "rs-a": 1 } });
      expect((await readLedger(ledgerKey(group, "rs-b"))).members).toEqual({});
      expect(await claim("rs-b", "vm-rs-2", ONE, 0, { group })).toMatchObject({ claimed: true });
      await ledgersMatch(group, ["rs-a", "rs-b"]);
    });

    it("affinity: the only member may move away, and while it is on both hosts no other member goes to a third", async () => {
      await hosts(["mv-a", "mv-b", "mv-c"]);
      const group: ClaimGroup = { id: "g-mv", policy: "affinity" };
      expect(await claim("mv-a", "vm-mv", ONE, 0, { group })).toMatchObject({ claimed: true });
      expect(await moveAllocation("mv-a", "vm-mv", "mig-mv", { fromAttempt: 0 })).toBe(true);
      expect(await claim("mv-b", "vm-mv", ONE, 1, { group })).toMatchObject({ claimed: true });
      expect(await claim("mv-c", "vm-mv-2", ONE, 0, { group })).toMatchObject({
        claimed: false,
        reason: "server group g-mv policy affinity: its members run on mv-a, mv-b, not on mv-c",
      });
      // confirm: the source freed, the group is where the instance went
      expect(await release("mv-a", "mig-mv")).toBe(true);
      expect(await claim("mv-a", "vm-mv-2", ONE, 0, { group })).toMatchObject({ claimed: false });
      expect(await claim("mv-b", "vm-mv-2", ONE, 0, { group })).toMatchObject({ claimed: true });
    });

    it("a claim without a group writes no ledger and carries no group", async () => {
      await hosts(["plain-a"]);
      expect(await claim("plain-a", "vm-plain", ONE, 0)).toMatchObject({ claimed: true });
      expect((await getAllocation("vm-plain", "plain-a"))?.group).toBeUndefined();
      expect(await release("plain-a", "vm-plain")).toBe(true);
    });
  });

  describe("audit", () => {
    it("finds a ledger entry with no allocation behind it, repairs it once, and the group's slot is free again", async () => {
      await hosts(["audit-g"]);
      const group: ClaimGroup = { id: "g-audit", policy: "anti-affinity" };
      expect(await claim("audit-g", "vm-ghost", ONE, 0, { group })).toMatchObject({ claimed: true });
      // what a crash or a bug could leave: the allocation gone, its counts given back, the ledger not
      await dynamo().send(
        new DeleteCommand({
          TableName: resources().allocationsTable,
          Key: { consumer: "vm-ghost", host: "audit-g" },
        }),
      );
      const h = (await getHost("audit-g"))!;
      await dynamo().send(
        new UpdateCommand({
          TableName: resources().hostsTable,
          Key: { host: "audit-g" },
          UpdateExpression:
            "SET #u.VCPU = :z, #u.MEMORY_MB = :z, #f.VCPU = :fv, #f.MEMORY_MB = :fm, num_instances = :z",
          ExpressionAttributeNames: { "#u": "usage", "#f": "free" },
          ExpressionAttributeValues: {
            ":z": 0,
            ":fv": (h.free.VCPU ?? 0) + 1,
            ":fm": (h.free.MEMORY_MB ?? 0) + 64,
          },
        }),
      );
      expect(await claim("audit-g", "vm-next", ONE, 0, { group })).toMatchObject({
        claimed: false,
        reason: expect.stringContaining("already runs 1"),
      });
      const found = await auditPlacement({ hosts: ["audit-g"] });
      expect(found.findings).toEqual([
        expect.objectContaining({
          kind: "group_ledger_mismatch",
          host: "audit-g",
          consumer: "vm-ghost",
          detail: "server group g-audit counts instance vm-ghost on audit-g (1) with no allocation behind it",
        }),
      ]);
      expect(found.findings[0]!.repaired).toBeUndefined();
      const repaired = await auditPlacement({ hosts: ["audit-g"], repair: true });
      expect(repaired.findings).toHaveLength(1);
      expect(repaired.findings[0]!.repaired).toMatch(/set from the allocations/);
      expect((await auditPlacement({ hosts: ["audit-g"], repair: true })).findings).toEqual([]);
      expect(await claim("audit-g", "vm-next", ONE, 0, { group })).toMatchObject({ claimed: true });
    });
  });
}
