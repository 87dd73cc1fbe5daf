// The server view per microversion (a version table) and the server requests' validation per
// microversion: what each version adds, and what a member never sees.
import { describe, expect, it } from "vitest";
import type { AuthContext } from "../../../lib/api/auth.js";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion, MAX_VERSION as LATEST } from "../../../lib/api/microversion.js";
import {
  checkTag,
  parseCreateServer,
  parseLockBody,
  parseMetaItem,
  parseTagsBody,
  parseUpdateServer,
} from "../../../lib/api/validation/servers.js";
import { sanitizeHostname, serverView } from "../../../lib/api/views/servers.js";
import { record } from "./records.js";

const BASE = "http://api.test";
const v = (s: string) => ApiVersion.parse(s);
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
  it("2.1: the flavor reference, no later fields", () => {
    const s = view("2.1");
    expect(s.flavor).toEqual({ id: "1", links: [{ rel: "bookmark", href: `${BASE}/flavors/1` }] });
    expect(s.key_name).toBe("mykey");
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
