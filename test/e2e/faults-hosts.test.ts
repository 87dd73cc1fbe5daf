// Hosts come and go: a host that dies mid-build, one that stops gracefully, one an operator
// disables or forces down. Nothing stays in BUILD and no claim leaks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { getInstance } from "../../lib/instances/queries.js";
import { getHost } from "../../lib/placement/hosts.js";
import { getServiceHeartbeat } from "../../lib/placement/liveness.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, claimHosts, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    buildMs: 1500,
    heartbeatSeconds: 1,
    watchdogIntervalMs: 0, // the tests run it when they mean to
    env: { NOVALESS_SERVICE_DOWN_TIME: "4" },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

async function buildEvents(id: string): Promise<{ result: string; host: string; details: string | null }[]> {
  const actions = await admin.get(`/v2.1/servers/${id}/os-instance-actions`);
  const rid = actions.body.instanceActions[0].request_id;
  const detail = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${rid}`);
  return detail.body.instanceAction.events.filter(
    (e: { event: string }) => e.event === "compute_build_and_run_instance",
  );
}

/**
 * The host the build is spawning on, once its driver has the spawn in hand. The record says
 * `spawning` when compute-events took the host's build_started report, a moment before the
 * spawn_instance cast reaches the host: a stop in between leaves the cast in the queue (as a
 * stopped nova-compute leaves its RPC messages), which is not a build in flight.
 */
async function spawningOn(id: string): Promise<string> {
  const rec = await eventually(
    () => getInstance(id),
    (r) => r?.task_state === "spawning",
  );
  expect(rec?.task_state).toBe("spawning");
  const host = rec!.host!;
  const driver = runtime.hosts.get(host)!.driver as FakeDriver;
  await eventually(
    async () => driver.spawns.get(id) ?? 0,
    (n) => n > 0,
  );
  return host;
}

describe("an idle host's heartbeats", () => {
  it("report with nothing new only when due: every other interval (1 s) against 4 s, and the host stays up", async () => {
    // lib/compute/heartbeat.ts: an idle agent checks every report_interval and sends only what
    // keeps its Services record fresh with one interval to spare; every check used to write
    await eventually(
      () => getServiceHeartbeat("host-3"),
      (s) => s !== undefined,
    );
    const seen: number[] = [];
    const until = Date.now() + 6500;
    while (Date.now() < until) {
      const at = Date.parse((await getServiceHeartbeat("host-3"))!.last_heartbeat);
      if (seen.at(-1) !== at) seen.push(at);
      await new Promise((r) => setTimeout(r, 100));
    }
    const gaps = seen.slice(1).map((t, i) => t - seen[i]!);
    // 6.5 s at one report every 2 s: 3 or 4 values, about 2 s apart (every second, 6 or 7)
    expect(seen.length, `heartbeats at ${gaps.join(", ")} ms apart`).toBeGreaterThanOrEqual(3);
    expect(seen.length, `heartbeats at ${gaps.join(", ")} ms apart`).toBeLessThanOrEqual(4);
    for (const g of gaps) expect(g).toBeGreaterThan(1500);
    const services = await admin.get("/v2.1/os-services?binary=nova-compute&host=host-3");
    expect(services.body.services).toEqual([expect.objectContaining({ host: "host-3", state: "up" })]);
  });
});

describe("a host dies mid-build", () => {
  it("the watchdog fences the attempt, releases its claim and the build lands elsewhere", async () => {
    const id = await client.createServer({ name: "orphan" });
    const dead = await spawningOn(id);
    await runtime.killHost(dead);

    // Before service_down_time passes the host still counts as up: nothing is done.
    expect(await runtime.runWatchdog()).toEqual([]);
    await new Promise((r) => setTimeout(r, 4500));
    const actions = await runtime.runWatchdog();
    expect(actions).toEqual([
      expect.objectContaining({ instance_uuid: id, host: dead, action: "fenced", attempt: 1 }),
    ]);
    // The watchdog's liveness sweep marked the host down on its provider item.
    const hv = await admin.get("/v2.1/os-hypervisors/detail");
    expect(
      hv.body.hypervisors.find((h: { hypervisor_hostname: string }) => h.hypervisor_hostname === dead).state,
    ).toBe("down");
    expect(await claimHosts(id)).not.toContain(dead);

    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ACTIVE");
    expect(s["OS-EXT-SRV-ATTR:host"]).not.toBe(dead);
    const events = await buildEvents(id);
    expect(events[0]).toMatchObject({ result: "Error", host: dead });
    expect(events[0]!.details).toMatch(/is down/);
    expect(events.at(-1)).toMatchObject({ result: "Success" });
    // A second run finds nothing more to do.
    expect(await runtime.runWatchdog()).toEqual([]);

    // The host comes back: its abandoned message is fenced, nothing is built twice.
    await runtime.restartHost(dead);
    await client.delete(`/v2.1/servers/${id}`);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});

describe("a graceful stop", () => {
  it("hands in-flight builds back through the failure path", async () => {
    const id = await client.createServer({ name: "handed-back" });
    const leaving = await spawningOn(id);
    await runtime.hosts.get(leaving)!.agent.stop({ handBack: true });
    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status).toBe("ACTIVE");
    expect(s["OS-EXT-SRV-ATTR:host"]).not.toBe(leaving);
    const [first] = await buildEvents(id);
    expect(first).toMatchObject({ result: "Error", host: leaving });
    expect(first!.details).toMatch(/interrupted/);
    await runtime.restartHost(leaving);
    await client.delete(`/v2.1/servers/${id}`);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});

describe("operators take hosts out", () => {
  it("disabled and forced-down hosts get no builds; os-hypervisors shows it", async () => {
    const r1 = await admin.at("2.53").call("PUT", "/v2.1/os-services/host-1", {
      status: "disabled",
      disabled_reason: "maintenance",
    });
    expect(r1.status).toBe(200);
    const r2 = await admin.at("2.53").call("PUT", "/v2.1/os-services/host-2", { forced_down: true });
    expect(r2.body.service.state).toBe("down");
    const hv = await admin.get("/v2.1/os-hypervisors/detail");
    const byName = new Map(
      hv.body.hypervisors.map((h: { hypervisor_hostname: string }) => [h.hypervisor_hostname, h]),
    );
    expect(byName.get("host-1")).toMatchObject({ status: "disabled" });
    expect(byName.get("host-2")).toMatchObject({ state: "down" });

    const ids = [await client.createServer({ name: "a" }), await client.createServer({ name: "b" })];
    for (const id of ids) {
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
      expect(s["OS-EXT-SRV-ATTR:host"]).toBe("host-3");
      await client.delete(`/v2.1/servers/${id}`);
    }
    await admin.at("2.53").call("PUT", "/v2.1/os-services/host-1", { status: "enabled" });
    await admin.at("2.53").call("PUT", "/v2.1/os-services/host-2", { forced_down: false });
  });
});

describe("failed_builds", () => {
  it("rises with each failed build on a host and resets on a success", async () => {
    const id = await client.createServer({ name: "bad", imageRef: "broken" });
    expect((await admin.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ERROR");
    const hosts = (await buildEvents(id)).map((e) => e.host);
    expect(hosts).toHaveLength(3);
    for (const h of hosts) expect((await getHost(h))!.stats.failed_builds).toBeGreaterThanOrEqual(1);
    // A success on the same host (forced there, admin only) resets its count. No zone: Nova's
    // zone prefilter would refuse a host forced into a zone it is not in.
    const ok = await admin.createServer({ name: "good", availability_zone: `:${hosts[0]}` });
    expect((await admin.waitForStatus(ok, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    expect((await getHost(hosts[0]!))!.stats.failed_builds).toBe(0);
    // A success after no failure that leaves nothing in flight sets num_io_ops (one more for
    // each claim) back to 0 in its own report, once a heartbeat check; any other leaves it to the
    // host's next heartbeat (test/unit/compute/build-stats.test.ts).
    const again = await admin.createServer({ name: "good-again", availability_zone: `:${hosts[0]}` });
    expect((await admin.waitForStatus(again, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    expect(
      await eventually(
        async () => (await getHost(hosts[0]!))!.num_io_ops,
        (n) => n === 0,
      ),
    ).toBe(0);
    await client.delete(`/v2.1/servers/${id}`);
    await admin.delete(`/v2.1/servers/${ok}`);
    await admin.delete(`/v2.1/servers/${again}`);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});
