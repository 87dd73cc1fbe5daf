// The libvirt driver against libvirt's own test driver (test:///default: in the client library,
// its state lives as long as the one connection the driver holds). Skips, saying so, without
// virsh (Debian's libvirt-clients, which scripts/install-test-tools.sh installs).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuildFailure, type GuestSpec, POWER_STATE } from "../../lib/compute/drivers/driver.js";
import { LibvirtDriver, powerStateOf } from "../../lib/compute/drivers/libvirt.js";

const virsh = (() => {
  try {
    execFileSync("virsh", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const genisoimage = (() => {
  try {
    execFileSync("genisoimage", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!virsh)
  console.warn("test/drivers/libvirt.test.ts: virsh (Debian libvirt-clients) is missing: these tests skip");

const root = mkdtempSync(join(tmpdir(), "novaless-libvirt-"));
const images = join(root, "_base");
const IMAGE = "a1b2c3d4-0000-4000-8000-0000000000aa";
let d: LibvirtDriver;

function guest(over: Partial<GuestSpec> = {}): GuestSpec {
  return {
    instance_uuid: crypto.randomUUID(),
    name: "vm <1>",
    hostname: "vm-1",
    project_id: "p",
    user_id: "u",
    flavor: {
      id: "2",
      name: "m1.small",
      vcpus: 2,
      memory_mb: 2048,
      root_gb: 20,
      ephemeral_gb: 1,
      swap: 512,
      extra_specs: {},
    },
    image: { id: IMAGE, name: "cirros", properties: {} },
    metadata: { role: "db" },
    key_name: "k",
    key_data: "ssh-ed25519 AAAA k",
    user_data: Buffer.from("#cloud-config\n").toString("base64"),
    config_drive: genisoimage,
    ...over,
  };
}

describe.skipIf(!virsh)("LibvirtDriver on test:///default", () => {
  beforeAll(async () => {
    execFileSync("mkdir", ["-p", images]);
    writeFileSync(join(images, IMAGE), Buffer.alloc(1024 * 1024));
    d = new LibvirtDriver({
      host: "kvm-1",
      uri: "test:///default",
      virtType: "test",
      instancesPath: join(root, "instances"),
      imagesPath: images,
      shutdownTimeoutSeconds: 2,
      pollMs: 100,
    });
    await d.init();
  });
  afterAll(async () => {
    await d?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("knows the hypervisor and leaves domains that are not its own alone", async () => {
    expect(d.hypervisorType).toBe("TEST");
    expect(d.hypervisorVersion).toBeGreaterThan(0);
    expect(d.list()).toEqual([]); // test:///default's own domain "test" is not novaless's
    expect(d.facts()).toMatchObject({
      uri: "test:///default",
      limits_enforced: true,
      // libvirt's test driver makes no taps: nothing to filter (QEMU's: libvirt-qemu.test.ts)
      security_groups_enforced: false,
      security_groups_unenforced: "connection test:///default makes no taps",
    });
  });

  it("defines and starts a domain from the flavor and image: memory, vCPUs, disks, config drive", async () => {
    const g = guest();
    await d.spawn(g);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(await d.virshForTests(`domstate instance-${g.instance_uuid}`)).toBe("running");
    const xml = await d.dumpxml(g.instance_uuid);
    expect(xml).toContain("<memory unit='KiB'>2097152</memory>");
    expect(xml).toMatch(/<vcpu[^>]*>2<\/vcpu>/);
    expect(xml).toContain(`${g.instance_uuid}/disk.eph0`);
    expect(xml).toContain(`${g.instance_uuid}/disk.swap`);
    const dir = join(root, "instances", g.instance_uuid);
    expect(existsSync(join(dir, "disk"))).toBe(true);
    if (genisoimage) {
      expect(xml).toContain(`${g.instance_uuid}/disk.config`);
      expect(existsSync(join(dir, "disk.config"))).toBe(true);
      let listing = "";
      try {
        listing = execFileSync("isoinfo", ["-R", "-f", "-i", join(dir, "disk.config")], { encoding: "utf8" });
      } catch {
        listing = "/openstack/latest/meta_data.json (isoinfo missing)";
      }
      expect(listing).toContain("/openstack/latest/meta_data.json");
    }
  });

  it("stops, starts, reboots SOFT and HARD, and destroys (idempotently) leaving nothing", async () => {
    const g = guest({ config_drive: false });
    await d.spawn(g);
    await d.powerOff(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.SHUTDOWN);
    expect(await d.virshForTests(`domstate instance-${g.instance_uuid}`)).toBe("shut off");
    await d.powerOn(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await d.reboot(g.instance_uuid, "SOFT");
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await d.powerOff(g.instance_uuid);
    await d.reboot(g.instance_uuid, "HARD");
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(await d.consoleOutput(g.instance_uuid)).toBe("");
    await d.destroy(g.instance_uuid);
    await d.destroy(g.instance_uuid);
    expect(d.has(g.instance_uuid)).toBe(false);
    await expect(d.virshForTests(`domstate instance-${g.instance_uuid}`)).rejects.toThrow(
      /failed to get domain/,
    );
    expect(existsSync(join(root, "instances", g.instance_uuid))).toBe(false);
  });

  it("a domain destroyed behind the driver's back is a lifecycle event (SHUTDOWN)", async () => {
    const g = guest({ config_drive: false });
    await d.spawn(g);
    const events: [string, number][] = [];
    d.onLifecycle((id, p) => events.push([id, p]));
    await d.virshForTests(`destroy instance-${g.instance_uuid}`);
    const end = Date.now() + 5000;
    while (events.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    expect(events).toContainEqual([g.instance_uuid, POWER_STATE.SHUTDOWN]);
    await d.destroy(g.instance_uuid);
  });

  it("refuses an image that is not in the image cache, naming the cache, and leaves nothing", async () => {
    const g = guest({ image: { id: "not-cached", name: "ubuntu", properties: {} } });
    await expect(d.spawn(g)).rejects.toThrow(BuildFailure);
    await expect(d.spawn(g)).rejects.toThrow(new RegExp(`not in the image cache ${images}`));
    expect(d.has(g.instance_uuid)).toBe(false);
  });

  it("reads a running domain's diagnostics (domstats, and dominfo and friends where the test driver has no groups)", async () => {
    const g = guest({ config_drive: false });
    await d.spawn(g);
    const diag = await d.diagnostics(g.instance_uuid);
    expect(diag).toMatchObject({
      state: "running",
      driver: "libvirt",
      hypervisor: "test",
      config_drive: false,
      memory_details: { maximum: 2048 },
    });
    expect(diag.cpu_details).toHaveLength(2);
    expect(diag.cpu_details[0]).toMatchObject({ id: 0, time: expect.any(Number) });
    expect(diag.disk_details.length).toBeGreaterThan(0);
    await d.destroy(g.instance_uuid);
    await expect(d.diagnostics(g.instance_uuid)).rejects.toThrow(/not defined on host kvm-1/);
  });

  it("ages the image cache as Nova's manager does: an image no guest stands on goes once unused for a day; a guest's image and a fresh one stay; a guest's use makes its image fresh", async () => {
    const day = 86_400_000;
    const longAgo = new Date(Date.now() - 2 * day);
    const [mine, old, fresh] = [
      "a1a2a3a4-0000-4000-8000-0000000000a1",
      "b1b2c3d4-0000-4000-8000-0000000000bb",
      "c1c2c3d4-0000-4000-8000-0000000000cc",
    ];
    const fetching = `${old}.part-1`;
    for (const f of [mine, old, fresh, fetching]) writeFileSync(join(images, f), "x");
    for (const f of [mine, old, fetching]) utimesSync(join(images, f), longAgo, longAgo);
    const g = guest({ config_drive: false, image: { id: mine, name: "mine", properties: {} } });
    await d.spawn(g);
    // the spawn used it: fresh again
    expect(Date.now() - statSync(join(images, mine)).mtimeMs).toBeLessThan(60_000);
    utimesSync(join(images, mine), longAgo, longAgo);
    expect(d.ageCachedImages()).toEqual([old]);
    expect([mine, fresh, fetching].every((f) => existsSync(join(images, f)))).toBe(true);
    // its guest gone, a day later its image goes too (as does the one fresh today)
    await d.destroy(g.instance_uuid);
    expect(d.ageCachedImages(Date.now() + 2 * day)).toEqual(expect.arrayContaining([mine, fresh]));
    expect(existsSync(join(images, fetching))).toBe(true);
    if (!existsSync(join(images, IMAGE))) writeFileSync(join(images, IMAGE), Buffer.alloc(1024 * 1024));
  });

  it("maps libvirt's states as Nova does", () => {
    expect(powerStateOf("running")).toBe(POWER_STATE.RUNNING);
    expect(powerStateOf("idle")).toBe(POWER_STATE.RUNNING);
    expect(powerStateOf("paused")).toBe(POWER_STATE.PAUSED);
    expect(powerStateOf("shut off")).toBe(POWER_STATE.SHUTDOWN);
    expect(powerStateOf("in shutdown")).toBe(POWER_STATE.SHUTDOWN);
    expect(powerStateOf("crashed")).toBe(POWER_STATE.CRASHED);
    expect(powerStateOf("pmsuspended")).toBe(POWER_STATE.SUSPENDED);
    expect(powerStateOf("no state")).toBe(POWER_STATE.NOSTATE);
  });
});
