// Server group (anti-)affinity under concurrent creates, on the whole local runtime: the late check
// in the claim's transaction (lib/placement/group-claims.ts) holds where the scheduler's filters,
// each judging from what it read before the other's claim, cannot. The race is forced: two hosts,
// single creates at once, and a weigher that sends every decision to the same host first
// (anti-affinity: stack) or to different hosts (affinity: spread). Each scheduler decision loads
// the group's members before the one-at-a-time section, so a concurrent create's claim is not in
// what it filtered by, as with two scheduler containers on AWS.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { ledgerKey, listLedgers, readLedger } from "../../lib/placement/group-claims.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 2,
    buildMs: 50,
    env: { NOVALESS_WEIGHT_CLASSES: "RAMWeigher", NOVALESS_RAM_WEIGHT_MULTIPLIER: "-1" },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const created: string[] = [];
afterEach(async () => {
  await Promise.all(created.splice(0).map((id) => admin.delete(`/v2.1/servers/${id}`)));
  for (const id of created) await admin.waitForStatus(id, ["GONE"]);
  // nothing leaks: no allocation, no usage, and no group ledger counts anyone
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  const counted = async () => (await listLedgers()).filter((l) => Object.keys(l.members).length > 0);
  expect(await eventually(counted, (l) => l.length === 0)).toEqual([]);
});

async function newGroup(policy: string, rules?: Record<string, number>): Promise<string> {
  const r = await client.at("2.64").post("/v2.1/os-server-groups", {
    server_group: { name: `race-${policy}`, policy, ...(rules ? { rules } : {}) },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.server_group.id;
}

/** `n` single creates into `group` at once; each server once it left BUILD, with its decision. */
async function race(group: string, n: number, tag: string) {
  const ids = await Promise.all(
    Array.from({ length: n }, (_, i) => client.createServer({ name: `${tag}-${i}` }, { group })),
  );
  created.push(...ids);
  return Promise.all(
    ids.map(async (id) => {
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
      const decision = (await admin.get(`/v2.1/servers/${id}/os-scheduling`)).body.scheduling;
      return {
        id,
        status: s.status as string,
        host: s["OS-EXT-SRV-ATTR:host"] as string | null,
        fault: s.fault?.message as string | undefined,
        summary: (decision?.summary ?? "") as string,
      };
    }),
  );
}

const LATE_CHECK = /server group [0-9a-f-]+ policy anti-affinity: host host-\d already runs 1 of its members/;

describe("anti-affinity under concurrent creates", () => {
  it("two at once, many rounds: never on one host, and the late check is what kept them apart", async () => {
    const summaries: string[] = [];
    for (let round = 0; round < 4; round++) {
      const group = await newGroup("anti-affinity");
      const servers = await race(group, 2, `anti-${round}`);
      for (const s of servers) expect(s.status, `${s.id}: ${s.fault}`).toBe("ACTIVE");
      expect(new Set(servers.map((s) => s.host)).size, JSON.stringify(servers)).toBe(2);
      summaries.push(...servers.map((s) => s.summary));
      await Promise.all(created.splice(0).map((id) => admin.delete(`/v2.1/servers/${id}`)));
      expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
    }
    // the stacking weigher sent both decisions to one host first: the loser's claim was refused
    // by the group, named in its decision, and it went to the other host
    expect(
      summaries.some((s) => LATE_CHECK.test(s)),
      summaries.join("\n"),
    ).toBe(true);
  });

  it("four at once for two hosts: two ACTIVE on different hosts, two NoValidHost, nothing leaked", async () => {
    const group = await newGroup("anti-affinity");
    const servers = await race(group, 4, "anti-four");
    const up = servers.filter((s) => s.status === "ACTIVE");
    expect(up.length, JSON.stringify(servers)).toBeLessThanOrEqual(2);
    expect(new Set(up.map((s) => s.host)).size).toBe(up.length);
    for (const s of servers.filter((x) => x.status !== "ACTIVE")) {
      expect(s.status).toBe("ERROR");
      expect(s.fault).toMatch(/No valid host was found/);
    }
  });

  it("max_server_per_host 2: five at once for two hosts, never three on one", async () => {
    const group = await newGroup("anti-affinity", { max_server_per_host: 2 });
    const servers = await race(group, 5, "anti-two");
    const up = servers.filter((s) => s.status === "ACTIVE");
    const perHost = new Map<string, number>();
    for (const s of up) perHost.set(s.host!, (perHost.get(s.host!) ?? 0) + 1);
    for (const [host, n] of perHost) expect(n, `${host}: ${JSON.stringify(servers)}`).toBeLessThanOrEqual(2);
  });
});

describe("affinity under concurrent creates", () => {
  it("three at once, spread by the weigher: every ACTIVE member on one host", async () => {
    process.env.NOVALESS_RAM_WEIGHT_MULTIPLIER = "1";
    try {
      const group = await newGroup("affinity");
      const servers = await race(group, 3, "aff");
      const hosts = new Set(servers.filter((s) => s.status === "ACTIVE").map((s) => s.host));
      expect(hosts.size, JSON.stringify(servers)).toBeLessThanOrEqual(1);
      for (const s of servers.filter((x) => x.status !== "ACTIVE")) expect(s.status).toBe("ERROR");
    } finally {
      process.env.NOVALESS_RAM_WEIGHT_MULTIPLIER = "-1";
    }
  });
});

describe("a move into an anti-affinity group's host", () => {
  it("a live migration forced onto another member's host is refused by the group (400), and nothing is claimed there", async () => {
    const group = await newGroup("anti-affinity");
    const [a] = await race(group, 1, "lm-a");
    const [b] = await race(group, 1, "lm-b");
    expect([a!.status, b!.status]).toEqual(["ACTIVE", "ACTIVE"]);
    expect(a!.host).not.toBe(b!.host);
    // forced (2.30 to 2.67): no filters, but the claim's late check still holds the policy; before
    // 2.34 the API waits for the conductor's verdict (Nova's synchronous pre-checks)
    const r = await admin.at("2.30").post(`/v2.1/servers/${b!.id}/action`, {
      "os-migrateLive": { host: a!.host, block_migration: "auto", force: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.badRequest.message).toMatch(
      new RegExp(
        `Failed to validate instance group policy due to: server group ${group} policy anti-affinity: host ${a!.host} already runs 1 of its members`,
      ),
    );
    await admin.waitForStatus(b!.id, ["ACTIVE"]);
    expect((await consumerAllocations(b!.id)).map((x) => x.host)).toEqual([b!.host]);
    const ledger = (host: string) => readLedger(ledgerKey({ id: group, policy: "anti-affinity" }, host));
    expect((await ledger(a!.host!)).members).toEqual({ [a!.id]: { [a!.host!]: 1 } });
    expect((await ledger(b!.host!)).members).toEqual({ [b!.id]: { [b!.host!]: 1 } });
  });
});
