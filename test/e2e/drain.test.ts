// Draining a host with `novaless-drain` (bin/novaless-drain.ts), run as an operator would, as its
// own process against the local runtime: the host disabled first, every server on it
// cold-migrated and confirmed (a SHUTOFF one stays SHUTOFF), one line per server, exit 0 with
// the host empty, nothing leaked; a server waiting in VERIFY_RESIZE is skipped (exit 1); an unknown
// host or a member's token is the API's message. --live live-migrates each running server (the
// guest keeps running) and skips a stopped one, or cold-migrates it with --fallback-cold; one the
// scheduler cannot place fails with the conductor's reason at once; on exec
// hosts, which cannot move a process live, each is skipped with Nova's MigrationPreCheckError, or
// cold-migrated with --fallback-cold.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let admin: Client;

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

/** Each compute service's id by host (os-services at 2.53: uuids). */
async function serviceIds(): Promise<Map<string, string>> {
  return new Map<string, string>(
    (await admin.at("2.53").get("/v2.1/os-services?binary=nova-compute")).body.services.map(
      (x: { host: string; id: string }) => [x.host, x.id],
    ),
  );
}
async function enable(host: string): Promise<void> {
  const r = await admin
    .at("2.53")
    .call("PUT", `/v2.1/os-services/${(await serviceIds()).get(host)}`, { status: "enabled" });
  expect(r.status).toBe(200);
}

describe("novaless-drain", () => {
  beforeAll(async () => {
    let client: Client;
    ({ runtime, client } = await startTestRuntime({ hosts: 3 }));
    admin = client.as(ADMIN);
  });
  afterAll(async () => runtime?.stop());

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
    // live: the conductor's refusal is the API's 400 at once, its event the reason
    const live = await drain("host-2", "--live");
    expect(live.code).toBe(1);
    expect(live.stdout.split("\n")).toEqual([
      "host-2 was already disabled (draining for maintenance)",
      `${id}  drain-stuck  failed: live migration refused: conductor_live_migrate_instance: 0/3 hosts are available: 2 are disabled, 1 is in ignore_hosts.`,
      "host-2: 0 of 1 server(s) migrated (0 live, 0 cold), 1 failed, 0 skipped; 1 still on host-2",
      "",
    ]);
    expect(await hostOf(id)).toMatchObject({ status: "ACTIVE", "OS-EXT-SRV-ATTR:host": "host-2" });
    for (const h of ["host-1", "host-2", "host-3"]) expect((await set(h, "enabled")).status).toBe(200);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });

  it("live-migrates every running server off the host, skips a stopped one, and cold-migrates it with --fallback-cold", async () => {
    for (const h of runtime.hosts.values()) (h.driver as FakeDriver).liveMigrationMs = 300;
    const ids: string[] = [];
    for (const name of ["live-a", "live-b", "live-c"])
      ids.push(await admin.createServer({ name, availability_zone: "nova:host-3" }));
    for (const id of ids) await admin.waitForStatus(id, ["ACTIVE"]);
    expect((await admin.post(`/v2.1/servers/${ids[2]}/action`, { "os-stop": null })).status).toBe(202);
    await admin.waitForStatus(ids[2]!, ["SHUTOFF"]);
    const source = runtime.hosts.get("host-3")!.driver as FakeDriver;

    const r = await drain("host-3", "--live", "--timeout", "60");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toBe(
      "disabled host-3 (draining for maintenance): the scheduler places nothing new on it",
    );
    const perServer = lines.slice(1, -1);
    expect(perServer).toHaveLength(3);
    const line = (id: string) => perServer.find((l) => l.startsWith(id));
    expect(line(ids[0]!)).toMatch(new RegExp(`^${ids[0]}  live-a  migrated to host-[12] \\(live\\)$`));
    expect(line(ids[1]!)).toMatch(new RegExp(`^${ids[1]}  live-b  migrated to host-[12] \\(live\\)$`));
    expect(line(ids[2]!)).toBe(
      `${ids[2]}  live-c  skipped: cannot go live: SHUTOFF: only a running server can be live-migrated`,
    );
    expect(lines.at(-1)).toBe(
      "host-3: 2 of 3 server(s) migrated (2 live, 0 cold), 0 failed, 1 skipped; 1 still on host-3",
    );
    for (const id of ids.slice(0, 2)) {
      // moved live: copied out of host-3 once, never stopped, its record a completed live-migration
      expect(source.liveMigrations.get(id)).toBe(1);
      const s = await hostOf(id);
      expect(s).toMatchObject({ status: "ACTIVE", "OS-EXT-STS:task_state": null });
      expect(r.stdout).toContain(
        `${id}  live-${id === ids[0] ? "a" : "b"}  migrated to ${s["OS-EXT-SRV-ATTR:host"]}`,
      );
      const m = (await admin.at("2.23").get(`/v2.1/os-migrations?instance_uuid=${id}`)).body.migrations;
      expect(m.map((x: { migration_type: string; status: string }) => [x.migration_type, x.status])).toEqual([
        ["live-migration", "completed"],
      ]);
      const actions = (await admin.get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions;
      expect(actions.map((a: { action: string }) => a.action)).not.toContain("stop");
    }

    // again, the stopped one cold-migrated and confirmed; it stays SHUTOFF
    const again = await drain("host-3", "--live", "--fallback-cold", "--timeout", "60");
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    const to = (await hostOf(ids[2]!))["OS-EXT-SRV-ATTR:host"];
    expect(again.stdout).toBe(
      "host-3 was already disabled (draining for maintenance)\n" +
        `${ids[2]}  live-c  migrated to ${to} (cold, as it cannot go live: SHUTOFF: only a running server can be live-migrated)\n` +
        "host-3: 1 of 1 server(s) migrated (0 live, 1 cold), 0 failed, 0 skipped; host-3 is empty\n",
    );
    expect(to).toMatch(/^host-[12]$/);
    expect((await hostOf(ids[2]!)).status).toBe("SHUTOFF");
    const m = (await admin.at("2.23").get(`/v2.1/os-migrations?instance_uuid=${ids[2]}`)).body.migrations;
    expect(m.map((x: { migration_type: string; status: string }) => [x.migration_type, x.status])).toEqual([
      ["migration", "confirmed"],
    ]);

    await enable("host-3");
    for (const id of ids) expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    for (const id of ids) await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });

  it("refuses --fallback-cold without --live; an unknown host is the API's message", async () => {
    const lone = await drain("host-2", "--fallback-cold");
    expect(lone.code).toBe(2);
    expect(lone.stderr).toMatch(/^novaless-drain: --fallback-cold goes with --live\n/);
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

describe("novaless-drain --live on exec hosts", () => {
  const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-drain-exec-"));
  beforeAll(async () => {
    let client: Client;
    ({ runtime, client } = await startTestRuntime({ hosts: 2, driver: "exec", instancesPath: instances }));
    admin = client.as(ADMIN);
  });
  afterAll(async () => {
    await runtime?.stop();
    rmSync(instances, { recursive: true, force: true });
  });

  it("skips a process, which cannot move live, with Nova's MigrationPreCheckError; --fallback-cold moves it cold", async () => {
    const id = await admin.createServer({
      name: "proc",
      imageRef: "sleeper",
      availability_zone: "nova:host-1",
    });
    await admin.waitForStatus(id, ["ACTIVE"]);
    const why =
      "cannot go live: Migration pre-check error: host host-1 cannot live-migrate: a process cannot move live";
    const r = await drain("host-1", "--live", "--no-disable");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(
      "host-1 left enabled: new servers may land on it\n" +
        `${id}  proc  skipped: ${why}\n` +
        "host-1: 0 of 1 server(s) migrated (0 live, 0 cold), 0 failed, 1 skipped; 1 still on host-1\n",
    );
    expect(await hostOf(id)).toMatchObject({ status: "ACTIVE", "OS-EXT-SRV-ATTR:host": "host-1" });

    const cold = await drain("host-1", "--live", "--fallback-cold", "--timeout", "60");
    expect(cold.stderr).toBe("");
    expect(cold.code).toBe(0);
    expect(cold.stdout).toBe(
      "disabled host-1 (draining for maintenance): the scheduler places nothing new on it\n" +
        `${id}  proc  migrated to host-2 (cold, as it ${why})\n` +
        "host-1: 1 of 1 server(s) migrated (0 live, 1 cold), 0 failed, 0 skipped; host-1 is empty\n",
    );
    expect(await hostOf(id)).toMatchObject({ status: "ACTIVE", "OS-EXT-SRV-ATTR:host": "host-2" });
    const m = (await admin.at("2.23").get(`/v2.1/os-migrations?instance_uuid=${id}`)).body.migrations;
    expect(
      m.map((x: { migration_type: string; status: string }) => [x.migration_type, x.status]).sort(),
    ).toEqual([
      ["live-migration", "error"],
      ["live-migration", "error"],
      ["migration", "confirmed"],
    ]);
    expect((await admin.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await admin.waitForStatus(id, ["GONE"]);
    expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
  });
});
