// `npm start -- --driver exec`, as a test: servers of the `sleeper` image are real processes
// (with their instance's uuid in their environment) that os-stop, os-start, reboot and delete act
// on, and whose output is the console log.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ExecDriver } from "../../lib/compute/drivers/exec.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, processesOf, startTestRuntime } from "./harness.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-exec-"));
let runtime: Runtime;
let client: Client;
beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({
    hosts: 2,
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

it("a server is a process that stop, start, reboot and delete act on", async () => {
  const id = await client.createServer({ imageRef: "sleeper", name: "proc" });
  const active = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(active.status).toBe("ACTIVE");
  expect(processesOf(id)).toHaveLength(1);
  const host = (await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server[
    "OS-EXT-SRV-ATTR:host"
  ] as string;
  const driver = runtime.hosts.get(host)!.driver as ExecDriver;
  const first = driver.pidOf(id);

  const out = await eventually(
    () => client.post(`/v2.1/servers/${id}/action`, { "os-getConsoleOutput": { length: 5 } }),
    (r) => r.status === 200 && String(r.body.output).includes("up"),
  );
  expect(out.body.output).toContain(`sleeper ${id} up`);

  expect((await client.post(`/v2.1/servers/${id}/action`, { "os-stop": null })).status).toBe(202);
  await client.waitForStatus(id, ["SHUTOFF"]);
  expect(processesOf(id)).toEqual([]);

  expect((await client.post(`/v2.1/servers/${id}/action`, { "os-start": null })).status).toBe(202);
  await client.waitForStatus(id, ["ACTIVE"]);
  const second = driver.pidOf(id);
  expect(second).not.toBe(first);
  expect(processesOf(id)).toEqual([second]);

  expect((await client.post(`/v2.1/servers/${id}/action`, { reboot: { type: "HARD" } })).status).toBe(202);
  const rebooted = await eventually(
    async () => (await client.as(ADMIN).get(`/v2.1/servers/${id}`)).body.server,
    (s) => s.status === "ACTIVE" && s["OS-EXT-STS:task_state"] === null,
  );
  expect(rebooted.status).toBe("ACTIVE");
  expect(driver.pidOf(id)).not.toBe(second);

  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await eventually(
    async () => processesOf(id),
    (ps) => ps.length === 0,
  );
  expect(processesOf(id)).toEqual([]);
});

it("a process that dies on its own turns its server SHUTOFF", async () => {
  const id = await client.createServer({ imageRef: "sleeper", name: "dies" });
  await client.waitForStatus(id, ["ACTIVE"]);
  for (const pid of processesOf(id)) process.kill(pid, "SIGKILL");
  const s = await client.waitForStatus(id, ["SHUTOFF"]);
  expect(s["OS-EXT-STS:power_state"]).toBe(6);
});

it("an image without a command cannot be built by exec hosts (ImagePropertiesFilter: cirros is for the fake hypervisor)", async () => {
  const id = await client.createServer({ imageRef: "cirros", name: "wrong" });
  const s = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status).toBe("ERROR");
});

it("a resize moves the process: stopped on the source, running on the destination; revert and confirm settle it", async () => {
  const admin = client.as(ADMIN);
  const hostOf = async (id: string) =>
    (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"] as string;
  const driverOf = (host: string) => runtime.hosts.get(host)!.driver as ExecDriver;
  const id = await client.createServer({ imageRef: "sleeper", name: "mover" });
  await client.waitForStatus(id, ["ACTIVE"]);
  const source = await hostOf(id);

  expect((await client.post(`/v2.1/servers/${id}/action`, { resize: { flavorRef: "2" } })).status).toBe(202);
  await client.waitForStatus(id, ["VERIFY_RESIZE"]);
  const dest = await hostOf(id);
  expect(dest).not.toBe(source);
  // one process, on the destination; the source keeps its (stopped) guest for a revert
  expect(driverOf(dest).pidOf(id)).toBeDefined();
  expect(driverOf(source).has(id)).toBe(true);
  expect(driverOf(source).pidOf(id)).toBeUndefined();
  expect(processesOf(id)).toHaveLength(1);

  expect((await client.post(`/v2.1/servers/${id}/action`, { revertResize: null })).status).toBe(202);
  await eventually(
    async () => (await admin.get(`/v2.1/servers/${id}`)).body.server,
    (s) => s.status === "ACTIVE" && s["OS-EXT-STS:task_state"] === null,
  );
  expect(await hostOf(id)).toBe(source);
  expect(driverOf(dest).has(id)).toBe(false);
  expect(driverOf(source).pidOf(id)).toBeDefined();

  expect((await client.post(`/v2.1/servers/${id}/action`, { resize: { flavorRef: "2" } })).status).toBe(202);
  await client.waitForStatus(id, ["VERIFY_RESIZE"]);
  expect((await client.post(`/v2.1/servers/${id}/action`, { confirmResize: null })).status).toBe(204);
  await client.waitForStatus(id, ["ACTIVE"]);
  await eventually(
    async () => driverOf(source).has(id),
    (has) => !has,
  );
  expect(driverOf(source).has(id)).toBe(false);
  expect(processesOf(id)).toHaveLength(1);
  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await eventually(
    async () => processesOf(id),
    (ps) => ps.length === 0,
  );
});
