// Nova's deferred delete on the local runtime (fake driver, the seeded network public), with
// [DEFAULT] reclaim_instance_interval set: a delete leaves the server SOFT_DELETED (its host powers
// the guest off; claim and port held; its usage given back, as Nova's count leaves it out);
// restore powers it on again (the usage taken back, 403 over quota), forceDelete deletes it now,
// and the watchdog reclaims it once deleted_at + the interval has passed, twice at once with
// nothing released twice. Servers never launched, SHELVED_OFFLOADED, or on a host that is down
// are deleted at once (Nova's local delete). Listings leave SOFT_DELETED out unless an admin asks.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { getInstance } from "../../lib/instances/queries.js";
import { transition } from "../../lib/instances/transition.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { getHost } from "../../lib/placement/hosts.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, type Reply, startTestRuntime } from "./harness.js";

const INTERVAL = 3600;

let runtime: Runtime;
let demo: Client;
let admin: Client;
beforeAll(async () => {
  ({ runtime, client: demo } = await startTestRuntime({
    hosts: 3,
    buildMs: 20,
    seedNetwork: true,
    transport: "long-poll",
    heartbeatSeconds: 1,
    // the watchdog runs when a test says (runtime.runWatchdog), not on its own
    watchdogIntervalMs: 3_600_000,
    env: {
      NOVALESS_RECLAIM_INSTANCE_INTERVAL: String(INTERVAL),
      NOVALESS_SERVICE_DOWN_TIME: "4",
      // SHELVED stays on its host until shelveOffload
      NOVALESS_SHELVED_OFFLOAD_TIME: "-1",
    },
  }));
  admin = demo.as(ADMIN);
});
afterAll(async () => runtime?.stop());

const action = (id: string, body: unknown, c = demo) => c.post(`/v2.1/servers/${id}/action`, body);
const show = async (id: string) => (await admin.get(`/v2.1/servers/${id}`)).body.server;
const settled = (id: string, status: string) =>
  eventually(
    () => show(id),
    (s) => s?.status === status && s["OS-EXT-STS:task_state"] === null,
  );
const driverOf = (host: string) => runtime.hosts.get(host)!.driver as FakeDriver;
const used = async () => (await demo.get("/v2.1/limits")).body.limits.absolute.totalInstancesUsed as number;
const ports = async (id: string) =>
  (await admin.get(`/networking/v2.0/ports?device_id=${id}`)).body.ports as {
    id: string;
    "binding:host_id": string;
  }[];
const ids = (r: Reply) => (r.body.servers as { id: string }[]).map((s) => s.id);
const message = (r: { body: Record<string, { message?: string }> }) =>
  Object.values(r.body)[0]?.message ?? "";

async function active(): Promise<{ id: string; host: string }> {
  const id = await demo.createServer({ name: "sd" });
  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  return { id, host: s["OS-EXT-SRV-ATTR:host"] };
}

async function softDeleted(): Promise<{ id: string; host: string }> {
  const s = await active();
  expect((await demo.delete(`/v2.1/servers/${s.id}`)).status).toBe(204);
  await settled(s.id, "SOFT_DELETED");
  return s;
}

async function actionEvents(id: string, name: string) {
  const list = (await admin.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
    action: string;
    request_id: string;
    start_time: string;
  }[];
  const a = list.filter((x) => x.action === name).sort((x, y) => y.start_time.localeCompare(x.start_time))[0];
  if (!a) return undefined;
  return (await admin.get(`/v2.1/servers/${id}/os-instance-actions/${a.request_id}`)).body.instanceAction
    .events as { event: string; result: string | null; host?: string }[];
}

describe("a delete with reclaim_instance_interval set", () => {
  it("leaves the server SOFT_DELETED: the guest powered off, its claim and port held, its usage given back, a delete action with compute_soft_delete_instance", async () => {
    const before = await used();
    const { id, host } = await active();
    expect(await used()).toBe(before + 1);
    const port = (await ports(id))[0]!;
    expect((await demo.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    const s = await settled(id, "SOFT_DELETED");
    expect(s["OS-EXT-STS:vm_state"]).toBe("soft-delete");
    expect(s["OS-EXT-STS:power_state"]).toBe(4);
    expect(s["OS-SRV-USG:terminated_at"]).toBe(null);
    expect(driverOf(host).powerState(id)).toBe(4);
    expect((await consumerAllocations(id)).map((a) => a.host)).toEqual([host]);
    expect(await ports(id)).toEqual([expect.objectContaining({ id: port.id, "binding:host_id": host })]);
    // Nova's count leaves a SOFT_DELETED server out
    expect(await used()).toBe(before);
    expect(await actionEvents(id, "delete")).toEqual([
      expect.objectContaining({ event: "compute_soft_delete_instance", result: "Success" }),
    ]);
    // the owner still sees it by id, as Nova's GET does
    expect((await demo.get(`/v2.1/servers/${id}`)).body.server.status).toBe("SOFT_DELETED");
  });

  it("a stopped server too; one never launched, or whose host is down, is deleted at once (Nova's local delete)", async () => {
    const stopped = await active();
    expect((await action(stopped.id, { "os-stop": null })).status).toBe(202);
    await settled(stopped.id, "SHUTOFF");
    expect((await demo.delete(`/v2.1/servers/${stopped.id}`)).status).toBe(204);
    await settled(stopped.id, "SOFT_DELETED");

    // never launched: the create's record, deleted before any host took it (ERROR: no valid host)
    const doomed = await demo.createServer({ name: "doomed", flavorRef: "1", imageRef: "broken" });
    await admin.waitForStatus(doomed, ["ERROR"]);
    expect((await demo.delete(`/v2.1/servers/${doomed}`)).status).toBe(204);
    await admin.waitForStatus(doomed, ["GONE"]);

    const down = await active();
    await runtime.killHost(down.host);
    try {
      // the watchdog's liveness sweep marks the silent host down (its timer is off in this file)
      await eventually(async () => {
        await runtime.runWatchdog();
        return (await getHost(down.host))?.service.down_since;
      }, Boolean);
      expect((await demo.delete(`/v2.1/servers/${down.id}`)).status).toBe(204);
      await admin.waitForStatus(down.id, ["GONE"]);
      expect(await consumerAllocations(down.id)).toEqual([]);
      expect(await ports(down.id)).toEqual([]);
    } finally {
      await runtime.restartHost(down.host);
    }
    // back, the host destroys the guest of the server deleted while it was away
    await eventually(
      async () => driverOf(down.host).has(down.id),
      (has) => !has,
    );
    expect(driverOf(down.host).has(down.id)).toBe(false);
  });

  it("a SHELVED server is soft-deleted, its snapshot deleted (Nova's _delete); restore starts it on its host", async () => {
    const { id, host } = await active();
    expect((await action(id, { shelve: null })).status).toBe(202);
    await settled(id, "SHELVED");
    const imageId = (await getInstance(id))!.shelve!.image_id!;
    expect((await admin.get(`/v2.1/images/${imageId}`)).status).toBe(200);
    expect((await demo.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await settled(id, "SOFT_DELETED");
    expect((await admin.get(`/v2.1/images/${imageId}`)).status).toBe(404);
    expect((await getInstance(id))!.shelve).toBeUndefined();
    expect((await action(id, { restore: null })).status).toBe(202);
    const back = await settled(id, "ACTIVE");
    expect(back["OS-EXT-SRV-ATTR:host"]).toBe(host);
    expect(driverOf(host).powerState(id)).toBe(1);
  });

  it("a SHELVED_OFFLOADED server is deleted at once (Nova's _local_delete)", async () => {
    const { id } = await active();
    expect((await action(id, { shelve: null })).status).toBe(202);
    await settled(id, "SHELVED");
    expect((await action(id, { shelveOffload: null }, admin)).status).toBe(202);
    await settled(id, "SHELVED_OFFLOADED");
    expect((await demo.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await ports(id)).toEqual([]);
  });

  it("listings leave SOFT_DELETED out, as Nova's: an admin lists them with deleted=true (and status SOFT_DELETED)", async () => {
    const { id } = await softDeleted();
    const live = await active();
    expect(ids(await demo.get("/v2.1/servers"))).not.toContain(id);
    expect(ids(await demo.get("/v2.1/servers"))).toContain(live.id);
    expect(ids(await admin.get("/v2.1/servers/detail?all_tenants=1"))).not.toContain(id);
    // Nova's database filter: status SOFT_DELETED among live servers matches none
    expect(ids(await demo.get("/v2.1/servers?status=SOFT_DELETED"))).toEqual([]);
    // a member's `deleted` is ignored (Nova removes it)
    expect(ids(await demo.get("/v2.1/servers?deleted=true"))).not.toContain(id);
    const deleted = ids(await admin.get("/v2.1/servers/detail?all_tenants=1&deleted=true"));
    expect(deleted).toContain(id);
    expect(deleted).not.toContain(live.id);
    const soft = await admin.get("/v2.1/servers/detail?all_tenants=1&deleted=true&status=SOFT_DELETED");
    expect(ids(soft)).toContain(id);
    expect(soft.body.servers.every((s: { status: string }) => s.status === "SOFT_DELETED")).toBe(true);
    // soft_deleted with live servers: both
    const both = ids(await admin.get("/v2.1/servers/detail?project_id=demo&all_tenants=1&soft_deleted=1"));
    expect(both).toEqual(expect.arrayContaining([id, live.id]));
  });
});

describe("restore", () => {
  it("powers the guest on again: ACTIVE, the same claim and port, its usage counted again, a restore action with compute_restore_instance", async () => {
    const { id, host } = await softDeleted();
    const before = await used();
    const claim = await consumerAllocations(id);
    expect((await action(id, { restore: null })).status).toBe(202);
    const s = await settled(id, "ACTIVE");
    expect(s["OS-EXT-STS:power_state"]).toBe(1);
    expect(s["OS-EXT-SRV-ATTR:host"]).toBe(host);
    expect(driverOf(host).powerState(id)).toBe(1);
    expect(await consumerAllocations(id)).toEqual(claim);
    expect(await used()).toBe(before + 1);
    expect((await getInstance(id))!.deleted_at).toBe(null);
    expect(await actionEvents(id, "restore")).toEqual([
      expect.objectContaining({ event: "compute_restore_instance", result: "Success" }),
    ]);
  });

  it("Nova's 409 for a server not SOFT_DELETED, 404 for one unknown or another project's, 409 when locked", async () => {
    const { id } = await active();
    const r = await action(id, { restore: {} });
    expect(r.status).toBe(409);
    expect(message(r)).toBe(`Cannot 'restore' instance ${id} while it is in vm_state active`);
    const unknown = "6a1f0b8e-9999-4000-8000-000000000009";
    expect((await action(unknown, { restore: null })).status).toBe(404);
    expect((await action(unknown, { forceDelete: null })).status).toBe(404);
    // another project's server is not found, as Nova's get_instance answers
    const theirs = await admin.createServer({ name: "theirs" });
    await admin.waitForStatus(theirs, ["ACTIVE"]);
    expect((await admin.delete(`/v2.1/servers/${theirs}`)).status).toBe(204);
    await settled(theirs, "SOFT_DELETED");
    expect((await action(theirs, { restore: null })).status).toBe(404);
    expect((await action(theirs, { forceDelete: null })).status).toBe(404);
    expect((await action(theirs, { forceDelete: null }, admin)).status).toBe(202);

    const soft = await softDeleted();
    expect((await action(soft.id, { lock: null })).status).toBe(202);
    const locked = await action(soft.id, { restore: null });
    expect(locked.status).toBe(409);
    // (Nova's _restore turns the lock's InstanceIsLocked into its generic invalid-state text)
    expect(message(locked)).toBe(`Instance ${soft.id} is in an invalid state for 'restore'`);
    const lockedForce = await action(soft.id, { forceDelete: null });
    expect(lockedForce.status).toBe(409);
    expect(message(lockedForce)).toBe(`Instance ${soft.id} is locked`);
    // an admin passes the lock, as Nova's check_instance_lock lets it
    expect((await action(soft.id, { restore: null }, admin)).status).toBe(202);
    await settled(soft.id, "ACTIVE");
  });

  it("a host that cannot power the guest on: the event fails, the server stays SOFT_DELETED (Nova's reverts_task_state), its usage given back", async () => {
    const { id, host } = await softDeleted();
    const before = await used();
    const driver = driverOf(host);
    const powerOn = driver.powerOn;
    driver.powerOn = async () => {
      throw new Error(`fake driver on ${host} cannot power on instance ${id}`);
    };
    try {
      expect((await action(id, { restore: null })).status).toBe(202);
      const events = await eventually(
        () => actionEvents(id, "restore"),
        (e) => e?.[0]?.result === "Error",
      );
      expect(events?.[0]).toMatchObject({ event: "compute_restore_instance", result: "Error" });
    } finally {
      driver.powerOn = powerOn;
    }
    const s = await settled(id, "SOFT_DELETED");
    expect(s["OS-EXT-STS:vm_state"]).toBe("soft-delete");
    expect(await used()).toBe(before);
    // and a second try goes through
    expect((await action(id, { restore: null })).status).toBe(202);
    await settled(id, "ACTIVE");
    expect(await used()).toBe(before + 1);
  });

  it("over the quota: Nova's 403, the server stays SOFT_DELETED and nothing is taken", async () => {
    const { id } = await softDeleted();
    const now = await used();
    expect(
      (await admin.call("PUT", "/v2.1/os-quota-sets/demo", { quota_set: { instances: now } })).status,
    ).toBe(200);
    try {
      const r = await action(id, { restore: null });
      expect(r.status).toBe(403);
      expect(message(r)).toBe(
        `Quota exceeded for instances: Requested 1, but already used ${now} of ${now} instances`,
      );
      expect((await show(id)).status).toBe("SOFT_DELETED");
      expect(await used()).toBe(now);
    } finally {
      await admin.call("DELETE", "/v2.1/os-quota-sets/demo");
    }
  });
});

describe("os-resetState", () => {
  it("an active or an errored server counts in its quota again, a SOFT_DELETED one reset to active too", async () => {
    const { id } = await active();
    const before = await used();
    expect((await action(id, { "os-resetState": { state: "error" } }, admin)).status).toBe(202);
    expect((await show(id)).status).toBe("ERROR");
    expect(await used()).toBe(before);

    const soft = await softDeleted();
    const uncounted = await used();
    expect((await action(soft.id, { "os-resetState": { state: "active" } }, admin)).status).toBe(202);
    expect((await show(soft.id)).status).toBe("ACTIVE");
    expect(await used()).toBe(uncounted + 1);
  });
});

describe("forceDelete", () => {
  it("deletes a SOFT_DELETED server now: the claim and port freed, the guest gone, the usage not given back twice", async () => {
    const { id, host } = await softDeleted();
    const before = await used();
    expect((await action(id, { forceDelete: null })).status).toBe(202);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await consumerAllocations(id)).toEqual([]);
    expect(await ports(id)).toEqual([]);
    await eventually(
      async () => driverOf(host).has(id),
      (has) => !has,
    );
    expect(driverOf(host).has(id)).toBe(false);
    expect(await used()).toBe(before);
  });

  it("deletes an ACTIVE server at once too (Nova's force_delete takes any state)", async () => {
    const { id } = await active();
    const before = await used();
    expect((await action(id, { forceDelete: {} })).status).toBe(202);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await used()).toBe(before - 1);
  });
});

describe("the watchdog's reclaim", () => {
  it("waits for the interval, then deletes for good; two runs at once release nothing twice", async () => {
    const a = await softDeleted();
    const b = await softDeleted();
    const before = await used();
    // not due: nothing happens
    await runtime.runWatchdog();
    expect((await show(a.id)).status).toBe("SOFT_DELETED");
    // as if the interval had passed for a (its deleted_at an interval and a second back)
    const past = new Date(Date.now() - (INTERVAL + 1) * 1000).toISOString();
    await transition(a.id, {
      set: ["deleted_at = :p"],
      condition: "attribute_exists(id)",
      values: { ":p": past },
    });
    const runs = await Promise.all([runtime.runWatchdog(), runtime.runWatchdog()]);
    const reclaimed = runs.flat().filter((x) => x.action === "reclaimed");
    expect(reclaimed.map((x) => x.instance_uuid)).toEqual([a.id]);
    await admin.waitForStatus(a.id, ["GONE"]);
    expect(await consumerAllocations(a.id)).toEqual([]);
    expect(await ports(a.id)).toEqual([]);
    await eventually(
      async () => driverOf(a.host).has(a.id),
      (has) => !has,
    );
    expect(driverOf(a.host).has(a.id)).toBe(false);
    expect(await used()).toBe(before);
    // b is not due: still held
    expect((await show(b.id)).status).toBe("SOFT_DELETED");
    expect((await consumerAllocations(b.id)).length).toBe(1);
    // Nova's periodic records no instance action of its own: the user's delete is the last
    const actions = (await admin.at("2.21").get(`/v2.1/servers/${a.id}/os-instance-actions`)).body
      .instanceActions as {
      action: string;
    }[];
    expect(actions.map((x) => x.action).sort()).toEqual(["create", "delete"]);
  });
});
