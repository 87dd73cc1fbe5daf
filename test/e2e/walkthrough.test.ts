// The anti-affinity walk-through of docs/api.md, as written: three members of an anti-affinity group in
// a three-host zone land on its three hosts; a fourth has nowhere to go and the NoValidHost names
// the zone and the group (not "an earlier instance"); a hint whose filter is off is a warning.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let member: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client: member } = await startTestRuntime({ hosts: 8, buildMs: 20 }));
  admin = member.as(ADMIN);
});
afterAll(async () => runtime?.stop());

async function zone(name: string, hosts: string[]): Promise<void> {
  const agg = await admin.post("/v2.1/os-aggregates", { aggregate: { name, availability_zone: name } });
  expect(agg.status).toBe(200);
  for (const host of hosts) {
    const r = await admin.post(`/v2.1/os-aggregates/${agg.body.aggregate.id}/action`, { add_host: { host } });
    expect(r.status).toBe(200);
  }
}

async function antiAffinityGroup(name: string): Promise<string> {
  const g = await member
    .at("2.64")
    .post("/v2.1/os-server-groups", { server_group: { name, policy: "anti-affinity" } });
  expect(g.status).toBe(200);
  return g.body.server_group.id as string;
}

it("three anti-affinity members in a three-host zone: one on each host; a fourth is refused for the zone and the group", async () => {
  await zone("fastzone", ["host-3", "host-4", "host-5"]);
  const group = await antiAffinityGroup("web");
  const created = await member.post("/v2.1/servers", {
    server: { name: "web", flavorRef: "1", imageRef: "cirros", min_count: 3, availability_zone: "fastzone" },
    "os:scheduler_hints": { group },
  });
  expect(created.status).toBe(202);
  const listed = await member.get("/v2.1/servers");
  const ids = (listed.body.servers as { id: string }[]).map((s) => s.id);
  expect(ids).toHaveLength(3);
  const hosts: string[] = [];
  for (const id of ids) {
    await member.waitForStatus(id, ["ACTIVE"]);
    hosts.push((await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"]);
  }
  expect(hosts.sort()).toEqual(["host-3", "host-4", "host-5"]);

  const fourth = await admin.post("/v2.1/os-scheduler/plan", {
    server: { name: "web-4", flavorRef: "1", imageRef: "cirros", availability_zone: "fastzone" },
    "os:scheduler_hints": { group },
  });
  expect(fourth.body.plan).toMatchObject({
    no_valid_host: true,
    summary:
      "0/8 hosts are available: 5 are not in availability zone fastzone, 3 already run 1 of the anti-affinity group's members.",
    warnings: [],
  });
});

it("a multi-create that outgrows its zone: the failing instance's summary names the zone, not an earlier instance", async () => {
  await zone("smallzone", ["host-6", "host-7"]);
  const group = await antiAffinityGroup("small");
  const plan = await admin.post("/v2.1/os-scheduler/plan", {
    server: { name: "s", flavorRef: "1", imageRef: "cirros", min_count: 3, availability_zone: "smallzone" },
    "os:scheduler_hints": { group },
  });
  expect(plan.body.plan.no_valid_host).toBe(true);
  expect(plan.body.plan.summary).toBe(
    "0/8 hosts are available for instance 3 of 3: 6 are not in availability zone smallzone, 2 already run 1 of the anti-affinity group's members.",
  );
  expect(plan.body.plan.summary).not.toContain("earlier instance");
});

it("a dry run warns of a hint whose filter is not enabled", async () => {
  const plan = await admin.post("/v2.1/os-scheduler/plan", {
    server: { name: "x", flavorRef: "3", imageRef: "cirros" },
    "os:scheduler_hints": { different_host: ["6a1f0b8e-1111-4000-8000-000000000002"] },
  });
  expect(plan.status).toBe(200);
  expect(plan.body.plan.warnings).toEqual([
    "The scheduler hint different_host is ignored: DifferentHostFilter is not in enabled_filters.",
  ]);
});
