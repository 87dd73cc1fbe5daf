// Shelve and unshelve with real data, on the exec driver: shelve stops the guest's process and
// archives its directory into the `<server>-shelved` image (the images bucket, through S3 and
// IAM); offloaded, nothing of it is left on its host; unshelve to ANOTHER host (2.91) starts the
// process there again in the archived files, and the snapshot is deleted, data and all.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client as C, Client, eventually, processesOf, startTestRuntime } from "./harness.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-shelve-exec-"));
let runtime: Runtime;
let client: C;
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

const admin = () => new Client(client.url, ADMIN, "2.91");
const server = async (id: string) => (await admin().get(`/v2.1/servers/${id}`)).body.server;
const dirOf = (host: string, id: string) => join(instances, host, id);
const settled = (id: string, status: string) =>
  eventually(
    () => server(id),
    (s) => s.status === status && s["OS-EXT-STS:task_state"] === null,
    60_000,
  );

describe("shelve on exec", () => {
  it("archives the guest, frees its host, and unshelves it on another host with its files", async () => {
    const id = await client.createServer({ imageRef: "sleeper", name: "shelf-exec" });
    expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    const host = (await server(id))["OS-EXT-SRV-ATTR:host"] as string;
    const other = host === "host-1" ? "host-2" : "host-1";
    writeFileSync(join(dirOf(host, id), "state.txt"), "kept across the shelve\n");
    expect(processesOf(id).length).toBeGreaterThan(0);

    expect((await client.post(`/v2.1/servers/${id}/action`, { shelve: null })).status).toBe(202);
    const off = await settled(id, "SHELVED_OFFLOADED");
    expect(off["OS-EXT-SRV-ATTR:host"]).toBeNull();
    expect(processesOf(id)).toEqual([]);
    expect(existsSync(dirOf(host, id))).toBe(false);
    const images = (await client.get("/image/v2/images?name=shelf-exec-shelved")).body.images as {
      id: string;
      status: string;
      size: number;
      owner: string;
      visibility: string;
    }[];
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ status: "active", owner: "demo", visibility: "private" });
    expect(images[0]!.size).toBeGreaterThan(0);

    const r = await admin().post(`/v2.1/servers/${id}/action`, { unshelve: { host: other } });
    expect(r.status).toBe(202);
    const back = await settled(id, "ACTIVE");
    expect(back["OS-EXT-SRV-ATTR:host"]).toBe(other);
    expect(readFileSync(join(dirOf(other, id), "state.txt"), "utf8")).toBe("kept across the shelve\n");
    expect(
      await eventually(
        () => Promise.resolve(processesOf(id).length),
        (n) => n > 0,
      ),
    ).toBeGreaterThan(0);
    const gone = await eventually(
      () => fetch(`${client.url}/image/v2/images/${images[0]!.id}`, { headers: { "x-auth-token": ADMIN } }),
      (g) => g.status === 404,
    );
    expect(gone.status).toBe(404);

    // exec cannot send a process an NMI: the action's event fails, as Nova's TriggerCrashDumpNotSupported
    expect(
      (await client.at("2.17").post(`/v2.1/servers/${id}/action`, { trigger_crash_dump: null })).status,
    ).toBe(202);
    const crash = await eventually(
      async () => {
        const list = (await admin().get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
          action: string;
          request_id: string;
        }[];
        const a = list.find((x) => x.action === "trigger_crash_dump");
        return a
          ? ((await admin().get(`/v2.1/servers/${id}/os-instance-actions/${a.request_id}`)).body
              .instanceAction.events as {
              event: string;
              result: string;
              traceback?: string;
              details?: string;
            }[])
          : [];
      },
      (e) => e.length > 0 && e[0]!.result !== null,
    );
    expect(crash[0]).toMatchObject({ event: "compute_trigger_crash_dump", result: "Error" });
    expect(JSON.stringify(crash[0])).toContain("Triggering crash dump is not supported");
    expect(processesOf(id).length).toBeGreaterThan(0);

    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await client.waitForStatus(id, ["GONE"]);
    expect(
      await eventually(
        () => Promise.resolve(processesOf(id).length),
        (n) => n === 0,
      ),
    ).toBe(0);
  });
});
