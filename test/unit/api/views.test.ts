import { describe, expect, it } from "vitest";
import { ApiError, errorBody, UNAUTHORIZED_BODY } from "../../../lib/api/errors.js";
import { nodeNumber, serviceNumber } from "../../../lib/api/host-ids.js";
import { ApiVersion, MAX_VERSION as LATEST } from "../../../lib/api/microversion.js";
import { actionDetailView, actionsListView, sortedActions } from "../../../lib/api/views/actions.js";
import { embeddedFlavorView, flavorSummaryView, flavorView } from "../../../lib/api/views/flavors.js";
import { hostId, isoMicro, isoSeconds } from "../../../lib/api/views/format.js";
import { hypervisorDetailView, hypervisorSummaryView } from "../../../lib/api/views/hypervisors.js";
import { imageSummaryView, imageView } from "../../../lib/api/views/images.js";
import { serverSummaryView, serverView } from "../../../lib/api/views/servers.js";
import { legacyVersionView, versionsView, versionView } from "../../../lib/api/views/versions.js";
import { SEED_FLAVORS, SEED_IMAGES } from "../../../lib/catalog/seed.js";
import type { ActionEvent } from "../../../lib/instances/types.js";
import { host } from "./fakes.js";
import { record } from "./records.js";

const BASE = "http://api.test";

describe("formats", () => {
  it("Nova's timestamps", () => {
    expect(isoSeconds("2026-03-01T12:00:00.123Z")).toBe("2026-03-01T12:00:00Z");
    expect(isoMicro("2026-03-01T12:00:00.123Z")).toBe("2026-03-01T12:00:00.123000");
    expect(isoMicro(null)).toBeNull();
  });
  it("hostId is sha224(project_id + host), '' without a host", () => {
    expect(hostId("demo", "host-1")).toBe("baa5cf9b80e688c38c4ac09ef1307c77838c451b0fe3289ad8def692");
    expect(hostId("demo", null)).toBe("");
  });
});

describe("errors", () => {
  it("Nova's shape for everything, Keystone's for 401", () => {
    expect(errorBody("itemNotFound", "x")).toEqual({ itemNotFound: { code: 404, message: "x" } });
    expect(new ApiError("overLimit", "big").body()).toEqual({ overLimit: { code: 413, message: "big" } });
    expect(new ApiError("badMethod", "m").status).toBe(405);
    expect(new ApiError("conflictingRequest", "c").status).toBe(409);
    expect(new ApiError("computeFault", "f").status).toBe(500);
    expect(UNAUTHORIZED_BODY).toEqual({
      error: {
        code: 401,
        title: "Unauthorized",
        message: "The request you have made requires authentication.",
      },
    });
  });
});

describe("server view", () => {
  const active = record({
    vm_state: "active",
    task_state: null,
    host: "host-1",
    node: "host-1",
    availability_zone: "az1",
    launched_at: "2026-03-01T12:00:05.000Z",
    metadata: { k: "v" },
  });

  it("has Nova's fields, with the admin-only ones for admins only", () => {
    const m = serverView(active, { baseUrl: BASE, isAdmin: false, version: LATEST });
    expect(m).toMatchObject({
      id: active.id,
      name: "vm",
      status: "ACTIVE",
      tenant_id: "demo",
      user_id: "demo",
      metadata: { k: "v" },
      hostId: hostId("demo", "host-1"),
      image: {
        id: "a1b2c3d4-0000-4000-8000-000000000001",
        links: [{ rel: "bookmark", href: `${BASE}/images/a1b2c3d4-0000-4000-8000-000000000001` }],
      },
      flavor: {
        vcpus: 1,
        ram: 512,
        disk: 1,
        ephemeral: 0,
        swap: 0,
        original_name: "m1.tiny",
        extra_specs: {},
      },
      created: "2026-03-01T12:00:00Z",
      updated: "2026-03-01T12:00:01Z",
      addresses: {},
      "OS-EXT-STS:vm_state": "active",
      "OS-EXT-STS:task_state": null,
      "OS-EXT-STS:power_state": 1,
      "OS-EXT-AZ:availability_zone": "az1",
      "OS-SRV-USG:launched_at": "2026-03-01T12:00:05.000000",
      links: [
        { rel: "self", href: `${BASE}/v2.1/servers/${active.id}` },
        { rel: "bookmark", href: `${BASE}/servers/${active.id}` },
      ],
    });
    for (const k of [
      "OS-EXT-SRV-ATTR:host",
      "OS-EXT-SRV-ATTR:hypervisor_hostname",
      "OS-EXT-SRV-ATTR:instance_name",
    ]) {
      expect(m).not.toHaveProperty(k);
    }
    expect(m).not.toHaveProperty("fault");

    const a = serverView(active, { baseUrl: BASE, isAdmin: true, version: LATEST });
    expect(a["OS-EXT-SRV-ATTR:host"]).toBe("host-1");
    expect(a["OS-EXT-SRV-ATTR:hypervisor_hostname"]).toBe("host-1");
    expect(a["OS-EXT-SRV-ATTR:instance_name"]).toBe("instance-6a1f0b8e");
  });

  it("BUILD before scheduling: no host, empty hostId, requested zone shown, power state 0", () => {
    const v = serverView(record({ requested_availability_zone: "az2:host-9" }), {
      baseUrl: BASE,
      isAdmin: true,
      version: LATEST,
    });
    expect(v).toMatchObject({
      status: "BUILD",
      hostId: "",
      "OS-EXT-STS:vm_state": "building",
      "OS-EXT-STS:task_state": "scheduling",
      "OS-EXT-STS:power_state": 0,
      "OS-EXT-AZ:availability_zone": "az2",
      "OS-EXT-SRV-ATTR:host": null,
      "OS-SRV-USG:launched_at": null,
    });
    expect(
      serverView(record(), { baseUrl: BASE, isAdmin: false, version: LATEST })["OS-EXT-AZ:availability_zone"],
    ).toBe("");
  });

  it("ERROR shows the fault; its details to admins only", () => {
    const rec = record({
      vm_state: "error",
      task_state: null,
      fault: {
        code: 500,
        message: "No valid host was found. There are not enough hosts available.",
        details: "MEMORY_MB: host-1 has 100 free",
        created: "2026-03-01T12:00:02.999Z",
      },
    });
    expect(serverView(rec, { baseUrl: BASE, isAdmin: false, version: LATEST }).fault).toEqual({
      code: 500,
      message: "No valid host was found. There are not enough hosts available.",
      created: "2026-03-01T12:00:02Z",
    });
    expect(serverView(rec, { baseUrl: BASE, isAdmin: true, version: LATEST }).fault).toMatchObject({
      details: "MEMORY_MB: host-1 has 100 free",
    });
  });

  it("a fault recorded with host names (before they were kept out) reaches members without them", () => {
    const message = "Exceeded maximum number of retries. Last exception: host-2: spawn on host-2 failed";
    const rec = record({
      vm_state: "error",
      task_state: null,
      host: "host-2",
      retry_hosts: ["host-1", "host-2"],
      fault: { code: 500, message, details: "hosts tried: host-1, host-2", created: "2026-03-01T12:00:02Z" },
    });
    expect(serverView(rec, { baseUrl: BASE, isAdmin: false, version: LATEST }).fault).toEqual({
      code: 500,
      message: "Exceeded maximum number of retries. Last exception: the host: spawn on the host failed",
      created: "2026-03-01T12:00:02Z",
    });
    expect(serverView(rec, { baseUrl: BASE, isAdmin: true, version: LATEST }).fault).toMatchObject({
      message,
      details: "hosts tried: host-1, host-2",
    });
  });

  it("the list view is id, name, links", () => {
    const r = record();
    expect(serverSummaryView(r, BASE)).toEqual({
      id: r.id,
      name: "vm",
      links: [
        { rel: "self", href: `${BASE}/v2.1/servers/${r.id}` },
        { rel: "bookmark", href: `${BASE}/servers/${r.id}` },
      ],
    });
  });
});

describe("flavor views", () => {
  it("Nova's flavor at 2.1: swap '' when 0, the OS-FLV-* extensions, links", () => {
    const f = SEED_FLAVORS[1]!;
    const c = { baseUrl: BASE, extraSpecs: true };
    expect(flavorView(f, c, V2_1)).toEqual({
      id: "2",
      name: "m1.small",
      ram: 2048,
      vcpus: 1,
      disk: 20,
      "OS-FLV-EXT-DATA:ephemeral": 0,
      swap: "",
      rxtx_factor: 1,
      "os-flavor-access:is_public": true,
      "OS-FLV-DISABLED:disabled": false,
      links: [
        { rel: "self", href: `${BASE}/v2.1/flavors/2` },
        { rel: "bookmark", href: `${BASE}/flavors/2` },
      ],
    });
    expect(flavorView({ ...f, swap: 512 }, c, V2_1).swap).toBe(512);
    expect(flavorSummaryView(f, c, V2_1)).toEqual({ id: "2", name: "m1.small", links: expect.any(Array) });
  });
  it("the embedded flavor of a server (2.47+)", () => {
    expect(
      embeddedFlavorView({
        id: "9",
        name: "big",
        vcpus: 4,
        memory_mb: 8192,
        root_gb: 80,
        ephemeral_gb: 10,
        swap: 1024,
        extra_specs: { a: "b" },
      }),
    ).toEqual({
      vcpus: 4,
      ram: 8192,
      disk: 80,
      ephemeral: 10,
      swap: 1024,
      original_name: "big",
      extra_specs: { a: "b" },
    });
  });
});

describe("image views", () => {
  it("Nova's image proxy fields", () => {
    const img = SEED_IMAGES[0]!;
    expect(imageView(img, BASE)).toMatchObject({
      id: img.id,
      name: "cirros",
      status: "ACTIVE",
      minDisk: 0,
      minRam: 0,
      metadata: img.properties,
      created: "2026-01-01T00:00:00Z",
    });
    expect(imageSummaryView(img, BASE)).toMatchObject({ id: img.id, name: "cirros" });
  });
});

describe("instance action views", () => {
  const ev = (event: string, attempt: number, result: ActionEvent["result"], start: string, h: string) => ({
    event,
    attempt,
    start_time: start,
    finish_time: start.replace(/\.\d+Z$/, ".900Z"),
    result,
    host: h,
    details: result === "Error" ? `boom on ${h}` : null,
  });
  const rid = "req-00000000-0000-4000-8000-000000000001";
  const rec = record({
    actions: {
      [rid]: {
        action: "create",
        request_id: rid,
        user_id: "demo",
        project_id: "demo",
        start_time: "2026-03-01T12:00:00.000Z",
        message: null,
        events: {
          "compute_build_and_run_instance#2": ev(
            "compute_build_and_run_instance",
            2,
            "Success",
            "2026-03-01T12:00:03.000Z",
            "host-2",
          ),
          "conductor_schedule_and_build_instances#1": ev(
            "conductor_schedule_and_build_instances",
            1,
            "Success",
            "2026-03-01T12:00:01.000Z",
            "host-1",
          ),
          "compute_build_and_run_instance#1": ev(
            "compute_build_and_run_instance",
            1,
            "Error",
            "2026-03-01T12:00:02.000Z",
            "host-1",
          ),
        },
      },
    },
  });

  it("list: Nova's fields, message 'Error' once an event failed, updated_at the last event", () => {
    expect(actionsListView(rec, sortedActions(rec), false, LATEST)).toEqual([
      {
        action: "create",
        instance_uuid: rec.id,
        request_id: rid,
        user_id: "demo",
        project_id: "demo",
        start_time: "2026-03-01T12:00:00.000000",
        message: "Error",
        updated_at: "2026-03-01T12:00:03.900000",
      },
    ]);
  });

  it("detail: events oldest first; host, traceback and details for admins only", () => {
    const member = actionDetailView(rec.actions[rid]!, rec, false, ApiVersion.parse("2.62"));
    const events = member.events as Record<string, unknown>[];
    expect(events.map((e) => [e.event, e.result])).toEqual([
      ["conductor_schedule_and_build_instances", "Success"],
      ["compute_build_and_run_instance", "Error"],
      ["compute_build_and_run_instance", "Success"],
    ]);
    expect(events[1]).toEqual({
      event: "compute_build_and_run_instance",
      start_time: "2026-03-01T12:00:02.000000",
      finish_time: "2026-03-01T12:00:02.900000",
      result: "Error",
      hostId: hostId("demo", "host-1"),
    });
    const admin = actionDetailView(rec.actions[rid]!, rec, true, LATEST);
    expect((admin.events as Record<string, unknown>[])[1]).toMatchObject({
      host: "host-1",
      traceback: "boom on host-1",
      details: "boom on host-1",
    });
  });

  it("per microversion: a member's events from 2.51, hostId from 2.62, updated_at from 2.58", () => {
    const at = (s: string) => ApiVersion.parse(s);
    expect(actionDetailView(rec.actions[rid]!, rec, false, at("2.50"))).not.toHaveProperty("events");
    const e251 = actionDetailView(rec.actions[rid]!, rec, false, at("2.51")).events as Record<
      string,
      unknown
    >[];
    expect(e251).toHaveLength(3);
    expect(e251[0]).not.toHaveProperty("hostId");
    // an admin sees the events (with their host) at every version
    const admin21 = actionDetailView(rec.actions[rid]!, rec, true, at("2.1"));
    expect((admin21.events as Record<string, unknown>[])[0]).toMatchObject({ host: "host-1" });
    expect(admin21).not.toHaveProperty("updated_at");
    expect(actionsListView(rec, sortedActions(rec), false, at("2.57"))[0]).not.toHaveProperty("updated_at");
    expect(actionsListView(rec, sortedActions(rec), false, at("2.58"))[0]).toHaveProperty("updated_at");
  });
});

const V2_1 = ApiVersion.parse("2.1");

describe("hypervisor views", () => {
  it("totals, usage with reserved counted as used, running VMs, state and status", () => {
    const h = host("host-1");
    expect(hypervisorSummaryView(h, { up: true }, V2_1)).toEqual({
      id: nodeNumber("host-1"),
      hypervisor_hostname: "host-1",
      state: "up",
      status: "enabled",
    });
    expect(hypervisorDetailView(h, { up: false }, V2_1)).toMatchObject({
      state: "down",
      vcpus: 8,
      vcpus_used: 2,
      memory_mb: 16384,
      memory_mb_used: 4096 + 512,
      free_ram_mb: 16384 - 4608,
      local_gb: 200,
      local_gb_used: 40,
      free_disk_gb: 160,
      running_vms: 2,
      current_workload: 0,
      hypervisor_type: "fake",
      hypervisor_version: 1000,
      host_ip: "10.0.0.1",
      cpu_info: "{}",
      service: { host: "host-1", id: serviceNumber("host-1"), disabled_reason: null },
    });
    const off = host("h", { service: { ...h.service, disabled: true, disabled_reason: "maintenance" } });
    expect(hypervisorDetailView(off, { up: true }, V2_1)).toMatchObject({
      status: "disabled",
      service: { disabled_reason: "maintenance" },
    });
  });
});

describe("version documents", () => {
  it("GET / (v2.0 first, as Nova lists them), GET /v2.1 and GET /v2", () => {
    expect(versionsView(BASE)).toEqual({
      versions: [
        {
          id: "v2.0",
          status: "SUPPORTED",
          version: "",
          min_version: "",
          updated: "2011-01-21T11:33:21Z",
          links: [{ rel: "self", href: `${BASE}/v2/` }],
        },
        {
          id: "v2.1",
          status: "CURRENT",
          version: "2.96",
          min_version: "2.1",
          updated: "2013-07-23T11:33:21Z",
          links: [{ rel: "self", href: `${BASE}/v2.1/` }],
        },
      ],
    });
    expect(versionView(BASE)).toMatchObject({ version: { id: "v2.1", status: "CURRENT", version: "2.96" } });
    expect(legacyVersionView(BASE)).toEqual({
      version: {
        id: "v2.0",
        status: "SUPPORTED",
        version: "",
        min_version: "",
        updated: "2011-01-21T11:33:21Z",
        links: [
          { rel: "self", href: `${BASE}/v2/` },
          { rel: "describedby", type: "text/html", href: "http://docs.openstack.org/" },
        ],
        "media-types": [
          { base: "application/json", type: "application/vnd.openstack.compute+json;version=2" },
        ],
      },
    });
  });
});
