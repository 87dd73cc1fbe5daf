// Evacuation on the exec driver: a server is a real process. Its host stops (its guests left
// running, as a host cut off from the network would leave them); evacuated, the server is a new
// process on another host; when the source comes back it kills its own copy (Nova's
// _destroy_evacuated_instances) and only then is its claim released.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ExecDriver } from "../../lib/compute/drivers/exec.js";
import { listInstanceMigrations } from "../../lib/instances/migrations.js";
import { consumerAllocations } from "../../lib/placement/allocations.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, processesOf, startTestRuntime } from "./harness.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-evacuate-exec-"));
let runtime: Runtime;
let admin: Client;
beforeAll(async () => {
  let client: Client;
  ({ runtime, client } = await startTestRuntime({
    hosts: 2,
    driver: "exec",
    instancesPath: instances,
    transport: "long-poll",
    heartbeatSeconds: 1,
    watchdogIntervalMs: 0, // run when the test means to
    env: { NOVALESS_SERVICE_DOWN_TIME: "4" },
  }));
  admin = client.as(ADMIN);
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(instances, { recursive: true, force: true });
});

it("the server becomes a process on another host; the returning source kills its copy, then its claim goes", async () => {
  const driverOf = (host: string) => runtime.hosts.get(host)!.driver as ExecDriver;
  const id = await admin.createServer({
    imageRef: "sleeper",
    name: "evacuee",
    availability_zone: "nova:host-1",
  });
  await admin.waitForStatus(id, ["ACTIVE"]);
  const first = driverOf("host-1").pidOf(id);
  expect(first).toBeDefined();

  expect((await admin.post("/local/hosts/host-1/stop", {})).status).toBe(202);
  await new Promise((r) => setTimeout(r, 4500));
  await runtime.runWatchdog();
  // the stopped host's guest still runs: nothing told it otherwise
  expect(processesOf(id)).toEqual([first]);

  expect((await admin.at("2.68").post(`/v2.1/servers/${id}/action`, { evacuate: {} })).status).toBe(200);
  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status).toBe("ACTIVE");
  expect(s["OS-EXT-SRV-ATTR:host"]).toBe("host-2");
  const second = driverOf("host-2").pidOf(id);
  expect(second).toBeDefined();
  expect(second).not.toBe(first);
  // two copies while the source is away; its claim is the evacuation's
  expect(processesOf(id).sort()).toEqual([first, second].sort());
  const [m] = await listInstanceMigrations(id);
  expect(m).toMatchObject({ migration_type: "evacuation", status: "done" });
  expect((await consumerAllocations(m!.uuid)).map((a) => a.host)).toEqual(["host-1"]);

  expect((await admin.post("/local/hosts/host-1/start", {})).status).toBe(202);
  await eventually(
    async () => (await listInstanceMigrations(id))[0]!.status,
    (st) => st === "completed",
  );
  expect(processesOf(id)).toEqual([second]);
  expect(driverOf("host-1").has(id)).toBe(false);
  expect(await consumerAllocations(m!.uuid)).toEqual([]);

  expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await eventually(
    async () => processesOf(id),
    (ps) => ps.length === 0,
  );
});
