// createImage and createBackup through the host's queue, with the fake driver (metadata-only
// images): Nova's 202 at each microversion, the image `queued` at once then ACTIVE with Nova's
// snapshot properties, the server's task states back to none, the instance action with its event,
// Nova's 409s, a backup's rotation, booting from the snapshot, a failed snapshot's image deleted,
// and Nova's image proxy and Glance's delete. The exec driver's real images: snapshots-exec.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, Client, DEMO, eventually, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 2, buildMs: 20, transport: "long-poll" }));
});
afterAll(async () => runtime?.stop());

const admin = () => client.as(ADMIN);
const at = (version: string) => new Client(client.url, DEMO, version);
const action = (id: string, body: unknown, c: Client = client) => c.post(`/v2.1/servers/${id}/action`, body);
const server = async (id: string) => (await admin().get(`/v2.1/servers/${id}`)).body.server;
const image = (id: string) => client.get(`/v2.1/images/${id}`);
const driverOf = async (id: string) =>
  runtime.hosts.get((await server(id))["OS-EXT-SRV-ATTR:host"])!.driver as FakeDriver;

async function active(): Promise<string> {
  const id = await client.createServer({});
  await client.waitForStatus(id, ["ACTIVE"]);
  return id;
}

const imageActive = (id: string) =>
  eventually(
    () => image(id),
    (r) => r.status === 200 && r.body.image.status === "ACTIVE",
  );
const settled = (id: string) =>
  eventually(
    () => server(id),
    (s) => s["OS-EXT-STS:task_state"] === null,
  );

describe("createImage", () => {
  it("2.45: 202 with the image id; the image goes ACTIVE with Nova's properties; the server stays ACTIVE", async () => {
    const id = await active();
    const r = await action(
      id,
      { createImage: { name: "snap-1", metadata: { purpose: "test" } } },
      at("2.45"),
    );
    expect(r.status).toBe(202);
    expect(r.headers.get("location")).toBeNull();
    const imageId = r.body.image_id as string;
    expect(imageId).toMatch(/^[0-9a-f-]{36}$/);
    // recorded at once, as Glance's queued image Nova creates first
    const first = await image(imageId);
    expect(first.status).toBe(200);
    expect(["SAVING", "ACTIVE"]).toContain(first.body.image.status);

    const done = await imageActive(imageId);
    const meta = done.body.image.metadata;
    expect(meta).toMatchObject({
      image_type: "snapshot",
      instance_uuid: id,
      user_id: expect.any(String),
      purpose: "test",
      base_image_ref: expect.any(String),
    });
    expect(done.body.image.server.id).toBe(id);
    expect(done.body.image.progress).toBe(100);
    const s = await settled(id);
    expect(s.status).toBe("ACTIVE");
    expect((await driverOf(id)).snapshots.get(id)).toEqual([imageId]);

    const actions = (await client.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
      action: string;
      request_id: string;
    }[];
    const snap = actions.find((a) => a.action === "createImage")!;
    const detail = (await admin().get(`/v2.1/servers/${id}/os-instance-actions/${snap.request_id}`)).body
      .instanceAction as { events: { event: string; result: string }[] };
    expect(detail.events).toEqual([
      expect.objectContaining({ event: "compute_snapshot_instance", result: "Success" }),
    ]);

    // Glance: the owner's private image, with its data's formats
    const g = await client.get(`/image/v2/images/${imageId}`);
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ status: "active", visibility: "private", image_type: "snapshot" });
    expect(g.body.owner).toEqual(expect.any(String));
    // the admin sees every image; Glance lists it by its properties
    expect((await admin().get(`/image/v2/images/${imageId}`)).status).toBe(200);
    const listed = await client.get(`/image/v2/images?instance_uuid=${id}`);
    expect(listed.body.images.map((i: { id: string }) => i.id)).toEqual([imageId]);
  });

  it("before 2.45: 202 with the image's URL in Location and no body", async () => {
    const id = await active();
    const r = await action(id, { createImage: { name: "snap-old" } }, at("2.44"));
    expect(r.status).toBe(202);
    const location = r.headers.get("location")!;
    expect(location).toMatch(/\/images\/[0-9a-f-]{36}$/);
    await imageActive(location.split("/").pop()!);
  });

  it("a SHUTOFF server is snapshotted and stays SHUTOFF; a bad body is 400", async () => {
    const id = await active();
    await action(id, { "os-stop": null });
    await client.waitForStatus(id, ["SHUTOFF"]);
    const r = await action(id, { createImage: { name: "snap-stopped" } }, at("2.45"));
    expect(r.status).toBe(202);
    await imageActive(r.body.image_id);
    expect((await settled(id)).status).toBe("SHUTOFF");

    expect((await action(id, { createImage: {} })).status).toBe(400);
    expect((await action(id, { createImage: { name: "x", extra: 1 } })).status).toBe(400);
    expect((await action(id, { createImage: { name: " lead" } })).status).toBe(400);
  });

  it("Nova's 409 while a snapshot runs; a locked server is still snapshotted (Nova checks no lock)", async () => {
    const id = await active();
    const driver = await driverOf(id);
    driver.snapshotMs = 1500;
    try {
      const first = await action(id, { createImage: { name: "slow" } }, at("2.45"));
      expect(first.status).toBe(202);
      const busy = await action(id, { createImage: { name: "busy" } });
      expect(busy.status).toBe(409);
      expect(JSON.stringify(busy.body)).toContain(
        `Cannot 'createImage' instance ${id} while it is in task_state image_`,
      );
      const backup = await action(id, { createBackup: { name: "b", backup_type: "daily", rotation: 1 } });
      expect(backup.status).toBe(409);
      expect(JSON.stringify(backup.body)).toContain(
        `Cannot 'createBackup' instance ${id} while it is in task_state image_`,
      );
      await imageActive(first.body.image_id);
      await settled(id);
    } finally {
      driver.snapshotMs = 0;
    }

    expect((await action(id, { lock: null })).status).toBe(202);
    const locked = await action(id, { createImage: { name: "locked" } }, at("2.45"));
    expect(locked.status).toBe(202);
    await imageActive(locked.body.image_id);
    await settled(id);
    await action(id, { unlock: null });
  });

  it("a snapshot the host cannot take leaves no image; the event says Error and the server is ACTIVE", async () => {
    const id = await active();
    const driver = await driverOf(id);
    driver.failSnapshots = true;
    try {
      const r = await action(id, { createImage: { name: "doomed" } }, at("2.45"));
      expect(r.status).toBe(202);
      await eventually(
        () => image(r.body.image_id),
        (g) => g.status === 404,
      );
      const s = await settled(id);
      expect(s.status).toBe("ACTIVE");
      const actions = (await client.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
        action: string;
        request_id: string;
      }[];
      const snap = actions.find((a) => a.action === "createImage")!;
      const detail = (await admin().get(`/v2.1/servers/${id}/os-instance-actions/${snap.request_id}`)).body
        .instanceAction as { events: { event: string; result: string }[] };
      expect(detail.events).toEqual([
        expect.objectContaining({ event: "compute_snapshot_instance", result: "Error" }),
      ]);
    } finally {
      driver.failSnapshots = false;
    }
  });

  it("a server boots from its snapshot, anywhere; the snapshot's owner deletes it", async () => {
    const id = await active();
    const r = await action(id, { createImage: { name: "golden" } }, at("2.45"));
    await imageActive(r.body.image_id);
    const child = await client.createServer({ imageRef: r.body.image_id, name: "from-snapshot" });
    const s = await client.waitForStatus(child, ["ACTIVE"]);
    expect(s.image.id).toBe(r.body.image_id);

    // Glance serves it to its owner: a private image with no data (the fake driver keeps none)
    const file = await client.call("GET", `/image/v2/images/${r.body.image_id}/file`);
    expect(file.status).toBe(204);

    expect((await client.delete(`/v2.1/images/${r.body.image_id}`)).status).toBe(204);
    expect((await image(r.body.image_id)).status).toBe(404);
    expect((await client.delete(`/v2.1/images/${r.body.image_id}`)).status).toBe(404);
  });

  it("an admin's snapshot of another project's server: the admin's project owns it, shared with the server's (instance_owner)", async () => {
    const id = await active();
    const owner = (await server(id)).tenant_id as string;
    const r = await action(id, { createImage: { name: "by-admin" } }, new Client(client.url, ADMIN, "2.45"));
    expect(r.status).toBe(202);
    await imageActive(r.body.image_id);
    const g = (await client.get(`/image/v2/images/${r.body.image_id}`)).body;
    expect(g).toMatchObject({ visibility: "shared", instance_owner: owner });
    expect(g.owner).not.toBe(owner);
    // the server's project sees it, and may not delete what it does not own
    expect((await client.get(`/v2.1/images/${r.body.image_id}`)).status).toBe(200);
    expect((await client.delete(`/v2.1/images/${r.body.image_id}`)).status).toBe(403);
    expect((await admin().delete(`/v2.1/images/${r.body.image_id}`)).status).toBe(204);
    await settled(id);
  });

  it("a host that dies mid-snapshot takes it again from its queue once back; nothing else is resent", async () => {
    const id = await active();
    const host = (await server(id))["OS-EXT-SRV-ATTR:host"] as string;
    const driver = await driverOf(id);
    driver.snapshotMs = 2000;
    try {
      const r = await action(id, { createImage: { name: "interrupted" } }, at("2.45"));
      expect(r.status).toBe(202);
      await eventually(
        () => server(id),
        (s) => s["OS-EXT-STS:task_state"] === "image_snapshot",
      );
      await runtime.killHost(host);
      driver.snapshotMs = 0;
      await runtime.restartHost(host);
      // the cast comes back after its visibility timeout (30 s) and the new agent takes it
      const done = await eventually(
        () => image(r.body.image_id),
        (g) => g.body.image?.status === "ACTIVE",
        90_000,
      );
      expect(done.body.image.status).toBe("ACTIVE");
      expect((await settled(id)).status).toBe("ACTIVE");
      const actions = (await client.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
        action: string;
      }[];
      expect(actions.map((a) => a.action).sort()).toEqual(["create", "createImage"]);
    } finally {
      driver.snapshotMs = 0;
    }
  }, 120_000);

  it("a server in image_* task states is deleted, and its image finishes or goes", async () => {
    const id = await active();
    const r = await action(id, { createImage: { name: "while-deleting" } }, at("2.45"));
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await client.waitForStatus(id, ["GONE"]);
    await eventually(
      () => image(r.body.image_id),
      (g) => g.status === 404 || g.body.image?.status === "ACTIVE",
    );
  });
});

describe("createBackup", () => {
  it("keeps the newest `rotation` backups of a type; 2.45 answers the image id", async () => {
    const id = await active();
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const r = await action(
        id,
        { createBackup: { name: `daily-${n}`, backup_type: "daily", rotation: 2 } },
        at("2.45"),
      );
      expect(r.status).toBe(202);
      ids.push(r.body.image_id);
      await imageActive(r.body.image_id);
      await settled(id);
    }
    // the oldest went with the third
    await eventually(
      () => image(ids[0]!),
      (g) => g.status === 404,
    );
    for (const kept of ids.slice(1)) {
      const g = (await image(kept)).body.image;
      expect(g.metadata).toMatchObject({ image_type: "backup", backup_type: "daily", instance_uuid: id });
    }
    const listed = (await client.get(`/v2.1/images/detail?server=${id}&type=backup`)).body.images as {
      id: string;
    }[];
    expect(listed.map((i) => i.id).sort()).toEqual(ids.slice(1).sort());

    const actions = (await client.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
      action: string;
    }[];
    expect(actions.filter((a) => a.action === "createBackup")).toHaveLength(3);
  });

  it("before 2.45: Location only while rotation > 0 (rotation 0 deletes the backup at once); bad bodies 400", async () => {
    const id = await active();
    const r = await action(id, { createBackup: { name: "weekly", backup_type: "weekly", rotation: 1 } });
    expect(r.status).toBe(202);
    expect(r.headers.get("location")).toMatch(/\/v2\.1\/images\/[0-9a-f-]{36}$/);
    await imageActive(r.headers.get("location")!.split("/").pop()!);
    await settled(id);
    const zero = await action(id, { createBackup: { name: "none", backup_type: "weekly", rotation: 0 } });
    expect(zero.status).toBe(202);
    expect(zero.headers.get("location")).toBeNull();
    await settled(id);
    expect((await action(id, { createBackup: { name: "x", backup_type: "daily" } })).status).toBe(400);
    expect(
      (await action(id, { createBackup: { name: "x", backup_type: "daily", rotation: -1 } })).status,
    ).toBe(400);
  });
});
