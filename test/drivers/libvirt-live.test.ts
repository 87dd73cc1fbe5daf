// The libvirt driver's live migration on test:///: such a connection cannot migrate a domain, its
// facts say so and it offers no live migration (the conductor then refuses, as for exec). A real
// `virsh migrate --live` between two libvirt hosts is in libvirt-qemu.test.ts.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";

const virsh = (() => {
  try {
    execFileSync("virsh", ["--version"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
})();
if (!virsh) console.warn("test/drivers/libvirt-live.test.ts: virsh is missing: these tests skip");

const root = mkdtempSync(join(tmpdir(), "novaless-libvirt-live-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

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
});
