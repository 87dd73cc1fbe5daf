// Scheduling on the whole local runtime, through the API: host aggregates and their availability
// zones, server groups (anti-affinity, affinity), the different_host hint, the decision kept on
// the instance (os-scheduling) and the dry run (os-scheduler/plan).
//
// The weighing is made to STACK (RAMWeigher only, multiplier −1: the fullest host wins), so that
// every spread asserted here comes from a filter, not from the weigher; the affinity test spreads
// instead, so that its servers share a host only because of the filter.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { schedulerConfig } from "../../lib/config.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, hostsByName, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 4,
    buildMs: 50,
    env: { NOVALESS_WEIGHT_CLASSES: "RAMWeigher", NOVALESS_RAM_WEIGHT_MULTIPLIER: "-1" },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

/** Servers created by a test, deleted after it so the next one starts from empty hosts. */
const created: string[] = [];
/** Scheduler options a test changed (read on every decision: the runtime is in this process). */
const changedEnv = new Map<string, string | undefined>();
afterEach(async () => {
  for (const [k, v] of changedEnv) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  changedEnv.clear();
  for (const id of created.splice(0)) await admin.delete(`/v2.1/servers/${id}`);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
});

function setEnv(vars: Record<string, string>): void {
  for (const [k, v] of Object.entries(vars)) {
    if (!changedEnv.has(k)) changedEnv.set(k, process.env[k]);
    process.env[k] = v;
  }
}

/** Weigh to spread (the emptiest host wins) for this test. */
const spread = () => setEnv({ NOVALESS_RAM_WEIGHT_MULTIPLIER: "1" });

async function boot(
  server: Record<string, unknown>,
  hints?: Record<string, unknown>,
  as: Client = client,
): Promise<string[]> {
  const r = await as.post("/v2.1/servers", {
    // the reservation names every instance of a multi-create (Nova answers the first server only)
    server: { name: "vm", flavorRef: "1", imageRef: "cirros", return_reservation_id: true, ...server },
    ...(hints ? { "os:scheduler_hints": hints } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  const ids: string[] = r.body.reservation_id
    ? (await as.get(`/v2.1/servers?reservation_id=${r.body.reservation_id}`)).body.servers.map(
        (s: { id: string }) => s.id,
      )
    : [r.body.server.id];
  created.push(...ids);
  return ids;
}

/** Each server, once it left BUILD; fails with the fault if one did not become ACTIVE. */
async function active(ids: string[]): Promise<{ id: string; host: string; zone: string }[]> {
  const out = [];
  for (const id of ids) {
    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status, `${id}: ${JSON.stringify(s.fault)}`).toBe("ACTIVE");
    out.push({
      id,
      host: s["OS-EXT-SRV-ATTR:host"] as string,
      zone: s["OS-EXT-AZ:availability_zone"] as string,
    });
  }
  return out;
}

async function newGroup(policy: string): Promise<string> {
  const r = await client
    .at("2.64")
    .post("/v2.1/os-server-groups", { server_group: { name: `e2e-${policy}`, policy } });
  expect(r.status).toBe(200);
  return r.body.server_group.id;
}

describe("host aggregates and availability zones", () => {
  it("an aggregate with a zone: its hosts form the zone, servers asking for it land there", async () => {
    const c = await admin.post("/v2.1/os-aggregates", {
      aggregate: { name: "e2e-fast", availability_zone: "fastzone" },
    });
    expect(c.status).toBe(200);
    const id = c.body.aggregate.id as string;
    for (const host of ["host-3", "host-4"]) {
      const r = await admin.post(`/v2.1/os-aggregates/${id}/action`, { add_host: { host } });
      expect(r.status).toBe(200);
    }
    const shown = await admin.get(`/v2.1/os-aggregates/${id}`);
    expect(shown.body.aggregate).toMatchObject({
      name: "e2e-fast",
      availability_zone: "fastzone",
      hosts: ["host-3", "host-4"],
      metadata: { availability_zone: "fastzone" },
    });

    // Nova's answers to what an operator gets wrong
    expect(
      (await admin.post(`/v2.1/os-aggregates/${id}/action`, { add_host: { host: "host-3" } })).status,
    ).toBe(409);
    expect(
      (await admin.post(`/v2.1/os-aggregates/${id}/action`, { add_host: { host: "host-99" } })).status,
    ).toBe(404);
    const other = await admin.post("/v2.1/os-aggregates", {
      aggregate: { name: "e2e-slow", availability_zone: "slowzone" },
    });
    const clash = await admin.post(`/v2.1/os-aggregates/${other.body.aggregate.id}/action`, {
      add_host: { host: "host-3" },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.conflictingRequest.message).toMatch(/already in availability zone\(s\) \['fastzone'\]/);
    expect((await admin.delete(`/v2.1/os-aggregates/${other.body.aggregate.id}`)).status).toBe(200);
    expect((await admin.post("/v2.1/os-aggregates", { aggregate: { name: "e2e-fast" } })).status).toBe(409);

    // the zone, for everyone; its hosts, for admins
    const zones = await client.get("/v2.1/os-availability-zone");
    const names = zones.body.availabilityZoneInfo.map((z: { zoneName: string }) => z.zoneName);
    expect(names).toEqual(expect.arrayContaining(["az1", "az2", "fastzone"]));
    const detail = await admin.get("/v2.1/os-availability-zone/detail");
    const fast = detail.body.availabilityZoneInfo.find(
      (z: { zoneName: string }) => z.zoneName === "fastzone",
    );
    expect(Object.keys(fast.hosts).sort()).toEqual(["host-3", "host-4"]);
    expect((await client.get("/v2.1/os-availability-zone/detail")).status).toBe(403);

    const placed = await active(await boot({ name: "fast", min_count: 2, availability_zone: "fastzone" }));
    for (const p of placed) {
      expect(["host-3", "host-4"]).toContain(p.host);
      expect(p.zone).toBe("fastzone");
    }

    // an aggregate with hosts cannot go (Nova: 400); emptied, it can
    expect((await admin.delete(`/v2.1/os-aggregates/${id}`)).status).toBe(400);
    for (const host of ["host-3", "host-4"]) {
      expect((await admin.post(`/v2.1/os-aggregates/${id}/action`, { remove_host: { host } })).status).toBe(
        200,
      );
    }
    expect((await admin.delete(`/v2.1/os-aggregates/${id}`)).status).toBe(200);
    expect((await admin.get(`/v2.1/os-aggregates/${id}`)).status).toBe(404);
  });
});

describe("server groups", () => {
  it("members: a create's servers join its group, a delete takes them out", async () => {
    const group = await newGroup("soft-anti-affinity");
    const ids = await boot({ name: "members", min_count: 2 }, { group });
    const g = await client.at("2.64").get(`/v2.1/os-server-groups/${group}`);
    expect(g.body.server_group).toMatchObject({
      policy: "soft-anti-affinity",
      rules: {},
      project_id: "demo",
    });
    expect([...g.body.server_group.members].sort()).toEqual([...ids].sort());
    expect(
      (await client.get("/v2.1/os-server-groups")).body.server_groups.map((x: { id: string }) => x.id),
    ).toContain(group);

    expect((await client.delete(`/v2.1/servers/${ids[0]}`)).status).toBe(204);
    expect((await client.get(`/v2.1/os-server-groups/${group}`)).body.server_group.members).toEqual([ids[1]]);
    expect((await client.delete(`/v2.1/os-server-groups/${group}`)).status).toBe(204);
    expect((await client.get(`/v2.1/os-server-groups/${group}`)).status).toBe(404);
  });

  it("anti-affinity: 3 servers of one create on 3 distinct hosts", async () => {
    const group = await newGroup("anti-affinity");
    const placed = await active(await boot({ name: "anti", min_count: 3 }, { group }));
    expect(new Set(placed.map((p) => p.host)).size).toBe(3);
  });

  it("affinity: every server of the group on one host, across creates", async () => {
    spread();
    const group = await newGroup("affinity");
    const first = await active(await boot({ name: "aff", min_count: 2 }, { group }));
    expect(first[0]!.host).toBe(first[1]!.host);
    const later = await active(await boot({ name: "aff-later" }, { group }));
    expect(later[0]!.host).toBe(first[0]!.host);
  });

  it("a group of another project: 400 with Nova's message", async () => {
    const theirs = await admin.post("/v2.1/os-server-groups", {
      server_group: { name: "admins", policies: ["affinity"] },
    });
    const r = await client.post("/v2.1/servers", {
      server: { name: "vm", flavorRef: "1", imageRef: "cirros" },
      "os:scheduler_hints": { group: theirs.body.server_group.id },
    });
    expect(r.status).toBe(400);
    expect(r.body.badRequest.message).toBe(
      `Instance group ${theirs.body.server_group.id} could not be found.`,
    );
  });
});

describe("scheduler hints", () => {
  it("different_host: away from the named server, where stacking would have put it", async () => {
    setEnv({
      NOVALESS_ENABLED_FILTERS: [
        ...new Set([...schedulerConfig().enabled_filters, "DifferentHostFilter"]),
      ].join(","),
    });
    const [a] = await active(await boot({ name: "a" }));
    const [control] = await active(await boot({ name: "control" }));
    expect(control!.host).toBe(a!.host); // the weigher stacks
    const [b] = await active(await boot({ name: "b" }, { different_host: [a!.id] }));
    expect(b!.host).not.toBe(a!.host);
  });
});

describe("explained decisions", () => {
  it("os-scheduling: the decision for admins, 403 for members, 404 for an unknown server", async () => {
    const [s] = await active(await boot({ name: "explained" }));
    const r = await admin.get(`/v2.1/servers/${s!.id}/os-scheduling`);
    expect(r.status).toBe(200);
    expect(r.body.scheduling).toMatchObject({ attempt: 1, host: s!.host });
    expect(typeof r.body.scheduling.summary).toBe("string");
    expect(r.body.scheduling.explanation).toBeTruthy();
    const m = await client.get(`/v2.1/servers/${s!.id}/os-scheduling`);
    expect(m.status).toBe(403);
    expect(JSON.stringify(m.body)).not.toContain(s!.host);
    expect((await admin.get("/v2.1/servers/6a1f0b8e-1111-4000-8000-0000000000ee/os-scheduling")).status).toBe(
      404,
    );
  });

  it("os-scheduler/plan: a plan for the create, and nothing created or claimed", async () => {
    const before = await admin.get("/v2.1/servers?all_tenants=1");
    const hostsBefore = await hostsByName();
    const r = await admin.post("/v2.1/os-scheduler/plan", {
      server: { name: "dry", flavorRef: "2", imageRef: "cirros", min_count: 2 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.plan.no_valid_host).toBe(false);
    expect(r.body.plan.selections).toHaveLength(2);
    for (const sel of r.body.plan.selections) expect(sel.host).toMatch(/^host-\d$/);
    expect(r.body.plan.explanations.length).toBeGreaterThan(0);
    expect(typeof r.body.plan.summary).toBe("string");

    const after = await admin.get("/v2.1/servers?all_tenants=1");
    expect(after.body.servers).toEqual(before.body.servers);
    const hostsAfter = await hostsByName();
    for (const [name, h] of hostsAfter) {
      expect(h.num_instances, name).toEqual(hostsBefore.get(name)!.num_instances);
      expect(h.generation, name).toEqual(hostsBefore.get(name)!.generation);
      expect(h.usage, name).toEqual(hostsBefore.get(name)!.usage);
    }
    expect(
      (
        await client.post("/v2.1/os-scheduler/plan", {
          server: { name: "x", flavorRef: "1", imageRef: "cirros" },
        })
      ).status,
    ).toBe(403);
  });

  it("os-scheduler/plan: NoValidHost, with a summary that names the reason", async () => {
    const f = await admin.post("/v2.1/flavors", {
      flavor: { name: "e2e.enormous", ram: 262144, vcpus: 2, disk: 10 },
    });
    expect(f.status).toBe(200);
    const r = await admin.post("/v2.1/os-scheduler/plan", {
      server: { name: "huge", flavorRef: f.body.flavor.id, imageRef: "cirros" },
    });
    expect(r.status).toBe(200);
    expect(r.body.plan.no_valid_host).toBe(true);
    expect(r.body.plan.selections).toEqual([]);
    expect(r.body.plan.summary).toMatch(/^0\/4 hosts are available: 4 .*MEMORY_MB/);
  });
});
