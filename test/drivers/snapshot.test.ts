// The drivers' snapshot (Nova's snapshot, the host side of createImage and createBackup) and the
// boot from one on another host, with an image store kept in a directory (the images bucket's
// stand-in: these are the drivers' own tests, without AWS; test/e2e/snapshots-exec.test.ts runs
// them through S3 and IAM). libvirt on test:///default (skips without virsh), and exec.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type GuestSpec, POWER_STATE } from "../../lib/compute/drivers/driver.js";
import { ExecDriver } from "../../lib/compute/drivers/exec.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";
import { dirStore } from "./dir-store.js";

const virsh = (() => {
  try {
    execFileSync("virsh", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const root = mkdtempSync(join(tmpdir(), "novaless-snapshot-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const flavor = {
  id: "1",
  name: "m1.tiny",
  vcpus: 1,
  memory_mb: 512,
  root_gb: 1,
  ephemeral_gb: 0,
  swap: 0,
  extra_specs: {},
};
const guest = (image: GuestSpec["image"]): GuestSpec => ({
  instance_uuid: crypto.randomUUID(),
  name: "vm",
  hostname: "vm",
  project_id: "p",
  user_id: "u",
  flavor,
  image,
  metadata: {},
});

const stagesOf = () => {
  const stages: string[] = [];
  return { stages, stage: async (s: string) => void stages.push(s) };
};

describe.skipIf(!virsh)("libvirt (test:///default)", () => {
  it("copies the root disk into the store; another host boots it, fetching it into its cache", async () => {
    const store = dirStore(join(root, "libvirt-store"));
    const base = "a1b2c3d4-0000-4000-8000-0000000000bb";
    const hosts = ["kvm-1", "kvm-2"].map(
      (host) =>
        new LibvirtDriver({
          host,
          uri: "test:///default",
          virtType: "test",
          instancesPath: join(root, host, "instances"),
          imagesPath: join(root, host, "_base"),
          imageStore: store,
          pollMs: 100,
        }),
    );
    const [one, two] = hosts as [LibvirtDriver, LibvirtDriver];
    try {
      await Promise.all(hosts.map((h) => h.init()));
      mkdirSync(join(root, "kvm-1", "_base"), { recursive: true });
      writeFileSync(join(root, "kvm-1", "_base", base), Buffer.alloc(64 * 1024, 7));
      const g = guest({ id: base, name: "cirros", properties: { disk_format: "raw" } });
      await one.spawn(g);
      const snapId = crypto.randomUUID();
      const { stages, stage } = stagesOf();
      const data = await one.snapshot(g.instance_uuid, snapId, stage);
      expect(stages).toEqual(["image_pending_upload", "image_uploading"]);
      expect(data).toMatchObject({ container_format: "bare", size: expect.any(Number) });
      expect(data.size).toBeGreaterThan(0);
      // the guest runs again once its disk is copied
      expect(one.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
      expect(store.puts).toEqual([snapId]);

      const child = guest({
        id: snapId,
        name: "snap",
        properties: { disk_format: data.disk_format, image_type: "snapshot" },
      });
      await two.spawn(child);
      expect(two.powerState(child.instance_uuid)).toBe(POWER_STATE.RUNNING);
      expect(existsSync(join(root, "kvm-2", "_base", snapId))).toBe(true);
      await expect(one.snapshot(crypto.randomUUID(), crypto.randomUUID(), stage)).rejects.toThrow(/kvm-1/);
      // its last guest here gone, the fetched image leaves the cache (the bucket keeps it)
      await two.destroy(child.instance_uuid);
      expect(existsSync(join(root, "kvm-2", "_base", snapId))).toBe(false);
      await one.destroy(g.instance_uuid);
      expect(existsSync(join(root, "kvm-1", "_base", base))).toBe(true);
    } finally {
      for (const h of hosts) {
        for (const x of h.list()) await h.destroy(x.instance_uuid);
        await h.close();
      }
    }
  });
});

describe("exec", () => {
  it("archives the guest's files, not the host's; another host unpacks them for its guest", async () => {
    const store = dirStore(join(root, "exec-store"));
    const [one, two] = ["exec-1", "exec-2"].map(
      (host) =>
        new ExecDriver({ host, instancesPath: join(root, host), cgroupRoot: null, imageStore: store }),
    ) as [ExecDriver, ExecDriver];
    const image = {
      id: "a1b2c3d4-0000-4000-8000-0000000000cc",
      name: "sleeper",
      properties: { "novaless:exec_command": "sleep 600" },
    };
    await one.init();
    await two.init();
    try {
      const g = guest(image);
      await one.spawn(g);
      writeFileSync(join(root, "exec-1", g.instance_uuid, "data.txt"), "kept");
      const snapId = crypto.randomUUID();
      const { stages, stage } = stagesOf();
      const data = await one.snapshot(g.instance_uuid, snapId, stage);
      expect(stages).toEqual(["image_pending_upload", "image_uploading"]);
      expect(data).toMatchObject({ disk_format: "raw", container_format: "compressed" });
      // held while archived, running again after
      expect(one.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
      const listing = execFileSync("tar", ["-tf", join(root, "exec-store", snapId)], { encoding: "utf8" });
      expect(listing).toContain("./data.txt");
      expect(listing).not.toMatch(/\.\/(pid|console\.log|spec\.json|config)\b/);

      const child = guest({
        ...image,
        id: snapId,
        properties: { ...image.properties, image_type: "snapshot" },
      });
      await two.spawn(child);
      expect(two.powerState(child.instance_uuid)).toBe(POWER_STATE.RUNNING);
      expect(readFileSync(join(root, "exec-2", child.instance_uuid, "data.txt"), "utf8")).toBe("kept");

      // a snapshot image whose data the store lacks cannot be booted: the host says which
      const orphan = guest({
        ...image,
        id: crypto.randomUUID(),
        properties: { ...image.properties, image_type: "snapshot" },
      });
      await expect(two.spawn(orphan)).rejects.toThrow(/images bucket.*|not in the images bucket/);
      expect(two.has(orphan.instance_uuid)).toBe(false);
    } finally {
      for (const d of [one, two]) {
        for (const x of d.list()) await d.destroy(x.instance_uuid);
        await d.close();
      }
    }
  });
});

describe("fake", () => {
  it("keeps no data: the image is its metadata", async () => {
    const d = new FakeDriver({ host: "fake-1", buildMs: 0, failAll: false });
    const g = guest({ id: "x", name: "cirros", properties: {} });
    await d.spawn(g);
    const { stages, stage } = stagesOf();
    expect(await d.snapshot(g.instance_uuid, "img", stage)).toEqual({
      disk_format: "raw",
      container_format: "bare",
      size: 0,
    });
    expect(stages).toEqual(["image_pending_upload", "image_uploading"]);
    await expect(d.snapshot("missing", "img", stage)).rejects.toThrow(/fake-1/);
  });
});
