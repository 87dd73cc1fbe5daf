// os-server-groups and the `group` scheduler hint, with in-memory I/O.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AuthContext } from "../../../lib/api/auth.js";
import { ApiError } from "../../../lib/api/errors.js";
import { ApiVersion } from "../../../lib/api/microversion.js";
import { handleHttp } from "../../../lib/api/router.js";
import {
  canSeeServerGroup,
  parseCreateServerGroup,
  parseServerGroupListQuery,
} from "../../../lib/api/validation/server-groups.js";
import { serverGroupView } from "../../../lib/api/views/server-groups.js";
import { type FakeWorld, fakeWorld, NOW, sentSpec } from "./fakes.js";

const member: AuthContext = { user_id: "demo", project_id: "demo", roles: ["member"], isAdmin: false };
const admin: AuthContext = { user_id: "admin", project_id: "admin", roles: ["admin"], isAdmin: true };
const GID = "5d0e8f2a-0000-4000-8000-00000000000a";

function fails(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("expected an ApiError");
}

const create = (sg: Record<string, unknown>, version = "2.64") =>
  parseCreateServerGroup({ server_group: sg }, member, GID, NOW, ApiVersion.parse(version));

describe("server group bodies", () => {
  it("2.64: policy and rules (max_server_per_host for anti-affinity only)", () => {
    expect(create({ name: "web", policy: "anti-affinity", rules: { max_server_per_host: 2 } })).toEqual({
      id: GID,
      name: "web",
      policy: "anti-affinity",
      rules: { max_server_per_host: 2 },
      members: [],
      project_id: "demo",
      user_id: "demo",
      created_at: NOW.toISOString(),
    });
    for (const p of ["affinity", "soft-affinity", "soft-anti-affinity"]) {
      expect(create({ name: "g", policy: p }).policy).toBe(p);
      const e = fails(() => create({ name: "g", policy: p, rules: { max_server_per_host: 2 } }));
      expect([e.status, e.message]).toEqual([400, "Only anti-affinity policy supports rules."]);
    }
    expect(create({ name: "g", policy: "affinity", rules: {} }).rules).toEqual({});
  });

  it("until 2.63 a one-element policies list; soft policies from 2.15; policy not before 2.64", () => {
    expect(create({ name: "g", policies: ["soft-anti-affinity"] }, "2.63").policy).toBe("soft-anti-affinity");
    expect(create({ name: "g", policies: ["affinity"] }, "2.1").policy).toBe("affinity");
    expect(fails(() => create({ name: "g", policies: ["soft-affinity"] }, "2.14")).message).toMatch(
      /is not one of \['anti-affinity', 'affinity'\]/,
    );
    expect(fails(() => create({ name: "g", policies: [] }, "2.15")).message).toMatch(/should be non-empty/);
    expect(
      fails(() => create({ name: "g", policies: ["affinity", "anti-affinity"] }, "2.15")).message,
    ).toMatch(/is too long/);
    expect(fails(() => create({ name: "g", policy: "affinity" }, "2.63")).message).toMatch(
      /'policies' is a required property/,
    );
    expect(fails(() => create({ name: "g", policies: ["affinity"] })).message).toMatch(
      /'policy' is a required property/,
    );
  });

  it("Nova's validation errors", () => {
    expect(fails(() => create({ name: "g" })).message).toMatch(/'policy' is a required property/);
    expect(fails(() => create({ name: "g", policy: "spread" })).message).toMatch(
      /is not one of \['anti-affinity', 'affinity', 'soft-anti-affinity', 'soft-affinity'\]/,
    );
    for (const rules of [{ unknown_key: "3" }, { max_server_per_host: 0 }, { max_server_per_host: "foo" }]) {
      expect(fails(() => create({ name: "g", policy: "anti-affinity", rules })).message).toMatch(
        /^Invalid input for field\/attribute/,
      );
    }
    expect(fails(() => create({ policy: "affinity" })).message).toMatch(/'name' is a required property/);
  });

  it("list query and visibility", () => {
    expect(parseServerGroupListQuery({ all_projects: [""], limit: ["5"], offset: ["2"] }, admin)).toEqual({
      allProjects: true,
      limit: 5,
      offset: 2,
    });
    expect(parseServerGroupListQuery({ all_projects: ["1"] }, member).allProjects).toBe(false);
    expect(fails(() => parseServerGroupListQuery({ limit: ["x"] }, member)).message).toBe(
      "limit param must be an integer",
    );
    const g = create({ name: "g", policy: "affinity" });
    expect(canSeeServerGroup(g, member)).toBe(true);
    expect(canSeeServerGroup({ ...g, project_id: "other" }, member)).toBe(false);
    expect(canSeeServerGroup({ ...g, project_id: "other" }, admin)).toBe(true);
  });

  it("views per microversion: policies and metadata until 2.63, ids from 2.13, policy and rules from 2.64", () => {
    const g = { ...create({ name: "g", policy: "affinity" }), members: ["a", "b"] };
    const c = { liveMembers: ["a"] };
    expect(serverGroupView(g, c, ApiVersion.parse("2.1"))).toEqual({
      id: GID,
      name: "g",
      members: ["a"],
      policies: ["affinity"],
      metadata: {},
    });
    expect(serverGroupView(g, c, ApiVersion.parse("2.47"))).toEqual({
      id: GID,
      name: "g",
      members: ["a"],
      policies: ["affinity"],
      metadata: {},
      project_id: "demo",
      user_id: "demo",
    });
    for (const v of ["2.64", "2.79", "2.96"]) {
      expect(serverGroupView(g, c, ApiVersion.parse(v))).toEqual({
        id: GID,
        name: "g",
        policy: "affinity",
        rules: {},
        members: ["a"],
        project_id: "demo",
        user_id: "demo",
      });
    }
  });
});

// ── through the router ──

let w: FakeWorld;
beforeEach(() => {
  w = fakeWorld();
});
afterEach(() => {
  vi.restoreAllMocks();
  delete process.env.NOVALESS_MAX_SERVER_GROUP_MEMBERS;
  delete process.env.NOVALESS_MAX_SERVER_GROUPS;
});

/** At 2.64, the shape these tests speak (policy and rules). */
async function call(method: string, path: string, token = "demo-token", body?: unknown) {
  const r = await handleHttp(
    {
      method,
      path,
      headers: { "x-auth-token": token, "openstack-api-version": "compute 2.64" },
      body: body === undefined ? undefined : JSON.stringify(body),
    },
    w.deps,
  );
  return { status: r.status, json: r.body ? JSON.parse(r.body) : undefined };
}

async function newGroup(policy = "anti-affinity", token = "demo-token"): Promise<string> {
  const r = await call("POST", "/v2.1/os-server-groups", token, { server_group: { name: "g", policy } });
  expect(r.status).toBe(200);
  return r.json.server_group.id;
}

// (2.64: `networks` is required from 2.37)
const boot = (group: string, over: Record<string, unknown> = {}) => ({
  server: { name: "vm", flavorRef: "1", imageRef: "cirros", networks: "none", ...over },
  "os:scheduler_hints": { group },
});

describe("/os-server-groups", () => {
  it("create, show, list, delete; another project's group is 404", async () => {
    const c = await call("POST", "/v2.1/os-server-groups", "demo-token", {
      server_group: { name: "web", policy: "anti-affinity", rules: { max_server_per_host: 2 } },
    });
    expect(c.status).toBe(200);
    expect(c.json.server_group).toMatchObject({
      name: "web",
      policy: "anti-affinity",
      rules: { max_server_per_host: 2 },
      members: [],
      project_id: "demo",
      user_id: "demo",
    });
    const id = c.json.server_group.id;
    expect((await call("GET", `/v2.1/os-server-groups/${id}`)).json.server_group.id).toBe(id);
    expect((await call("GET", "/v2.1/os-server-groups")).json.server_groups).toHaveLength(1);

    const theirs = await newGroup("affinity", "admin-token");
    const nf = await call("GET", `/v2.1/os-server-groups/${theirs}`);
    expect([nf.status, nf.json.itemNotFound.message]).toEqual([
      404,
      `Instance group ${theirs} could not be found.`,
    ]);
    expect((await call("DELETE", `/v2.1/os-server-groups/${theirs}`)).status).toBe(404);
    // admins see every project's with all_projects, only their own without
    expect(
      (await call("GET", "/v2.1/os-server-groups?all_projects=1", "admin-token")).json.server_groups,
    ).toHaveLength(2);
    expect((await call("GET", "/v2.1/os-server-groups", "admin-token")).json.server_groups).toHaveLength(1);
    expect((await call("GET", "/v2.1/os-server-groups?all_projects=1")).json.server_groups).toHaveLength(1);

    expect((await call("DELETE", `/v2.1/os-server-groups/${id}`)).status).toBe(204);
    expect((await call("GET", `/v2.1/os-server-groups/${id}`)).status).toBe(404);
  });

  it("the server groups quota (403)", async () => {
    process.env.NOVALESS_MAX_SERVER_GROUPS = "2";
    await newGroup();
    await newGroup();
    const r = await call("POST", "/v2.1/os-server-groups", "demo-token", {
      server_group: { name: "g", policy: "affinity" },
    });
    expect([r.status, r.json.forbidden.message]).toEqual([403, "Quota exceeded, too many server groups."]);
  });

  it("a create with the group hint adds its servers as members; a delete removes them", async () => {
    const id = await newGroup();
    const r = await call("POST", "/v2.1/servers", "demo-token", boot(id, { min_count: 2 }));
    expect(r.status).toBe(202);
    expect(sentSpec(w, w.sent.at(-1)).scheduler_hints).toEqual({ group: id });
    const uuids = w.sent.at(-1)!.instance_uuids;
    const shown = await call("GET", `/v2.1/os-server-groups/${id}`);
    expect(shown.json.server_group.members).toEqual(uuids);

    expect((await call("DELETE", `/v2.1/servers/${uuids[0]}`)).status).toBe(204);
    expect(w.catalog.serverGroups.get(id)!.members).toEqual([uuids[1]]);
    expect((await call("GET", `/v2.1/os-server-groups/${id}`)).json.server_group.members).toEqual([uuids[1]]);
  });

  it("list and show hide members whose servers are gone even if still recorded", async () => {
    const id = await newGroup();
    await call("POST", "/v2.1/servers", "demo-token", boot(id));
    const [uuid] = w.sent.at(-1)!.instance_uuids;
    w.catalog.groupOf.clear(); // the delete cannot find the group
    await call("DELETE", `/v2.1/servers/${uuid}`);
    expect(w.catalog.serverGroups.get(id)!.members).toEqual([uuid]);
    expect((await call("GET", `/v2.1/os-server-groups/${id}`)).json.server_group.members).toEqual([]);
    expect((await call("GET", "/v2.1/os-server-groups")).json.server_groups[0].members).toEqual([]);
  });

  it("an unknown or foreign group in the hint: 400 with Nova's message, nothing created", async () => {
    const unknown = "6a1f0b8e-1111-4000-8000-0000000000ff";
    const r = await call("POST", "/v2.1/servers", "demo-token", boot(unknown));
    expect([r.status, r.json.badRequest.message]).toEqual([
      400,
      `Instance group ${unknown} could not be found.`,
    ]);
    const theirs = await newGroup("affinity", "admin-token");
    expect((await call("POST", "/v2.1/servers", "demo-token", boot(theirs))).status).toBe(400);
    expect(w.instances.size).toBe(0);
    expect(w.sent).toHaveLength(0);
    const bad = await call("POST", "/v2.1/servers", "demo-token", boot("not-a-uuid"));
    expect(bad.status).toBe(400);
    expect(bad.json.badRequest.message).toMatch(/group.*is not a 'uuid'/);
  });

  it("the group members quota: 403, all or nothing; deleted members are pruned to make room", async () => {
    process.env.NOVALESS_MAX_SERVER_GROUP_MEMBERS = "3";
    const id = await newGroup();
    expect((await call("POST", "/v2.1/servers", "demo-token", boot(id, { min_count: 2 }))).status).toBe(202);
    const over = await call("POST", "/v2.1/servers", "demo-token", boot(id, { min_count: 2 }));
    expect([over.status, over.json.forbidden.message]).toEqual([
      403,
      "Quota exceeded, too many servers in group",
    ]);
    expect(w.instances.size).toBe(2);
    expect(w.catalog.serverGroups.get(id)!.members).toHaveLength(2);

    // a member deleted without leaving the group (its removal failed) no longer counts
    const [first] = w.sent[0]!.instance_uuids;
    w.catalog.groupOf.clear();
    await call("DELETE", `/v2.1/servers/${first}`);
    expect((await call("POST", "/v2.1/servers", "demo-token", boot(id, { min_count: 2 }))).status).toBe(202);
    expect(w.catalog.serverGroups.get(id)!.members).not.toContain(first);
    expect(w.catalog.serverGroups.get(id)!.members).toHaveLength(3);
  });

  it("a create that fails after joining leaves the group again", async () => {
    const id = await newGroup();
    w.failEnqueue = true;
    vi.spyOn(process.stderr, "write").mockImplementation(() => true); // the 500's log line
    expect((await call("POST", "/v2.1/servers", "demo-token", boot(id))).status).toBe(500);
    expect(w.catalog.serverGroups.get(id)!.members).toEqual([]);
  });
});
