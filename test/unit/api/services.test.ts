import { describe, expect, it } from "vitest";
import { nodeNumber, nodeUuid, serviceNumber, serviceUuid } from "../../../lib/api/host-ids.js";
import { ApiVersion } from "../../../lib/api/microversion.js";
import { serviceView } from "../../../lib/api/views/services.js";
import { apiCall, fakeWorld, host, NOW } from "./fakes.js";

let world = fakeWorld();

const call = (method: string, path: string, token: string, body?: unknown, version = "2.53") =>
  apiCall(world.deps, method, path, token, body, version);

describe("service views per microversion", () => {
  const c = {
    heartbeat: { host: "h", last_heartbeat: NOW.toISOString() },
    serviceDownTime: 60,
    now: NOW.getTime(),
  };
  it("2.1: no forced_down; 2.11 on (2.47, 2.79, latest): forced_down", () => {
    const h = host("h");
    expect(serviceView(h, c, ApiVersion.parse("2.1"))).toEqual({
      id: serviceNumber("h"),
      binary: "nova-compute",
      host: "h",
      zone: "nova",
      status: "enabled",
      state: "up",
      updated_at: "2026-03-01T12:00:00.123000",
      disabled_reason: null,
    });
    for (const v of ["2.11", "2.47", "2.79", "2.96"])
      expect(serviceView(h, c, ApiVersion.parse(v)).forced_down).toBe(false);
  });
});

describe("os-services", () => {
  it("lists every compute service for admins, 403 for members; host and binary filters", async () => {
    world = fakeWorld();
    const r = await call("GET", "/v2.1/os-services", "admin-token");
    expect(r.status).toBe(200);
    expect(r.json.services.map((s: { host: string }) => s.host)).toEqual(["host-1", "host-2"]);
    expect(r.json.services[0]).toMatchObject({
      binary: "nova-compute",
      status: "enabled",
      forced_down: false,
    });
    expect((await call("GET", "/v2.1/os-services", "demo-token")).status).toBe(403);
    expect((await call("GET", "/v2.1/os-services?host=host-2", "admin-token")).json.services).toHaveLength(1);
    expect(
      (await call("GET", "/v2.1/os-services?binary=nova-scheduler", "admin-token")).json.services,
    ).toEqual([]);
    expect(
      (await call("GET", "/v2.1/os-services?binary=nova-compute", "admin-token")).json.services,
    ).toHaveLength(2);
  });

  it("2.53: disables with a reason, re-enables (clearing it), forces down", async () => {
    world = fakeWorld();
    const d = await call("PUT", "/v2.1/os-services/host-1", "admin-token", {
      status: "disabled",
      disabled_reason: "maintenance",
    });
    expect(d.status).toBe(200);
    expect(d.json.service).toMatchObject({
      host: "host-1",
      status: "disabled",
      disabled_reason: "maintenance",
    });
    expect(world.hosts.get("host-1")!.service.disabled).toBe(true);
    const e = await call("PUT", "/v2.1/os-services/host-1", "admin-token", { status: "enabled" });
    expect(e.json.service).toMatchObject({ status: "enabled", disabled_reason: null });
    const f = await call("PUT", "/v2.1/os-services/host-2", "admin-token", { forced_down: true });
    expect(f.json.service).toMatchObject({ forced_down: true, state: "down" });
  });

  it("2.53: rejects what Nova rejects", async () => {
    world = fakeWorld();
    const cases: [unknown, RegExp][] = [
      [{}, /No updates were requested\. Fields 'status' or 'forced_down' should be specified\./],
      [{ status: "sleeping" }, /status/],
      [{ status: "enabled", disabled_reason: "x" }, /disabled_reason/],
      [{ forced_down: "maybe" }, /forced_down/],
      [{ status: "disabled", colour: "red" }, /colour/],
    ];
    for (const [body, message] of cases) {
      const r = await call("PUT", "/v2.1/os-services/host-1", "admin-token", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.badRequest.message).toMatch(message);
    }
    expect((await call("PUT", "/v2.1/os-services/nope", "admin-token", { status: "disabled" })).json).toEqual(
      {
        itemNotFound: { code: 404, message: "Service nope could not be found." },
      },
    );
    expect((await call("PUT", "/v2.1/os-services/host-1", "demo-token", { status: "disabled" })).status).toBe(
      403,
    );
  });

  it("before 2.53: enable, disable, disable-log-reason with host and binary; the answer echoes them", async () => {
    world = fakeWorld();
    const body = { host: "host-1", binary: "nova-compute" };
    const d = await call(
      "PUT",
      "/v2.1/os-services/disable-log-reason",
      "admin-token",
      { ...body, disabled_reason: "disk" },
      "2.1",
    );
    expect(d).toEqual({
      status: 200,
      json: {
        service: { host: "host-1", binary: "nova-compute", status: "disabled", disabled_reason: "disk" },
      },
    });
    expect(world.hosts.get("host-1")!.service).toMatchObject({ disabled: true, disabled_reason: "disk" });
    const e = await call("PUT", "/v2.1/os-services/enable", "admin-token", body, "2.1");
    expect(e.json).toEqual({ service: { host: "host-1", binary: "nova-compute", status: "enabled" } });
    expect(world.hosts.get("host-1")!.service).toMatchObject({ disabled: false, disabled_reason: null });
    expect(
      (await call("PUT", "/v2.1/os-services/disable", "admin-token", body, "2.52")).json.service.status,
    ).toBe("disabled");
    const noReason = await call("PUT", "/v2.1/os-services/disable-log-reason", "admin-token", body, "2.1");
    expect(noReason.json.badRequest.message).toBe("Missing disabled reason field");
  });

  it("before 2.53: force-down from 2.11; unknown actions, binaries and hosts", async () => {
    world = fakeWorld();
    const body = { host: "host-2", binary: "nova-compute", forced_down: true };
    expect((await call("PUT", "/v2.1/os-services/force-down", "admin-token", body, "2.10")).json).toEqual({
      itemNotFound: { code: 404, message: "Unknown action" },
    });
    const f = await call("PUT", "/v2.1/os-services/force-down", "admin-token", body, "2.11");
    expect(f.json).toEqual({ service: { host: "host-2", binary: "nova-compute", forced_down: true } });
    expect(world.hosts.get("host-2")!.service.forced_down).toBe(true);
    const sched = await call(
      "PUT",
      "/v2.1/os-services/disable",
      "admin-token",
      { host: "host-1", binary: "nova-scheduler" },
      "2.1",
    );
    expect(sched.json.badRequest.message).toBe(
      "Updating a nova-scheduler service is not supported. Only nova-compute services can be updated.",
    );
    const gone = await call(
      "PUT",
      "/v2.1/os-services/disable",
      "admin-token",
      { host: "nope", binary: "nova-compute" },
      "2.1",
    );
    expect(gone.json).toEqual({
      itemNotFound: { code: 404, message: "Could not find binary nova-compute on host nope." },
    });
    // from 2.53 an action name is a service id
    expect(
      (await call("PUT", "/v2.1/os-services/disable", "admin-token", { status: "disabled" })).status,
    ).toBe(404);
  });
});

describe("DELETE /os-services/{id}", () => {
  it("refuses while the host has instances (409), else marks it deleted: 204, gone from the lists", async () => {
    world = fakeWorld();
    // host-1 and host-2 hold allocations in the fake world (num_instances 2)
    const busy = await call("DELETE", "/v2.1/os-services/host-1", "admin-token");
    expect(busy).toEqual({
      status: 409,
      json: {
        conflictingRequest: {
          code: 409,
          message:
            "Unable to delete compute service that is hosting instances. Migrate or delete the instances first.",
        },
      },
    });
    world.hosts.set("host-3", host("host-3", { num_instances: 0, usage: {} }));
    expect((await call("DELETE", "/v2.1/os-services/host-3", "demo-token")).status).toBe(403);
    expect((await call("DELETE", "/v2.1/os-services/host-3", "admin-token")).status).toBe(204);
    expect(world.hosts.get("host-3")!.service).toMatchObject({ disabled: true });
    const listed = (await call("GET", "/v2.1/os-services", "admin-token")).json.services;
    expect(listed.map((s: { host: string }) => s.host)).toEqual(["host-1", "host-2"]);
    expect((await call("GET", "/v2.1/os-hypervisors/host-3", "admin-token")).status).toBe(404);
    expect(await call("DELETE", "/v2.1/os-services/host-3", "admin-token")).toEqual({
      status: 404,
      json: { itemNotFound: { code: 404, message: "Service host-3 not found." } },
    });
  });
});

describe("2.53 uuids", () => {
  it("services and hypervisors have stable uuids from 2.53, and paths take them (or the host name)", async () => {
    world = fakeWorld();
    const svc = (await call("GET", "/v2.1/os-services?host=host-1", "admin-token")).json.services[0];
    expect(svc.id).toBe(serviceUuid("host-1"));
    expect(svc.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(
      (await call("GET", "/v2.1/os-services?host=host-1", "admin-token", undefined, "2.52")).json.services[0]
        .id,
    ).toBe(serviceNumber("host-1"));
    const put = await call("PUT", `/v2.1/os-services/${svc.id}`, "admin-token", { status: "disabled" });
    expect(put.json.service).toMatchObject({ id: svc.id, host: "host-1", status: "disabled" });
    const unknown = "6a1f0b8e-1111-4000-8000-000000000009";
    expect(
      (await call("PUT", `/v2.1/os-services/${unknown}`, "admin-token", { status: "enabled" })).status,
    ).toBe(404);

    const hv = (await call("GET", "/v2.1/os-hypervisors/detail", "admin-token")).json.hypervisors[0];
    expect(hv.id).toBe(nodeUuid("host-1"));
    expect(hv.service.id).toBe(serviceUuid("host-1"));
    expect(hv.id).not.toBe(hv.service.id);
    expect(
      (await call("GET", `/v2.1/os-hypervisors/${hv.id}`, "admin-token")).json.hypervisor.hypervisor_hostname,
    ).toBe("host-1");
    expect(
      (await call("GET", "/v2.1/os-hypervisors/host-1", "admin-token", undefined, "2.52")).json.hypervisor.id,
    ).toBe(nodeNumber("host-1"));
    // before 2.53 the integer ids name them in paths too
    expect(
      (await call("GET", `/v2.1/os-hypervisors/${nodeNumber("host-1")}`, "admin-token", undefined, "2.52"))
        .json.hypervisor.hypervisor_hostname,
    ).toBe("host-1");
  });
});
