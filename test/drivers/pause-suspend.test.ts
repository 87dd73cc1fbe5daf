// pause, unpause, suspend and resume in each driver. exec: SIGSTOP and SIGCONT to the guest's
// process group (the processes really stop: their state is T), suspend as stop-and-hold that a
// restarted agent finds still suspended, and stop, hard reboot and destroy of a held guest.
// libvirt on test:///default: `virsh suspend`/`resume`, `managedsave`/`start`, a saved domain
// listed SUSPENDED and undefined with its save image. fake: simulated, refusing a stopped guest.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { POWER_STATE } from "../../lib/compute/drivers/driver.js";
import { EXEC_COMMAND_PROPERTY, ExecDriver } from "../../lib/compute/drivers/exec.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { LibvirtDriver, powerStateOf } from "../../lib/compute/drivers/libvirt.js";
import { guestSpec } from "./guest.js";

const root = mkdtempSync(join(tmpdir(), "novaless-pause-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SLEEPER = `sh -c 'echo "up $NOVALESS_INSTANCE_UUID"; exec sleep 300'`;
const IMAGE = "a1b2c3d4-0000-4000-8000-0000000000bb";

const guest = (properties: Record<string, string> = {}) =>
  guestSpec(IMAGE, { image: { id: IMAGE, name: "img", properties } });

/** The process's state letter: T while SIGSTOPped. */
const stateOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function until(ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

describe("ExecDriver: SIGSTOP and SIGCONT to the process group", () => {
  const drivers: ExecDriver[] = [];
  const path = join(root, "exec");
  const driver = () => {
    const d = new ExecDriver({
      host: "exec-host",
      instancesPath: path,
      shutdownTimeoutSeconds: 2,
      cgroupRoot: null,
      pollMs: 100,
    });
    drivers.push(d);
    return d;
  };
  afterEach(async () => {
    for (const d of drivers.splice(0)) {
      for (const g of d.list()) await d.destroy(g.instance_uuid);
      await d.close();
    }
  });

  it("pause holds every process of the guest, unpause runs them on; each is safe to repeat", async () => {
    const d = driver();
    await d.init();
    const g = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await d.spawn(g);
    const pid = d.pidOf(g.instance_uuid)!;
    await d.pause(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.PAUSED);
    expect(stateOf(pid)).toBe("T");
    expect(readFileSync(join(path, g.instance_uuid, "state"), "utf8")).toBe("paused");
    await d.pause(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.PAUSED);
    await d.unpause(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(stateOf(pid)).not.toBe("T");
    expect(d.pidOf(g.instance_uuid)).toBe(pid); // the same process: nothing rebooted
  });

  it("a suspended guest is held and stays SUSPENDED for a restarted agent; resume runs the same process", async () => {
    const first = driver();
    await first.init();
    const g = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await first.spawn(g);
    const pid = first.pidOf(g.instance_uuid)!;
    await first.suspend(g.instance_uuid);
    expect(first.powerState(g.instance_uuid)).toBe(POWER_STATE.SUSPENDED);
    expect(stateOf(pid)).toBe("T");
    await first.close();
    drivers.splice(drivers.indexOf(first), 1);

    const second = driver();
    await second.init();
    expect(second.powerState(g.instance_uuid)).toBe(POWER_STATE.SUSPENDED);
    await second.resume(g.instance_uuid);
    expect(second.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(second.pidOf(g.instance_uuid)).toBe(pid);
    expect(stateOf(pid)).not.toBe("T");
  });

  it("a paused guest found by a restarted agent is PAUSED", async () => {
    const first = driver();
    await first.init();
    const g = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await first.spawn(g);
    await first.pause(g.instance_uuid);
    await first.close();
    drivers.splice(drivers.indexOf(first), 1);
    const second = driver();
    await second.init();
    expect(second.powerState(g.instance_uuid)).toBe(POWER_STATE.PAUSED);
  });

  it("a held guest stops cleanly (its SIGTERM delivered), reboots HARD and is destroyed", async () => {
    const d = driver();
    await d.init();
    const stopped = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await d.spawn(stopped);
    const pid = d.pidOf(stopped.instance_uuid)!;
    await d.pause(stopped.instance_uuid);
    await d.powerOff(stopped.instance_uuid, 30);
    expect(alive(pid)).toBe(false);
    expect(d.powerState(stopped.instance_uuid)).toBe(POWER_STATE.SHUTDOWN);

    const rebooted = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await d.spawn(rebooted);
    const before = d.pidOf(rebooted.instance_uuid)!;
    await d.suspend(rebooted.instance_uuid);
    await d.reboot(rebooted.instance_uuid, "HARD");
    expect(d.powerState(rebooted.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(d.pidOf(rebooted.instance_uuid)).not.toBe(before);

    const destroyed = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await d.spawn(destroyed);
    const held = d.pidOf(destroyed.instance_uuid)!;
    await d.suspend(destroyed.instance_uuid);
    await d.destroy(destroyed.instance_uuid);
    await until(() => !alive(held));
    expect(alive(held)).toBe(false);
    expect(d.has(destroyed.instance_uuid)).toBe(false);
  });

  it("a held guest killed from outside is a lifecycle event; resume of a suspended guest whose process is gone boots it afresh", async () => {
    const d = driver();
    await d.init();
    const events: [string, number][] = [];
    d.onLifecycle((id, power) => events.push([id, power]));
    const g = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await d.spawn(g);
    const pid = d.pidOf(g.instance_uuid)!;
    await d.suspend(g.instance_uuid);
    process.kill(-pid, "SIGKILL");
    await until(() => events.length > 0);
    expect(events).toEqual([[g.instance_uuid, POWER_STATE.CRASHED]]);
    await d.resume(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(d.pidOf(g.instance_uuid)).not.toBe(pid);
  });

  it("refuses to pause a guest that is not running, naming the host and the instance", async () => {
    const d = driver();
    await d.init();
    const g = guest({ [EXEC_COMMAND_PROPERTY]: SLEEPER });
    await d.spawn(g);
    await d.powerOff(g.instance_uuid, 2);
    await expect(d.pause(g.instance_uuid)).rejects.toThrow(
      `instance ${g.instance_uuid} is not running on host exec-host: it cannot be paused`,
    );
    await expect(d.unpause(g.instance_uuid)).rejects.toThrow(/exec-host/);
  });
});

describe("FakeDriver: simulated", () => {
  it("pauses, unpauses, suspends and resumes; refuses a stopped guest", async () => {
    const d = new FakeDriver({ host: "fake-1", buildMs: 0, failAll: false });
    const g = guest();
    await d.spawn(g);
    await d.pause(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.PAUSED);
    await d.unpause(g.instance_uuid);
    await d.suspend(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.SUSPENDED);
    await expect(d.unpause(g.instance_uuid)).rejects.toThrow(/fake-1/);
    await d.resume(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await d.powerOff(g.instance_uuid);
    await expect(d.suspend(g.instance_uuid)).rejects.toThrow(
      `instance ${g.instance_uuid} is not running on host fake-1: it cannot be suspended`,
    );
  });
});

const virsh = (() => {
  try {
    execFileSync("virsh", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!virsh) console.warn("test/drivers/pause-suspend.test.ts: virsh is missing: the libvirt tests skip");

describe("powerStateOf: a managed-saved domain is suspended", () => {
  it("reads `virsh list --managed-save` and `domstate [--reason]`", () => {
    expect(powerStateOf("saved")).toBe(POWER_STATE.SUSPENDED);
    expect(powerStateOf("shut off (destroyed)")).toBe(POWER_STATE.SHUTDOWN);
    expect(powerStateOf("paused (user)")).toBe(POWER_STATE.PAUSED);
    expect(powerStateOf("running (booted)")).toBe(POWER_STATE.RUNNING);
  });
});

describe.skipIf(!virsh)("LibvirtDriver on test:///default: suspend/resume and managedsave/start", () => {
  let d: LibvirtDriver;
  const images = join(root, "_base");
  beforeAll(async () => {
    mkdirSync(images, { recursive: true });
    writeFileSync(join(images, IMAGE), Buffer.alloc(1024 * 1024));
    d = new LibvirtDriver({
      host: "kvm-1",
      uri: "test:///default",
      virtType: "test",
      instancesPath: join(root, "libvirt"),
      imagesPath: images,
      shutdownTimeoutSeconds: 2,
      pollMs: 100,
    });
    await d.init();
  });
  afterAll(async () => d?.close());

  it("pause is `virsh suspend`, unpause `virsh resume`", async () => {
    const g = guest();
    await d.spawn(g);
    const name = `instance-${g.instance_uuid}`;
    await d.pause(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.PAUSED);
    expect(await d.virshForTests(`domstate ${name}`)).toBe("paused");
    await d.pause(g.instance_uuid); // a redelivered cast: already paused
    await d.unpause(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(await d.virshForTests(`domstate ${name}`)).toBe("running");
    await d.destroy(g.instance_uuid);
  });

  it("a paused or suspended domain powers off (stop, shelve, the sync's force_stop): SHUTDOWN, its saved state dropped", async () => {
    const g = guest();
    await d.spawn(g);
    const name = `instance-${g.instance_uuid}`;
    await d.pause(g.instance_uuid);
    await d.powerOff(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.SHUTDOWN);
    await d.powerOn(g.instance_uuid);
    await d.suspend(g.instance_uuid);
    await d.powerOff(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.SHUTDOWN);
    expect(await d.virshForTests(`dominfo ${name}`)).toMatch(/^Managed save:\s*no/m);
    await d.destroy(g.instance_uuid);
  });

  it("suspend is `virsh managedsave` (SUSPENDED in the list), resume `virsh start`; a saved domain is destroyed with its image", async () => {
    const g = guest();
    await d.spawn(g);
    const name = `instance-${g.instance_uuid}`;
    await d.suspend(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.SUSPENDED);
    expect(await d.virshForTests(`domstate --reason ${name}`)).toBe("shut off (saved)");
    expect(d.list()).toContainEqual({ instance_uuid: g.instance_uuid, power_state: POWER_STATE.SUSPENDED });
    await d.resume(g.instance_uuid);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await expect(d.unpause(g.instance_uuid)).resolves.toBeUndefined(); // running already
    await d.suspend(g.instance_uuid);
    await expect(d.pause(g.instance_uuid)).rejects.toThrow(
      `instance ${g.instance_uuid} on host kvm-1 is in power state 7: libvirt cannot have it paused`,
    );
    await d.reboot(g.instance_uuid, "HARD");
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await d.suspend(g.instance_uuid);
    await d.destroy(g.instance_uuid);
    expect(d.has(g.instance_uuid)).toBe(false);
    await expect(d.virshForTests(`domstate ${name}`)).rejects.toThrow();
  });
});
