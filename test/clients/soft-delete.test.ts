// Soft delete through the real clients, on a runtime of its own with [DEFAULT]
// reclaim_instance_interval set (the other client suites run with Nova's default 0, where a delete
// is at once and `server delete --wait` waits for the 404): the `openstack` CLI's server delete →
// SOFT_DELETED, `server list --deleted` (admin), `server restore` → ACTIVE and its 409, `server
// event list`, `server delete --force --wait`; openstacksdk's delete_server and
// delete_server(force=True).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Cloud, type CommandOptions, type Json, missing, startCloud, unique } from "./harness.js";

// Python start-up is most of each command: several at once on two cores take their time.
vi.setConfig({ testTimeout: 300_000 });

const IMAGE = "a1b2c3d4-0000-4000-8000-000000000001";

describe.skipIf(missing("openstack") || missing("openstacksdk"))(
  "soft delete through the openstack CLI and openstacksdk",
  () => {
    let cloud: Cloud;
    beforeAll(async () => {
      cloud = await startCloud({ env: { NOVALESS_RECLAIM_INSTANCE_INTERVAL: "3600" } });
    });
    afterAll(async () => {
      await cloud?.stop();
    });

    const demo = { cloud: "demo" } as const;
    const admin = { cloud: "admin" } as const;
    const waitForStatus = async (id: string, status: string, o: CommandOptions): Promise<Json> => {
      for (let tries = 0; tries < 60; tries++) {
        const shown = await cloud.openstack(["server", "show", id], o);
        if (shown.status === status && !shown["OS-EXT-STS:task_state"]) return shown;
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error(`server ${id} never became ${status}`);
    };

    it("openstack server delete → SOFT_DELETED, listed with --deleted; server restore → ACTIVE, again Nova's 409; server delete --force --wait", async () => {
      const created = await cloud.openstack(
        ["server", "create", "--flavor", "m1.tiny", "--image", "cirros", "--wait", unique("soft")],
        demo,
      );
      const id = created.id as string;
      await cloud.openstack(["server", "delete", id], { ...demo, json: false });
      const soft = await waitForStatus(id, "SOFT_DELETED", admin);
      expect(soft["OS-EXT-STS:vm_state"]).toBe("soft-delete");
      expect(soft["OS-EXT-STS:power_state"]).toBe(4);

      const live: Json[] = await cloud.openstack(["server", "list"], demo);
      expect(live.map((s) => s.ID)).not.toContain(id);
      const deleted: Json[] = await cloud.openstack(["server", "list", "--deleted", "--all-projects"], admin);
      expect(deleted.find((s) => s.ID === id)?.Status).toBe("SOFT_DELETED");

      await cloud.openstack(["server", "restore", id], { ...demo, json: false });
      const back = await waitForStatus(id, "ACTIVE", demo);
      expect(back.id).toBe(id);
      const again = await cloud.openstackFails(["server", "restore", id], { ...demo, json: false });
      expect(again.stderr).toContain(`Cannot 'restore' instance ${id} while it is in vm_state active`);
      const events: Json[] = await cloud.openstack(["server", "event", "list", id], demo);
      expect(events.map((e) => e.Action)).toEqual(expect.arrayContaining(["create", "delete", "restore"]));

      await cloud.openstack(["server", "delete", id], { ...demo, json: false });
      await waitForStatus(id, "SOFT_DELETED", admin);
      await cloud.openstack(["server", "delete", "--force", "--wait", id], { ...demo, json: false });
      const gone = await cloud.openstackFails(["server", "show", id], demo);
      expect(gone.stderr).toMatch(/No server with a name or ID|could not be found/);
    });

    it("openstacksdk: delete_server leaves SOFT_DELETED (not listed), delete_server(force=True) deletes it", async () => {
      const r = await cloud.sdk("soft-delete", [unique("sdk-soft"), "1", IMAGE], { ...demo, version: "2.1" });
      expect(r.soft).toMatchObject({ status: "SOFT_DELETED", vm_state: "soft-delete" });
      expect(r.listed).not.toContain(r.soft.id);
    });
  },
);
