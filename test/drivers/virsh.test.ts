// The virsh shell's deadlines. virsh 9.0 can lose the end of a job-watched command (managedsave,
// save, dump, migrate: virshWatchJob's worker quits the event loop before it runs) and then never
// answers; here a stand-in virsh makes that happen every time. VirshShell gives the command up
// with an error naming it, the URI and the cause, kills the shell and connects again for the next
// command, replaying its `restore` first; a job still running (asked over a second connection) is
// waited for. Then the libvirt driver on test:///default, through a virsh that loses one
// managedsave's answer after doing it: the guests come back as they were and the suspend completes.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type GuestSpec, POWER_STATE } from "../../lib/compute/drivers/driver.js";
import { LibvirtDriver } from "../../lib/compute/drivers/libvirt.js";
import { VirshConnectionLost, VirshShell } from "../../lib/compute/drivers/virsh.js";
import { guestSpec } from "./guest.js";

const root = mkdtempSync(join(tmpdir(), "novaless-virsh-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

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
const lines = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : []);

describe("VirshShell: a command virsh never answers", () => {
  const dir = join(root, "fake");
  mkdirSync(dir, { recursive: true });
  const log = join(dir, "log");
  const pids = join(dir, "pids");
  // `managedsave lost…` and `list hang` never answered (the shell waits like virsh in its event
  // loop), `managedsave slow` answered after a second with its job running meanwhile, `exit N`
  // the shell dying; anything else answered at once
  const fake = join(dir, "virsh");
  writeFileSync(
    fake,
    `#!/bin/sh
case " $* " in *" domjobinfo "*)
  echo "side $*" >> ${log}
  case "$*" in *slow*) echo "Job type:         Unbounded";; *) echo "Job type:         None";; esac
  exit 0;;
esac
echo $$ >> ${pids}
while IFS= read -r line; do
  echo "got $line" >> ${log}
  case "$line" in
    echo\\ *) eval "$line";;
    "managedsave lost"*|"list hang") exec sleep 600;;
    "managedsave slow") sleep 1; echo "Domain 'slow' state saved by libvirt";;
    exit\\ *) exit \${line#exit };;
    *) echo "did $line";;
  esac
done
`,
  );
  chmodSync(fake, 0o755);
  const shells: VirshShell[] = [];
  const shell = (restore?: () => string[]) => {
    rmSync(log, { force: true });
    rmSync(pids, { force: true });
    const s = new VirshShell("test:///fake", { binary: fake, timeoutMs: 400, jobTimeoutMs: 200, restore });
    shells.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of shells.splice(0)) await s.close();
  });

  it("gives a lost managedsave up naming the command, the URI and the cause, kills the shell, and reconnects restoring first", async () => {
    const s = shell(() => ["define /i/a/libvirt.xml", "start instance-a"]);
    expect(await s.run("version")).toBe("did version");
    const [first] = lines(pids).map(Number);
    const lost = s.run("managedsave lost-1");
    const queued = s.run("list --all");
    await expect(lost).rejects.toThrow(VirshConnectionLost);
    await expect(lost).rejects.toThrow(
      /^virsh managedsave lost-1 on test:\/\/\/fake: no answer in [\d.]+ s, and no job is running on the domain: virsh lost the end of its job \(a race in virsh's virshWatchJob\); the connection is closed and made again for the next command$/,
    );
    // what was queued behind it went with the connection, as retryable
    await expect(queued).rejects.toThrow(VirshConnectionLost);
    expect(lines(log)).toContain("side -q -c test:///fake domjobinfo lost-1");
    await until(() => !alive(first!));
    expect(alive(first!)).toBe(false);

    expect(await s.run("list --all")).toBe("did list --all");
    expect(s.connections).toBe(2);
    const second = lines(log).slice(lines(log).lastIndexOf("got managedsave lost-1") + 1);
    expect(second.filter((l) => !l.startsWith("got echo") && !l.startsWith("side"))).toEqual([
      "got define /i/a/libvirt.xml",
      "got start instance-a",
      "got list --all",
    ]);
  });

  it("waits on a job that a second connection finds still running", async () => {
    const s = shell();
    expect(await s.run("managedsave slow")).toBe("Domain 'slow' state saved by libvirt");
    expect(lines(log).filter((l) => l.startsWith("side"))).not.toEqual([]);
    expect(s.connections).toBe(1);
  });

  it("gives any other command up after the long deadline, without asking for a job; no restore without one", async () => {
    const s = shell();
    await expect(s.run("list hang")).rejects.toThrow(
      /^virsh list hang on test:\/\/\/fake: no answer in [\d.]+ s; the connection is closed/,
    );
    expect(lines(log).filter((l) => l.startsWith("side"))).toEqual([]);
    expect(await s.run("version")).toBe("did version");
    expect(lines(log).filter((l) => !l.startsWith("got echo"))).toEqual(["got list hang", "got version"]);
  });

  it("a shell that dies fails its command as retryable and the next one reconnects", async () => {
    const s = shell();
    await expect(s.run("exit 3")).rejects.toThrow(
      new VirshConnectionLost("virsh -c test:///fake exited (3) during exit 3"),
    );
    expect(await s.run("version")).toBe("did version");
    expect(s.connections).toBe(2);
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
if (!virsh) console.warn("test/drivers/virsh.test.ts: virsh is missing: the libvirt recovery test skips");

describe.skipIf(!virsh)("LibvirtDriver on test:///default when virsh loses a managedsave's end", () => {
  const dir = join(root, "libvirt");
  const images = join(dir, "_base");
  const IMAGE = "a1b2c3d4-0000-4000-8000-0000000000cc";
  const flag = join(dir, "lose-next-managedsave");
  const always = join(dir, "lose-every-managedsave");
  const pids = join(dir, "pids");
  // the real virsh, except that a managedsave is done and its answer lost: the next one while
  // the flag exists, every one while `always` does
  const proxy = join(dir, "virsh");
  let d: LibvirtDriver | undefined;
  afterAll(async () => d?.close());

  const guest = () => guestSpec(IMAGE);

  it("suspend completes on a new connection that holds every guest in the state the driver recorded", async () => {
    mkdirSync(images, { recursive: true });
    writeFileSync(join(images, IMAGE), Buffer.alloc(1024 * 1024));
    writeFileSync(
      proxy,
      `#!/bin/sh
case " $* " in *" domjobinfo "*) exec virsh "$@";; esac
echo $$ >> ${pids}
while IFS= read -r line; do
  printf '%s\\n' "$line"
  case "$line" in managedsave*)
    if [ -e ${flag} ]; then rm -f ${flag}; exec sleep 600; fi
    if [ -e ${always} ]; then exec sleep 600; fi;;
  esac
done | virsh "$@"
`,
    );
    chmodSync(proxy, 0o755);
    d = new LibvirtDriver({
      host: "kvm-1",
      uri: "test:///default",
      virtType: "test",
      instancesPath: join(dir, "instances"),
      imagesPath: images,
      shutdownTimeoutSeconds: 2,
      pollMs: 100,
      virshBinary: proxy,
      virshJobTimeoutMs: 2000, // a managedsave on test:/// answers at once, but a loaded machine can take a second
    });
    await d.init();
    const [running, paused, suspended, off] = [guest(), guest(), guest(), guest()];
    for (const g of [running, paused, suspended, off]) await d.spawn(g);
    await d.pause(paused.instance_uuid);
    await d.suspend(suspended.instance_uuid);
    await d.powerOff(off.instance_uuid);
    const events: [string, number][] = [];
    d.onLifecycle((id, power) => events.push([id, power]));

    writeFileSync(flag, "");
    await d.suspend(running.instance_uuid);
    expect(existsSync(flag)).toBe(false); // the managedsave was lost once
    // and the connection made again (virsh's own race may have added one)
    expect(lines(pids).length).toBeGreaterThanOrEqual(2);

    const state = (g: GuestSpec) => d!.virshForTests(`domstate --reason instance-${g.instance_uuid}`);
    expect(d.powerState(running.instance_uuid)).toBe(POWER_STATE.SUSPENDED);
    expect(await state(running)).toBe("shut off (saved)");
    expect(await state(paused)).toBe("paused (user)");
    expect(await state(suspended)).toBe("shut off (saved)");
    expect(await d.virshForTests(`dominfo instance-${suspended.instance_uuid}`)).toMatch(
      /^Managed save:\s*yes/m,
    );
    expect(await state(off)).toMatch(/^shut off/);
    expect(d.list()).toEqual(
      expect.arrayContaining([
        { instance_uuid: running.instance_uuid, power_state: POWER_STATE.SUSPENDED },
        { instance_uuid: paused.instance_uuid, power_state: POWER_STATE.PAUSED },
        { instance_uuid: suspended.instance_uuid, power_state: POWER_STATE.SUSPENDED },
        { instance_uuid: off.instance_uuid, power_state: POWER_STATE.SHUTDOWN },
      ]),
    );
    // a poll after the restore sees what the driver recorded: no lifecycle event
    await new Promise((r) => setTimeout(r, 300));
    expect(events).toEqual([]);
    await d.resume(running.instance_uuid);
    expect(d.powerState(running.instance_uuid)).toBe(POWER_STATE.RUNNING);
    for (const g of [running, paused, suspended, off]) await d.destroy(g.instance_uuid);
  });

  it("a managedsave lost every time fails the suspend with virsh's cause; the guest stays as recorded", async () => {
    const g = guest();
    await d!.spawn(g);
    const name = `instance-${g.instance_uuid}`;
    writeFileSync(always, "");
    try {
      await expect(d!.suspend(g.instance_uuid)).rejects.toThrow(
        new RegExp(
          `^virsh managedsave ${name} on host [^ ]+ \\(test:///default\\): no answer in [\\d.]+ s, and no job is running on the domain: virsh lost the end of its job`,
        ),
      );
    } finally {
      rmSync(always, { force: true });
    }
    expect(d!.powerState(g.instance_uuid)).toBe(POWER_STATE.RUNNING);
    expect(await d!.virshForTests(`domstate ${name}`)).toBe("running");
    await d!.suspend(g.instance_uuid);
    expect(d!.powerState(g.instance_uuid)).toBe(POWER_STATE.SUSPENDED);
    await d!.destroy(g.instance_uuid);
  });
});
