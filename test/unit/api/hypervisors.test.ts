import { describe, expect, it } from "vitest";
import { nodeNumber } from "../../../lib/api/host-ids.js";
import { ApiVersion } from "../../../lib/api/microversion.js";
import {
  hypervisorDetailView,
  hypervisorStatisticsView,
  uptimeText,
} from "../../../lib/api/views/hypervisors.js";
import { apiCall, fakeWorld, host } from "./fakes.js";
import { record } from "./records.js";

const v = (s: string) => ApiVersion.parse(s);
let world = fakeWorld();

const call = (path: string, version?: string, token = "admin-token") =>
  apiCall(world.deps, "GET", path, token, undefined, version);

describe("hypervisor views per microversion", () => {
  const h = host("host-1");
  it("2.1: resource fields and cpu_info as a string; 2.28: cpu_info an object", () => {
    expect(hypervisorDetailView(h, { up: true }, v("2.1"))).toMatchObject({ cpu_info: "{}", vcpus: 8 });
    expect(hypervisorDetailView(h, { up: true }, v("2.47"))).toMatchObject({ cpu_info: {}, vcpus: 8 });
    expect(hypervisorDetailView(h, { up: true }, v("2.79")).uptime).toBeUndefined();
  });
  it("cpu_info carries the driver's facts (whether cgroup limits are enforced)", () => {
    const facts = { limits_enforced: false, why: "cgroup v1: no unified hierarchy" };
    const withFacts = { ...h, hypervisor_facts: facts };
    expect(hypervisorDetailView(withFacts, { up: true }, v("2.1")).cpu_info).toBe(JSON.stringify(facts));
    expect(hypervisorDetailView(withFacts, { up: true }, v("2.87")).cpu_info).toEqual(facts);
  });
  it("2.88: no resource fields nor cpu_info, uptime instead", () => {
    const d = hypervisorDetailView(h, { up: true }, v("2.88"));
    expect(Object.keys(d).sort()).toEqual([
      "host_ip",
      "hypervisor_hostname",
      "hypervisor_type",
      "hypervisor_version",
      "id",
      "service",
      "state",
      "status",
      "uptime",
    ]);
    expect(d.uptime).toBeNull();
    const started = { ...h, started_at: "2026-11-20T10:00:00.000Z" };
    const now = new Date("2026-11-23T12:34:56.000Z");
    expect(hypervisorDetailView(started, { up: true, now }, v("2.88")).uptime).toBe(
      " 12:34:56 up 3 days,  2:34,  0 users,  load average: 0.00, 0.00, 0.00",
    );
  });
  it("uptime reads as `uptime` does, and as openstackclient's pattern parses it", () => {
    const now = new Date("2026-11-23T12:34:56.000Z");
    const at = (iso: string) => uptimeText({ started_at: iso }, now);
    expect(at("2026-11-23T12:30:00.000Z")).toBe(
      " 12:34:56 up 4 min,  0 users,  load average: 0.00, 0.00, 0.00",
    );
    expect(at("2026-11-23T09:00:00.000Z")).toMatch(/ up {2}3:34,/);
    expect(at("2026-11-22T12:00:00.000Z")).toMatch(/ up 1 day, {2}0:34,/);
    const osc = /\s*(.+)\sup\s+(.+),\s+(.+)\susers?,\s+load average:\s(.+)/;
    expect(osc.exec(at("2026-11-22T12:00:00.000Z") ?? "")?.slice(1)).toEqual([
      "12:34:56",
      "1 day,  0:34",
      "0",
      "0.00, 0.00, 0.00",
    ]);
    expect(uptimeText({}, now)).toBeNull();
  });
  it("servers: only when there are some before 2.75, an empty list when asked from 2.75", () => {
    expect(hypervisorDetailView(h, { up: true, servers: [] }, v("2.53")).servers).toBeUndefined();
    expect(hypervisorDetailView(h, { up: true, servers: [] }, v("2.75")).servers).toEqual([]);
    expect(hypervisorDetailView(h, { up: true }, v("2.96")).servers).toBeUndefined();
  });
  it("statistics sum the hosts", () => {
    const s = hypervisorStatisticsView([host("a"), host("b")]);
    expect(s).toMatchObject({ count: 2, vcpus: 16, vcpus_used: 4, running_vms: 4, local_gb: 400 });
  });
});

describe("os-hypervisors paths", () => {
  it("statistics until 2.87 (not a host named 'statistics'); 404 from 2.88", async () => {
    world = fakeWorld();
    const s = await call("/v2.1/os-hypervisors/statistics");
    expect(s.status).toBe(200);
    expect(s.json.hypervisor_statistics).toMatchObject({ count: 2, vcpus: 16 });
    expect((await call("/v2.1/os-hypervisors/statistics", "2.88")).status).toBe(404);
  });

  it("uptime until 2.87: 501 as Nova for a host that never said when it started; 404 for an unknown host", async () => {
    world = fakeWorld();
    expect(await call("/v2.1/os-hypervisors/host-1/uptime")).toEqual({
      status: 501,
      json: { notImplemented: { code: 501, message: "The requested functionality is not supported." } },
    });
    expect((await call("/v2.1/os-hypervisors/nope/uptime")).status).toBe(404);
    expect((await call("/v2.1/os-hypervisors/host-1/uptime", "2.88")).status).toBe(404);
    expect((await call("/v2.1/os-hypervisors/host-1", "2.88")).json.hypervisor.uptime).toBeNull();
  });

  it("search and servers by pattern until 2.52, 404 when nothing matches", async () => {
    world = fakeWorld();
    world.instances.set("i-1", record({ id: "i-1", name: "web-1", host: "host-2" }));
    const found = await call("/v2.1/os-hypervisors/st-2/search");
    expect(found.json.hypervisors.map((h: { id: number }) => h.id)).toEqual([nodeNumber("host-2")]);
    const servers = await call("/v2.1/os-hypervisors/host/servers");
    expect(servers.json.hypervisors).toEqual([
      expect.not.objectContaining({ servers: expect.anything() }),
      expect.objectContaining({ id: nodeNumber("host-2"), servers: [{ name: "web-1", uuid: "i-1" }] }),
    ]);
    expect(await call("/v2.1/os-hypervisors/zzz/search")).toEqual({
      status: 404,
      json: { itemNotFound: { code: 404, message: "No hypervisor matching 'zzz' could be found." } },
    });
    expect((await call("/v2.1/os-hypervisors/host/search", "2.53")).status).toBe(404);
  });

  it("2.53: hypervisor_hostname_pattern and with_servers; no paging with a pattern", async () => {
    world = fakeWorld();
    world.instances.set("i-1", record({ id: "i-1", name: "web-1", host: "host-1" }));
    const r = await call(
      "/v2.1/os-hypervisors/detail?hypervisor_hostname_pattern=host-1&with_servers=true",
      "2.53",
    );
    expect(r.json.hypervisors).toHaveLength(1);
    expect(r.json.hypervisors[0].servers).toEqual([{ name: "web-1", uuid: "i-1" }]);
    // before 2.53 the pattern is not a filter
    expect(
      (await call("/v2.1/os-hypervisors?hypervisor_hostname_pattern=host-1", "2.52")).json.hypervisors,
    ).toHaveLength(2);
    const paged = await call("/v2.1/os-hypervisors?hypervisor_hostname_pattern=host&limit=1", "2.53");
    expect(paged.json.badRequest.message).toBe(
      "Paging over hypervisors with the hypervisor_hostname_pattern query parameter is not supported.",
    );
    expect((await call("/v2.1/os-hypervisors?with_servers=maybe", "2.53")).status).toBe(400);
    const shown = await call("/v2.1/os-hypervisors/host-2?with_servers=1", "2.75");
    expect(shown.json.hypervisor.servers).toEqual([]);
  });

  it("2.33: limit and marker by id with a next link; an unknown marker is 400", async () => {
    world = fakeWorld();
    const p1 = await call("/v2.1/os-hypervisors?limit=1", "2.33");
    expect(p1.json.hypervisors.map((h: { id: number }) => h.id)).toEqual([nodeNumber("host-1")]);
    expect(p1.json.hypervisors_links[0].href).toMatch(
      new RegExp(`/v2\\.1/os-hypervisors\\?limit=1&marker=${nodeNumber("host-1")}$`),
    );
    const p2 = await call("/v2.1/os-hypervisors/detail?marker=host-1", "2.33");
    expect(p2.json.hypervisors.map((h: { id: number }) => h.id)).toEqual([nodeNumber("host-2")]);
    expect(p2.json.hypervisors_links).toBeUndefined();
    expect((await call("/v2.1/os-hypervisors?marker=nope", "2.33")).json.badRequest.message).toBe(
      "marker [nope] not found",
    );
    // before 2.33 there is no paging
    expect((await call("/v2.1/os-hypervisors?limit=1", "2.32")).json.hypervisors).toHaveLength(2);
  });

  it("members get 403 on every path", async () => {
    world = fakeWorld();
    for (const p of ["statistics", "host-1/uptime", "host/search", "host/servers", "host-1/placement"])
      expect((await call(`/v2.1/os-hypervisors/${p}`, undefined, "demo-token")).status).toBe(403);
  });
});
