// The server view per microversion (a version table) and the server requests' validation per
// microversion: what each version adds, and what a member never sees.
import { describe, expect, it } from "vitest";
import type { AuthContext } from "../../../lib/api/auth.js";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion, MAX_VERSION as LATEST } from "../../../lib/api/microversion.js";
import { filterServers, parseServerListQuery } from "../../../lib/api/validation/server-list.js";
import {
  checkTag,
  parseCreateServer as parseCreate,
  parseLockBody,
  parseMetaItem,
  parseTagsBody,
  parseUpdateServer,
} from "../../../lib/api/validation/servers.js";
import { sanitizeHostname, serverUpdateView, serverView } from "../../../lib/api/views/servers.js";
import { record } from "./records.js";

const BASE = "http://api.test";
const v = (s: string) => ApiVersion.parse(s);
const parseCreateServer = parseCreate;
const member: AuthContext = { user_id: "demo", project_id: "demo", roles: ["member"], isAdmin: false };

const rec = record({
  vm_state: "active",
  task_state: null,
  host: "host-1",
  node: "host-1",
  availability_zone: "az1",
  requested_availability_zone: "az1",
  launched_at: "2026-03-01T12:00:05.000Z",
  description: "web",
  tags: ["blue"],
  key_name: "mykey",
  user_data: "aGVsbG8=",
  launch_index: 2,
  locked_by: "owner",
  locked_reason: "maint",
  request_spec: {
    scheduler_hints: { group: "9d3b9a54-0000-4000-8000-000000000001" },
  } as never,
});

const view = (version: string, isAdmin = false) =>
  serverView(rec, { baseUrl: BASE, isAdmin, version: v(version), hostStatus: () => "UP" });

function fails(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected an ApiError");
}

describe("server view per microversion", () => {
  it("progress only while a server may make some (Nova's _progress_statuses)", () => {
    expect(view("2.1").progress).toBe(0);
    const opts = { baseUrl: BASE, isAdmin: false, version: v("2.1") };
    expect(serverView({ ...rec, vm_state: "building" }, opts).progress).toBe(0);
    expect(serverView({ ...rec, vm_state: "stopped" }, opts)).not.toHaveProperty("progress");
    expect(serverView({ ...rec, vm_state: "error" }, opts)).not.toHaveProperty("progress");
  });

  it("2.1: the flavor reference, no later fields", () => {
    const s = view("2.1");
    expect(s.flavor).toEqual({ id: "1", links: [{ rel: "bookmark", href: `${BASE}/flavors/1` }] });
    expect(s.key_name).toBe("mykey");
    expect(s.config_drive).toBe("");
    expect(
      serverView(record({ config_drive: true }), { baseUrl: BASE, isAdmin: false, version: v("2.1") })
        .config_drive,
    ).toBe("True");
    for (const k of [
      "locked",
      "description",
      "tags",
      "host_status",
      "trusted_image_certificates",
      "server_groups",
      "locked_reason",
      "pinned_availability_zone",
    ]) {
      expect(s).not.toHaveProperty(k);
    }
    // 2.3's extended attributes wait for 2.3, even for an admin
    expect(view("2.1", true)).not.toHaveProperty("OS-EXT-SRV-ATTR:reservation_id");
  });

  it("2.47: the embedded flavor, with 2.9 locked, 2.19 description, 2.26 tags", () => {
    const s = view("2.47");
    expect(s.flavor).toEqual({
      vcpus: 1,
      ram: 512,
      disk: 1,
      ephemeral: 0,
      swap: 0,
      original_name: "m1.tiny",
      extra_specs: {},
    });
    expect(s).toMatchObject({ locked: true, description: "web", tags: ["blue"] });
    expect(s).not.toHaveProperty("locked_reason");
    expect(view("2.46").flavor).toHaveProperty("id", "1");
  });

  it("2.79: certificates and server groups; host_status and the 2.3 attributes for admins only", () => {
    const m = view("2.79");
    expect(m).toMatchObject({
      trusted_image_certificates: null,
      server_groups: ["9d3b9a54-0000-4000-8000-000000000001"],
      locked_reason: "maint",
    });
    expect(m).not.toHaveProperty("host_status");
    expect(Object.keys(m).filter((k) => k.startsWith("OS-EXT-SRV-ATTR"))).toEqual([]);
    const a = view("2.79", true);
    expect(a).toMatchObject({
      host_status: "UP",
      "OS-EXT-SRV-ATTR:host": "host-1",
      "OS-EXT-SRV-ATTR:reservation_id": "r-abcdefgh",
      "OS-EXT-SRV-ATTR:launch_index": 2,
      "OS-EXT-SRV-ATTR:hostname": "vm",
      "OS-EXT-SRV-ATTR:user_data": "aGVsbG8=",
    });
  });

  it("2.90: the hostname is a member's too, the one asked for if any", () => {
    const named = record({ hostname: "web-1" });
    const at = (version: string) => serverView(named, { baseUrl: BASE, isAdmin: false, version: v(version) });
    expect(at("2.89")).not.toHaveProperty("OS-EXT-SRV-ATTR:hostname");
    expect(at("2.90")["OS-EXT-SRV-ATTR:hostname"]).toBe("web-1");
  });

  it("latest: the pinned zone; an unlocked server has no reason; no host means host_status ''", () => {
    expect(view(LATEST.toString())).toMatchObject({
      pinned_availability_zone: "az1",
    });
    const open = serverView(record({ locked_by: null, locked_reason: "stale" }), {
      baseUrl: BASE,
      isAdmin: true,
      version: LATEST,
    });
    expect(open).toMatchObject({
      locked: false,
      locked_reason: null,
      host_status: "",
      tags: [],
      description: null,
    });
    expect(open.pinned_availability_zone).toBeNull();
  });

  it("a hostname from the display name, as Nova's sanitize_hostname", () => {
    expect(sanitizeHostname("My Web_Server!")).toBe("my-web-server");
    expect(sanitizeHostname("..--")).toBe("server");
  });
});

describe("server requests per microversion", () => {
  const limits = { maxCount: 10, maxMetadataItems: 128 };
  const good = { name: "vm", flavorRef: "1", imageRef: "cirros" };
  /** the body at a version: from 2.37 `networks` is required ("none" unless given) */
  const parseCreateServer = (
    body: { server: Record<string, unknown> },
    auth: AuthContext,
    l: typeof limits,
    version: ApiVersion,
  ) =>
    parseCreate(
      version.atLeast("2.37") && !("networks" in body.server)
        ? { ...body, server: { ...body.server, networks: "none" } }
        : body,
      auth,
      l,
      version,
    );

  it("create: description from 2.19, tags from 2.52, base64 user_data", () => {
    const desc = { server: { ...good, description: "d" } };
    expect(fails(() => parseCreateServer(desc, member, limits, v("2.18"))).message).toContain(
      "'description' was unexpected",
    );
    expect(parseCreateServer(desc, member, limits, v("2.19")).description).toBe("d");
    const tagged = { server: { ...good, tags: ["a", "a", "b"] } };
    expect(fails(() => parseCreateServer(tagged, member, limits, v("2.51"))).kind).toBe("badRequest");
    expect(parseCreateServer(tagged, member, limits, v("2.52")).tags).toEqual(["a", "b"]);
    const tooMany = { server: { ...good, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) } };
    expect(fails(() => parseCreateServer(tooMany, member, limits, LATEST)).kind).toBe("badRequest");
    const ud = (user_data: string) => ({ server: { ...good, user_data } });
    expect(parseCreateServer(ud("aGVsbG8="), member, limits, LATEST).userData).toBe("aGVsbG8=");
    expect(fails(() => parseCreateServer(ud("not base64!"), member, limits, LATEST)).kind).toBe("badRequest");
    expect(fails(() => parseCreateServer(ud("A".repeat(65536)), member, limits, LATEST)).kind).toBe(
      "badRequest",
    );
  });

  it("create: a boot-from-image mapping agrees with imageRef; no volumes; the default group; 2.90 hostname", () => {
    const bdm = (m: Record<string, unknown>, imageRef?: string) => ({
      server: { ...good, imageRef, block_device_mapping_v2: [m] },
    });
    const boot = { source_type: "image", destination_type: "local", boot_index: 0, uuid: "cirros" };
    expect(parseCreateServer(bdm(boot, "cirros"), member, limits, LATEST).imageRef).toBe("cirros");
    expect(parseCreateServer(bdm(boot), member, limits, LATEST).imageRef).toBe("cirros");
    expect(fails(() => parseCreateServer(bdm(boot, "other"), member, limits, LATEST)).message).toBe(
      "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.",
    );
    const volume = { source_type: "volume", destination_type: "volume", uuid: "v" };
    expect(fails(() => parseCreateServer(bdm(volume, "cirros"), member, limits, LATEST)).message).toMatch(
      /^Block Device Mapping is Invalid: .*no volume service/,
    );
    // the names given, each once, and none asked when absent (the store checks them, later)
    const sg = (...names: string[]) => ({
      server: { ...good, security_groups: names.map((name) => ({ name })) },
    });
    expect(parseCreateServer(sg("default", "web", "web"), member, limits, LATEST).securityGroups).toEqual([
      "default",
      "web",
    ]);
    expect(parseCreateServer({ server: good }, member, limits, LATEST).securityGroups).toBeNull();
    const named = (hostname: string, extra = {}) => ({ server: { ...good, hostname, ...extra } });
    expect(fails(() => parseCreateServer(named("web-1"), member, limits, v("2.89"))).kind).toBe("badRequest");
    expect(parseCreateServer(named("web-1"), member, limits, v("2.90")).hostname).toBe("web-1");
    expect(fails(() => parseCreateServer(named("web.example"), member, limits, v("2.93"))).kind).toBe(
      "badRequest",
    );
    expect(parseCreateServer(named("web.example"), member, limits, v("2.94")).hostname).toBe("web.example");
    expect(fails(() => parseCreateServer(named("w", { max_count: 2 }), member, limits, LATEST)).message).toBe(
      "Unable to set hostname for more than one server at a time.",
    );
    expect(parseUpdateServer({ server: { hostname: "h2" } }, v("2.90"))).toEqual({ hostname: "h2" });
  });

  it("create: 2.74 host and hypervisor_hostname, an admin's", () => {
    const admin: AuthContext = { ...member, isAdmin: true };
    const body = { server: { ...good, host: "h1", hypervisor_hostname: "n1" } };
    expect(fails(() => parseCreateServer(body, admin, limits, v("2.73"))).message).toContain(
      "were unexpected",
    );
    expect(parseCreateServer(body, admin, limits, v("2.74")).requestedDestination).toEqual({
      host: "h1",
      node: "n1",
    });
    expect(fails(() => parseCreateServer(body, member, limits, v("2.74"))).message).toBe(
      "Policy doesn't allow compute:servers:create:requested_destination to be performed.",
    );
    expect(parseCreateServer({ server: good }, admin, limits, LATEST).requestedDestination).toBeNull();
  });

  it("update: name always, description from 2.19, nothing unknown", () => {
    expect(parseUpdateServer({ server: { name: "n" } }, v("2.1"))).toEqual({ name: "n" });
    expect(fails(() => parseUpdateServer({ server: { description: "d" } }, v("2.18"))).kind).toBe(
      "badRequest",
    );
    expect(parseUpdateServer({ server: { description: null } }, v("2.19"))).toEqual({ description: null });
    expect(fails(() => parseUpdateServer({ server: { color: "red" } }, LATEST)).kind).toBe("badRequest");
  });

  it("metadata items, tags and the lock body", () => {
    expect(parseMetaItem({ meta: { k: "v" } }, "k")).toBe("v");
    expect(fails(() => parseMetaItem({ meta: { a: "1", k: "v" } }, "k")).message).toBe(
      "Request body contains too many items",
    );
    expect(parseTagsBody({ tags: ["x", "x"] })).toEqual(["x"]);
    expect(fails(() => checkTag("a/b")).kind).toBe("badRequest");
    expect(fails(() => checkTag("x".repeat(61))).kind).toBe("badRequest");
    // before 2.73 Nova had no schema: whatever the body, no reason
    expect(parseLockBody({ locked_reason: "r" }, v("2.72"))).toEqual({ reason: null });
    expect(parseLockBody({ locked_reason: "r" }, v("2.73"))).toEqual({ reason: "r" });
    expect(parseLockBody(null, v("2.73"))).toEqual({ reason: null });
    expect(fails(() => parseLockBody({ why: "r" }, v("2.73"))).kind).toBe("badRequest");
  });
});

describe("access IPs, networks, the update view", () => {
  const limits = { maxCount: 10, maxMetadataItems: 128 };
  const good = { name: "vm", flavorRef: "1", imageRef: "cirros" };

  it("access IPs are checked as Nova's ipv4/ipv6 formats, kept and shown", () => {
    const ok = parseCreateServer(
      { server: { ...good, accessIPv4: "1.1.1.1", accessIPv6: "2001:2001::3" } },
      member,
      limits,
      v("2.1"),
    );
    expect([ok.accessIPv4, ok.accessIPv6]).toEqual(["1.1.1.1", "2001:2001::3"]);
    const long = { server: { ...good, accessIPv6: "0000:0000:0000:0000:0000:babe:220.12.22.2" } };
    expect(parseCreateServer(long, member, limits, v("2.1")).accessIPv6).toBe("::babe:dc0c:1602");
    expect(
      fails(() =>
        parseCreateServer({ server: { ...good, accessIPv4: "1.1.1.1.1.1" } }, member, limits, v("2.1")),
      ).kind,
    ).toBe("badRequest");
    expect(
      fails(() => parseCreateServer({ server: { ...good, accessIPv6: "notIPv6" } }, member, limits, v("2.1")))
        .kind,
    ).toBe("badRequest");
    expect(parseUpdateServer({ server: { accessIPv4: "10.0.0.1" } }, v("2.1"))).toEqual({
      access_ip_v4: "10.0.0.1",
    });
    const shown = serverView(record({ access_ip_v4: "1.1.1.1" }), {
      baseUrl: BASE,
      isAdmin: false,
      version: v("2.1"),
    });
    expect([shown.accessIPv4, shown.accessIPv6]).toEqual(["1.1.1.1", ""]);
  });

  it("networks: a list before 2.37 (its uuids checked by servers.py), required from 2.37 with auto/none", () => {
    const uuid = "9d3b9a54-0000-4000-8000-00000000000a";
    const at = (networks: unknown, version: string) =>
      parseCreateServer({ server: { ...good, networks } }, member, limits, v(version));
    expect(at([{ uuid }], "2.1").networks).toEqual([{ uuid }]);
    expect(fails(() => at([{ uuid: "net-1" }], "2.1")).message).toBe(
      "Bad networks format: network uuid is not in proper format (net-1)",
    );
    expect(fails(() => at([{ uuid: "net-1" }], "2.37")).message).toContain("is not a 'uuid'");
    expect(fails(() => at("auto", "2.36")).kind).toBe("badRequest");
    expect(at("auto", "2.37").networks).toBe("auto");
    expect(fails(() => at([{ uuid, tag: "t" }], "2.37")).kind).toBe("badRequest");
    expect(at([{ uuid, tag: "t" }], "2.42").networks).toEqual([{ uuid, tag: "t" }]);
    expect(at([{ uuid, fixed_ip: "10.0.0.1" }], "2.1").networks).toEqual([{ uuid, fixed_ip: "10.0.0.1" }]);
    expect(fails(() => at([{ uuid, fixed_ip: "10.0.0" }], "2.1")).kind).toBe("badRequest");
    expect(parseCreateServer({ server: good }, member, limits, v("2.36")).networks).toBeNull();
    expect(fails(() => parseCreateServer({ server: good }, member, limits, v("2.37"))).message).toContain(
      "'networks' is a required property",
    );
  });

  it("the update answer: no extensions until 2.74 (server_groups from 2.71), the whole show from 2.75", () => {
    const opts = (version: string) => ({
      baseUrl: BASE,
      isAdmin: true,
      version: v(version),
      hostStatus: () => "UP",
    });
    const at21 = Object.keys(serverUpdateView(rec, opts("2.1")));
    expect(
      at21.filter((k) => k.startsWith("OS-EXT") || k.startsWith("OS-SRV-USG") || k === "key_name"),
    ).toEqual([]);
    expect(at21).toContain("OS-DCF:diskConfig");
    expect(Object.keys(serverUpdateView(rec, opts("2.70")))).not.toContain("server_groups");
    expect(Object.keys(serverUpdateView(rec, opts("2.71")))).toContain("server_groups");
    expect(serverUpdateView(rec, opts("2.75"))).toEqual(serverView(rec, opts("2.75")));
    // extend_address too: the addresses' type and MAC from 2.75 only
    const wired = {
      ...rec,
      vm_state: "active" as const,
      network_info: [
        {
          port_id: "p1",
          network_id: "n1",
          network_name: "public",
          mac_address: "fa:16:3e:00:00:01",
          fixed_ips: [{ subnet_id: "s1", ip_address: "10.20.0.5", version: 4 as const }],
          preexisting: false,
        },
      ],
    };
    expect(serverUpdateView(wired, opts("2.74")).addresses).toEqual({
      public: [{ version: 4, addr: "10.20.0.5" }],
    });
    expect(serverUpdateView(wired, opts("2.75")).addresses).toEqual({
      public: [
        {
          version: 4,
          addr: "10.20.0.5",
          "OS-EXT-IPS:type": "fixed",
          "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01",
        },
      ],
    });
  });

  it("the list filters flavor and image by id; an unknown one matches nothing", () => {
    const recs = [record({ id: "00000000-0000-4000-8000-0000000000f1" })];
    const flavorId = recs[0]!.flavor.id;
    const imageId = recs[0]!.image.id;
    const list = (q: Record<string, string[]>) =>
      filterServers(recs, parseServerListQuery(q, member, true, v("2.1"))).servers.map((r) => r.id);
    expect(list({ flavor: [flavorId] })).toHaveLength(1);
    expect(list({ image: [imageId] })).toHaveLength(1);
    expect(list({ flavor: ["nope"] })).toEqual([]);
    expect(list({ image: ["nope"] })).toEqual([]);
  });
});

describe("server list filters per microversion", () => {
  const admin: AuthContext = { ...member, isAdmin: true };
  const recs = [
    record({
      id: "00000000-0000-4000-8000-000000000003",
      name: "c",
      tags: ["a", "b"],
      updated_at: "2026-03-03T00:00:00.000Z",
    }),
    record({
      id: "00000000-0000-4000-8000-000000000002",
      name: "b",
      tags: ["a"],
      updated_at: "2026-03-02T00:00:00.000Z",
    }),
    record({ id: "00000000-0000-4000-8000-000000000001", name: "a", updated_at: "2026-03-01T00:00:00.000Z" }),
  ];
  const names = (q: Record<string, string[]>, version = LATEST, auth = member) =>
    filterServers(recs, parseServerListQuery(q, auth, true, version)).servers.map((r) => r.name);

  it("tags, tags-any, not-tags, not-tags-any from 2.26 (ignored before)", () => {
    expect(names({ tags: ["a,b"] })).toEqual(["c"]);
    expect(names({ "tags-any": ["b,z"] })).toEqual(["c"]);
    expect(names({ "not-tags": ["a,b"] })).toEqual(["b", "a"]);
    expect(names({ "not-tags-any": ["a"] })).toEqual(["a"]);
    expect(names({ tags: ["a,b"] }, v("2.25"))).toEqual(["c", "b", "a"]);
  });

  it("changes-since, and changes-before from 2.66", () => {
    expect(names({ "changes-since": ["2026-03-02T00:00:00Z"] })).toEqual(["c", "b"]);
    expect(names({ "changes-before": ["2026-03-02T00:00:00Z"] })).toEqual(["b", "a"]);
    expect(names({ "changes-before": ["2026-03-02T00:00:00Z"] }, v("2.65"))).toEqual(["c", "b", "a"]);
    expect(fails(() => names({ "changes-since": ["yesterday"] })).kind).toBe("badRequest");
    expect(
      fails(() =>
        names({ "changes-since": ["2026-03-03T00:00:00Z"], "changes-before": ["2026-03-01T00:00:00Z"] }),
      ).message,
    ).toBe("The value of changes-since must be less than or equal to changes-before.");
  });

  it("sort keys and directions; host only for admins", () => {
    expect(names({ sort_key: ["display_name"], sort_dir: ["asc"] })).toEqual(["a", "b", "c"]);
    expect(names({ sort_key: ["display_name"] })).toEqual(["c", "b", "a"]);
    expect(fails(() => names({ sort_key: ["host"] })).kind).toBe("badRequest");
    expect(names({ sort_key: ["host", "uuid"], sort_dir: ["asc"] }, LATEST, admin)).toEqual(["a", "b", "c"]);
    expect(fails(() => names({ sort_key: ["name"], sort_dir: ["up"] })).kind).toBe("badRequest");
  });
});
