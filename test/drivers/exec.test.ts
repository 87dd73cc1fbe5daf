// The exec driver with real processes: each guest a process group with its instance's uuid in
// its environment, its output the console log; stop, start, reboot, a crash seen as a lifecycle
// event, a restarted agent finding its guests, destroy leaving nothing. Every process a test
// starts is destroyed by it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { detectCgroupV2, limitFiles } from "../../lib/compute/drivers/cgroups.js";
import { BuildFailure, type Driver, type GuestSpec, POWER_STATE } from "../../lib/compute/drivers/driver.js";
import { EXEC_COMMAND_PROPERTY, ExecDriver, parseCommandLine } from "../../lib/compute/drivers/exec.js";

const root = mkdtempSync(join(tmpdir(), "novaless-exec-"));
const drivers: ExecDriver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) {
    for (const g of d.list()) await d.destroy(g.instance_uuid);
    await d.close();
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
function driver(path = join(root, `host-${++n}`)): ExecDriver {
  const d = new ExecDriver({
    host: "exec-host",
    instancesPath: path,
    shutdownTimeoutSeconds: 2,
    cgroupRoot: null,
    pollMs: 100,
  });
  drivers.push(d);
  return d;
}

function guest(command: string | undefined, id = crypto.randomUUID()): GuestSpec {
  return {
    instance_uuid: id,
    name: "vm",
    hostname: "vm",
    project_id: "p",
    user_id: "u",
    flavor: {
      id: "1",
      name: "m1.tiny",
      vcpus: 1,
      memory_mb: 64,
      root_gb: 1,
      ephemeral_gb: 0,
      swap: 0,
      extra_specs: {},
    },
    image: { id: "img", name: "sleeper", properties: command ? { [EXEC_COMMAND_PROPERTY]: command } : {} },
    metadata: { role: "test" },
    key_name: "k",
    key_data: "ssh-ed25519 AAAA test",
    user_data: Buffer.from("#!/bin/sh\necho hi\n").toString("base64"),
  };
}

const SLEEPER = `sh -c 'echo "up $NOVALESS_INSTANCE_UUID"; exec sleep 300'`;

/** A guest spawned under `path` by a driver that then closed (an agent gone), still running. */
async function leftRunning(path: string): Promise<{ g: GuestSpec; pid: number }> {
  const first = driver(path);
  await first.init();
  const g = guest(SLEEPER);
  await first.spawn(g);
  const pid = first.pidOf(g.instance_uuid)!;
  await first.close();
  drivers.splice(drivers.indexOf(first), 1);
  return { g, pid };
}
const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
const running = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function until(ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
}

describe("parseCommandLine", () => {
  it("splits words as a shell would, without one", () => {
    expect(parseCommandLine(`sh -c 'echo "a b"; sleep 1'`)).toEqual(["sh", "-c", 'echo "a b"; sleep 1']);
    expect(parseCommandLine(`a "b c" d\\ e ""`)).toEqual(["a", "b c", "d e", ""]);
    expect(parseCommandLine(`["sleep", "10"]`)).toEqual(["sleep", "10"]);
    expect(() => parseCommandLine(`echo 'open`)).toThrow(/unterminated/);
    expect(() => parseCommandLine("   ")).toThrow(/empty/);
  });
});

describe("cgroup v2 detection and limits", () => {
  const read = (files: Record<string, string>) => (p: string) => files[p];
  it("says why limits are off on cgroup v1, on cgroup2 without controllers, and on when both are there", () => {
    const v1 = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw 0 0";
    expect(detectCgroupV2("/sys/fs/cgroup", v1, read({}))).toMatchObject({
      enforced: false,
      why: expect.stringMatching(/tmpfs/),
    });
    const v2 = "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0";
    expect(
      detectCgroupV2("/sys/fs/cgroup", v2, read({ "/sys/fs/cgroup/cgroup.controllers": "pids io" })),
    ).toMatchObject({
      enforced: false,
      why: expect.stringMatching(/no memory or cpu controller/),
    });
    expect(
      detectCgroupV2(
        "/sys/fs/cgroup",
        v2,
        read({ "/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids" }),
      ),
    ).toMatchObject({ enforced: true });
  });
  it("writes the flavor as memory.max and cpu.max", () => {
    expect(limitFiles(512, 2)).toEqual({ "memory.max": String(512 * 2 ** 20), "cpu.max": "200000 100000" });
  });
});

describe("ExecDriver", () => {
  it("runs the image's command as a process with the instance's uuid, its output the console", async () => {
    const d = driver();
    const g = guest(SLEEPER);
    await d.init();
    await d.spawn(g);
    const pid = d.pidOf(g.instance_uuid)!;
    expect(environOf(pid)).toContain(`NOVALESS_INSTANCE_UUID=${g.instance_uuid}`);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    await until(() =>
      readFileSync(join(root, `host-${n}`, g.instance_uuid, "console.log"), "utf8").includes("up"),
    );
    expect(await d.consoleOutput(g.instance_uuid)).toContain(`up ${g.instance_uuid}`);
    const meta = JSON.parse(
      readFileSync(
        join(root, `host-${n}`, g.instance_uuid, "config/openstack/latest/meta_data.json"),
        "utf8",
      ),
    );
    expect(meta).toMatchObject({
      uuid: g.instance_uuid,
      meta: { role: "test" },
      public_keys: { k: "ssh-ed25519 AAAA test" },
    });
    // a process shares the host's network: its security groups are kept, not enforced
    expect(d.facts()).toMatchObject({ limits_enforced: false, security_groups_enforced: false });
    expect((d as Driver).applyPortFilters).toBeUndefined();
  });

  it("fails the build of a command that exits at once, naming its status, and of an image without a command", async () => {
    const d = driver();
    await d.init();
    const bad = guest(`sh -c 'echo broken image >&2; exit 3'`);
    await expect(d.spawn(bad)).rejects.toThrow(BuildFailure);
    await expect(d.spawn(guest(`sh -c 'exit 3'`))).rejects.toThrow(/status 3/);
    expect(d.has(bad.instance_uuid)).toBe(false);
    await expect(d.spawn(guest(undefined))).rejects.toThrow(/has no novaless:exec_command property/);
  });

  it("stops, starts and reboots: a new process each time, both boots in the console", async () => {
    const d = driver();
    await d.init();
    const g = guest(SLEEPER);
    await d.spawn(g);
    const first = d.pidOf(g.instance_uuid)!;
    await d.powerOff(g.instance_uuid);
    expect(running(first)).toBe(false);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.SHUTDOWN);
    await d.powerOn(g.instance_uuid);
    const second = d.pidOf(g.instance_uuid)!;
    expect(second).not.toBe(first);
    await d.reboot(g.instance_uuid, "HARD");
    const third = d.pidOf(g.instance_uuid)!;
    expect(running(second)).toBe(false);
    await d.reboot(g.instance_uuid, "SOFT");
    expect(d.pidOf(g.instance_uuid)).not.toBe(third);
    expect(await d.consoleOutput(g.instance_uuid)).toMatch(/--- boot 2 ---[\s\S]*--- boot 4 ---/);
  });

  it("a guest killed from outside is a lifecycle event (CRASHED), once", async () => {
    const d = driver();
    await d.init();
    const events: [string, number][] = [];
    d.onLifecycle((id, p) => events.push([id, p]));
    const g = guest(SLEEPER);
    await d.spawn(g);
    process.kill(-d.pidOf(g.instance_uuid)!, "SIGKILL");
    await until(() => events.length > 0);
    expect(events).toEqual([[g.instance_uuid, POWER_STATE.CRASHED]]);
    expect(d.powerState(g.instance_uuid)).toBe(POWER_STATE.CRASHED);
  });

  it("a restarted agent finds its running guest, supervises it, and destroys it leaving nothing", async () => {
    const path = join(root, "restart");
    const { g, pid } = await leftRunning(path);

    const second = driver(path);
    await second.init();
    expect(second.list()).toEqual([{ instance_uuid: g.instance_uuid, power_state: POWER_STATE.RUNNING }]);
    const events: number[] = [];
    second.onLifecycle((_, p) => events.push(p));
    process.kill(-pid, "SIGTERM");
    await until(() => events.length > 0);
    expect(events).toEqual([POWER_STATE.SHUTDOWN]);
    await second.powerOn(g.instance_uuid);
    const again = second.pidOf(g.instance_uuid)!;
    await second.destroy(g.instance_uuid);
    await second.destroy(g.instance_uuid); // idempotent
    expect(running(again)).toBe(false);
    expect(second.has(g.instance_uuid)).toBe(false);
  });

  it("a stray process is adopted only from this driver's instances path, not from another agent of the same host name", async () => {
    const mine = join(root, "strays");
    const { g, pid } = await leftRunning(mine);
    rmSync(join(mine, g.instance_uuid), { recursive: true }); // an agent that died mid-destroy

    const other = driver(); // same host name, its own path
    await other.init();
    expect(other.has(g.instance_uuid)).toBe(false);

    const successor = driver(mine);
    await successor.init();
    expect(successor.pidOf(g.instance_uuid)).toBe(pid);
    await successor.destroy(g.instance_uuid);
    expect(running(pid)).toBe(false);
  });

  it("an aborted spawn leaves no process and no directory", async () => {
    const d = driver();
    await d.init();
    const abort = new AbortController();
    abort.abort();
    const g = guest(SLEEPER);
    await expect(d.spawn(g, abort.signal)).rejects.toThrow(BuildFailure);
    expect(d.has(g.instance_uuid)).toBe(false);
  });
});
