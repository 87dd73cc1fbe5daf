// The libvirt driver's live migration. A test:/// connection cannot migrate a domain: its facts
// say so and it offers no live migration (the conductor then refuses, as for exec). A real
// `virsh migrate --live` needs two libvirt hosts that allow it: a qemu:///system libvirtd here and
// another one listening on qemu+tcp at NOVALESS_LIBVIRT_LIVE_DEST (its address), with the image
// cache at NOVALESS_LIBVIRT_IMAGES; without them that test skips, saying why.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { GuestSpec } from "../../lib/compute/drivers/driver.js";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";

const works = (args: string[]) => {
  try {
    execFileSync("virsh", args, { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
};
const virsh = works(["--version"]);
const dest = process.env.NOVALESS_LIBVIRT_LIVE_DEST;
const images = process.env.NOVALESS_LIBVIRT_IMAGES;
const libvirtd = virsh && works(["-c", "qemu:///system", "version"]);
const live = libvirtd && Boolean(dest) && Boolean(images);
if (!virsh) console.warn("test/drivers/libvirt-live.test.ts: virsh is missing: these tests skip");
else if (!live) {
  console.warn(
    "test/drivers/libvirt-live.test.ts: a real live migration needs libvirtd (qemu:///system) here and " +
      "NOVALESS_LIBVIRT_LIVE_DEST (another libvirt host on qemu+tcp) and NOVALESS_LIBVIRT_IMAGES: it skips",
  );
}

const root = mkdtempSync(join(tmpdir(), "novaless-libvirt-live-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function guest(): GuestSpec {
  return {
    instance_uuid: crypto.randomUUID(),
    name: "mover",
    hostname: "mover",
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
    image: { id: "a1b2c3d4-0000-4000-8000-000000000001", name: "cirros", properties: {} },
    metadata: {},
  };
}

describe.skipIf(!virsh)("libvirt live migration", () => {
  it("a test:/// connection cannot migrate live, and its facts say why", () => {
    const d = new LibvirtDriver({
      host: "h",
      uri: "test:///default",
      virtType: "test",
      instancesPath: join(root, "h"),
      imagesPath: join(root, "_base"),
    });
    expect(d.live).toBeUndefined();
    expect(d.facts()).toMatchObject({
      live_migration: false,
      live_migration_unsupported: "connection test:///default cannot migrate a domain live",
    });
  });

  it.skipIf(!live)(
    "virsh migrate --live moves a running domain to the other host",
    async () => {
      const d = new LibvirtDriver({
        host: "here",
        uri: "qemu:///system",
        virtType: "qemu",
        instancesPath: join(root, "here"),
        imagesPath: images!,
      });
      await d.init();
      const g = guest();
      await d.spawn(g);
      const progress: number[] = [];
      await d.live!.liveMigrate(
        g.instance_uuid,
        { host: dest!, ip: dest!, blockMigration: null },
        {
          abort: new AbortController().signal,
          forceComplete: new AbortController().signal,
          onProgress: (p) => progress.push(p.memory_processed_bytes),
        },
      );
      expect(d.has(g.instance_uuid)).toBe(false);
      const there = execFileSync("virsh", [
        "-c",
        `qemu+tcp://${dest}/system`,
        "domstate",
        `instance-${g.instance_uuid}`,
      ]);
      expect(there.toString().trim()).toBe("running");
      execFileSync("virsh", ["-c", `qemu+tcp://${dest}/system`, "destroy", `instance-${g.instance_uuid}`]);
      execFileSync("virsh", ["-c", `qemu+tcp://${dest}/system`, "undefine", `instance-${g.instance_uuid}`]);
      await d.close();
    },
    300_000,
  );
});
