// The admin's side of a server's life, on the fake driver and then on the exec driver:
// os-resetState (Nova's rules: admin only, error or active, the task state cleared, a resetState
// action), a server in ERROR rebuilt and deleted, diagnostics from the host's driver (2.48's
// standard shape and the older free-form one, Nova's 409 for a guest not running),
// os-server-password, os-server-external-events (per-event codes, power-update at 2.76) and
// os-instance_usage_audit_log.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, processesOf, startTestRuntime } from "./harness.js";

const NOWHERE = "00000000-0000-4000-8000-00000000dead";

describe("fake driver", () => {
  let runtime: Runtime;
  let client: Client;
  beforeAll(async () => {
    ({ runtime, client } = await startTestRuntime({ hosts: 2, buildMs: 20, transport: "long-poll" }));
  });
  afterAll(async () => runtime?.stop());

  const admin = () => client.as(ADMIN);
  const action = (c: Client, id: string, body: unknown) => c.post(`/v2.1/servers/${id}/action`, body);
  const server = async (id: string) => (await admin().get(`/v2.1/servers/${id}`)).body.server;
  async function active(): Promise<string> {
    const id = await client.createServer({});
    await client.waitForStatus(id, ["ACTIVE"]);
    return id;
  }

  it("os-resetState: admin only, error then active, the task state cleared, recorded as resetState", async () => {
    const id = await active();
    const denied = await action(client, id, { "os-resetState": { state: "error" } });
    expect(denied.status).toBe(403);
    expect(JSON.stringify(denied.body)).toContain("os_compute_api:os-admin-actions:reset_state");
    expect((await action(admin(), id, { "os-resetState": { state: "invalid" } })).status).toBe(400);
    expect((await action(admin(), id, { "os-resetState": { state: 1 } })).status).toBe(400);
    expect((await action(admin(), NOWHERE, { "os-resetState": { state: "error" } })).status).toBe(404);

    expect((await action(admin(), id, { "os-resetState": { state: "error" } })).status).toBe(202);
    const errored = await server(id);
    expect(errored.status).toBe("ERROR");
    expect(errored["OS-EXT-STS:task_state"]).toBeNull();
    expect((await action(admin(), id, { "os-resetState": { state: "active" } })).status).toBe(202);
    expect((await server(id)).status).toBe("ACTIVE");

    const actions = (await admin().get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
      action: string;
    }[];
    expect(actions.filter((a) => a.action === "resetState")).toHaveLength(2);
  });

  it("a server reset to ERROR is rebuilt to ACTIVE by its owner, and deleted from ERROR", async () => {
    const id = await active();
    expect((await action(admin(), id, { "os-resetState": { state: "error" } })).status).toBe(202);
    const rebuilt = await action(client, id, {
      rebuild: { imageRef: "a1b2c3d4-0000-4000-8000-000000000002" },
    });
    expect(rebuilt.status).toBe(202);
    await eventually(
      () => server(id),
      (s) => s.status === "ACTIVE" && s["OS-EXT-STS:task_state"] === null,
    );

    expect((await action(admin(), id, { "os-resetState": { state: "error" } })).status).toBe(202);
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await client.waitForStatus(id, ["GONE"]);
  });

  it("diagnostics: the host's figures in 2.48's shape and the older one; admin only; 409 when not running", async () => {
    const id = await active();
    expect((await client.at("2.48").get(`/v2.1/servers/${id}/diagnostics`)).status).toBe(403);

    const d = await admin().at("2.48").get(`/v2.1/servers/${id}/diagnostics`);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({
      state: "running",
      driver: "libvirt",
      hypervisor: "fake",
      hypervisor_os: expect.stringContaining("synthetic"),
      config_drive: false,
      num_cpus: 1,
      num_nics: 0,
      num_disks: 1,
      memory_details: { maximum: 512 },
    });
    expect(Object.keys(d.body).sort()).toEqual(
      [
        "config_drive",
        "cpu_details",
        "disk_details",
        "driver",
        "hypervisor",
        "hypervisor_os",
        "memory_details",
        "nic_details",
        "num_cpus",
        "num_disks",
        "num_nics",
        "state",
        "uptime",
      ].sort(),
    );
    expect(Object.keys((d.body.disk_details as Record<string, unknown>[])[0]!).sort()).toEqual(
      ["errors_count", "read_bytes", "read_requests", "write_bytes", "write_requests"].sort(),
    );

    const legacy = await admin().get(`/v2.1/servers/${id}/diagnostics`);
    expect(legacy.status).toBe(200);
    expect(legacy.body).toMatchObject({ memory: 512 * 1024, cpu0_time: expect.any(Number) });
    expect(legacy.body).toHaveProperty("vda_read");

    expect((await action(client, id, { "os-stop": null })).status).toBe(202);
    await client.waitForStatus(id, ["SHUTOFF"]);
    const stopped = await admin().at("2.48").get(`/v2.1/servers/${id}/diagnostics`);
    expect(stopped.status).toBe(409);
    expect(JSON.stringify(stopped.body)).toContain(
      `Cannot 'get_diagnostics' instance ${id} while it is in power state shutdown`,
    );
  });

  it("os-server-password: empty (no metadata service to post one), cleared with 204, another project's is 404", async () => {
    const id = await active();
    const got = await client.get(`/v2.1/servers/${id}/os-server-password`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ password: "" });
    expect((await client.delete(`/v2.1/servers/${id}/os-server-password`)).status).toBe(204);

    const theirs = await admin().createServer({});
    expect((await client.get(`/v2.1/servers/${theirs}/os-server-password`)).status).toBe(404);
    expect((await client.get(`/v2.1/servers/${NOWHERE}/os-server-password`)).status).toBe(404);
  });

  it("external events: accepted per event, 404 for an unknown server, 207 when any failed; admin only", async () => {
    const id = await active();
    const events = (evs: unknown[], c = admin()) =>
      c.post("/v2.1/os-server-external-events", { events: evs });

    expect((await events([{ name: "network-changed", server_uuid: id }], client)).status).toBe(403);
    const one = await events([{ name: "network-vif-plugged", server_uuid: id, tag: "port-1" }]);
    expect(one.status).toBe(200);
    expect(one.body.events).toEqual([
      { name: "network-vif-plugged", server_uuid: id, tag: "port-1", status: "completed", code: 200 },
    ]);

    const mixed = await events([
      { name: "network-changed", server_uuid: id },
      { name: "network-changed", server_uuid: NOWHERE },
    ]);
    expect(mixed.status).toBe(207);
    expect((mixed.body.events as { code: number; status: string }[]).map((e) => [e.code, e.status])).toEqual([
      [200, "completed"],
      [404, "failed"],
    ]);
    const none = await events([{ name: "network-changed", server_uuid: NOWHERE }]);
    expect(none.status).toBe(207);

    // names by microversion: power-update is 2.76's
    expect((await events([{ name: "power-update", server_uuid: id, tag: "POWER_OFF" }])).status).toBe(400);
    expect((await events([{ name: "bogus", server_uuid: id }])).status).toBe(400);
    expect((await events([])).status).toBe(400);
  });

  it("power-update (2.76) moves the server's state as Nova's does, with its stop and start actions", async () => {
    const id = await active();
    const at276 = admin().at("2.76");
    const noTag = await at276.post("/v2.1/os-server-external-events", {
      events: [{ name: "power-update", server_uuid: id }],
    });
    expect(noTag.status).toBe(207);
    expect((noTag.body.events as { code: number }[])[0]!.code).toBe(400);

    const off = await at276.post("/v2.1/os-server-external-events", {
      events: [{ name: "power-update", server_uuid: id, tag: "POWER_OFF" }],
    });
    expect(off.status).toBe(200);
    const s = await server(id);
    expect(s.status).toBe("SHUTOFF");
    expect(s["OS-EXT-STS:power_state"]).toBe(4);

    const actions = (await admin().get(`/v2.1/servers/${id}/os-instance-actions`)).body.instanceActions as {
      action: string;
      request_id: string;
    }[];
    const stop = actions.find((a) => a.action === "stop")!;
    const detail = (await admin().get(`/v2.1/servers/${id}/os-instance-actions/${stop.request_id}`)).body
      .instanceAction as { events: { event: string; result: string }[] };
    expect(detail.events).toEqual([
      expect.objectContaining({ event: "compute_power_update", result: "Success" }),
    ]);

    // POWER_OFF again finds it stopped: a no-op that still succeeds (Nova logs it)
    const again = await at276.post("/v2.1/os-server-external-events", {
      events: [{ name: "power-update", server_uuid: id, tag: "POWER_OFF" }],
    });
    expect(again.status).toBe(200);
    expect((await server(id)).status).toBe("SHUTOFF");
  });

  it("os-instance_usage_audit_log: no audit runs here, so every compute service is not run; admin only", async () => {
    expect((await client.get("/v2.1/os-instance_usage_audit_log")).status).toBe(403);
    const list = await admin().get("/v2.1/os-instance_usage_audit_log");
    expect(list.status).toBe(200);
    const log = list.body.instance_usage_audit_logs as Record<string, unknown>;
    expect(log).toMatchObject({
      num_hosts: 2,
      num_hosts_done: 0,
      num_hosts_running: 0,
      num_hosts_not_run: 2,
      total_instances: 0,
      total_errors: 0,
      overall_status: "0 of 2 hosts done. 0 errors.",
      log: {},
    });
    expect((log.hosts_not_run as string[]).sort()).toEqual([...runtime.hosts.keys()].sort());

    const show = await admin().get(
      `/v2.1/os-instance_usage_audit_log/${encodeURIComponent("2026-03-15 10:00:00")}`,
    );
    expect(show.status).toBe(200);
    expect(show.body.instance_usage_audit_log).toMatchObject({
      period_beginning: "2026-02-01 00:00:00",
      period_ending: "2026-03-01 00:00:00",
    });
    const onTheFirst = await admin().get(
      `/v2.1/os-instance_usage_audit_log/${encodeURIComponent("2026-01-01 00:00:00.000000")}`,
    );
    expect(onTheFirst.body.instance_usage_audit_log).toMatchObject({
      period_beginning: "2025-11-01 00:00:00",
      period_ending: "2025-12-01 00:00:00",
    });
    expect((await admin().get("/v2.1/os-instance_usage_audit_log/invalid_time")).status).toBe(400);
    expect(
      (await admin().get(`/v2.1/os-instance_usage_audit_log/${encodeURIComponent("2026-02-30 00:00:00")}`))
        .status,
    ).toBe(400);
  });
});

describe("exec driver", () => {
  const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-admin-exec-"));
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

  it("diagnostics are the process's own figures; reset to ERROR, the server is deleted with its process", async () => {
    const id = await client.createServer({ imageRef: "sleeper", name: "proc" });
    expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    const admin = client.as(ADMIN);

    const d = await admin.at("2.48").get(`/v2.1/servers/${id}/diagnostics`);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ state: "running", driver: "exec", hypervisor: "exec", num_cpus: 1 });
    expect(d.body.uptime).toBeGreaterThanOrEqual(0);
    const cpu = (d.body.cpu_details as { time: number }[])[0]!;
    expect(cpu.time).toBeGreaterThanOrEqual(0);
    const memory = d.body.memory_details as { maximum: number; used: number };
    expect(memory.maximum).toBeGreaterThan(0);
    expect(memory.used).toBeGreaterThanOrEqual(0);

    expect(
      (await admin.post(`/v2.1/servers/${id}/action`, { "os-resetState": { state: "error" } })).status,
    ).toBe(202);
    expect((await admin.get(`/v2.1/servers/${id}`)).body.server.status).toBe("ERROR");
    expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
    await client.waitForStatus(id, ["GONE"]);
    await eventually(
      async () => processesOf(id),
      (p) => p.length === 0,
    );
  });
});
