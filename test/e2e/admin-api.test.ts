// os-services and os-hypervisors on the emulators, at the microversions clients use: the pre-2.53

// service actions (novaclient's `nova service-disable`), the 2.53 id form, and every hypervisor
// path (statistics, uptime, search, servers, the 2.53 query forms, paging).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeNumber, serviceNumber } from "../../lib/api/host-ids.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, type Reply, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let admin: Client;
let member: Client;

beforeAll(async () => {
  ({ runtime, client: member } = await startTestRuntime({ hosts: 3, buildMs: 20 }));
  admin = member.as(ADMIN);
});
afterAll(async () => runtime?.stop());

describe("os-services", () => {
  it("2.1 actions by host and binary, then the 2.53 form by id; the list shows each change", async () => {
    const old = admin.at("2.1");
    const d = await old.call("PUT", "/v2.1/os-services/disable-log-reason", {
      host: "host-1",
      binary: "nova-compute",
      disabled_reason: "firmware",
    });
    expect(d.body).toEqual({
      service: { host: "host-1", binary: "nova-compute", status: "disabled", disabled_reason: "firmware" },
    });
    const listed = await old.get("/v2.1/os-services?host=host-1");
    expect(listed.body.services).toEqual([
      expect.objectContaining({
        id: serviceNumber("host-1"),
        status: "disabled",
        disabled_reason: "firmware",
      }),
    ]);
    expect(listed.body.services[0]).not.toHaveProperty("forced_down");
    expect(
      (await old.call("PUT", "/v2.1/os-services/enable", { host: "host-1", binary: "nova-compute" })).status,
    ).toBe(200);

    const forced = await admin.at("2.11").call("PUT", "/v2.1/os-services/force-down", {
      host: "host-2",
      binary: "nova-compute",
      forced_down: true,
    });
    expect(forced.body.service.forced_down).toBe(true);
    const now = await admin.at("2.53").call("PUT", "/v2.1/os-services/host-2", { forced_down: false });
    expect(now.body.service).toMatchObject({ host: "host-2", forced_down: false, status: "enabled" });
    expect((await admin.at("2.53").get("/v2.1/os-services?binary=nova-compute")).body.services).toHaveLength(
      3,
    );
  });
});

describe("DELETE /os-services/{id}", () => {
  it("409 while the host has an instance; an idle host's service goes (and its aggregate membership), gets no builds, and comes back when its agent registers", async () => {
    const busyId = await member.createServer({ name: "keeps-its-host" });
    const busy: string = (await admin.waitForStatus(busyId, ["ACTIVE"]))["OS-EXT-SRV-ATTR:host"];
    const refused = await admin.delete(`/v2.1/os-services/${busy}`);
    expect(refused.status).toBe(409);
    expect(refused.body.conflictingRequest.message).toBe(
      "Unable to delete compute service that is hosting instances. Migrate or delete the instances first.",
    );

    const idle = ["host-1", "host-2", "host-3"].find((h) => h !== busy)!;
    const agg = await admin.post("/v2.1/os-aggregates", { aggregate: { name: "to-leave" } });
    const aggId = agg.body.aggregate.id;
    await admin.post(`/v2.1/os-aggregates/${aggId}/action`, { add_host: { host: idle } });
    expect((await admin.delete(`/v2.1/os-services/${idle}`)).status).toBe(204);
    expect((await admin.get(`/v2.1/os-aggregates/${aggId}`)).body.aggregate.hosts).toEqual([]);
    const hosts = (await admin.get("/v2.1/os-services")).body.services.map((s: { host: string }) => s.host);
    expect(hosts).not.toContain(idle);
    expect((await admin.get(`/v2.1/os-hypervisors/${idle}`)).status).toBe(404);

    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await member.createServer({ name: `after-${i}` }));
    for (const id of ids) {
      const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
      expect(s["OS-EXT-SRV-ATTR:host"]).not.toBe(idle);
    }

    await runtime.restartHost(idle);
    const back = await eventually(
      async () => (await admin.get(`/v2.1/os-services?host=${idle}`)).body.services,
      (s) => s.length === 1,
    );
    expect(back[0]).toMatchObject({ host: idle, status: "enabled" });
    for (const id of [busyId, ...ids]) expect((await member.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });
});

describe("os-hypervisors", () => {
  it("statistics and uptime are their own paths, not a host named so; 2.88 drops them", async () => {
    const s = await admin.get("/v2.1/os-hypervisors/statistics");
    expect(s.status).toBe(200);
    expect(s.body.hypervisor_statistics).toMatchObject({ count: 3, vcpus: 48 });
    // uptime: `uptime`'s text, counted from the host's registration, as openstackclient parses it
    const up = await admin.get("/v2.1/os-hypervisors/host-1/uptime");
    expect(up.status).toBe(200);
    expect(up.body.hypervisor.uptime).toMatch(/^ \d\d:\d\d:\d\d up .+,\s+0 users,\s+load average: /);
    expect((await admin.at("2.88").get("/v2.1/os-hypervisors/statistics")).status).toBe(404);
    const shown = await admin.at("2.88").get("/v2.1/os-hypervisors/host-1");
    expect(shown.body.hypervisor).toMatchObject({ hypervisor_hostname: "host-1" });
    expect(shown.body.hypervisor.uptime).toMatch(/ up /);
    expect(shown.body.hypervisor).not.toHaveProperty("vcpus");
  });

  it("servers by pattern (until 2.52) and with_servers (2.53)", async () => {
    const id = await member.createServer({ name: "on-a-host" });
    const s = await admin.waitForStatus(id, ["ACTIVE"]);
    const host: string = s["OS-EXT-SRV-ATTR:host"];
    const byPattern = await admin.at("2.52").get(`/v2.1/os-hypervisors/${host}/servers`);
    expect(byPattern.body.hypervisors).toEqual([
      expect.objectContaining({ id: nodeNumber(host), servers: [{ name: "on-a-host", uuid: id }] }),
    ]);
    const search = await admin.get("/v2.1/os-hypervisors/host/search");
    expect(search.body.hypervisors).toHaveLength(3);
    const q = await admin
      .at("2.53")
      .get(`/v2.1/os-hypervisors?hypervisor_hostname_pattern=${host}&with_servers=true`);
    expect(q.body.hypervisors[0].servers).toEqual([{ name: "on-a-host", uuid: id }]);
    expect((await admin.at("2.53").get(`/v2.1/os-hypervisors/${host}/servers`)).status).toBe(404);
    expect((await member.delete(`/v2.1/servers/${id}`)).status).toBe(204);
  });

  it("2.33 paging follows the next links through every host", async () => {
    const seen: number[] = [];
    let path: string | undefined = "/v2.1/os-hypervisors?limit=2";
    while (path) {
      const page: Reply = await admin.at("2.33").get(path);
      seen.push(...page.body.hypervisors.map((h: { id: number }) => h.id));
      const next: string | undefined = page.body.hypervisors_links?.[0]?.href;
      path = next ? next.slice(next.indexOf("/v2.1/")) : undefined;
    }
    expect(seen).toEqual(["host-1", "host-2", "host-3"].map(nodeNumber));
  });
});
