// Rebuild on the exec driver (`npm start -- --driver exec`): the server's process is destroyed and
// started again from its image on the same host; an image the exec hypervisor cannot run (the
// fake driver's cirros) is refused by the scheduler's check of the host, and the process is left
// alone.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SEED_IMAGES } from "../../lib/catalog/seed.js";
import type { ExecDriver } from "../../lib/compute/drivers/exec.js";
import { getInstance } from "../../lib/instances/queries.js";
import type { Runtime } from "../../local/runtime.js";
import { type Client, processesOf, startTestRuntime } from "./harness.js";

const image = (name: string) => SEED_IMAGES.find((i) => i.name === name)!.id;
const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-rebuild-exec-"));
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

it("a rebuild replaces the server's process; an image exec cannot run leaves it alone", async () => {
  const id = await client.createServer({ imageRef: "sleeper", name: "proc" });
  expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
  const host = (await getInstance(id))!.host!;
  const driver = runtime.hosts.get(host)!.driver as ExecDriver;
  const first = driver.pidOf(id);
  expect(processesOf(id)).toHaveLength(1);
  const action = (body: unknown) => client.post(`/v2.1/servers/${id}/action`, body);

  // destroy, then spawn: a new process for the same server, on the same host
  expect((await action({ rebuild: { imageRef: image("sleeper") } })).status).toBe(202);
  await client.waitForStatus(id, ["ACTIVE"]);
  const second = driver.pidOf(id);
  expect(second).toBeDefined();
  expect(second).not.toBe(first);
  expect(processesOf(id)).toHaveLength(1);

  // cirros is the fake hypervisor's: ImagePropertiesFilter refuses it here (NoValidHost, ERROR)
  expect((await action({ rebuild: { imageRef: image("cirros") } })).status).toBe(202);
  await client.waitForStatus(id, ["ERROR"]);
  expect((await getInstance(id))!.image.id).toBe(image("sleeper"));
  expect(driver.pidOf(id)).toBe(second);

  // ERROR → ACTIVE with an image it runs
  expect((await action({ rebuild: { imageRef: image("sleeper") } })).status).toBe(202);
  await client.waitForStatus(id, ["ACTIVE"]);
  expect(driver.pidOf(id)).not.toBe(second);
  expect(processesOf(id)).toHaveLength(1);

  expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  await client.waitForStatus(id, ["GONE"]);
});
