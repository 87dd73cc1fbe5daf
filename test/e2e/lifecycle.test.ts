// Nova's compute lifecycle through the hosts' queues, with the fake driver: os-stop, os-start,
// reboot SOFT/HARD and os-getConsoleOutput, each an instance action with its event; Nova's 409 for
// a transition the state does not allow; a guest that stops on its own goes SHUTOFF (power-state
// sync); an agent restart reconciles (unknown guests destroyed, interrupted builds rescheduled,
// missing guests SHUTOFF); deleting a server on a dead host frees its claim at once and the
// host destroys the guest when it comes back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    buildMs: 20,
    transport: "long-poll",
    heartbeatSeconds: 1,
    // a dead host is noticed within seconds, not Nova's 60
    env: { NOVALESS_SERVICE_DOWN_TIME: "4" },
  }));
});
afterAll(async () => runtime?.stop());

const admin = () => client.as(ADMIN);
const hostOf = async (id: string) =>
  (await admin().get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"] as string;
const driverOf = (host: string) => runtime.hosts.get(host)!.driver as FakeDriver;
const action = (id: string, body: unknown) => client.post(`/v2.1/servers/${id}/action`, body);
const server = async (id: string) => (await admin().get(`/v2.1/servers/${id}`)).body.server;

async function active(): Promise<string> {
  const id = await client.createServer({});
  await client.waitForStatus(id, ["ACTIVE"]);
  return id;
}

describe("power actions", () => {
  it("os-stop → SHUTOFF, os-start → ACTIVE, each an instance action with its event on the host", async () => {
    const id = await active();
    const host = await hostOf(id);
    expect((await action(id, { "os-stop": null })).status).toBe(202);
    const stopped = await client.waitForStatus(id, ["SHUTOFF"]);
    expect(stopped["OS-EXT-STS:power_state"]).toBe(4);
    expect(stopped["OS-EXT-STS:vm_state"]).toBe("stopped");
    expect(driverOf(host).powerState(id)).toBe(4);

    const again = await action(id, { "os-stop": null });
    expect(again.status).toBe(409);
    expect(JSON.stringify(again.body)).toContain(
      `Cannot 'os-stop' instance ${id} while it is in vm_state stopped`,
    );

    expect((await action(id, { "os-start": null })).status).toBe(202);
    const started = await client.waitForStatus(id, ["ACTIVE"]);
    expect(started["OS-EXT-STS:power_state"]).toBe(1);
    expect(driverOf(host).powerState(id)).toBe(1);

    const actions = (await admin().get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
      action: string;
      request_id: string;
    }[];
    expect(actions.map((a) => a.action).sort()).toEqual(["create", "start", "stop"]);
    const stop = actions.find((a) => a.action === "stop")!;
    const detail = (await admin().get(`/v2.1/servers/${id}/os-instance-actions/${stop.request_id}`)).body
      .instanceAction as { events: { event: string; result: string; host?: string }[] };
    expect(detail.events).toEqual([
      expect.objectContaining({ event: "compute_stop_instance", result: "Success", host }),
    ]);
  });

  it("reboot SOFT and HARD come back ACTIVE and restart the guest; a bad type is 400", async () => {
    const id = await active();
    expect((await action(id, { reboot: { type: "SOFT" } })).status).toBe(202);
    const settled = () =>
      eventually(
        () => server(id),
        (s) => s.status === "ACTIVE" && s["OS-EXT-STS:task_state"] === null,
      );
    await settled();
    expect((await action(id, { reboot: { type: "HARD" } })).status).toBe(202);
    await settled();
    const console = await action(id, { "os-getConsoleOutput": {} });
    expect(console.status).toBe(200);
    expect(console.body.output).toMatch(/boot 3/);
    expect((await action(id, { reboot: { type: "WARM" } })).status).toBe(400);
  });

  it("console output keeps the last `length` lines", async () => {
    const id = await active();
    const all = (await action(id, { "os-getConsoleOutput": {} })).body.output as string;
    expect(all.split("\n").length).toBeGreaterThan(3);
    // Nova's _tail_log: the last `length` pieces split at newlines, the empty one after the
    // final newline included
    const r = await action(id, { "os-getConsoleOutput": { length: 2 } });
    expect(r.status).toBe(200);
    expect(r.body.output).toBe(`${all.split("\n").at(-2)}\n`);
  });
});

describe("power-state sync", () => {
  it("a guest that stops on its own is reported and the server goes SHUTOFF", async () => {
    const id = await active();
    driverOf(await hostOf(id)).crash(id);
    const s = await client.waitForStatus(id, ["SHUTOFF"]);
    expect(s["OS-EXT-STS:power_state"]).toBe(4);
  });

  it("an agent restart destroys guests nobody owns and syncs guests the host lost", async () => {
    const id = await active();
    const host = await hostOf(id);
    const driver = driverOf(host);
    const stray = "0b3c2c8e-3d5f-4a8e-9f4e-2a7a1b9c0d11";
    driver.adopt({
      instance_uuid: stray,
      name: "stray",
      hostname: "stray",
      project_id: "p",
      user_id: "u",
      flavor: {
        id: "1",
        name: "m1.tiny",
        vcpus: 1,
        memory_mb: 512,
        root_gb: 1,
        ephemeral_gb: 0,
        swap: 0,
        extra_specs: {},
      },
      image: { id: "i", name: "cirros", properties: {} },
      metadata: {},
    });
    await driver.destroy(id); // the host lost it (a reboot of the hypervisor, say)
    await runtime.restartHost(host);
    await eventually(
      async () => driver.has(stray),
      (has) => !has,
    );
    expect(driver.has(stray)).toBe(false);
    const s = await client.waitForStatus(id, ["SHUTOFF"]);
    expect(s["OS-EXT-STS:power_state"]).toBe(0);
    // os-start creates it again from the instance
    expect((await action(id, { "os-start": null })).status).toBe(202);
    await client.waitForStatus(id, ["ACTIVE"]);
    expect(driver.has(id)).toBe(true);
  });
});

describe("a dead host", () => {
  it("deleting a server on it frees the claim at once; the host destroys the guest when it comes back", async () => {
    const id = await active();
    const host = await hostOf(id);
    await runtime.killHost(host);
    // the liveness sweep marks it down (service_down_time 4 s)
    await eventually(
      async () =>
        (await admin().get("/v2.1/os-services?binary=nova-compute")).body.services as {
          host: string;
          state: string;
        }[],
      (ss) => ss.some((s) => s.host === host && s.state === "down"),
    );
    await runtime.runWatchdog();
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    expect(await consumerAllocations(id)).toEqual([]);
    expect(driverOf(host).has(id)).toBe(true);
    await runtime.restartHost(host);
    await eventually(
      async () => driverOf(host).has(id),
      (has) => !has,
    );
    expect(driverOf(host).has(id)).toBe(false);
  });
});
