// Nova's pause, unpause, suspend and resume through the hosts' queues, with the fake driver: each
// an instance action with its compute_*_instance event on the host; PAUSED (power state 3) and
// SUSPENDED (7); Nova's 409s for the states each allows, and for the other actions in the new
// states (stop, soft reboot, resize), while a hard reboot and a live migration of a paused server
// go through; a locked server refuses its owner; a driver's refusal reverts the task state only;
// the power-state sync as Nova's _sync_instance_power_state for paused and suspended servers and
// for an active one whose guest is paused or suspended; an agent restart keeps them; delete in
// either state leaves no guest and no claim.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { getInstance } from "../../lib/instances/queries.js";
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
    env: { NOVALESS_SERVICE_DOWN_TIME: "4" },
  }));
  for (const h of runtime.hosts.values()) (h.driver as FakeDriver).liveMigrationMs = 200;
});
afterAll(async () => runtime?.stop());

const admin = () => client.as(ADMIN);
const hostOf = async (id: string) => (await getInstance(id))!.host!;
const driverOf = (host: string) => runtime.hosts.get(host)!.driver as FakeDriver;
const action = (id: string, body: unknown, c = client) => c.post(`/v2.1/servers/${id}/action`, body);
const server = async (id: string) => (await admin().get(`/v2.1/servers/${id}`)).body.server;
/** The server once its task is over, in one of `status`. */
const settled = (id: string, status: string) =>
  eventually(
    () => server(id),
    (s) => s.status === status && s["OS-EXT-STS:task_state"] === null,
  );

async function active(): Promise<string> {
  const id = await client.createServer({});
  await client.waitForStatus(id, ["ACTIVE"]);
  return id;
}

async function events(id: string, name: string) {
  const actions = (await admin().get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
    action: string;
    request_id: string;
  }[];
  const a = actions.find((x) => x.action === name);
  if (!a) return undefined;
  return (await admin().get(`/v2.1/servers/${id}/os-instance-actions/${a.request_id}`)).body
    .instanceAction as {
    action: string;
    events: { event: string; result: string | null; host?: string; traceback?: string | null }[];
  };
}

describe("pause and unpause", () => {
  it("PAUSED with power state 3 and back ACTIVE, each an instance action with its event on the host", async () => {
    const id = await active();
    const host = await hostOf(id);
    expect((await action(id, { pause: null })).status).toBe(202);
    const paused = await settled(id, "PAUSED");
    expect(paused["OS-EXT-STS:vm_state"]).toBe("paused");
    expect(paused["OS-EXT-STS:power_state"]).toBe(3);
    expect(driverOf(host).powerState(id)).toBe(3);

    expect((await action(id, { unpause: null })).status).toBe(202);
    const back = await settled(id, "ACTIVE");
    expect(back["OS-EXT-STS:power_state"]).toBe(1);
    expect(driverOf(host).powerState(id)).toBe(1);

    expect((await events(id, "pause"))?.events).toEqual([
      expect.objectContaining({ event: "compute_pause_instance", result: "Success", host }),
    ]);
    expect((await events(id, "unpause"))?.events).toEqual([
      expect.objectContaining({ event: "compute_unpause_instance", result: "Success", host }),
    ]);
    // the listing's status filter finds the new state
    expect((await action(id, { pause: {} })).status).toBe(202); // any body value, as Nova's schema
    await settled(id, "PAUSED");
    const listed = (await client.get("/v2.1/servers?status=PAUSED")).body.servers as { id: string }[];
    expect(listed.map((s) => s.id)).toContain(id);
  });

  it("answers Nova's 409 for the states pause and unpause do not allow, and for stop and a soft reboot of a paused server", async () => {
    const id = await active();
    const unpause = await action(id, { unpause: null });
    expect(unpause.status).toBe(409);
    expect(unpause.body.conflictingRequest.message).toBe(
      `Cannot 'unpause' instance ${id} while it is in vm_state active`,
    );
    expect((await action(id, { pause: null })).status).toBe(202);
    await settled(id, "PAUSED");
    for (const [body, name] of [
      [{ pause: null }, "pause"],
      [{ suspend: null }, "suspend"],
      [{ resume: null }, "resume"],
      [{ "os-stop": null }, "os-stop"],
      [{ "os-start": null }, "os-start"],
      [{ reboot: { type: "SOFT" } }, "reboot"],
      [{ resize: { flavorRef: "2" } }, "resize"],
    ] as const) {
      const r = await action(id, body);
      expect(r.status, name).toBe(409);
      expect(r.body.conflictingRequest.message, name).toBe(
        `Cannot '${name}' instance ${id} while it is in vm_state paused`,
      );
    }
  });

  it("a hard reboot of a paused server makes it ACTIVE (Nova's ALLOW_HARD_REBOOT)", async () => {
    const id = await active();
    await action(id, { pause: null });
    await settled(id, "PAUSED");
    expect((await action(id, { reboot: { type: "HARD" } })).status).toBe(202);
    const s = await settled(id, "ACTIVE");
    expect(s["OS-EXT-STS:power_state"]).toBe(1);
    expect(driverOf(await hostOf(id)).powerState(id)).toBe(1);
  });

  it("a locked server refuses its owner's pause and suspend, not an admin's", async () => {
    const id = await active();
    expect((await action(id, { lock: null })).status).toBe(202);
    for (const body of [{ pause: null }, { suspend: null }]) {
      const r = await action(id, body);
      expect(r.status).toBe(409);
      expect(r.body.conflictingRequest.message).toBe(`Instance ${id} is locked`);
    }
    expect((await action(id, { pause: null }, admin())).status).toBe(202);
    await settled(id, "PAUSED");
    expect((await action(id, { unpause: null })).status).toBe(409);
    expect((await action(id, { unpause: null }, admin())).status).toBe(202);
    await settled(id, "ACTIVE");
  });

  it("a guest the driver cannot pause: the event fails, the task state reverts, the server stays ACTIVE", async () => {
    const id = await active();
    const host = await hostOf(id);
    // the guest stopped behind the host's back, before any sync saw it
    await driverOf(host).powerOff(id);
    expect((await action(id, { pause: null })).status).toBe(202);
    const done = await eventually(
      () => events(id, "pause"),
      (a) => a?.events[0]?.result === "Error",
    );
    expect(done?.events[0]).toMatchObject({ event: "compute_pause_instance", result: "Error" });
    const s = await eventually(
      () => server(id),
      (x) => x["OS-EXT-STS:task_state"] === null,
    );
    expect(["ACTIVE", "SHUTOFF"]).toContain(s.status);
    expect(s.status === "PAUSED").toBe(false);
  });

  it("a paused server migrates live and stays PAUSED on its new host", async () => {
    const id = await active();
    const source = await hostOf(id);
    await action(id, { pause: null });
    await settled(id, "PAUSED");
    expect(
      (await action(id, { "os-migrateLive": { host: null, block_migration: "auto" } }, admin().at("2.25")))
        .status,
    ).toBe(202);
    const s = await eventually(
      () => getInstance(id),
      (r) => r?.host !== source && r?.task_state === null && r.migration === undefined,
    );
    expect(s?.vm_state).toBe("paused");
    expect(driverOf(s!.host!).powerState(id)).toBe(3);
    expect(driverOf(source).has(id)).toBe(false);
    expect((await server(id)).status).toBe("PAUSED");
  });
});

describe("suspend and resume", () => {
  it("SUSPENDED with power state 7 and back ACTIVE, each an instance action with its event", async () => {
    const id = await active();
    const host = await hostOf(id);
    expect((await action(id, { suspend: null })).status).toBe(202);
    const suspended = await settled(id, "SUSPENDED");
    expect(suspended["OS-EXT-STS:vm_state"]).toBe("suspended");
    expect(suspended["OS-EXT-STS:power_state"]).toBe(7);
    expect(driverOf(host).powerState(id)).toBe(7);
    for (const [body, name] of [
      [{ suspend: null }, "suspend"],
      [{ pause: null }, "pause"],
      [{ unpause: null }, "unpause"],
      [{ "os-stop": null }, "os-stop"],
      [{ "os-migrateLive": { host: null, block_migration: "auto" } }, "os-migrateLive"],
    ] as const) {
      const r = await action(id, body, admin().at("2.25"));
      expect(r.status, name).toBe(409);
      expect(r.body.conflictingRequest.message, name).toBe(
        `Cannot '${name}' instance ${id} while it is in vm_state suspended`,
      );
    }
    expect((await action(id, { resume: null })).status).toBe(202);
    await settled(id, "ACTIVE");
    expect(driverOf(host).powerState(id)).toBe(1);
    expect((await events(id, "suspend"))?.events).toEqual([
      expect.objectContaining({ event: "compute_suspend_instance", result: "Success", host }),
    ]);
    expect((await events(id, "resume"))?.events).toEqual([
      expect.objectContaining({ event: "compute_resume_instance", result: "Success", host }),
    ]);
    const again = await action(id, { resume: null });
    expect(again.body.conflictingRequest.message).toBe(
      `Cannot 'resume' instance ${id} while it is in vm_state active`,
    );
  });

  it("a hard reboot of a suspended server makes it ACTIVE", async () => {
    const id = await active();
    await action(id, { suspend: null });
    await settled(id, "SUSPENDED");
    expect((await action(id, { reboot: { type: "HARD" } })).status).toBe(202);
    await settled(id, "ACTIVE");
  });
});

describe("power-state sync (Nova's _sync_instance_power_state)", () => {
  it("a paused server whose guest shuts down goes SHUTOFF; a suspended one keeps its state", async () => {
    const paused = await active();
    await action(paused, { pause: null });
    await settled(paused, "PAUSED");
    driverOf(await hostOf(paused)).crash(paused);
    const p = await settled(paused, "SHUTOFF");
    expect(p["OS-EXT-STS:power_state"]).toBe(4);
    const stop = await events(paused, "stop");
    expect(stop?.action).toBe("stop");

    const suspended = await active();
    await action(suspended, { suspend: null });
    await settled(suspended, "SUSPENDED");
    driverOf(await hostOf(suspended)).crash(suspended);
    const s = await eventually(
      () => server(suspended),
      (x) => x["OS-EXT-STS:power_state"] === 4,
    );
    expect(s.status).toBe("SUSPENDED");
  });

  it("an active server whose guest is paused stays ACTIVE; one whose guest is suspended is stopped, its guest too", async () => {
    const a = await active();
    const hostA = await hostOf(a);
    driverOf(hostA).crash(a, 3);
    const s = await eventually(
      () => server(a),
      (x) => x["OS-EXT-STS:power_state"] === 3,
    );
    expect(s.status).toBe("ACTIVE");

    const b = await active();
    const hostB = await hostOf(b);
    driverOf(hostB).crash(b, 7);
    await settled(b, "SHUTOFF");
    await eventually(
      async () => driverOf(hostB).powerState(b),
      (p) => p === 4,
    );
    expect(driverOf(hostB).powerState(b)).toBe(4);
  });

  it("an agent restart keeps paused and suspended servers as they are", async () => {
    const paused = await active();
    const host = await hostOf(paused);
    const suspended = await admin().createServer({ availability_zone: `nova:${host}` });
    await client.waitForStatus(suspended, ["ACTIVE"]);
    await action(paused, { pause: null });
    await action(suspended, { suspend: null }, admin());
    await settled(paused, "PAUSED");
    await settled(suspended, "SUSPENDED");
    await runtime.restartHost(host);
    // the registration's reconciliation has run once the host is up again
    await eventually(
      async () => (await admin().get("/v2.1/os-services?binary=nova-compute")).body.services,
      (ss) => (ss as { host: string; state: string }[]).some((x) => x.host === host && x.state === "up"),
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect((await server(paused)).status).toBe("PAUSED");
    expect((await server(suspended)).status).toBe("SUSPENDED");
    expect(driverOf(host).powerState(paused)).toBe(3);
    expect(driverOf(host).powerState(suspended)).toBe(7);
  });
});

describe("a host that was away", () => {
  it("a suspend sent while its host is down is done once the host is back, once (the registration's resend is a duplicate)", async () => {
    const id = await active();
    const host = await hostOf(id);
    await runtime.killHost(host);
    expect((await action(id, { suspend: null })).status).toBe(202);
    expect((await getInstance(id))?.task_state).toBe("suspending");
    await runtime.restartHost(host);
    await settled(id, "SUSPENDED");
    expect(driverOf(host).powerState(id)).toBe(7);
    const done = await events(id, "suspend");
    expect(done?.events).toEqual([
      expect.objectContaining({ event: "compute_suspend_instance", result: "Success", host }),
    ]);
    expect((await action(id, { resume: null })).status).toBe(202);
    await settled(id, "ACTIVE");
  });
});

describe("delete", () => {
  it("deletes a paused and a suspended server: the guest goes and so does the claim", async () => {
    for (const [body, status] of [
      [{ pause: null }, "PAUSED"],
      [{ suspend: null }, "SUSPENDED"],
    ] as const) {
      const id = await active();
      const host = await hostOf(id);
      await action(id, body);
      await settled(id, status);
      expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
      await client.waitForStatus(id, ["GONE"]);
      await eventually(
        async () => driverOf(host).has(id),
        (has) => !has,
      );
      expect(driverOf(host).has(id)).toBe(false);
      await eventually(
        () => consumerAllocations(id),
        (a) => a.length === 0,
      );
      expect(await consumerAllocations(id)).toEqual([]);
    }
  });
});
