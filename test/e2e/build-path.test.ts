// The whole build path on the local runtime: HTTP → queue → conductor → scheduler → claim →
// host queue → compute → ACTIVE, and the ways it ends in ERROR.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computeQueueName } from "../../lib/compute/queue-name.js";
import { resources } from "../../lib/config.js";
import { DLQ_SUFFIX } from "../../lib/resources.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, hostsByName, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 4, buildMs: 50 }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

interface Hypervisor {
  vcpus_used: number;
  memory_mb_used: number;
  local_gb_used: number;
  running_vms: number;
}

async function hypervisor(host: string): Promise<Hypervisor> {
  const r = await admin.get("/v2.1/os-hypervisors/detail");
  expect(r.status).toBe(200);
  const h = r.body.hypervisors.find((x: { hypervisor_hostname: string }) => x.hypervisor_hostname === host);
  expect(h, `hypervisor ${host}`).toBeDefined();
  return h;
}

describe("create → ACTIVE → delete", () => {
  it("builds on a host, counts the flavor in its usage, and gives it back on delete", async () => {
    const before = new Map<string, Hypervisor>();
    for (const h of runtime.agents) before.set(h.host, await hypervisor(h.host));

    const id = await client.createServer({ name: "web", flavorRef: "2" }); // m1.small 1/2048/20
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ACTIVE");
    expect(server["OS-EXT-STS:vm_state"]).toBe("active");
    expect(server["OS-EXT-STS:task_state"]).toBeNull();
    expect(server["OS-EXT-SRV-ATTR:host"]).toMatch(/^host-\d$/);
    const host: string = server["OS-EXT-SRV-ATTR:host"];

    const after = await hypervisor(host);
    const was = before.get(host)!;
    expect(after.vcpus_used - was.vcpus_used).toBe(1);
    expect(after.memory_mb_used - was.memory_mb_used).toBe(2048);
    expect(after.local_gb_used - was.local_gb_used).toBe(20);
    expect(after.running_vms - was.running_vms).toBe(1);
    expect(runtime.agents.find((a) => a.host === host)!.guests()).toContain(id);

    // A member does not see which host it landed on (admin-only attribute, as in Nova).
    const mine = await client.get(`/v2.1/servers/${id}`);
    expect(mine.body.server["OS-EXT-SRV-ATTR:host"]).toBeUndefined();

    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    expect((await client.get(`/v2.1/servers/${id}`)).status).toBe(404);
    const back = await eventually(
      () => hypervisor(host),
      (h) => h.vcpus_used === was.vcpus_used,
    );
    expect(back.memory_mb_used).toBe(was.memory_mb_used);
    expect(back.local_gb_used).toBe(was.local_gb_used);
    await eventually(
      async () => runtime.agents.find((a) => a.host === host)!.guests(),
      (g) => !g.includes(id),
    );
    expect(runtime.agents.find((a) => a.host === host)!.guests()).not.toContain(id);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });

  it("records the create action with one scheduling and one build event naming the host", async () => {
    const id = await client.createServer({ name: "audit" });
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ACTIVE");
    const actions = await client.get(`/v2.1/servers/${id}/os-instance-actions`);
    expect(actions.status).toBe(200);
    expect(actions.body.instanceActions).toHaveLength(1);
    const [create] = actions.body.instanceActions;
    expect(create.action).toBe("create");
    const detail = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${create.request_id}`);
    const events = detail.body.instanceAction.events as { event: string; result: string; host: string }[];
    expect(events.map((e) => [e.event, e.result, e.host])).toEqual([
      ["conductor_schedule_and_build_instances", "Success", server["OS-EXT-SRV-ATTR:host"]],
      ["compute_build_and_run_instance", "Success", server["OS-EXT-SRV-ATTR:host"]],
    ]);
    await client.delete(`/v2.1/servers/${id}`);
  });

  it("places a multi-create all at once, each instance in the requested availability zone", async () => {
    const r = await client.post("/v2.1/servers", {
      server: {
        name: "batch",
        flavorRef: "1",
        imageRef: "cirros",
        min_count: 3,
        max_count: 3,
        availability_zone: "az2",
        return_reservation_id: true,
      },
    });
    expect(r.status).toBe(202);
    expect(r.body.reservation_id).toMatch(/^r-/);
    const list = await client.get(`/v2.1/servers/detail?reservation_id=${r.body.reservation_id}`);
    expect(list.body.servers).toHaveLength(3);
    for (const s of list.body.servers) {
      const done = await client.waitForStatus(s.id, ["ACTIVE", "ERROR"]);
      expect(done.status).toBe("ACTIVE");
      expect(done["OS-EXT-AZ:availability_zone"]).toBe("az2");
      await client.delete(`/v2.1/servers/${s.id}`);
    }
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});

describe("forced hosts", () => {
  it("an admin's az:host lands on that host, whatever the weighers prefer", async () => {
    const id = await admin.createServer({ name: "pinned", availability_zone: "az1:host-3" });
    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ACTIVE");
    expect(s["OS-EXT-SRV-ATTR:host"]).toBe("host-3");
    await admin.delete(`/v2.1/servers/${id}`);
  });
});

describe("builds that end in ERROR leave no claim behind", () => {
  it("image `broken`: ERROR after 3 attempts on 3 different hosts", async () => {
    const id = await client.createServer({ name: "doomed", imageRef: "broken" });
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ERROR");
    expect(server.fault.code).toBe(500);
    expect(server.fault.message).toMatch(
      /^Exceeded maximum number of retries\. Exceeded max scheduling attempts 3/,
    );

    const actions = await admin.get(`/v2.1/servers/${id}/os-instance-actions`);
    const rid = actions.body.instanceActions[0].request_id;
    const detail = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${rid}`);
    const events = detail.body.instanceAction.events as { event: string; result: string; host: string }[];
    const builds = events.filter((e) => e.event === "compute_build_and_run_instance");
    expect(builds).toHaveLength(3);
    expect(builds.every((e) => e.result === "Error")).toBe(true);
    expect(new Set(builds.map((e) => e.host)).size).toBe(3);
    expect(detail.body.instanceAction.message).toBe("Error");

    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
    await client.delete(`/v2.1/servers/${id}`);
  });

  it("a flavor bigger than any host: ERROR with NoValidHost, detail for the admin only", async () => {
    const f = await admin.post("/v2.1/flavors", {
      flavor: { name: "m1.enormous", ram: 262144, vcpus: 4, disk: 10 },
    });
    expect(f.status).toBe(200);
    const id = await client.createServer({ name: "too-big", flavorRef: f.body.flavor.id });
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ERROR");
    expect(server.fault.message).toBe("No valid host was found. There are not enough hosts available.");
    expect(server.fault.details).toMatch(/^0\/4 hosts are available: 4 .*MEMORY_MB/);
    const asMember = await client.get(`/v2.1/servers/${id}`);
    expect(asMember.body.server.fault.message).toBe(server.fault.message);
    expect(asMember.body.server.fault.details).toBeUndefined();
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});

describe("delete at any point of the build", () => {
  it("right after create (still queued or scheduling)", async () => {
    const id = await client.createServer({ name: "quick-delete", flavorRef: "3" });
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    expect((await client.get(`/v2.1/servers/${id}`)).status).toBe(404);
    // Let the flow catch up with the delete: it must find the instance gone and claim nothing.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
    for (const a of runtime.agents) expect(a.guests()).not.toContain(id);
  });
});

describe("hosts", () => {
  it("every host registered with its inventory and queue", async () => {
    const hosts = await hostsByName();
    expect([...hosts.keys()].sort()).toEqual(["host-1", "host-2", "host-3", "host-4"]);
    const h1 = hosts.get("host-1")!;
    expect(h1.availability_zone).toBe("az1");
    expect(hosts.get("host-2")!.availability_zone).toBe("az2");
    expect(h1.inventories.MEMORY_MB).toMatchObject({ total: 65536, reserved: 512, allocation_ratio: 1.5 });
    expect(h1.queue_url).toMatch(
      new RegExp(`/${computeQueueName(resources().computeQueuePrefix, "host-1", DLQ_SUFFIX)}$`),
    );
  });
});
