// Draining a host with `novaless-drain` (bin/novaless-drain.ts), run as an operator would, as its
// own process against the local runtime: the host disabled first, every server on it
// cold-migrated and confirmed (a SHUTOFF one stays SHUTOFF), one line per server, exit 0 with
// the host empty, nothing leaked; a server waiting in VERIFY_RESIZE is skipped (exit 1); --live
// is refused (not built), and an unknown host or a member's token is the API's message.
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let admin: Client;

beforeAll(async () => {
  let client: Client;
  ({ runtime, client } = await startTestRuntime({ hosts: 3 }));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

/** `npx tsx bin/novaless-drain.ts …` against the runtime, as the admin. */
function drain(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "npx",
      ["tsx", "bin/novaless-drain.ts", ...args, "--url", runtime.url, "--token", ADMIN],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const hostOf = async (id: string) => (await admin.get(`/v2.1/servers/${id}`)).body.server;

describe("novaless-drain", () => {
  it("disables the host, migrates and confirms every server off it, and says so line by line", async () => {
    const ids: string[] = [];
    for (const name of ["drain-a", "drain-b", "drain-c"]) {
      ids.push(await admin.createServer({ name, availability_zone: "nova:host-1" }));
    }
    for (const id of ids) await admin.waitForStatus(id, ["ACTIVE"]);
    // a stopped server moves too, and stays stopped
    expect((await admin.post(`/v2.1/servers/${ids[2]}/action`, { "os-stop": null })).status).toBe(202);
    await admin.waitForStatus(ids[2]!, ["SHUTOFF"]);

    const started = Date.now();
    const r = await drain("host-1", "--concurrency", "2", "--timeout", "60");
    const seconds = (Date.now() - started) / 1000;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toBe(
      "disabled host-1 (draining for maintenance): the scheduler places nothing new on it",
    );
    const perServer = lines.slice(1, -1);
    expect(perServer).toHaveLength(3);
    for (const [i, id] of ids.entries()) {
      const line = perServer.find((l) => l.startsWith(id));
      expect(line).toMatch(new RegExp(`^${id}  drain-${"abc"[i]}  migrated to host-[23]$`));
      const s = await hostOf(id);
      expect(line).toContain(`migrated to ${s["OS-EXT-SRV-ATTR:host"]}`);
      expect(s.status).toBe(i === 2 ? "SHUTOFF" : "ACTIVE");
    }
    expect(lines.at(-1)).toBe("host-1: 3 of 3 server(s) migrated, 0 failed, 0 skipped; host-1 is empty");
    console.log(`drain of 3 servers: ${seconds.toFixed(1)} s`);

    // the host: empty and disabled with the reason given
    expect((await admin.get("/v2.1/servers/detail?all_tenants=1&host=host-1")).body.servers).toEqual([]);
    const svc = (await admin.get("/v2.1/os-services?host=host-1")).body.services[0];
    expect(svc).toMatchObject({ status: "disabled", disabled_reason: "draining for maintenance" });
    const migrations = (await admin.get("/v2.1/os-migrations?source_compute=host-1")).body.migrations;
    expect(migrations.map((m: { status: string }) => m.status).sort()).toEqual([
      "confirmed",
      "confirmed",
      "confirmed",
    ]);

    // draining it again: nothing to move, the host already disabled
    const again = await drain("host-1", "--no-disable");
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(
      "host-1 left disabled\nhost-1: 0 of 0 server(s) migrated, 0 failed, 0 skipped; host-1 is empty\n",
    );

    for (const id of ids) expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    for (const id of ids) await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });

  it("skips a server whose move waits for a confirm, and exits 1 with it still there", async () => {
    const id = await admin.createServer({ name: "drain-waiting", availability_zone: "nova:host-2" });
    await admin.waitForStatus(id, ["ACTIVE"]);
    const moved = await admin.at("2.56").post(`/v2.1/servers/${id}/action`, { migrate: { host: "host-3" } });
    expect(moved.status).toBe(202);
    await admin.waitForStatus(id, ["VERIFY_RESIZE"]);
    const r = await drain("host-3", "--no-disable");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(
      "host-3 left enabled: new servers may land on it\n" +
        `${id}  drain-waiting  skipped: VERIFY_RESIZE: confirm or revert its move first\n` +
        "host-3: 0 of 1 server(s) migrated, 0 failed, 1 skipped; 1 still on host-3\n",
    );
    expect((await admin.post(`/v2.1/servers/${id}/action`, { confirmResize: null })).status).toBe(204);
    await admin.waitForStatus(id, ["ACTIVE"]);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });

  it("reports a move that found no host with the scheduler's reason, the server left where it was", async () => {
    const id = await admin.createServer({ name: "drain-stuck", availability_zone: "nova:host-2" });
    await admin.waitForStatus(id, ["ACTIVE"]);
    const serviceIds = new Map<string, string>(
      (await admin.get("/v2.1/os-services")).body.services.map((x: { host: string; id: string }) => [
        x.host,
        x.id,
      ]),
    );
    const set = (host: string, status: string) =>
      admin.at("2.53").call("PUT", `/v2.1/os-services/${serviceIds.get(host)}`, {
        status,
        disabled_reason: status === "disabled" ? "full" : undefined,
      });
    // host-1 is still disabled from the first test; host-3 too now: nowhere to go
    expect((await set("host-3", "disabled")).status).toBe(200);
    const r = await drain("host-2");
    expect(r.code).toBe(1);
    expect(r.stdout.split("\n")).toEqual([
      "disabled host-2 (draining for maintenance): the scheduler places nothing new on it",
      `${id}  drain-stuck  failed: cold_migrate: 0/3 hosts are available: 2 are disabled, 1 is in ignore_hosts.`,
      "host-2: 0 of 1 server(s) migrated, 1 failed, 0 skipped; 1 still on host-2",
      "",
    ]);
    const s = await hostOf(id);
    expect(s).toMatchObject({ status: "ACTIVE", "OS-EXT-SRV-ATTR:host": "host-2" });
    const m = (await admin.get(`/v2.1/os-migrations?instance_uuid=${id}`)).body.migrations;
    expect(m.map((x: { status: string }) => x.status)).toEqual(["error"]);
    for (const h of ["host-1", "host-2", "host-3"]) expect((await set(h, "enabled")).status).toBe(200);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });

  it("refuses --live (not built), and an unknown host is the API's message", async () => {
    const live = await drain("host-2", "--live");
    expect(live.code).toBe(2);
    expect(live.stderr).toContain("live migration is not available yet");
    const unknown = await drain("host-9");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("novaless-drain: Compute host host-9 could not be found.\n");
    // a member's token: the API's own refusal
    const member = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const c = spawn("npx", [
        "tsx",
        "bin/novaless-drain.ts",
        "host-2",
        "--url",
        runtime.url,
        "--token",
        "demo-token",
      ]);
      let stderr = "";
      c.stderr.on("data", (d) => (stderr += d));
      c.on("close", (code) => resolve({ code, stderr }));
    });
    expect(member.code).toBe(1);
    expect(member.stderr).toMatch(/^novaless-drain: Policy doesn't allow os_compute_api:os-services:list/);
  });
});
