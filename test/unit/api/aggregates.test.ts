// os-aggregates and os-availability-zone: Nova's bodies, rules and errors, with in-memory I/O.
import { beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion } from "../../../lib/api/microversion.js";
import {
  addAggregateHost,
  checkAggregateDeletable,
  newAggregate,
  parseAggregateAction,
  parseCreateAggregate,
  parseUpdateAggregate,
  removeAggregateHost,
  setAggregateMetadata,
  updateAggregate,
} from "../../../lib/api/validation/aggregates.js";
import { aggregateCreatedView, aggregateView } from "../../../lib/api/views/aggregates.js";
import {
  availabilityZonesDetailView,
  availabilityZonesView,
} from "../../../lib/api/views/availability-zones.js";
import { availabilityZones } from "../../../lib/api/zones.js";
import { aggregateZoneByHost, hostAvailabilityZone } from "../../../lib/catalog/aggregates.js";
import type { Aggregate } from "../../../lib/catalog/types.js";
import { apiCall, type FakeWorld, fakeWorld, host, NOW, sentSpec } from "./fakes.js";

const LATER = new Date("2026-03-01T13:00:00.000Z");

function agg(over: Partial<Aggregate> = {}): Aggregate {
  return {
    id: "0b4c8a3e-0000-4000-8000-000000000001",
    name: "fast",
    availability_zone: null,
    hosts: [],
    metadata: {},
    created_at: NOW.toISOString(),
    updated_at: NOW.toISOString(),
    ...over,
  };
}

function fails(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected an ApiError");
}

describe("aggregate bodies", () => {
  it("create: a name and an optional zone; the zone cannot hold ':'", () => {
    expect(parseCreateAggregate({ aggregate: { name: "fast", availability_zone: "az9" } })).toEqual({
      name: "fast",
      availabilityZone: "az9",
    });
    expect(parseCreateAggregate({ aggregate: { name: "fast", availability_zone: null } })).toEqual({
      name: "fast",
      availabilityZone: null,
    });
    expect(fails(() => parseCreateAggregate({ aggregate: {} })).message).toMatch(
      /'name' is a required property/,
    );
    expect(
      fails(() => parseCreateAggregate({ aggregate: { name: "x", availability_zone: "a:b" } })).message,
    ).toBe(
      "An invalid 'name' value was provided. The name must be: printable characters except :. " +
        "Can not start or end with whitespace.",
    );
    expect(fails(() => parseCreateAggregate({ aggregate: { name: "x", hosts: [] } })).message).toMatch(
      /Additional properties are not allowed \('hosts' was unexpected\)/,
    );
  });

  it("update: name and/or zone, at least one; the name is stripped", () => {
    expect(parseUpdateAggregate({ aggregate: { name: " fast2 " } })).toEqual({ name: "fast2" });
    expect(parseUpdateAggregate({ aggregate: { availability_zone: "az3" } })).toEqual({
      availabilityZone: "az3",
    });
    expect(fails(() => parseUpdateAggregate({ aggregate: {} })).message).toMatch(
      /is not valid under any of the given schemas/,
    );
  });

  it("actions: exactly one of add_host, remove_host, set_metadata", () => {
    expect(parseAggregateAction({ add_host: { host: "host-1" } })).toEqual({
      action: "add_host",
      host: "host-1",
    });
    expect(parseAggregateAction({ remove_host: { host: "host-1" } })).toEqual({
      action: "remove_host",
      host: "host-1",
    });
    expect(parseAggregateAction({ set_metadata: { metadata: { ssd: "true", old: null } } })).toEqual({
      action: "set_metadata",
      metadata: { ssd: "true", old: null },
    });
    expect(fails(() => parseAggregateAction({ add_host: {}, remove_host: {} })).message).toBe(
      "Malformed request body",
    );
    expect(fails(() => parseAggregateAction({ explode: {} })).message).toBe(
      "There is no such action: explode",
    );
    expect(fails(() => parseAggregateAction({ add_host: { host: "" } })).status).toBe(400);
    expect(fails(() => parseAggregateAction({ set_metadata: { metadata: { "bad/key": "x" } } })).status).toBe(
      400,
    );
  });
});

describe("aggregate rules (Nova's AggregateAPI)", () => {
  const az1 = agg({
    id: "a1",
    name: "one",
    availability_zone: "az1",
    metadata: { availability_zone: "az1" },
    hosts: ["host-1"],
  });

  it("a new aggregate keeps its zone as metadata", () => {
    const a = newAggregate({ name: "n", availabilityZone: "az7" }, "id-1", NOW);
    expect(a).toMatchObject({
      id: "id-1",
      availability_zone: "az7",
      metadata: { availability_zone: "az7" },
      hosts: [],
    });
    expect(newAggregate({ name: "n", availabilityZone: null }, "id-2", NOW).metadata).toEqual({});
  });

  it("add_host: 409 twice, 409 when the host is in another zone's aggregate", () => {
    const fresh = agg({ id: "a2", metadata: { availability_zone: "az2" }, availability_zone: "az2" });
    const added = addAggregateHost(fresh, "host-2", [az1, fresh], LATER);
    expect(added.hosts).toEqual(["host-2"]);
    expect(added.updated_at).toBe(LATER.toISOString());
    const twice = fails(() => addAggregateHost(added, "host-2", [az1, added], LATER));
    expect([twice.status, twice.message]).toEqual([409, "Aggregate a2 already has host host-2."]);
    const moved = fails(() => addAggregateHost(fresh, "host-1", [az1, fresh], LATER));
    expect([moved.status, moved.message]).toEqual([
      409,
      "Cannot add host to aggregate a2. Reason: One or more hosts already in availability zone(s) ['az1'].",
    ]);
    // no zone on this aggregate, or the same zone: no conflict
    expect(addAggregateHost(agg({ id: "a3" }), "host-1", [az1], LATER).hosts).toEqual(["host-1"]);
    const same = agg({ id: "a4", metadata: { availability_zone: "az1" }, availability_zone: "az1" });
    expect(addAggregateHost(same, "host-1", [az1, same], LATER).hosts).toEqual(["host-1"]);
  });

  it("remove_host: 404 with Nova's message for a non-member", () => {
    expect(removeAggregateHost(az1, "host-1", LATER).hosts).toEqual([]);
    const e = fails(() => removeAggregateHost(az1, "host-9", LATER));
    expect([e.status, e.message]).toEqual([404, "Cannot remove host host-9 in aggregate a1"]);
  });

  it("set_metadata merges, null deletes, the zone follows its key; no empty zone, no conflict", () => {
    const a = agg({ id: "a5", metadata: { ssd: "true", old: "1" }, hosts: ["host-1"] });
    const b = setAggregateMetadata(a, { old: null, gpu: "2" }, [a], LATER);
    expect(b.metadata).toEqual({ ssd: "true", gpu: "2" });
    expect(b.availability_zone).toBeNull();
    const zoned = setAggregateMetadata(b, { availability_zone: "az1" }, [az1, b], LATER);
    expect(zoned.availability_zone).toBe("az1");
    const empty = fails(() => setAggregateMetadata(zoned, { availability_zone: null }, [zoned], LATER));
    expect([empty.status, empty.message]).toEqual([
      400,
      "Cannot update metadata of aggregate a5. Reason: Aggregate fast does not support empty named availability zone.",
    ]);
    const conflict = fails(() => setAggregateMetadata(b, { availability_zone: "az2" }, [az1, b], LATER));
    expect([conflict.status, conflict.message]).toEqual([
      400,
      "Cannot update metadata of aggregate a5. Reason: One or more hosts already in availability zone(s) ['az1'].",
    ]);
  });

  it("update: 409 on another aggregate's name, 400 on a zone conflict", () => {
    const other = agg({ id: "a6", name: "taken" });
    const e = fails(() => updateAggregate(az1, { name: "taken" }, [az1, other], LATER));
    expect([e.status, e.message]).toEqual([409, "Aggregate taken already exists."]);
    expect(updateAggregate(az1, { name: "one" }, [az1, other], LATER).name).toBe("one");
    const mine = agg({ id: "a7", hosts: ["host-1"] });
    const z = fails(() => updateAggregate(mine, { availabilityZone: "az2" }, [az1, mine], LATER));
    expect([z.status, z.message]).toEqual([
      400,
      "Cannot update aggregate a7. Reason: One or more hosts already in availability zone(s) ['az1'].",
    ]);
    const renamed = updateAggregate(mine, { name: "m", availabilityZone: "az1" }, [az1, mine], LATER);
    expect(renamed).toMatchObject({
      name: "m",
      availability_zone: "az1",
      metadata: { availability_zone: "az1" },
    });
  });

  it("delete: only when empty (Nova: 400)", () => {
    expect(() => checkAggregateDeletable(agg())).not.toThrow();
    const e = fails(() => checkAggregateDeletable(az1));
    expect([e.status, e.message]).toEqual([
      400,
      "Cannot delete aggregate a1. Reason: Host aggregate is not empty.",
    ]);
  });
});

describe("aggregate views", () => {
  it("Nova's fields: the integer id, the uuid from 2.41; create leaves out hosts and metadata", () => {
    const a = {
      ...agg({ hosts: ["host-1"], metadata: { availability_zone: "az1" }, availability_zone: "az1" }),
      number: 7,
    };
    const at2_1 = {
      availability_zone: "az1",
      created_at: "2026-03-01T12:00:00.123000",
      deleted: false,
      deleted_at: null,
      hosts: ["host-1"],
      id: 7,
      metadata: { availability_zone: "az1" },
      name: "fast",
      updated_at: "2026-03-01T12:00:00.123000",
    };
    expect(aggregateView(a, undefined, ApiVersion.parse("2.1"))).toEqual(at2_1);
    expect(aggregateView(a, undefined, ApiVersion.parse("2.40"))).toEqual(at2_1);
    for (const v of ["2.41", "2.47", "2.79", "2.96"])
      expect(aggregateView(a, undefined, ApiVersion.parse(v))).toEqual({ ...at2_1, uuid: a.id });
    const created = aggregateCreatedView(a, undefined, ApiVersion.parse("2.41"));
    expect(Object.keys(created)).not.toContain("hosts");
    expect(Object.keys(created)).not.toContain("metadata");
    expect(created.uuid).toBe(a.id);
    // an aggregate written before integer ids: its uuid is its id
    expect(aggregateView({ ...a, number: undefined }, undefined, ApiVersion.parse("2.1")).id).toBe(a.id);
  });
});

describe("availability zones", () => {
  const hosts = [
    host("host-1"),
    host("host-2", { availability_zone: "az2" }),
    host("host-3", { availability_zone: "" }),
    host("host-4", {
      availability_zone: "az4",
      service: {
        disabled: true,
        disabled_reason: "x",
        forced_down: false,
      },
    }),
    host("host-5", {
      service: {
        disabled: false,
        disabled_reason: null,
        forced_down: true,
      },
    }),
  ];
  const aggs = [
    agg({ hosts: ["host-1", "host-9"], metadata: { availability_zone: "fast" } }),
    agg({ id: "b", name: "plain", hosts: ["host-2"] }),
  ];
  const opts = {
    defaultZone: "nova",
    heartbeats: new Map(["host-3", "host-5"].map((h) => [h, NOW.toISOString()])),
  };

  it("a host's zone: its AZ aggregate's, else its own, else the default", () => {
    const byHost = aggregateZoneByHost(aggs);
    expect(hostAvailabilityZone(hosts[0]!, byHost, "nova")).toBe("fast");
    expect(hostAvailabilityZone(hosts[1]!, byHost, "nova")).toBe("az2");
    expect(hostAvailabilityZone(hosts[2]!, byHost, "nova")).toBe("nova");
  });

  it("available zones have an enabled host; a zone of disabled hosts only is unavailable", () => {
    const zones = availabilityZones(hosts, aggs, opts);
    expect(zones.map((z) => [z.name, z.available, z.hosts.map((h) => h.host)])).toEqual([
      ["az2", true, ["host-2"]],
      ["fast", true, ["host-1"]],
      ["nova", true, ["host-3", "host-5"]],
      ["az4", false, []],
    ]);
    expect(availabilityZonesView(zones).availabilityZoneInfo[3]).toEqual({
      zoneName: "az4",
      zoneState: { available: false },
      hosts: null,
    });
    const detail = availabilityZonesDetailView(zones).availabilityZoneInfo as {
      zoneName: string;
      hosts: Record<string, { "nova-compute": { available: boolean; active: boolean } }> | null;
    }[];
    expect(detail[2]!.hosts).toEqual({
      "host-3": {
        "nova-compute": { available: true, active: true, updated_at: "2026-03-01T12:00:00.123000" },
      },
      "host-5": {
        "nova-compute": { available: false, active: true, updated_at: "2026-03-01T12:00:00.123000" },
      },
    });
    expect(detail[3]!.hosts).toBeNull();
  });
});

// ── through the router ──

let w: FakeWorld;
beforeEach(() => {
  w = fakeWorld();
});

function call(method: string, path: string, token = "admin-token", body?: unknown) {
  return apiCall(w.deps, method, path, token, body);
}

describe("/os-aggregates", () => {
  it("admin only: every call is 403 for a member", async () => {
    for (const [m, p, b] of [
      ["GET", "/v2.1/os-aggregates"],
      ["POST", "/v2.1/os-aggregates", { aggregate: { name: "x" } }],
      ["GET", "/v2.1/os-aggregates/x"],
      ["PUT", "/v2.1/os-aggregates/x", { aggregate: { name: "y" } }],
      ["DELETE", "/v2.1/os-aggregates/x"],
      ["POST", "/v2.1/os-aggregates/x/action", { add_host: { host: "host-1" } }],
      ["GET", "/v2.1/os-availability-zone/detail"],
    ] as [string, string, unknown?][]) {
      const r = await call(m, p, "demo-token", b);
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.json.forbidden.message).toMatch(
        /^Policy doesn't allow os_compute_api:os-(aggregates|availability-zone):/,
      );
    }
  });

  it("create → add hosts → zone → show → list; duplicates and unknown hosts refused", async () => {
    const c = await call("POST", "/v2.1/os-aggregates", "admin-token", {
      aggregate: { name: "fast", availability_zone: "fastzone" },
    });
    expect(c.status).toBe(200);
    expect(c.json.aggregate).toMatchObject({ name: "fast", availability_zone: "fastzone", deleted: false });
    expect(c.json.aggregate.hosts).toBeUndefined();
    const id = c.json.aggregate.id as number;
    expect(id).toBe(1);

    const dup = await call("POST", "/v2.1/os-aggregates", "admin-token", { aggregate: { name: "fast" } });
    expect(dup).toEqual({
      status: 409,
      json: { conflictingRequest: { code: 409, message: "Aggregate fast already exists." } },
    });

    const add = await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
      add_host: { host: "host-1" },
    });
    expect(add.status).toBe(200);
    expect(add.json.aggregate.hosts).toEqual(["host-1"]);
    expect(
      (
        await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
          add_host: { host: "host-1" },
        })
      ).status,
    ).toBe(409);
    const ghost = await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
      add_host: { host: "ghost" },
    });
    expect([ghost.status, ghost.json.itemNotFound.message]).toEqual([
      404,
      "Compute host ghost could not be found.",
    ]);

    const meta = await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
      set_metadata: { metadata: { ssd: "true" } },
    });
    expect(meta.json.aggregate.metadata).toEqual({ availability_zone: "fastzone", ssd: "true" });

    const shown = await call("GET", `/v2.1/os-aggregates/${id}`);
    expect(shown.json.aggregate).toMatchObject({
      id,
      hosts: ["host-1"],
      availability_zone: "fastzone",
    });
    expect((await call("GET", "/v2.1/os-aggregates")).json.aggregates).toHaveLength(1);

    // the zone now exists for everyone, and host-1 moved into it
    const zones = await call("GET", "/v2.1/os-availability-zone", "demo-token");
    expect(zones.status).toBe(200);
    expect(zones.json.availabilityZoneInfo.map((z: { zoneName: string }) => z.zoneName)).toEqual([
      "az2",
      "fastzone",
    ]);
  });

  it("a second AZ aggregate cannot take a host of the first (409)", async () => {
    const a = (
      await call("POST", "/v2.1/os-aggregates", "admin-token", {
        aggregate: { name: "a", availability_zone: "za" },
      })
    ).json.aggregate.id;
    const b = (
      await call("POST", "/v2.1/os-aggregates", "admin-token", {
        aggregate: { name: "b", availability_zone: "zb" },
      })
    ).json.aggregate.id;
    await call("POST", `/v2.1/os-aggregates/${a}/action`, "admin-token", { add_host: { host: "host-2" } });
    const r = await call("POST", `/v2.1/os-aggregates/${b}/action`, "admin-token", {
      add_host: { host: "host-2" },
    });
    expect(r.status).toBe(409);
    expect(r.json.conflictingRequest.message).toBe(
      `Cannot add host to aggregate ${b}. Reason: One or more hosts already in availability zone(s) ['za'].`,
    );
  });

  it("update, remove_host, delete; 404 for an unknown aggregate; 400 deleting a non-empty one", async () => {
    const id = (await call("POST", "/v2.1/os-aggregates", "admin-token", { aggregate: { name: "x" } })).json
      .aggregate.id;
    await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", { add_host: { host: "host-1" } });
    const u = await call("PUT", `/v2.1/os-aggregates/${id}`, "admin-token", {
      aggregate: { name: "y", availability_zone: "zy" },
    });
    expect(u.json.aggregate).toMatchObject({ name: "y", availability_zone: "zy", hosts: ["host-1"] });
    const busy = await call("DELETE", `/v2.1/os-aggregates/${id}`);
    expect(busy.status).toBe(400);
    expect(busy.json.badRequest.message).toMatch(/Host aggregate is not empty/);
    await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
      remove_host: { host: "host-1" },
    });
    const gone = await call("DELETE", `/v2.1/os-aggregates/${id}`);
    expect(gone).toEqual({ status: 200, json: undefined });
    const nf = await call("GET", `/v2.1/os-aggregates/${id}`);
    expect([nf.status, nf.json.itemNotFound.message]).toEqual([404, `Aggregate ${id} could not be found.`]);
    expect(
      (
        await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
          remove_host: { host: "host-1" },
        })
      ).status,
    ).toBe(404);
  });

  it("a lost race is retried from a fresh read", async () => {
    const id = (await call("POST", "/v2.1/os-aggregates", "admin-token", { aggregate: { name: "x" } })).json
      .aggregate.id;
    w.catalog.loseSaves = 2;
    const r = await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", {
      add_host: { host: "host-1" },
    });
    expect(r.status).toBe(200);
    const stored = [...w.catalog.aggregates.values()].find((x) => x.aggregate.number === id);
    expect(stored!.aggregate.hosts).toEqual(["host-1"]);
  });
});

describe("creates and availability zones", () => {
  const server = (az: string) => ({
    server: { name: "vm", flavorRef: "1", imageRef: "cirros", availability_zone: az },
  });

  it("a zone made by an aggregate is accepted at once; an unknown zone is 400", async () => {
    expect((await call("POST", "/v2.1/servers", "demo-token", server("fastzone"))).status).toBe(400);
    const id = (
      await call("POST", "/v2.1/os-aggregates", "admin-token", {
        aggregate: { name: "f", availability_zone: "fastzone" },
      })
    ).json.aggregate.id;
    await call("POST", `/v2.1/os-aggregates/${id}/action`, "admin-token", { add_host: { host: "host-1" } });
    const r = await call("POST", "/v2.1/servers", "demo-token", server("fastzone"));
    expect(r.status).toBe(202);
    expect(sentSpec(w, w.sent.at(-1)).availability_zone).toBe("fastzone");
    // host-1 left zone "nova" for "fastzone"
    const nova = await call("POST", "/v2.1/servers", "demo-token", server("nova"));
    expect([nova.status, nova.json.badRequest.message]).toEqual([
      400,
      "The requested availability zone is not available",
    ]);
  });

  it("zones are cached: hosts are not listed again on the next create", async () => {
    let scans = 0;
    const list = w.deps.listHosts;
    w.deps.listHosts = async () => {
      scans++;
      return list();
    };
    for (let i = 0; i < 3; i++)
      expect((await call("POST", "/v2.1/servers", "demo-token", server("az2"))).status).toBe(202);
    expect(scans).toBe(1);
  });
});
