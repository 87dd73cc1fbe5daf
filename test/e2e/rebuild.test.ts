// Rebuild through the conductor, on the emulators with simulated hosts: the server rebuilt on its
// own host from a new image or the same one (REBUILD, then ACTIVE, its allocation untouched), the
// fields a rebuild changes (name, metadata, key_name at 2.54), a stopped server stopped again, a
// server in ERROR made ACTIVE, a host that fails the rebuild (ERROR with a fault), an image the
// host's hypervisor cannot run (NoValidHost: ERROR, the old image back), Nova's 400s and 409s,
// the instance action and its events, and a redelivered cast that rebuilds nothing twice.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { castToCompute } from "../../lib/aws/send.js";
import { createImage } from "../../lib/catalog/image-create.js";
import { SEED_IMAGES } from "../../lib/catalog/seed.js";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { rebuildCast } from "../../lib/conductor/rebuild.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { InstanceRecord } from "../../lib/instances/types.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import { auditPlacement } from "../../lib/placement/audit.js";
import { getHost } from "../../lib/placement/hosts.js";
import { NO_VALID_HOST_MESSAGE } from "../../lib/scheduler/errors.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, startTestRuntime } from "./harness.js";

const [CIRROS, UBUNTU, BROKEN] = SEED_IMAGES.map((i) => i.id) as [string, string, string];
/** an image no simulated host's hypervisor runs (ImagePropertiesFilter refuses it) */
const ARM = "a1b2c3d4-0000-4000-8000-0000000000aa";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2 }));
  admin = client.as(ADMIN);
  await createImage({
    id: ARM,
    name: "arm64",
    status: "active",
    min_disk: 0,
    min_ram: 0,
    properties: { hw_architecture: "aarch64" },
    created_at: new Date().toISOString(),
  });
});
afterAll(async () => runtime?.stop());

async function boot(c: Client = client, server: Record<string, unknown> = {}): Promise<InstanceRecord> {
  const id = await c.createServer({ flavorRef: "1", ...server });
  await c.waitForStatus(id, ["ACTIVE"]);
  return (await getInstance(id))!;
}

const action = (c: Client, id: string, body: unknown) => c.post(`/v2.1/servers/${id}/action`, body);

/** spawns of `id` on every simulated host */
const spawns = (id: string) =>
  [...runtime.hosts.values()].reduce((n, h) => n + ((h.driver as FakeDriver).spawns.get(id) ?? 0), 0);

const claims = async (id: string) =>
  (await consumerAllocations(id)).map((a) => `${a.host}#${a.attempt}:${a.resources.MEMORY_MB}`);

/** the rebuild action's events, name → result */
async function rebuildEvents(c: Client, id: string): Promise<Record<string, string>> {
  const list = await c.get(`/v2.1/servers/${id}/os-instance-actions`);
  const rebuild = list.body.instanceActions.find((a: { action: string }) => a.action === "rebuild");
  const one = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${rebuild.request_id}`);
  return Object.fromEntries(
    one.body.instanceAction.events.map((e: { event: string; result: string }) => [e.event, e.result]),
  );
}

describe("rebuild", () => {
  it("a new image on the same host, with its name, metadata and key pair (2.54); its claim kept", async () => {
    const at = client.at("2.54");
    expect((await at.post("/v2.1/os-keypairs", { keypair: { name: "rebuild-key" } })).status).toBe(201);
    const before = await boot(at, { metadata: { a: "1" } });
    const held = await claims(before.id);
    const r = await action(at, before.id, {
      rebuild: {
        imageRef: UBUNTU,
        name: "renamed",
        metadata: { b: "2" },
        key_name: "rebuild-key",
        adminPass: "pw",
      },
    });
    expect(r.status).toBe(202);
    expect(r.headers.get("location")).toMatch(new RegExp(`/v2.1/servers/${before.id}$`));
    expect(r.body.server).toMatchObject({
      id: before.id,
      status: "REBUILD",
      name: "renamed",
      metadata: { b: "2" },
      image: { id: UBUNTU },
      key_name: "rebuild-key",
      adminPass: "pw",
    });
    expect(r.body.server).not.toHaveProperty("user_data");
    await client.waitForStatus(before.id, ["ACTIVE"]);
    const rec = (await getInstance(before.id))!;
    expect(rec).toMatchObject({
      host: before.host,
      attempt: before.attempt,
      vm_state: "active",
      task_state: null,
      image: { id: UBUNTU },
      name: "renamed",
      key_name: "rebuild-key",
    });
    expect(rec.rebuild).toBeUndefined();
    expect(spawns(before.id)).toBe(2);
    // no new claim: the instance keeps its allocation where it is
    expect(await claims(before.id)).toEqual(held);
    expect(await rebuildEvents(at, before.id)).toEqual({
      conductor_rebuild_server: "Success",
      compute_rebuild_instance: "Success",
    });
    // the scheduler checked the host against the new image, and says so
    const decision = await admin.get(`/v2.1/servers/${before.id}/os-scheduling`);
    expect(decision.status).toBe(200);

    // key_name: null unsets it (2.54)
    expect((await action(at, before.id, { rebuild: { imageRef: UBUNTU, key_name: null } })).status).toBe(202);
    await client.waitForStatus(before.id, ["ACTIVE"]);
    expect((await getInstance(before.id))!.key_name).toBeNull();
    expect((await auditPlacement({})).findings).toEqual([]);
    expect((await client.delete(`/v2.1/servers/${before.id}`)).status).toBe(204);
  });

  it("the same image is not scheduled; user_data is replaced at 2.57 and shown", async () => {
    const before = await boot();
    const at = client.at("2.57");
    const r = await action(at, before.id, { rebuild: { imageRef: CIRROS, user_data: "aGVsbG8=" } });
    expect(r.status).toBe(202);
    expect(r.body.server).toMatchObject({ image: { id: CIRROS }, user_data: "aGVsbG8=" });
    expect(typeof r.body.server.adminPass).toBe("string");
    await client.waitForStatus(before.id, ["ACTIVE"]);
    const rec = (await getInstance(before.id))!;
    expect(rec).toMatchObject({ image: { id: CIRROS }, user_data: "aGVsbG8=", host: before.host });
    const events = Object.values(rec.actions).find((a) => a.action === "rebuild")!.events;
    expect(Object.values(events).find((e) => e.event === "conductor_rebuild_server")!.details).toBe(
      "same image: not scheduled",
    );
    expect((await client.delete(`/v2.1/servers/${before.id}`)).status).toBe(204);
  });

  it("a stopped server is stopped again after its rebuild", async () => {
    const before = await boot();
    expect((await action(client, before.id, { "os-stop": null })).status).toBe(202);
    await client.waitForStatus(before.id, ["SHUTOFF"]);
    expect((await action(client, before.id, { rebuild: { imageRef: UBUNTU } })).status).toBe(202);
    await client.waitForStatus(before.id, ["SHUTOFF"]);
    const rec = (await getInstance(before.id))!;
    expect(rec).toMatchObject({
      vm_state: "stopped",
      task_state: null,
      power_state: 4,
      image: { id: UBUNTU },
    });
    expect(spawns(before.id)).toBe(2);
    expect((await client.delete(`/v2.1/servers/${before.id}`)).status).toBe(204);
  });

  it("a host that cannot rebuild puts it in ERROR with a fault; a rebuild then makes it ACTIVE", async () => {
    const before = await boot();
    expect((await action(client, before.id, { rebuild: { imageRef: BROKEN } })).status).toBe(202);
    const errored = await client.waitForStatus(before.id, ["ERROR"]);
    expect(errored.fault.message).toMatch(
      new RegExp(`^Rebuild of instance ${before.id} failed: image broken`),
    );
    expect(errored.image.id).toBe(BROKEN);
    expect(await rebuildEvents(client, before.id)).toEqual({
      conductor_rebuild_server: "Success",
      compute_rebuild_instance: "Error",
    });
    // Nova keeps a failed rebuild's allocation, and so does the audit
    expect(await claims(before.id)).toHaveLength(1);
    expect((await auditPlacement({})).findings).toEqual([]);

    // ERROR is one of the states a rebuild takes
    expect((await action(client, before.id, { rebuild: { imageRef: CIRROS } })).status).toBe(202);
    const back = await client.waitForStatus(before.id, ["ACTIVE"]);
    expect(back).not.toHaveProperty("fault");
    expect((await getInstance(before.id))!).toMatchObject({ vm_state: "active", host: before.host });
    expect((await client.delete(`/v2.1/servers/${before.id}`)).status).toBe(204);
  });

  it("an image its host's hypervisor cannot run: NoValidHost, ERROR, the old image back", async () => {
    const before = await boot();
    const held = await claims(before.id);
    expect((await action(client, before.id, { rebuild: { imageRef: ARM, name: "kept" } })).status).toBe(202);
    const errored = await admin.waitForStatus(before.id, ["ERROR"]);
    expect(errored.fault.message).toBe(NO_VALID_HOST_MESSAGE);
    expect(errored.fault.details).toMatch(/does not support image properties aarch64/);
    const rec = (await getInstance(before.id))!;
    // Nova's conductor rolls back image_ref; the name the request set stays
    expect(rec).toMatchObject({ image: { id: CIRROS }, name: "kept", task_state: null, host: before.host });
    expect(rec.rebuild).toBeUndefined();
    expect(spawns(before.id)).toBe(1);
    expect(await claims(before.id)).toEqual(held);
    expect(await rebuildEvents(client, before.id)).toEqual({ conductor_rebuild_server: "Error" });
    expect((await client.delete(`/v2.1/servers/${before.id}`)).status).toBe(204);
  });

  it("a redelivered rebuild cast rebuilds nothing twice and changes nothing", async () => {
    const before = await boot();
    expect((await action(client, before.id, { rebuild: { imageRef: UBUNTU } })).status).toBe(202);
    // the rebuild's token, while it lasts
    const during = (await getInstance(before.id))!;
    expect(during.rebuild).toBeDefined();
    await client.waitForStatus(before.id, ["ACTIVE"]);
    const after = (await getInstance(before.id))!;
    expect(spawns(before.id)).toBe(2);
    const again = await rebuildCast({ ...after, rebuild: during.rebuild! }, during.rebuild!.request_id);
    await castToCompute((await getHost(before.host!))!.queue_url, again);
    await castToCompute((await getHost(before.host!))!.queue_url, again);
    // the host reports it again (fenced: the rebuild is over); its guest is the same one
    await sleep(1500);
    expect(spawns(before.id)).toBe(2);
    const now = (await getInstance(before.id))!;
    expect(now).toMatchObject({ vm_state: "active", task_state: null, attempt: after.attempt });
    expect(now.rebuild).toBeUndefined();
    expect((await client.delete(`/v2.1/servers/${before.id}`)).status).toBe(204);
  });
});

describe("Nova's refusals", () => {
  it("409: locked, a task in progress, a server awaiting resize confirmation", async () => {
    const a = await boot();
    expect((await action(admin, a.id, { lock: null })).status).toBe(202);
    const locked = await action(client, a.id, { rebuild: { imageRef: CIRROS } });
    expect(locked.status).toBe(409);
    expect(locked.body.conflictingRequest.message).toBe(`Instance ${a.id} is locked`);
    expect((await action(admin, a.id, { unlock: null })).status).toBe(202);

    expect((await action(client, a.id, { rebuild: { imageRef: UBUNTU } })).status).toBe(202);
    const busy = await action(client, a.id, { rebuild: { imageRef: CIRROS } });
    expect(busy.status).toBe(409);
    expect(busy.body.conflictingRequest.message).toMatch(
      new RegExp(`^Cannot 'rebuild' instance ${a.id} while it is in task_state rebuild(ing|_spawning)$`),
    );
    await client.waitForStatus(a.id, ["ACTIVE"]);

    expect((await action(client, a.id, { resize: { flavorRef: "2" } })).status).toBe(202);
    await client.waitForStatus(a.id, ["VERIFY_RESIZE"]);
    const resized = await action(client, a.id, { rebuild: { imageRef: CIRROS } });
    expect(resized.status).toBe(409);
    expect(resized.body.conflictingRequest.message).toBe(
      `Cannot 'rebuild' instance ${a.id} while it is in vm_state resized`,
    );
    expect((await client.delete(`/v2.1/servers/${a.id}`)).status).toBe(204);

    // a build that failed everywhere never ran: nothing to rebuild it on
    const failed = await client.createServer({ flavorRef: "1", imageRef: "broken" });
    await client.waitForStatus(failed, ["ERROR"]);
    const never = await action(client, failed, { rebuild: { imageRef: CIRROS } });
    expect(never.status).toBe(409);
    expect(never.body.conflictingRequest.message).toBe(`Instance ${failed} is not ready`);
    expect((await client.delete(`/v2.1/servers/${failed}`)).status).toBe(204);
  });

  it("400: the image, the key pair, and the schema at each microversion", async () => {
    const { id } = await boot();
    const bad = async (c: Client, body: unknown) => {
      const r = await action(c, id, { rebuild: body });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      return r.body.badRequest.message as string;
    };
    expect(await bad(client, { imageRef: "a1b2c3d4-0000-4000-8000-00000000ffff" })).toBe(
      "Cannot find image for rebuild",
    );
    expect(await bad(client, {})).toMatch(/imageRef/);
    expect(await bad(client, { imageRef: "cirros" })).toMatch(/imageRef/);
    expect(await bad(client, { imageRef: CIRROS, key_name: "k" })).toMatch(/key_name/);
    expect(await bad(client.at("2.54"), { imageRef: CIRROS, key_name: "no-such-key" })).toBe(
      "Invalid key_name provided.",
    );
    expect(await bad(client.at("2.57"), { imageRef: CIRROS, personality: [] })).toMatch(/personality/);
    expect(await bad(client, { imageRef: CIRROS, user_data: "aGVsbG8=" })).toMatch(/user_data/);
    expect(await bad(client.at("2.63"), { imageRef: CIRROS, trusted_image_certificates: ["c1"] })).toMatch(
      /^Image signature certificate validation failed for certificate: c1\./,
    );
    expect(await bad(client.at("2.89"), { imageRef: CIRROS, hostname: "a.b" })).toMatch(/hostname/);
    // accepted where Nova accepts them: nothing was rebuilt by the refusals
    expect((await getInstance(id))!.task_state).toBeNull();
    const ok = await action(client.at("2.94"), id, {
      rebuild: {
        imageRef: CIRROS,
        hostname: "a.b",
        trusted_image_certificates: null,
        preserve_ephemeral: "true",
      },
    });
    expect(ok.status).toBe(202);
    await client.waitForStatus(id, ["ACTIVE"]);
    expect((await getInstance(id))!.hostname).toBe("a.b");
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });
});
