// pause, unpause, suspend and resume of real processes (`npm start -- --driver exec`): the
// guest's process group is stopped (its state T) and continued, the same process throughout; a
// suspended server stays SUSPENDED across an agent restart and resumes; delete of a paused or
// suspended server leaves no process.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ExecDriver } from "../../lib/compute/drivers/exec.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, processesOf, startTestRuntime } from "./harness.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-pause-"));
let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 1,
    driver: "exec",
    instancesPath: instances,
    transport: "long-poll",
    heartbeatSeconds: 1,
  }));
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(instances, { recursive: true, force: true });
});

const action = (id: string, body: unknown) => client.post(`/v2.1/servers/${id}/action`, body);
const settled = (id: string, status: string) =>
  eventually(
    async () => (await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server,
    (s) => s.status === status && s["OS-EXT-STS:task_state"] === null,
  );
const stateOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
};

async function sleeper(): Promise<{ id: string; driver: ExecDriver; pid: number }> {
  const id = await client.createServer({ imageRef: "sleeper", name: "held" });
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
  const driver = runtime.hosts.get((await getInstance(id))!.host!)!.driver as ExecDriver;
  return { id, driver, pid: driver.pidOf(id)! };
}

it("pause stops the guest's processes and unpause continues the same process", async () => {
  const { id, driver, pid } = await sleeper();
  expect((await action(id, { pause: null })).status).toBe(202);
  expect((await settled(id, "PAUSED"))["OS-EXT-STS:power_state"]).toBe(3);
  expect(stateOf(pid)).toBe("T");
  expect((await action(id, { unpause: null })).status).toBe(202);
  await settled(id, "ACTIVE");
  expect(stateOf(pid)).not.toBe("T");
  expect(driver.pidOf(id)).toBe(pid);
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await client.waitForStatus(id, ["GONE"]);
});

it("a suspended server is held, stays SUSPENDED across an agent restart, and resumes the same process", async () => {
  const { id, driver, pid } = await sleeper();
  expect((await action(id, { suspend: null })).status).toBe(202);
  expect((await settled(id, "SUSPENDED"))["OS-EXT-STS:power_state"]).toBe(7);
  expect(stateOf(pid)).toBe("T");
  await runtime.restartHost((await getInstance(id))!.host!);
  // the restarted agent's periodic sync and registration leave it as it is
  await new Promise((r) => setTimeout(r, 1500));
  expect((await settled(id, "SUSPENDED"))["OS-EXT-STS:power_state"]).toBe(7);
  expect((await action(id, { resume: null })).status).toBe(202);
  await settled(id, "ACTIVE");
  expect(driver.pidOf(id)).toBe(pid);
  expect(stateOf(pid)).not.toBe("T");
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await client.waitForStatus(id, ["GONE"]);
});

it("deleting a paused or a suspended server leaves no process", async () => {
  for (const [body, status] of [
    [{ pause: null }, "PAUSED"],
    [{ suspend: null }, "SUSPENDED"],
  ] as const) {
    const { id } = await sleeper();
    await action(id, body);
    await settled(id, status);
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await client.waitForStatus(id, ["GONE"]);
    await eventually(
      async () => processesOf(id),
      (p) => p.length === 0,
    );
    expect(processesOf(id)).toEqual([]);
  }
});
