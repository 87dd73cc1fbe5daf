// os-scheduling and os-scheduler/plan: admin only, Nova's create checks, nothing written by a plan.
import { beforeEach, describe, expect, it } from "vitest";
import { planView, schedulingView } from "../../../lib/api/views/scheduling.js";
import { type SchedulerConfig, schedulerConfig } from "../../../lib/config.js";
import type { SchedulingRecord } from "../../../lib/instances/types.js";
import { ignoredHints } from "../../../lib/scheduler/ignored-hints.js";
import type { DecisionExplanation, RequestSpec } from "../../../lib/scheduler/types.js";
import { apiCall, type FakeWorld, fakeWorld } from "./fakes.js";
import { record } from "./records.js";

const ID = "6a1f0b8e-1111-4000-8000-000000000001";
const decision: SchedulingRecord = {
  attempt: 1,
  decided_at: "2026-03-01T12:00:01.000Z",
  host: "host-2",
  summary: "host-2 weighed best of 2 hosts",
  explanation: { stages: [], order: [{ host: "host-2", weight: 1 }] },
};
/** Its shape belongs to lib/scheduler; the API passes it through untouched. */
const explanation = {
  index: 0,
  requested: { VCPU: 1, MEMORY_MB: 512, DISK_GB: 1 },
  stages: [{ stage: "ComputeFilter", hosts_in: 2, hosts_passed: 2, rejected: [] }],
  weighers: [],
  order: [{ host: "host-1", nodename: "host-1", weight: 0 }],
} as unknown as DecisionExplanation;

let w: FakeWorld;
beforeEach(() => {
  w = fakeWorld();
});

function call(method: string, path: string, token = "admin-token", body?: unknown) {
  return apiCall(w.deps, method, path, token, body);
}

describe("views", () => {
  it("scheduling: the record, or null without one", () => {
    expect(schedulingView(decision)).toEqual({ scheduling: { ...decision } });
    expect(schedulingView(undefined)).toEqual({ scheduling: null });
    expect(schedulingView({} as SchedulingRecord)).toEqual({ scheduling: null });
  });
  it("plan: selections with alternates, summary, explanations", () => {
    const v = planView(
      {
        selections: [{ host: "h1", nodename: "n1", alternates: [{ host: "h2", nodename: "n2" }] }],
        explanations: [explanation],
        summary: "1 instance: host h1",
        no_valid_host: false,
      },
      ["a warning"],
    );
    expect(v).toEqual({
      plan: {
        selections: [{ host: "h1", nodename: "n1", alternates: [{ host: "h2", nodename: "n2" }] }],
        summary: "1 instance: host h1",
        no_valid_host: false,
        warnings: ["a warning"],
        explanations: [explanation],
      },
    });
  });
});

describe("GET /servers/{id}/os-scheduling", () => {
  it("admins get the decision; members 403, even for their own server", async () => {
    w.instances.set(ID, record({ id: ID }));
    w.scheduling.set(ID, decision);
    const r = await call("GET", `/v2.1/servers/${ID}/os-scheduling`);
    expect(r).toEqual({ status: 200, json: { scheduling: decision } });
    const m = await call("GET", `/v2.1/servers/${ID}/os-scheduling`, "demo-token");
    expect([m.status, m.json.forbidden.message]).toEqual([
      403,
      "Policy doesn't allow os_compute_api:os-scheduling:show to be performed.",
    ]);
  });
  it("null before any decision; 404 for an unknown server; deleted servers still readable", async () => {
    w.instances.set(ID, record({ id: ID }));
    expect((await call("GET", `/v2.1/servers/${ID}/os-scheduling`)).json).toEqual({ scheduling: null });
    const other = "6a1f0b8e-1111-4000-8000-000000000009";
    const nf = await call("GET", `/v2.1/servers/${other}/os-scheduling`);
    expect([nf.status, nf.json.itemNotFound.message]).toEqual([404, `Instance ${other} could not be found.`]);
    expect((await call("GET", "/v2.1/servers/nope/os-scheduling")).status).toBe(404);
    w.instances.set(ID, record({ id: ID, deleted: true, vm_state: "deleted" }));
    w.scheduling.set(ID, decision);
    expect((await call("GET", `/v2.1/servers/${ID}/os-scheduling`)).json.scheduling.host).toBe("host-2");
  });
});

describe("POST /os-scheduler/plan", () => {
  const body = (over: Record<string, unknown> = {}, hints?: Record<string, unknown>) => ({
    server: { name: "vm", flavorRef: "2", imageRef: "cirros", ...over },
    ...(hints ? { "os:scheduler_hints": hints } : {}),
  });

  it("plans the create's RequestSpec and writes nothing", async () => {
    w.catalog.plan = {
      selections: [
        { host: "host-1", nodename: "host-1", alternates: [] },
        { host: "host-2", nodename: "host-2", alternates: [] },
      ],
      explanations: [explanation, { ...explanation, index: 1 }],
      summary: "2 instances: host-1, host-2",
      no_valid_host: false,
    };
    const different = "6a1f0b8e-1111-4000-8000-000000000002";
    const r = await call(
      "POST",
      "/v2.1/os-scheduler/plan",
      "admin-token",
      body({ min_count: 2, availability_zone: "az2" }, { different_host: different }),
    );
    expect(r.status).toBe(200);
    expect(r.json.plan.selections.map((s: { host: string }) => s.host)).toEqual(["host-1", "host-2"]);
    expect(r.json.plan.no_valid_host).toBe(false);
    expect(r.json.plan.explanations).toHaveLength(2);
    // Nova's default enabled_filters do not include DifferentHostFilter: the hint would be ignored
    expect(r.json.plan.warnings).toEqual([
      "The scheduler hint different_host is ignored: DifferentHostFilter is not in enabled_filters.",
    ]);
    expect(w.catalog.planned).toHaveLength(1);
    expect(w.catalog.planned[0]).toMatchObject({
      project_id: "admin",
      flavor: { id: "2", name: "m1.small", memory_mb: 2048 },
      image: { name: "cirros" },
      availability_zone: "az2",
      scheduler_hints: { different_host: different },
      num_instances: 2,
    });
    expect(w.instances.size).toBe(0);
    expect(w.sent).toHaveLength(0);
  });

  it("forced hosts as in a create (az:host → force_hosts)", async () => {
    await call("POST", "/v2.1/os-scheduler/plan", "admin-token", body({ availability_zone: "nova:host-1" }));
    expect(w.catalog.planned[0]).toMatchObject({ availability_zone: "nova", force_hosts: ["host-1"] });
  });

  it("NoValidHost is a 200 plan with the operator's summary", async () => {
    w.catalog.plan = {
      selections: [],
      explanations: [explanation],
      summary: "0/2 hosts are available: 2 lacked MEMORY_MB (needs 99999 MB, largest free 23552 MB).",
      no_valid_host: true,
    };
    const r = await call("POST", "/v2.1/os-scheduler/plan", "admin-token", body());
    expect(r.status).toBe(200);
    expect(r.json.plan).toMatchObject({ no_valid_host: true, selections: [] });
    expect(r.json.plan.summary).toMatch(/lacked MEMORY_MB/);
  });

  it("a create's 400s: bad body, unknown flavor, unavailable zone, unknown group; members 403", async () => {
    expect((await call("POST", "/v2.1/os-scheduler/plan", "admin-token", { server: {} })).status).toBe(400);
    expect(
      (await call("POST", "/v2.1/os-scheduler/plan", "admin-token", body({ flavorRef: "nope" }))).status,
    ).toBe(400);
    const zone = await call(
      "POST",
      "/v2.1/os-scheduler/plan",
      "admin-token",
      body({ availability_zone: "mars" }),
    );
    expect(zone.json.badRequest.message).toBe("The requested availability zone is not available");
    const group = "6a1f0b8e-1111-4000-8000-0000000000aa";
    const g = await call("POST", "/v2.1/os-scheduler/plan", "admin-token", body({}, { group }));
    expect(g.json.badRequest.message).toBe(`Instance group ${group} could not be found.`);
    const m = await call("POST", "/v2.1/os-scheduler/plan", "demo-token", body());
    expect([m.status, m.json.forbidden.message]).toEqual([
      403,
      "Policy doesn't allow os_compute_api:os-scheduler:plan to be performed.",
    ]);
    expect(w.catalog.planned).toHaveLength(0);
  });

  it("a group hint plans with the group but adds no member", async () => {
    const c = await call("POST", "/v2.1/os-server-groups", "admin-token", {
      server_group: { name: "g", policies: ["anti-affinity"] },
    });
    const id = c.json.server_group.id;
    const r = await call(
      "POST",
      "/v2.1/os-scheduler/plan",
      "admin-token",
      body({ min_count: 3 }, { group: id }),
    );
    expect(r.status).toBe(200);
    expect(w.catalog.planned[0]!.scheduler_hints).toEqual({ group: id });
    expect(w.catalog.serverGroups.get(id)!.members).toEqual([]);
  });
});

describe("ignoredHints", () => {
  const base = { scheduler_hints: {} } as unknown as RequestSpec;
  const cfg = (over: Partial<SchedulerConfig> = {}) => ({ ...schedulerConfig(), ...over });

  it("names each hint whose filter is off, and hints no filter reads", () => {
    const spec = {
      ...base,
      scheduler_hints: { same_host: ["x"], query: ["[]"], magic: ["1"], _nova_check_type: ["rebuild"] },
    };
    expect(ignoredHints(spec, cfg({ enabled_filters: ["SameHostFilter"] }))).toEqual([
      "The scheduler hint magic is ignored: no enabled filter reads it.",
      "The scheduler hint query is ignored: JsonFilter is not in enabled_filters.",
    ]);
    expect(ignoredHints(spec, cfg({ enabled_filters: ["SameHostFilter", "JsonFilter"] }))).toHaveLength(1);
  });

  it("names a group policy nothing enforces: a filter for hard ones, a weigher for soft ones", () => {
    const group = (policy: string) =>
      ({ ...base, instance_group: { policy, rules: {}, members: [], hosts: [] } }) as unknown as RequestSpec;
    expect(ignoredHints(group("anti-affinity"), cfg())).toEqual([]);
    expect(ignoredHints(group("anti-affinity"), cfg({ enabled_filters: ["ComputeFilter"] }))).toEqual([
      "The server group's anti-affinity policy is not enforced: ServerGroupAntiAffinityFilter is not in enabled_filters.",
    ]);
    expect(ignoredHints(group("soft-affinity"), cfg({ weight_classes: ["RAMWeigher"] }))).toEqual([
      "The server group's soft-affinity policy is not enforced: ServerGroupSoftAffinityWeigher is not in weight_classes.",
    ]);
  });
});
