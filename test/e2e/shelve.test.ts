// Shelve, shelveOffload and unshelve through the hosts' queues and the conductor, with the fake
// driver: SHELVED keeps the host and its claim, SHELVED_OFFLOADED frees both, unshelve of an
// offloaded server is scheduled as a build (to a host asked for from 2.91, to the alternates when
// its host cannot spawn it, back to SHELVED_OFFLOADED when none can), each an instance action with
// its events; Nova's 409s and policies; deleting a shelved server leaves no claim and no image.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, claimHosts, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 3,
    buildMs: 20,
    transport: "long-poll",
    heartbeatSeconds: 1,
    // host-3 cannot spawn anything: an unshelve sent there goes to its alternates
    failHosts: ["host-3"],
    // offloaded only when asked (shelveOffload), so SHELVED can be seen; one test sets 0
    // and is not weighed down for the builds it failed, so an unshelve is sent there first
    env: {
      NOVALESS_SHELVED_OFFLOAD_TIME: "-1",
      NOVALESS_BUILD_FAILURE_WEIGHT_MULTIPLIER: "0",
      // a dead host is noticed within seconds, not Nova's 60
      NOVALESS_SERVICE_DOWN_TIME: "4",
    },
  }));
});
afterAll(async () => runtime?.stop());

const admin = () => client.as(ADMIN);
const action = (id: string, body: unknown, c = client) => c.post(`/v2.1/servers/${id}/action`, body);
const server = async (id: string) => (await admin().get(`/v2.1/servers/${id}`)).body.server;
const driverOf = (host: string) => runtime.hosts.get(host)!.driver as FakeDriver;
const settled = (id: string, status: string) =>
  eventually(
    () => server(id),
    (s) => s.status === status && s["OS-EXT-STS:task_state"] === null,
    60_000,
  );

async function active(): Promise<string> {
  const id = await client.createServer({ name: `shelf-${Math.random().toString(36).slice(2, 8)}` });
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
  return (await admin().get(`/v2.1/servers/${id}/os-instance-actions/${a.request_id}`)).body.instanceAction
    .events as { event: string; result: string; host?: string }[];
}

/** Gone from Glance: its own read (listings are cached for a few seconds). */
async function imageGone(id: string): Promise<boolean> {
  const status = () =>
    fetch(`${runtime.url}/image/v2/images/${id}`, { headers: { "x-auth-token": ADMIN } }).then(
      (r) => r.status,
    );
  return (await eventually(status, (s) => s === 404)) === 404;
}

async function shelvedImageOf(name: string) {
  const images = (await admin().get("/image/v2/images?limit=1000")).body.images as {
    id: string;
    name: string;
  }[];
  return images.find((i) => i.name === `${name}-shelved`);
}

describe("shelve and unshelve", () => {
  // first: the fleet is empty, so host-3 weighs best (later tests leave servers behind)
  it("a host that cannot spawn it sends the unshelve to its alternates", async () => {
    // host-3 (empty, failing) weighs best for a new placement once the others hold servers
    const fillers: string[] = [];
    for (const host of ["host-1", "host-2"]) {
      const r = await admin().post("/v2.1/servers", {
        server: {
          name: `filler-${host}`,
          flavorRef: "3",
          imageRef: "cirros",
          availability_zone: `nova:${host}`,
        },
      });
      expect(r.status).toBe(202);
      fillers.push(r.body.server.id as string);
    }
    for (const f of fillers) await admin().waitForStatus(f, ["ACTIVE"]);
    const id = await active();
    await action(id, { shelve: null });
    await settled(id, "SHELVED");
    await action(id, { shelveOffload: null }, admin());
    await settled(id, "SHELVED_OFFLOADED");
    expect((await action(id, { unshelve: null })).status).toBe(202);
    const back = await settled(id, "ACTIVE");
    expect(back["OS-EXT-SRV-ATTR:host"]).not.toBe("host-3");
    expect(await claimHosts(id)).toEqual([back["OS-EXT-SRV-ATTR:host"]]);
    expect(await claimHosts(id)).not.toContain("host-3");
    // it was sent to host-3 first, which failed it, then to an alternate without the scheduler
    const ev = await events(id, "unshelve");
    expect(ev).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event: "compute_unshelve_instance", result: "Error", host: "host-3" }),
        expect.objectContaining({
          event: "compute_unshelve_instance",
          result: "Success",
          host: back["OS-EXT-SRV-ATTR:host"],
        }),
      ]),
    );
    for (const f of fillers) await admin().delete(`/v2.1/servers/${f}`);
  });

  it("shelve → SHELVED on its host (claim kept), unshelve → ACTIVE there again, its snapshot gone", async () => {
    const id = await active();
    const before = await server(id);
    const host = before["OS-EXT-SRV-ATTR:host"] as string;
    expect((await action(id, { shelve: null })).status).toBe(202);
    const shelved = await settled(id, "SHELVED");
    expect(shelved["OS-EXT-STS:vm_state"]).toBe("shelved");
    expect(shelved["OS-EXT-STS:power_state"]).toBe(4);
    expect(shelved["OS-EXT-SRV-ATTR:host"]).toBe(host);
    expect(driverOf(host).powerState(id)).toBe(4);
    expect(await claimHosts(id)).toEqual([host]);
    const image = await shelvedImageOf(before.name as string);
    expect(image).toBeDefined();
    expect(await events(id, "shelve")).toEqual([
      expect.objectContaining({ event: "compute_shelve_instance", result: "Success", host }),
    ]);

    expect((await action(id, { unshelve: null })).status).toBe(202);
    const back = await settled(id, "ACTIVE");
    expect(back["OS-EXT-SRV-ATTR:host"]).toBe(host);
    expect(driverOf(host).powerState(id)).toBe(1);
    expect(await imageGone(image!.id)).toBe(true);
    expect(await events(id, "unshelve")).toEqual([
      expect.objectContaining({ event: "compute_start_instance", result: "Success", host }),
    ]);
  });

  it("shelveOffload (admin) → SHELVED_OFFLOADED: no host, no claim, no guest; unshelve schedules it again", async () => {
    const id = await active();
    const host = (await server(id))["OS-EXT-SRV-ATTR:host"] as string;
    await action(id, { shelve: null });
    await settled(id, "SHELVED");
    const member = await action(id, { shelveOffload: null });
    expect(member.status).toBe(403);
    expect((await action(id, { shelveOffload: null }, admin())).status).toBe(202);
    const off = await settled(id, "SHELVED_OFFLOADED");
    expect(off["OS-EXT-SRV-ATTR:host"]).toBeNull();
    expect(await claimHosts(id)).toEqual([]);
    expect(driverOf(host).has(id)).toBe(false);
    // quota stays counted while shelved (Nova)
    const limits = (await client.get("/v2.1/limits")).body.limits as { absolute: Record<string, number> };
    expect(limits.absolute.totalInstancesUsed).toBeGreaterThan(0);

    expect((await action(id, { unshelve: null })).status).toBe(202);
    const back = await settled(id, "ACTIVE");
    const now = back["OS-EXT-SRV-ATTR:host"] as string;
    expect(now).not.toBe("host-3");
    expect(await claimHosts(id)).toEqual([now]);
    expect(driverOf(now).powerState(id)).toBe(1);
    const ev = await events(id, "unshelve");
    expect(ev).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event: "schedule_instances", result: "Success" }),
        expect.objectContaining({ event: "compute_unshelve_instance", result: "Success", host: now }),
      ]),
    );
  });

  it("unshelve to a host (2.91, admin): there, or its failure sends it back to SHELVED_OFFLOADED with a fault", async () => {
    const id = await active();
    await action(id, { shelve: null });
    await settled(id, "SHELVED");
    await action(id, { shelveOffload: null }, admin());
    await settled(id, "SHELVED_OFFLOADED");
    const v291 = admin().at("2.91");
    // a member may not choose the host
    expect((await action(id, { unshelve: { host: "host-2" } }, client.at("2.91"))).status).toBe(403);
    expect((await action(id, { unshelve: { host: "no-such-host" } }, v291)).status).toBe(400);
    // host-3 fails every spawn and a requested host has no alternates
    expect((await action(id, { unshelve: { host: "host-3" } }, v291)).status).toBe(202);
    const failed = await settled(id, "SHELVED_OFFLOADED");
    expect(failed["OS-EXT-SRV-ATTR:host"]).toBeNull();
    // Nova shows no fault on a SHELVED_OFFLOADED server: the unshelve's events say why
    expect(await events(id, "unshelve")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event: "compute_unshelve_instance", result: "Error", host: "host-3" }),
        expect.objectContaining({ event: "schedule_instances", result: "Error" }),
      ]),
    );
    expect(await claimHosts(id)).toEqual([]);

    expect((await action(id, { unshelve: { host: "host-2" } }, v291)).status).toBe(202);
    const back = await settled(id, "ACTIVE");
    expect(back["OS-EXT-SRV-ATTR:host"]).toBe("host-2");
    expect(await claimHosts(id)).toEqual(["host-2"]);
  });

  it("shelved_offload_time: 0 offloads as it shelves; past N seconds the watchdog offloads it", async () => {
    const was = process.env.NOVALESS_SHELVED_OFFLOAD_TIME;
    try {
      process.env.NOVALESS_SHELVED_OFFLOAD_TIME = "0";
      const now = await active();
      const host = (await server(now))["OS-EXT-SRV-ATTR:host"] as string;
      await action(now, { shelve: null });
      const off = await settled(now, "SHELVED_OFFLOADED");
      expect(off["OS-EXT-SRV-ATTR:host"]).toBeNull();
      expect(driverOf(host).has(now)).toBe(false);
      expect(await claimHosts(now)).toEqual([]);

      process.env.NOVALESS_SHELVED_OFFLOAD_TIME = "1";
      const later = await active();
      await action(later, { shelve: null });
      await settled(later, "SHELVED");
      await new Promise((r) => setTimeout(r, 1100));
      // polled: on a loaded machine the shelve's time and the watchdog's clock may be a tick apart,
      // and the runtime's own watchdog timer may be the run that offloads it
      const offloaded = await eventually(
        async () => {
          await runtime.runWatchdog();
          return (await server(later)).status;
        },
        (status) => status === "SHELVED_OFFLOADED",
        10_000,
      );
      expect(offloaded).toBe("SHELVED_OFFLOADED");
      await settled(later, "SHELVED_OFFLOADED");
      expect(await claimHosts(later)).toEqual([]);
      const ev = await events(later, "shelveOffload");
      expect(ev).toEqual([
        expect.objectContaining({ event: "compute_shelve_offload_instance", result: "Success" }),
      ]);
    } finally {
      if (was === undefined) delete process.env.NOVALESS_SHELVED_OFFLOAD_TIME;
      else process.env.NOVALESS_SHELVED_OFFLOAD_TIME = was;
    }
  });

  it("an unshelve whose host dies before it spawns is fenced by the watchdog; the host, back, keeps nothing", async () => {
    const id = await active();
    await action(id, { shelve: null });
    await settled(id, "SHELVED");
    await action(id, { shelveOffload: null }, admin());
    await settled(id, "SHELVED_OFFLOADED");
    await runtime.killHost("host-2");
    try {
      expect((await action(id, { unshelve: { host: "host-2" } }, admin().at("2.91"))).status).toBe(202);
      await eventually(
        () => server(id),
        (s) => s["OS-EXT-STS:task_state"] === "spawning",
      );
      // host-2 is down once service_down_time has passed: the watchdog fails the attempt, and a
      // requested host has no alternates, so the server is SHELVED_OFFLOADED again
      const fenced = await eventually(
        async () => {
          await runtime.runWatchdog();
          return server(id);
        },
        (s) => s.status === "SHELVED_OFFLOADED" && s["OS-EXT-STS:task_state"] === null,
        30_000,
      );
      expect(fenced["OS-EXT-SRV-ATTR:host"]).toBeNull();
      expect(await claimHosts(id)).toEqual([]);
    } finally {
      await runtime.restartHost("host-2");
    }
    // back, host-2 takes the stale cast and spawns, and its report is fenced: the guest and claim go
    expect(
      await eventually(
        () => Promise.resolve(driverOf("host-2").spawns.get(id) ?? 0),
        (n) => n > 0,
        90_000,
      ),
    ).toBeGreaterThan(0);
    // a spawn is counted as it begins and has its guest buildMs (20 ms) later: look after that,
    // or "no guest" could be read before the guest was made
    await new Promise((r) => setTimeout(r, 500));
    await eventually(
      async () => driverOf("host-2").has(id) || (await claimHosts(id)).length > 0,
      (busy) => !busy,
      30_000,
    );
    expect(driverOf("host-2").has(id)).toBe(false);
    expect(await claimHosts(id)).toEqual([]);
    expect((await server(id)).status).toBe("SHELVED_OFFLOADED");
  });

  it("trigger_crash_dump (2.17): an NMI on the host (the console says so), no task state; 404 before 2.17, 409 while shelved", async () => {
    const id = await active();
    const host = (await server(id))["OS-EXT-SRV-ATTR:host"] as string;
    expect((await action(id, { trigger_crash_dump: null })).status).toBe(404);
    expect((await action(id, { trigger_crash_dump: {} }, client.at("2.17"))).status).toBe(400);
    expect((await action(id, { trigger_crash_dump: null }, client.at("2.17"))).status).toBe(202);
    const ev = await eventually(
      () => events(id, "trigger_crash_dump"),
      (e) => e?.[0]?.result === "Success",
    );
    expect(ev).toEqual([
      expect.objectContaining({ event: "compute_trigger_crash_dump", result: "Success", host }),
    ]);
    expect(await driverOf(host).consoleOutput(id)).toContain("NMI received");
    expect((await server(id)).status).toBe("ACTIVE");
    await action(id, { shelve: null });
    await settled(id, "SHELVED");
    const shelved = await action(id, { trigger_crash_dump: null }, client.at("2.17"));
    expect(shelved.status).toBe(409);
    expect(JSON.stringify(shelved.body)).toContain(
      `Cannot 'trigger_crash_dump' instance ${id} while it is in vm_state shelved`,
    );
  });

  it("Nova's 409s: shelve twice, unshelve an ACTIVE server, a zone for a SHELVED one, a locked server", async () => {
    const id = await active();
    const unshelveActive = await action(id, { unshelve: null });
    expect(unshelveActive.status).toBe(409);
    expect(JSON.stringify(unshelveActive.body)).toContain(
      `Cannot 'unshelve' instance ${id} while it is in vm_state active`,
    );
    await action(id, { shelve: null });
    await settled(id, "SHELVED");
    const twice = await action(id, { shelve: null });
    expect(twice.status).toBe(409);
    expect(JSON.stringify(twice.body)).toContain(
      `Cannot 'shelve' instance ${id} while it is in vm_state shelved`,
    );
    const zoned = await action(id, { unshelve: { availability_zone: "nova" } }, client.at("2.77"));
    expect(zoned.status).toBe(409);
    expect(JSON.stringify(zoned.body)).toContain("The server status must be SHELVED_OFFLOADED");
    // 2.77's schema: an empty object is not allowed
    expect((await action(id, { unshelve: {} }, client.at("2.77"))).status).toBe(400);

    await action(id, { lock: null });
    const locked = await action(id, { unshelve: null });
    expect(locked.status).toBe(409);
    expect(JSON.stringify(locked.body)).toContain(`Instance ${id} is locked`);
    await action(id, { unlock: null });
  });

  it("delete while SHELVED and while SHELVED_OFFLOADED: gone, no claim, no snapshot left", async () => {
    const a = await active();
    const b = await active();
    const images: string[] = [];
    for (const id of [a, b]) {
      await action(id, { shelve: null });
      await settled(id, "SHELVED");
      images.push((await shelvedImageOf((await server(id)).name as string))!.id);
    }
    await action(b, { shelveOffload: null }, admin());
    await settled(b, "SHELVED_OFFLOADED");
    for (const id of [a, b]) expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    for (const id of [a, b]) await client.waitForStatus(id, ["GONE"]);
    for (const id of [a, b])
      expect(
        await eventually(
          () => claimHosts(id),
          (h) => h.length === 0,
        ),
      ).toEqual([]);
    for (const image of images) expect(await imageGone(image)).toBe(true);
  });
});
