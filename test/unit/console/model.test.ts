import { describe, expect, it } from "vitest";
import {
  barExtent,
  cellAt,
  changesQuery,
  colorClass,
  firstAddress,
  funnel,
  groupHosts,
  LABEL_HEIGHT,
  labelColor,
  layoutFleet,
  markOf,
  mergeFleet,
  mergeServers,
  moveCursor,
  NO_CLASS_COLOR,
  parseHints,
  reschedules,
  roleChoices,
  rolesByScope,
  serverMatches,
  serverQuery,
  subnetUsage,
  summarize,
  tileFor,
  timeline,
  UTILIZATION_GRADIENT,
  utilization,
  utilizationColor,
  weightBars,
} from "../../../console/src/model.js";
import type {
  Explanation,
  FleetHost,
  InstanceAction,
  Port,
  RoleAssignment,
  Server,
  Subnet,
} from "../../../console/src/types.js";

const host = (name: string, over: Partial<FleetHost> = {}): FleetHost => ({
  host: name,
  service_id: `svc-${name}`,
  zone: "az1",
  aggregates: [],
  state: "up",
  status: "enabled",
  forced_down: false,
  disabled_reason: null,
  instances: 0,
  building: 0,
  failed_builds: 0,
  resources: { VCPU: [4, 16], MEMORY_MB: [0, 1000] },
  changed_at: "2026-11-25T10:00:00.000Z",
  ...over,
});

describe("the fleet map's model", () => {
  it("utilization, marks and colors", () => {
    expect(utilization(host("a"), "VCPU")).toBe(0.25);
    expect(utilization(host("a"), "CUSTOM_GPU")).toBeUndefined();
    expect(markOf(host("a", { forced_down: true, state: "down" }))).toBe("forced-down");
    expect(markOf(host("a", { state: "down", status: "disabled" }))).toBe("down");
    expect(markOf(host("a", { status: "disabled" }))).toBe("disabled");
    // the ramp's ends and a point between two stops, interpolated as the legend's CSS gradient is
    expect(utilizationColor(0)).toBe("rgb(255 237 160)");
    expect(utilizationColor(2)).toBe("rgb(189 0 38)");
    expect(utilizationColor(0.5)).toBe("rgb(253 141 60)");
    expect(utilizationColor(1 / 12)).toBe(utilizationColor(0.08));
    expect(utilizationColor(undefined)).toBe(NO_CLASS_COLOR);
    expect(UTILIZATION_GRADIENT).toBe(
      "linear-gradient(to right, #ffeda0 0%, #fed976 17%, #feb24c 33%, #fd8d3c 50%, #fc4e2a 67%, #e31a1c 83%, #bd0026 100%)",
    );
    // load shows under 60% too: every percent from 0 to 100 has a color of its own
    const colors = new Set(Array.from({ length: 101 }, (_, i) => utilizationColor(i / 100)));
    expect(colors.size).toBeGreaterThan(95);
    // and a name stays readable: dark on the light end, white on the dark end
    expect(labelColor(0)).toBe("#1f2933");
    expect(labelColor(1)).toBe("#ffffff");
  });

  it("colors by the class picked while the fleet has it, else VCPU, else its first", () => {
    expect(colorClass(undefined, ["DISK_GB", "MEMORY_MB", "VCPU"])).toBe("VCPU");
    expect(colorClass("MEMORY_MB", ["DISK_GB", "MEMORY_MB", "VCPU"])).toBe("MEMORY_MB");
    expect(colorClass("CUSTOM_GPU", ["DISK_GB", "VCPU"])).toBe("VCPU");
    expect(colorClass(undefined, ["CUSTOM_GPU", "DISK_GB"])).toBe("CUSTOM_GPU");
    expect(colorClass(undefined, [])).toBe("VCPU");
  });

  it("makes tiles wide enough for names, and squares without", () => {
    expect(tileFor(10_000, undefined)).toEqual({ w: 6, h: 6 });
    expect(tileFor(300, 52.3)).toEqual({ w: 63, h: 20 });
    expect(tileFor(300, 500)).toEqual({ w: 160, h: 20 });
    const hosts = Array.from({ length: 300 }, (_, i) => host(`host-${i + 1}`));
    const l = layoutFleet(groupHosts(hosts, "zone", []), 640, tileFor(300, 52.3));
    expect(l.columns).toBe(10);
    const c = l.cells[37]!;
    expect([c.x, c.y]).toEqual([7 * 64, LABEL_HEIGHT + 3 * 21]);
    expect(cellAt(l, c.x + 62, c.y + 19)).toBe(37);
    // the gap between two tiles is no tile
    expect(cellAt(l, c.x + 63, c.y + 5)).toBe(-1);
    expect(moveCursor(l, 37, "ArrowDown")).toBe(47);
  });

  it("groups by zone, or by aggregate with a host in each of its aggregates and the rest last", () => {
    const hosts = [host("a", { aggregates: [1, 2] }), host("b", { zone: "az2", aggregates: [2] }), host("c")];
    const aggs = [
      { id: 1, uuid: "u1", name: "gpu", availability_zone: null, hosts: 1 },
      { id: 2, uuid: "u2", name: "fast", availability_zone: null, hosts: 2 },
    ];
    expect(groupHosts(hosts, "zone", aggs).map((g) => [g.name, g.hosts.map((h) => h.host)])).toEqual([
      ["az1", ["a", "c"]],
      ["az2", ["b"]],
    ]);
    expect(groupHosts(hosts, "aggregate", aggs).map((g) => [g.name, g.hosts.map((h) => h.host)])).toEqual([
      ["fast", ["a", "b"]],
      ["gpu", ["a"]],
      ["(in no aggregate)", ["c"]],
    ]);
  });

  it("lays 10,000 hosts out in rows under their group, finds the cell under a point, and moves by keyboard", () => {
    const hosts = Array.from({ length: 10_000 }, (_, i) => host(`h${i}`, { zone: i < 5000 ? "az1" : "az2" }));
    const l = layoutFleet(groupHosts(hosts, "zone", []), 700, { w: 6, h: 6 });
    expect(l.cells).toHaveLength(10_000);
    expect(l.columns).toBe(100);
    expect(l.labels.map((x) => x.name)).toEqual(["az1", "az2"]);
    const c = l.cells[123]!;
    expect(cellAt(l, c.x + 1, c.y + 1)).toBe(123);
    expect(cellAt(l, 699, 1)).toBe(-1);
    // every cell is found where it is drawn, and none in a group's label
    expect(l.cells.every((cell, i) => cellAt(l, cell.x + 5, cell.y + 5) === i)).toBe(true);
    expect(cellAt(l, 3, 3)).toBe(-1);
    expect(cellAt(l, 3, l.blocks[1]!.y - 3)).toBe(-1);
    expect(moveCursor(l, -1, "ArrowRight")).toBe(0);
    expect(moveCursor(l, 0, "ArrowDown")).toBe(100);
    expect(moveCursor(l, 100, "ArrowUp")).toBe(0);
    // down from the last row of az1 lands in az2's first row, same column
    expect(moveCursor(l, 4903, "ArrowDown")).toBe(5003);
    expect(moveCursor(l, 9999, "ArrowRight")).toBe(9999);
    expect(moveCursor(l, 5, "End")).toBe(9999);
  });

  it("applies changes-since: changed in, newer kept, deleted out", () => {
    const old = [host("a"), host("b"), host("c")];
    const merged = mergeFleet(old, [
      host("a", { instances: 3, changed_at: "2026-11-25T10:00:05.000Z" }),
      host("b", { instances: 9, changed_at: "2026-11-25T09:59:00.000Z" }),
      host("c", { deleted: true, changed_at: "2026-11-25T10:00:06.000Z" }),
      host("d"),
    ]);
    expect(merged.map((h) => [h.host, h.instances])).toEqual([
      ["a", 3],
      ["b", 0],
      ["d", 0],
    ]);
    // a poll with nothing new keeps the same array; a changed host keeps its place
    expect(mergeFleet(merged, [])).toBe(merged);
    const again = mergeFleet(merged, [host("b", { instances: 4, changed_at: "2026-11-25T10:00:07.000Z" })]);
    expect(again.map((h) => [h.host, h.instances])).toEqual([
      ["a", 3],
      ["b", 4],
      ["d", 0],
    ]);
    expect(mergeFleet(again, [host("0")]).map((h) => h.host)).toEqual(["0", "a", "b", "d"]);
  });

  it("summarizes states and one class's usage", () => {
    const s = summarize(
      [host("a", { instances: 2 }), host("b", { state: "down" }), host("c", { status: "disabled" })],
      "VCPU",
    );
    expect(s).toMatchObject({ hosts: 3, up: 1, down: 1, disabled: 1, instances: 2, used: 12, capacity: 48 });
  });
});

const explanation: Explanation = {
  index: 0,
  requested: { VCPU: 1 },
  hosts: 3,
  stages: [
    { stage: "ComputeFilter", hosts_in: 3, hosts_passed: 3, rejected: [] },
    {
      stage: "AvailabilityZoneFilter",
      hosts_in: 3,
      hosts_passed: 2,
      rejected: [{ summary: "not in availability zone az2", count: 1, sample: ["h3"] }],
    },
  ],
  candidates: 2,
  weighers: [
    {
      weigher: "RAMWeigher",
      hosts: [
        { host: "h1", nodename: "h1", raw: 10, normalized: 1, multiplier: 1 },
        { host: "h2", nodename: "h2", raw: 5, normalized: 0.5, multiplier: 1 },
      ],
    },
    {
      weigher: "BuildFailureWeigher",
      hosts: [
        { host: "h1", nodename: "h1", raw: 0, normalized: 0, multiplier: -1000 },
        { host: "h2", nodename: "h2", raw: 1, normalized: 1, multiplier: -1000 },
      ],
    },
  ],
  order: [
    { host: "h1", nodename: "h1", weight: 1 },
    { host: "h2", nodename: "h2", weight: -999.5 },
  ],
  chosen: { host: "h1", rank: 0, weight: 1 },
};

describe("the decision explainer's model", () => {
  it("splits each ranked host's weight by weigher, negative shares included", () => {
    const bars = weightBars(explanation);
    expect(bars).toEqual([
      {
        host: "h1",
        weight: 1,
        chosen: true,
        segments: [
          { weigher: "RAMWeigher", value: 1 },
          { weigher: "BuildFailureWeigher", value: -0 },
        ],
      },
      {
        host: "h2",
        weight: -999.5,
        chosen: false,
        segments: [
          { weigher: "RAMWeigher", value: 0.5 },
          { weigher: "BuildFailureWeigher", value: -1000 },
        ],
      },
    ]);
    expect(barExtent(bars)).toEqual({ min: -1000, max: 1 });
  });

  it("counts hosts in and out per stage with the grouped reasons", () => {
    expect(funnel(explanation)[1]).toEqual({
      stage: "AvailabilityZoneFilter",
      hostsIn: 3,
      passed: 2,
      rejected: 1,
      reasons: [{ summary: "not in availability zone az2", count: 1, sample: ["h3"] }],
    });
  });
});

describe("the server timeline", () => {
  const actions: InstanceAction[] = [
    {
      action: "create",
      request_id: "req-1",
      start_time: "2026-11-25T10:00:00.000000",
      message: null,
      events: [
        {
          event: "compute_build_and_run_instance",
          start_time: "2026-11-25T10:00:02.000000",
          finish_time: "2026-11-25T10:00:03.000000",
          result: "Error",
          host: "h2",
        },
        {
          event: "conductor_schedule_and_build_instances",
          start_time: "2026-11-25T10:00:01.000000",
          finish_time: null,
          result: "Success",
        },
        {
          event: "compute_build_and_run_instance",
          start_time: "2026-11-25T10:00:04.000000",
          finish_time: "2026-11-25T10:00:05.000000",
          result: "Success",
          host: "h1",
        },
      ],
    },
    {
      action: "stop",
      request_id: "req-2",
      start_time: "2026-11-25T11:00:00.000000",
      message: null,
      events: [],
    },
  ];
  it("orders actions and events in time and numbers the build attempts across hosts", () => {
    const t = timeline(actions);
    expect(t.map((e) => [e.title, e.attempt ?? null, e.host ?? null])).toEqual([
      ["create", null, null],
      ["conductor_schedule_and_build_instances", null, null],
      ["compute_build_and_run_instance", 1, "h2"],
      ["compute_build_and_run_instance", 2, "h1"],
      ["stop", null, null],
    ]);
    expect(reschedules(actions)).toBe(1);
  });
});

describe("dry-run hints", () => {
  it("reads key=value lines (a repeated key a list) or JSON, and says what it cannot read", () => {
    expect(parseHints("same_host=a\nsame_host=b\nbuild_near_host_ip = 10.0.0.1")).toEqual({
      same_host: ["a", "b"],
      build_near_host_ip: "10.0.0.1",
    });
    expect(parseHints('{"different_host": ["x"]}')).toEqual({ different_host: ["x"] });
    expect(parseHints("")).toEqual({});
    expect(() => parseHints("nonsense")).toThrow('hint "nonsense": expected key=value');
  });
});

describe("a servers list kept by changes-since", () => {
  const server = (id: string, over: Partial<Server> = {}): Server => ({
    id,
    name: `vm-${id}`,
    status: "ACTIVE",
    tenant_id: "p1",
    created: `2026-11-25T10:00:0${id}Z`,
    updated: "2026-11-25T10:00:10Z",
    "OS-EXT-SRV-ATTR:host": "h1",
    ...over,
  });

  it("asks the changes without the filters a change can leave (status, name, host)", () => {
    const f = { allTenants: true, status: "ACTIVE", name: "web", project: "p1", host: "h1" };
    expect(serverQuery(f).toString()).toBe("all_tenants=1&status=ACTIVE&name=web&project_id=p1&host=h1");
    expect(changesQuery(f, "2026-11-25T10:00:00.000Z").toString()).toBe(
      "all_tenants=1&project_id=p1&changes-since=2026-11-25T10%3A00%3A00.000Z",
    );
    expect(changesQuery({ allTenants: false }, "t").toString()).toBe("changes-since=t");
  });

  it("matches as the API's filters do: status, name (a regular expression), project, host; never DELETED", () => {
    const s = server("1", { name: "web-1" });
    expect(serverMatches(s, { allTenants: true, name: "^web-[0-9]$", host: "h1", status: "ACTIVE" })).toBe(
      true,
    );
    expect(serverMatches(s, { allTenants: true, name: "db" })).toBe(false);
    expect(serverMatches(s, { allTenants: true, name: "[" })).toBe(false);
    expect(serverMatches(s, { allTenants: true, host: "h2" })).toBe(false);
    expect(serverMatches(s, { allTenants: true, project: "p2" })).toBe(false);
    expect(serverMatches({ ...s, status: "DELETED" }, { allTenants: true })).toBe(false);
  });

  it("merges: changed in, new in their place, deleted and no longer matching out, an older copy ignored, cut to the limit", () => {
    const f = { allTenants: true, status: "ACTIVE" };
    const held = [server("4"), server("3"), server("2")];
    const merged = mergeServers(
      held,
      [
        server("5"),
        server("3", { status: "SHUTOFF", updated: "2026-11-25T10:00:11Z" }),
        server("2", { status: "DELETED", updated: "2026-11-25T10:00:12Z" }),
        server("4", { name: "stale", updated: "2026-11-25T10:00:09Z" }),
        server("1"),
      ],
      f,
      3,
    );
    expect(merged.map((s) => [s.id, s.name])).toEqual([
      ["5", "vm-5"],
      ["4", "vm-4"],
      ["1", "vm-1"],
    ]);
    expect(mergeServers(held, [], f, 3)).toBe(held);
  });
});

describe("a user's role assignments", () => {
  const user = { id: "u1", name: "alice", domain: { id: "default", name: "Default" } };
  const on = (project: string, role: string): RoleAssignment => ({
    role: { id: role, name: role },
    user,
    scope: { project: { id: `id-${project}`, name: project, domain: { id: "default", name: "Default" } } },
  });

  it("groups Keystone's assignments (names included) by target: projects by name, then domains, then the system", () => {
    const rows = rolesByScope([
      on("p2", "reader"),
      { role: { id: "admin", name: "admin" }, user, scope: { system: { all: true } } },
      on("p1", "reader"),
      on("p1", "member"),
      { role: { id: "r9" }, user, scope: { domain: { id: "default", name: "Default" } } },
      // a group's assignment is not the user's own
      { role: { id: "admin", name: "admin" }, group: { id: "g1" }, scope: { project: { id: "id-p1" } } },
      on("p1", "member"),
    ]);
    expect(rows).toEqual([
      { scope: "project", id: "id-p1", name: "p1", roles: ["member", "reader"] },
      { scope: "project", id: "id-p2", name: "p2", roles: ["reader"] },
      { scope: "domain", id: "default", name: "Default", roles: ["r9"] },
      { scope: "system", id: "", name: "all", roles: ["admin"] },
    ]);
    expect(rolesByScope([])).toEqual([]);
  });

  it("offers Keystone's default roles member, reader, admin first, then the others by name", () => {
    const names = roleChoices(
      ["admin", "zeta", "reader", "alpha", "member"].map((n) => ({ id: n, name: n })),
    ).map((r) => r.name);
    expect(names).toEqual(["member", "reader", "admin", "alpha", "zeta"]);
  });
});

describe("a server's address and a subnet's used and free addresses", () => {
  const addr = (version: 4 | 6, a: string) => ({ version, addr: a });

  it("shows a server's first IPv4, else its first address, else none", () => {
    const server = (addresses?: Server["addresses"]) =>
      ({
        id: "s",
        name: "s",
        status: "ACTIVE",
        tenant_id: "p",
        created: "",
        updated: "",
        addresses,
      }) as Server;
    expect(
      firstAddress(
        server({ v6: [addr(6, "fd00::5")], public: [addr(6, "2001:db8::5"), addr(4, "10.20.0.5")] }),
      ),
    ).toBe("10.20.0.5");
    expect(firstAddress(server({ v6: [addr(6, "fd00::5")] }))).toBe("fd00::5");
    expect(firstAddress(server({}))).toBeUndefined();
    expect(firstAddress(server())).toBeUndefined();
  });

  const subnet = (over: Partial<Subnet>): Subnet => ({
    id: "sub",
    name: "",
    network_id: "net",
    ip_version: 4,
    cidr: "10.20.0.0/28",
    gateway_ip: "10.20.0.1",
    allocation_pools: [{ start: "10.20.0.2", end: "10.20.0.14" }],
    ...over,
  });
  const port = (...ips: [string, string][]): Port => ({
    id: ips.map(([, a]) => a).join(),
    name: "",
    network_id: "net",
    project_id: "p",
    mac_address: "fa:16:3e:00:00:01",
    status: "ACTIVE",
    device_id: "",
    device_owner: "",
    fixed_ips: ips.map(([subnet_id, ip_address]) => ({ subnet_id, ip_address })),
  });

  it("counts the addresses ports hold in the subnet against its pools' size", () => {
    const ports = [port(["sub", "10.20.0.2"]), port(["sub", "10.20.0.3"], ["other", "10.30.0.2"]), port()];
    expect(subnetUsage(subnet({}), ports)).toEqual({ used: 2n, size: 13n, free: 11n });
    // two pools; an address outside them is used but takes none of their free addresses
    const split = subnet({
      allocation_pools: [
        { start: "10.20.0.2", end: "10.20.0.5" },
        { start: "10.20.0.10", end: "10.20.0.14" },
      ],
    });
    expect(subnetUsage(split, [...ports, port(["sub", "10.20.0.7"])])).toEqual({
      used: 3n,
      size: 9n,
      free: 7n,
    });
    expect(subnetUsage(subnet({ allocation_pools: [] }), ports)).toEqual({ used: 2n, size: 0n, free: 0n });
  });

  it("counts an IPv6 /64's pool exactly, beyond a Number's precision", () => {
    const v6 = subnet({
      ip_version: 6,
      cidr: "2001:db8::/64",
      gateway_ip: "2001:db8::1",
      allocation_pools: [{ start: "2001:db8::2", end: "2001:db8::ffff:ffff:ffff:ffff" }],
    });
    const ports = [port(["sub", "2001:db8::2"]), port(["sub", "2001:db8::ffff:ffff:ffff:ffff"])];
    expect(subnetUsage(v6, ports)).toEqual({ used: 2n, size: 2n ** 64n - 2n, free: 2n ** 64n - 4n });
  });
});
