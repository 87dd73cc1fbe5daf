import { beforeEach, describe, expect, it } from "vitest";
import { serviceUuid } from "../../../lib/api/host-ids.js";
import { fleetView } from "../../../lib/api/views/fleet.js";
import type { Aggregate } from "../../../lib/catalog/types.js";
import { apiCall, fakeWorld, host } from "./fakes.js";

let world = fakeWorld();
beforeEach(() => {
  world = fakeWorld();
});

const call = (path: string, token = "admin-token") => apiCall(world.deps, "GET", path, token);

describe("GET /os-fleet", () => {
  it("gives admins every live host in one compact row: zone, state, usage against capacity per class", async () => {
    world.hosts.set(
      "host-3",
      host("host-3", { service: { disabled: true, disabled_reason: "firmware", forced_down: true } }),
    );
    world.hosts.set(
      "host-gone",
      host("host-gone", {
        service: {
          disabled: true,
          disabled_reason: null,
          forced_down: false,
          deleted_at: "2026-03-01T00:00:00Z",
        },
      }),
    );
    const r = await call("/v2.1/os-fleet");
    expect(r.status).toBe(200);
    const fleet = r.json.fleet;
    expect(fleet.full).toBe(true);
    expect(fleet.resource_classes).toEqual(["DISK_GB", "MEMORY_MB", "VCPU"]);
    expect(fleet.hosts.map((h: { host: string }) => h.host)).toEqual(["host-1", "host-2", "host-3"]);
    expect(fleet.hosts[0]).toEqual({
      host: "host-1",
      service_id: serviceUuid("host-1"),
      zone: "nova",
      aggregates: [],
      state: "up",
      status: "enabled",
      forced_down: false,
      disabled_reason: null,
      instances: 2,
      building: 0,
      failed_builds: 0,
      // capacity = (total − reserved) × ratio
      resources: { VCPU: [2, 128], MEMORY_MB: [4096, 23808], DISK_GB: [40, 200] },
      changed_at: "2026-03-01T12:00:00.123Z",
    });
    expect(fleet.hosts[2]).toMatchObject({
      state: "down",
      status: "disabled",
      forced_down: true,
      disabled_reason: "firmware",
    });
    // the next poll looks back a little before this answer (the feed index's lag)
    expect(fleet.next_changes_since).toBe("2026-03-01T11:59:55.123Z");
  });

  it("with changes-since answers only what the feed says changed, deleted services flagged", async () => {
    const asked: string[] = [];
    world.deps.readChangedHosts = async (since) => {
      asked.push(since);
      return [
        host("host-2", { num_instances: 5 }),
        host("host-9", {
          service: { disabled: true, disabled_reason: null, forced_down: false, deleted_at: "x" },
        }),
      ];
    };
    const r = await call("/v2.1/os-fleet?changes-since=2026-03-01T11:00:00Z");
    expect(asked).toEqual(["2026-03-01T11:00:00.000Z"]);
    expect(r.json.fleet.full).toBe(false);
    expect(
      r.json.fleet.hosts.map((h: { host: string; instances: number; deleted?: boolean }) => [
        h.host,
        h.instances,
        h.deleted ?? false,
      ]),
    ).toEqual([
      ["host-2", 5, false],
      ["host-9", 2, true],
    ]);
  });

  it("names each host's aggregates by number in the aggregates' order, and its zone by its AZ aggregate", () => {
    const agg = (number: number | undefined, name: string, hosts: string[], zone?: string): Aggregate => ({
      id: `uuid-${name}`,
      ...(number === undefined ? {} : { number }),
      name,
      availability_zone: zone ?? null,
      hosts,
      metadata: zone ? { availability_zone: zone } : {},
      created_at: "2026-03-01T00:00:00Z",
      updated_at: "2026-03-01T00:00:00Z",
    });
    const aggregates = [
      agg(7, "az-east", ["host-1", "host-2"], "east"),
      agg(3, "gpu", ["host-2", "host-2"]),
      // written before aggregates had numbers: no id to name it by
      agg(undefined, "old", ["host-1"]),
    ];
    const { fleet } = fleetView([host("host-1"), host("host-2"), host("host-3")], aggregates, {
      defaultZone: "nova",
      full: true,
      nextChangesSince: "2026-03-01T00:00:00.000Z",
    }) as { fleet: { hosts: { host: string; aggregates: number[]; zone: string }[] } };
    expect(fleet.hosts.map((h) => [h.host, h.aggregates, h.zone])).toEqual([
      ["host-1", [7], "east"],
      ["host-2", [7, 3], "east"],
      ["host-3", [], "nova"],
    ]);
  });

  it("refuses members (host names are the operator's) and a changes-since that is no date-time", async () => {
    const member = await call("/v2.1/os-fleet", "demo-token");
    expect(member.status).toBe(403);
    expect(member.json.forbidden.message).toContain("novaless:fleet:show");
    const bad = await call("/v2.1/os-fleet?changes-since=yesterday");
    expect(bad.status).toBe(400);
    expect(bad.json.badRequest.message).toContain("'yesterday' is not a 'date-time'");
  });
});

describe("the console's page", () => {
  it("is served at /console with its hashed assets, a strict CSP, and 404 for anything else", async () => {
    const { handleHttp } = await import("../../../lib/api/router.js");
    const page = await handleHttp(
      { method: "GET", path: "/console", headers: {}, body: undefined },
      world.deps,
    );
    expect(page.status).toBe(200);
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    const script = /src="(\/console\/assets\/app\.[0-9a-f]{12}\.js)"/.exec(page.body ?? "")?.[1];
    expect(script).toBeDefined();
    const js = await handleHttp({ method: "GET", path: script!, headers: {}, body: undefined }, world.deps);
    expect(js.status).toBe(200);
    expect(js.headers["cache-control"]).toContain("immutable");
    expect(
      (
        await handleHttp(
          { method: "GET", path: "/console/assets/app.000000000000.js", headers: {}, body: undefined },
          world.deps,
        )
      ).status,
    ).toBe(404);
  });

  it("answers a repeated GET with 304 when nothing changed (ETag)", async () => {
    const { handleHttp } = await import("../../../lib/api/router.js");
    const first = await handleHttp(
      { method: "GET", path: "/v2.1/flavors", headers: { "x-auth-token": "demo-token" }, body: undefined },
      world.deps,
    );
    const etag = first.headers.etag;
    expect(etag).toMatch(/^W\//);
    const again = await handleHttp(
      {
        method: "GET",
        path: "/v2.1/flavors",
        headers: { "x-auth-token": "demo-token", "if-none-match": etag! },
        body: undefined,
      },
      world.deps,
    );
    expect(again.status).toBe(304);
  });
});
