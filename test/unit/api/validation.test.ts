import { describe, expect, it } from "vitest";
import type { AuthContext } from "../../../lib/api/auth.js";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion, MAX_VERSION as LATEST } from "../../../lib/api/microversion.js";
import { idFromHref, parseJsonBody, validate } from "../../../lib/api/validation/common.js";
import {
  createFlavorSchema,
  filterFlavors,
  parseCreateFlavor,
  parseExtraSpecs,
  parseFlavorListQuery,
} from "../../../lib/api/validation/flavors.js";
import { filterServers, parseServerListQuery } from "../../../lib/api/validation/server-list.js";
import {
  type CreateServerRequest,
  instanceNames,
  parseCreateServer,
  requestedAvailabilityZone,
} from "../../../lib/api/validation/servers.js";
import { SEED_FLAVORS } from "../../../lib/catalog/seed.js";
import { parseAvailabilityZone } from "../../../lib/messages/availability-zone.js";
import { record } from "./records.js";

const member: AuthContext = { user_id: "demo", project_id: "demo", roles: ["member"], isAdmin: false };
const admin: AuthContext = {
  user_id: "admin",
  project_id: "admin",
  roles: ["admin", "member"],
  isAdmin: true,
};
const limits = { maxCount: 100, maxMetadataItems: 128 };
const good = { name: "vm", flavorRef: "1", imageRef: "cirros" };

function fails(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected an ApiError");
}

/** From 2.37 `networks` is required: "none" when the body has a server without any. */
function withNetworks(body: unknown, v: ApiVersion): unknown {
  const server = (body as { server?: unknown } | null)?.server;
  if (!v.atLeast("2.37") || !server || typeof server !== "object" || "networks" in server) return body;
  return { ...(body as object), server: { ...server, networks: "none" } };
}

function create(body: unknown, auth = member, v = LATEST): CreateServerRequest {
  return parseCreateServer(withNetworks(body, v), auth, limits, v);
}

function createError(body: unknown, auth = member): string {
  const e = fails(() => create(body, auth));
  expect(e.kind).toBe("badRequest");
  return e.message;
}

describe("POST /servers body", () => {
  it("normalizes a minimal body", () => {
    expect(create({ server: good })).toEqual({
      name: "vm",
      flavorRef: "1",
      imageRef: "cirros",
      minCount: 1,
      maxCount: 1,
      availabilityZone: null,
      az: null,
      metadata: {},
      schedulerHints: {},
      returnReservationId: false,
      adminPass: null,
      description: null,
      keyName: null,
      accessIPv4: null,
      accessIPv6: null,
      userData: null,
      tags: [],
      hostname: null,
      requestedDestination: null,
      configDrive: false,
      networks: "none",
      securityGroups: null,
    });
  });

  it("accepts integer flavorRef, links, numeric-string counts and Nova's boolean strings", () => {
    const r = create({
      server: {
        ...good,
        flavorRef: 2,
        imageRef: "http://x/v2.1/images/a1b2c3d4-0000-4000-8000-000000000001",
        min_count: "2",
        max_count: "3",
        return_reservation_id: "True",
      },
    });
    expect(r).toMatchObject({
      flavorRef: "2",
      imageRef: "a1b2c3d4-0000-4000-8000-000000000001",
      minCount: 2,
      maxCount: 3,
      returnReservationId: true,
    });
    expect(create({ server: { ...good, flavorRef: "http://h/flavors/3" } }).flavorRef).toBe("3");
  });

  it("max_count defaults to min_count, as in Nova", () => {
    expect(create({ server: { ...good, min_count: 4 } })).toMatchObject({ minCount: 4, maxCount: 4 });
  });

  it("accepts (and ignores) the attributes Nova knows that novaless does not implement", () => {
    const r = create({
      server: {
        ...good,
        networks: "auto",
        key_name: "k",
        security_groups: [{ name: "default" }],
        user_data: "aGVsbG8=",
        config_drive: true,
        block_device_mapping_v2: [],
        description: "d",
        adminPass: "secret",
        accessIPv4: "1.2.3.4",
        accessIPv6: "::1",
        "OS-DCF:diskConfig": "AUTO",
      },
    });
    expect(r.adminPass).toBe("secret");
  });

  it("merges both scheduler-hint spellings and type-checks the known hints", () => {
    const id = "6a1f0b8e-0000-4000-8000-000000000000";
    const r = create({
      server: good,
      "os:scheduler_hints": { same_host: [id], custom: { a: 1 } },
      "OS-SCH-HNT:scheduler_hints": { group: id },
    });
    expect(r.schedulerHints).toEqual({ same_host: [id], custom: { a: 1 }, group: id });
    expect(createError({ server: good, "os:scheduler_hints": { group: "nope" } })).toBe(
      "Invalid input for field/attribute os:scheduler_hints.group. Value: nope. 'nope' is not a 'uuid'",
    );
    expect(createError({ server: good, "os:scheduler_hints": [] })).toMatch(/is not of type 'object'/);
  });

  it.each<[string, unknown, string | RegExp]>([
    ["body not an object", [1, 2], /server/],
    ["body null", null, /server/],
    ["no server", {}, "'server' is a required property"],
    [
      "server a string",
      { server: "x" },
      "Invalid input for field/attribute server. Value: x. 'x' is not of type 'object'",
    ],
    [
      "no name",
      { server: { flavorRef: "1", imageRef: "cirros" } },
      /^Invalid input for field\/attribute server\. Value: .*'name' is a required property$/,
    ],
    [
      "empty name",
      { server: { ...good, name: "" } },
      "Invalid input for field/attribute name. Value: . '' is too short",
    ],
    ["long name", { server: { ...good, name: "x".repeat(256) } }, /field\/attribute name\. .* is too long$/],
    [
      "numeric name",
      { server: { ...good, name: 7 } },
      "Invalid input for field/attribute name. Value: 7. 7 is not of type 'string'",
    ],
    [
      "name with leading space",
      { server: { ...good, name: " vm" } },
      /^An invalid 'name' value was provided/,
    ],
    ["name with a newline", { server: { ...good, name: "a\nb" } }, /^An invalid 'name' value was provided/],
    ["no flavorRef", { server: { name: "vm", imageRef: "cirros" } }, /'flavorRef' is a required property$/],
    [
      "flavorRef a list",
      { server: { ...good, flavorRef: [1] } },
      /flavorRef\. Value: \[1\]\. \[1\] is not of type 'string', 'number'/,
    ],
    ["no imageRef", { server: { name: "vm", flavorRef: "1" } }, "Missing imageRef attribute"],
    ["empty imageRef", { server: { ...good, imageRef: "" } }, "Missing imageRef attribute"],
    [
      "min_count abc",
      { server: { ...good, min_count: "abc" } },
      /^Invalid input for field\/attribute min_count\. Value: abc\./,
    ],
    ["min_count 1.5", { server: { ...good, min_count: 1.5 } }, /min_count/],
    [
      "max_count 0",
      { server: { ...good, max_count: 0 } },
      "Invalid input for field/attribute max_count. Value: 0. 0 is less than the minimum of 1",
    ],
    ["min > max", { server: { ...good, min_count: 3, max_count: 2 } }, "min_count must be <= max_count"],
    [
      "metadata value not a string",
      { server: { ...good, metadata: { a: 1 } } },
      "Invalid input for field/attribute metadata.a. Value: 1. 1 is not of type 'string'",
    ],
    [
      "metadata not an object",
      { server: { ...good, metadata: [] } },
      /metadata\. Value: \[\]\. \[\] is not of type 'object'/,
    ],
    [
      "metadata bad key",
      { server: { ...good, metadata: { "a/b": "x" } } },
      /metadata\. .*Additional properties are not allowed \('a\/b' was unexpected\)/,
    ],
    [
      "metadata long value",
      { server: { ...good, metadata: { a: "x".repeat(256) } } },
      /metadata\.a\. .* is too long/,
    ],
    [
      "unknown attribute",
      { server: { ...good, colour: "red" } },
      /Additional properties are not allowed \('colour' was unexpected\)/,
    ],
    [
      "unknown top-level attribute",
      { server: good, extra: 1 },
      "Additional properties are not allowed ('extra' was unexpected)",
    ],
    ["availability_zone not a string", { server: { ...good, availability_zone: 3 } }, /availability_zone/],
    [
      "availability_zone with 3 colons",
      { server: { ...good, availability_zone: "a:b:c:d" } },
      "Invalid input received: Unable to parse availability_zone",
    ],
    ["networks wrong", { server: { ...good, networks: "some" } }, /networks/],
    [
      "return_reservation_id junk",
      { server: { ...good, return_reservation_id: "maybe" } },
      /return_reservation_id/,
    ],
  ])("rejects %s", (_label, body, message) => {
    const m = createError(body);
    if (typeof message === "string") expect(m).toBe(message);
    else expect(m).toMatch(message);
  });

  it("metadata beyond the quota → 403, as Nova's MetadataLimitExceeded", () => {
    const metadata = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`k${i}`, "v"]));
    const e = fails(() => create({ server: { ...good, metadata } }));
    expect(e.kind).toBe("forbidden");
    expect(e.message).toBe("Maximum number of metadata items exceeds 128");
  });

  it("forced host or node forms are admin-only (403 with Nova's rule), plain zones are not", () => {
    for (const az of ["az1:host-1", "az1::host-1", "az1:host-1:host-1", ":host-1"]) {
      const e = fails(() => create({ server: { ...good, availability_zone: az } }));
      expect(e.kind).toBe("forbidden");
      expect(e.message).toBe(
        "Policy doesn't allow os_compute_api:servers:create:forced_host to be performed.",
      );
      expect(create({ server: { ...good, availability_zone: az } }, admin).availabilityZone).toBe(az);
    }
    expect(create({ server: { ...good, availability_zone: "az1" } }).az).toEqual({
      zone: "az1",
      host: null,
      node: null,
    });
  });
});

describe("availability zone forms", () => {
  it.each([
    ["az1", { zone: "az1", host: null, node: null }],
    ["az1:h", { zone: "az1", host: "h", node: null }],
    ["az1::n", { zone: "az1", host: null, node: "n" }],
    ["az1:h:n", { zone: "az1", host: "h", node: "n" }],
    [":h", { zone: null, host: "h", node: null }],
    ["az1:", { zone: "az1", host: null, node: null }],
  ])("%s", (s, want) => {
    expect(parseAvailabilityZone(s)).toEqual(want);
  });
  it("more than two colons is unparseable", () => {
    expect(fails(() => requestedAvailabilityZone("a:b:c:d")).status).toBe(400);
  });
});

describe("multi-create names", () => {
  it("one instance keeps its name; several get Nova's -1, -2, … suffixes", () => {
    expect(instanceNames("web", ["a"])).toEqual(["web"]);
    expect(instanceNames("web", ["a", "b", "c"])).toEqual(["web-1", "web-2", "web-3"]);
  });
  it("follows a custom multi_instance_display_name_template", () => {
    expect(instanceNames("web", ["u1", "u2"], "%(name)s-%(uuid)s")).toEqual(["web-u1", "web-u2"]);
  });
});

describe("common helpers", () => {
  it("an empty body is {}; invalid JSON is 'Malformed request body'", () => {
    expect(parseJsonBody(undefined)).toEqual({});
    expect(parseJsonBody("  ")).toEqual({});
    expect(fails(() => parseJsonBody('{"server": {')).message).toBe("Malformed request body");
  });
  it("idFromHref takes the last path segment of a link", () => {
    expect(idFromHref("1")).toBe("1");
    expect(idFromHref("http://h/v2.1/flavors/1?x=1")).toBe("1");
    expect(idFromHref("http://h/v2.1/flavors/1/")).toBe("1");
    expect(idFromHref("/v2.1/images/abc")).toBe("abc");
    expect(idFromHref("ubuntu/24.04")).toBe("ubuntu/24.04");
  });
  it("validate reports only the first problem", () => {
    const e = fails(() => validate(createFlavorSchema, { flavor: { ram: 0 } }));
    expect(e.message).toMatch(/'name' is a required property/);
  });
});

describe("server list filters", () => {
  const recs = [
    record({ id: "00000000-0000-4000-8000-000000000003", name: "web-1", vm_state: "active", host: "h1" }),
    record({
      id: "00000000-0000-4000-8000-000000000002",
      name: "db",
      vm_state: "error",
      reservation_id: "r-x",
    }),
    record({
      id: "00000000-0000-4000-8000-000000000001",
      name: "web-2",
      vm_state: "building",
      project_id: "p2",
    }),
  ];

  it("status (several, any case), name as a regex, reservation_id", () => {
    const f = parseServerListQuery({ status: ["active", "ERROR"] }, member, false);
    expect(filterServers(recs, f).servers.map((r) => r.name)).toEqual(["web-1", "db"]);
    const n = parseServerListQuery({ name: ["^web-\\d$"] }, member, false);
    expect(filterServers(recs, n).servers.map((r) => r.name)).toEqual(["web-1", "web-2"]);
    const bad = parseServerListQuery({ name: ["web("] }, member, false);
    expect(filterServers(recs, bad).servers).toEqual([]);
    const rid = parseServerListQuery({ reservation_id: ["r-x"] }, member, false);
    expect(filterServers(recs, rid).servers.map((r) => r.name)).toEqual(["db"]);
  });

  it("ip and ip6 match a fixed address of their version from its start, as Nova's re.match", () => {
    const vif = (ip_address: string, version: 4 | 6) => ({
      port_id: `p-${ip_address}`,
      network_id: "n1",
      network_name: "public",
      mac_address: "fa:16:3e:00:00:01",
      fixed_ips: [{ subnet_id: "s1", ip_address, version }],
      preexisting: false,
    });
    const wired = [
      record({ id: "00000000-0000-4000-8000-000000000023", name: "a", network_info: [vif("10.20.0.5", 4)] }),
      record({ id: "00000000-0000-4000-8000-000000000022", name: "b", network_info: [vif("10.20.0.50", 4)] }),
      record({
        id: "00000000-0000-4000-8000-000000000021",
        name: "c",
        network_info: [vif("2001:db8::5", 6)],
      }),
    ];
    const names = (q: Record<string, string[]>, version?: string) =>
      filterServers(
        wired,
        parseServerListQuery(q, member, false, version ? ApiVersion.parse(version) : undefined),
      ).servers.map((r) => r.name);
    expect(names({ ip: ["10.20.0.5"] })).toEqual(["a", "b"]);
    expect(names({ ip: ["10.20.0.5$"] })).toEqual(["a"]);
    expect(names({ ip: ["0.5"] })).toEqual([]);
    // a member's ip6 from 2.5; before it Nova drops the parameter
    expect(names({ ip6: ["2001:db8"] }, "2.4")).toEqual(["a", "b", "c"]);
    expect(names({ ip6: ["2001:db8"] }, "2.5")).toEqual(["c"]);
  });

  it("a status matches what the server shows: SHUTOFF is stopped, REBOOT an active server rebooting", () => {
    const power = [
      record({ id: "00000000-0000-4000-8000-000000000013", name: "off", vm_state: "stopped" }),
      record({
        id: "00000000-0000-4000-8000-000000000012",
        name: "rebooting",
        vm_state: "active",
        task_state: "rebooting",
      }),
      record({
        id: "00000000-0000-4000-8000-000000000011",
        name: "hard",
        vm_state: "active",
        task_state: "rebooting_hard",
      }),
      ...recs,
    ];
    const names = (status: string[]) =>
      filterServers(power, parseServerListQuery({ status }, member, false)).servers.map((r) => r.name);
    expect(names(["SHUTOFF"])).toEqual(["off"]);
    expect(names(["reboot"])).toEqual(["rebooting"]);
    expect(names(["HARD_REBOOT", "SHUTOFF"])).toEqual(["off", "hard"]);
    expect(names(["ACTIVE"])).toEqual(["web-1"]);
  });

  it("a Nova status novaless never has matches nothing; an unknown one too (400 with all_tenants)", () => {
    expect(filterServers(recs, parseServerListQuery({ status: ["PAUSED"] }, member, false)).servers).toEqual(
      [],
    );
    expect(filterServers(recs, parseServerListQuery({ status: ["BOGUS"] }, member, false)).servers).toEqual(
      [],
    );
    expect(
      fails(() => parseServerListQuery({ status: ["BOGUS"], all_tenants: ["1"] }, admin, true)).message,
    ).toBe("Invalid status value");
    // one status Nova knows is enough for Nova not to refuse
    expect(
      parseServerListQuery({ status: ["BOGUS", "ACTIVE"], all_tenants: ["1"] }, admin, true).statuses,
    ).toEqual(new Set(["BOGUS", "ACTIVE"]));
  });

  it("all_tenants is admin-only (403 naming the index or detail rule); host is ignored for members", () => {
    expect(fails(() => parseServerListQuery({ all_tenants: ["1"] }, member, false)).message).toBe(
      "Policy doesn't allow os_compute_api:servers:index:get_all_tenants to be performed.",
    );
    expect(fails(() => parseServerListQuery({ all_tenants: [""] }, member, true)).message).toMatch(
      /servers:detail:get_all_tenants/,
    );
    expect(parseServerListQuery({ all_tenants: ["0"] }, member, false).allTenants).toBe(false);
    expect(parseServerListQuery({ all_tenants: ["true"] }, admin, false).allTenants).toBe(true);
    expect(fails(() => parseServerListQuery({ all_tenants: ["maybe"] }, admin, false)).status).toBe(400);
    expect(parseServerListQuery({ host: ["h1"] }, member, true).host).toBeUndefined();
    const f = parseServerListQuery({ host: ["h1"] }, admin, true);
    expect(filterServers(recs, f).servers.map((r) => r.name)).toEqual(["web-1"]);
  });

  it("limit and marker page through; a missing marker is 400", () => {
    const p1 = filterServers(recs, parseServerListQuery({ limit: ["2"] }, member, false));
    expect(p1.servers).toHaveLength(2);
    expect(p1.more).toBe(true);
    const p2 = filterServers(
      recs,
      parseServerListQuery({ limit: ["2"], marker: [p1.servers[1]!.id] }, member, false),
    );
    expect(p2.servers.map((r) => r.name)).toEqual(["web-2"]);
    expect(p2.more).toBe(false);
    expect(
      fails(() => filterServers(recs, parseServerListQuery({ marker: ["nope"] }, member, false))).message,
    ).toBe("marker [nope] not found");
    expect(fails(() => parseServerListQuery({ limit: ["-1"] }, member, false)).status).toBe(400);
  });
});

describe("flavor requests", () => {
  it("POST /flavors: Nova's fields, defaults, generated id", () => {
    const f = parseCreateFlavor(
      { flavor: { name: "m1.x", ram: "1024", vcpus: 2, disk: 0 } },
      () => "gen-id",
      LATEST,
    );
    expect(f).toEqual({
      id: "gen-id",
      name: "m1.x",
      vcpus: 2,
      memory_mb: 1024,
      root_gb: 0,
      ephemeral_gb: 0,
      swap: 0,
      rxtx_factor: 1,
      is_public: true,
      disabled: false,
      extra_specs: {},
      description: null,
      projects: [],
    });
    const g = parseCreateFlavor(
      {
        flavor: {
          name: "m1.y",
          id: "custom.1",
          ram: 1,
          vcpus: 1,
          disk: 1,
          "OS-FLV-EXT-DATA:ephemeral": 2,
          swap: 512,
          rxtx_factor: "2.5",
          "os-flavor-access:is_public": false,
          description: "big",
        },
      },
      () => "unused",
      LATEST,
    );
    expect(g).toMatchObject({
      id: "custom.1",
      ephemeral_gb: 2,
      swap: 512,
      rxtx_factor: 2.5,
      is_public: false,
    });
  });

  it.each<[string, unknown, RegExp]>([
    ["no flavor", {}, /'flavor' is a required property/],
    [
      "ram 0",
      { flavor: { name: "x", ram: 0, vcpus: 1, disk: 0 } },
      /field\/attribute ram\. Value: 0\. 0 is less than the minimum of 1/,
    ],
    ["vcpus 0", { flavor: { name: "x", ram: 1, vcpus: 0, disk: 0 } }, /vcpus/],
    ["disk -1", { flavor: { name: "x", ram: 1, vcpus: 1, disk: -1 } }, /disk/],
    ["no name", { flavor: { ram: 1, vcpus: 1, disk: 0 } }, /'name' is a required property/],
    ["bad id", { flavor: { name: "x", id: "a/b", ram: 1, vcpus: 1, disk: 0 } }, /field\/attribute id/],
    ["rxtx 0", { flavor: { name: "x", ram: 1, vcpus: 1, disk: 0, rxtx_factor: 0 } }, /rxtx_factor/],
    [
      "extra field",
      { flavor: { name: "x", ram: 1, vcpus: 1, disk: 0, extra_specs: {} } },
      /'extra_specs' was unexpected/,
    ],
  ])("POST /flavors rejects %s", (_l, body, message) => {
    expect(fails(() => parseCreateFlavor(body, () => "id", LATEST)).message).toMatch(message);
  });

  it("extra specs: strings, numbers and booleans become strings; keys are checked", () => {
    expect(parseExtraSpecs({ extra_specs: { "hw:cpu_policy": "dedicated", n: 2, b: true } })).toEqual({
      "hw:cpu_policy": "dedicated",
      n: "2",
      b: "true",
    });
    expect(fails(() => parseExtraSpecs({ extra_specs: { "a/b": "x" } })).status).toBe(400);
  });

  it("list filters: public only for members; admin may ask for all; minRam/minDisk; sorted by id", () => {
    const priv = { ...SEED_FLAVORS[0]!, id: "0", name: "private", is_public: false };
    const all = [...SEED_FLAVORS, priv];
    expect(
      filterFlavors(all, parseFlavorListQuery({ is_public: ["none"] }, member)).map((f) => f.id),
    ).toEqual(["1", "2", "3", "4", "5"]);
    expect(filterFlavors(all, parseFlavorListQuery({ is_public: ["none"] }, admin))).toHaveLength(6);
    expect(
      filterFlavors(all, parseFlavorListQuery({ is_public: ["false"] }, admin)).map((f) => f.id),
    ).toEqual(["0"]);
    expect(
      filterFlavors(all, parseFlavorListQuery({ minRam: ["4096"], minDisk: ["80"] }, member)).map(
        (f) => f.id,
      ),
    ).toEqual(["4", "5"]);
    expect(fails(() => parseFlavorListQuery({ minRam: ["x"] }, member)).message).toBe(
      "Invalid minRam filter [x]",
    );
  });
});
