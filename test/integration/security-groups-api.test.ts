// Security groups in the Networking front (/networking/v2.0/security-groups and
// /security-group-rules) over the real store (the local emulators through the AWS SDK), through
// the API's HTTP entry: each project's default group made once however many first lists race,
// Neutron's shapes, checks and texts, its quotas, members seeing their project's groups only, and
// ports carrying groups and port security with Neutron's checks.
import { beforeAll, describe, expect, it } from "vitest";
import { defaultDeps } from "../../lib/api/deps.js";
import { seedIdentity } from "../../lib/identity/seed.js";
import { defaultGroupId } from "../../lib/network/security-groups.js";
import { memberCount, securityGroupUsage } from "../../lib/network/store/security-groups.js";
import { httpCaller } from "./http.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const BASE = "https://cloud.example.org";
const deps = { ...defaultDeps, now: () => new Date("2026-03-01T12:00:00.123Z") };

// biome-ignore lint/suspicious/noExplicitAny: Neutron's bodies; the assertions check their shape
type Json = any;

const http = httpCaller(deps, BASE);
/** The Networking front at /networking, as a token's holder calls it. */
async function call(method: string, path: string, token?: string, body?: unknown) {
  const r = await http(method, `/networking${path}`, { token, body });
  return { status: r.status, json: r.json as Json };
}

const ADMIN = "admin-token";
const DEMO = "demo-token";
let other: string;
let otherProject: string;
let net: Json;

const neutronError = (type: string, message: string) => ({ NeutronError: { type, message, detail: "" } });

/** Keystone's admin API as the seeded admin (a token's own issue without one). */
const identity = (method: string, path: string, body?: unknown) =>
  http(method, `/identity/v3${path}`, { token: path === "/auth/tokens" ? undefined : ADMIN, body });

beforeAll(async () => {
  await seedIdentity({ adminPassword: "admin-secret", demo: true });
  const project = await identity("POST", "/projects", {
    project: { name: "sg-other", domain_id: "default" },
  });
  otherProject = project.json.project.id;
  const user = await identity("POST", "/users", {
    user: { name: "dave", password: "dave-secret", domain_id: "default" },
  });
  const role = (await identity("GET", "/roles?name=member")).json.roles[0];
  await identity("PUT", `/projects/${otherProject}/users/${user.json.user.id}/roles/${role.id}`);
  const token = await identity("POST", "/auth/tokens", {
    auth: {
      identity: {
        methods: ["password"],
        password: { user: { name: "dave", domain: { id: "default" }, password: "dave-secret" } },
      },
      scope: { project: { id: otherProject } },
    },
  });
  other = token.headers["x-subject-token"]!;
  net = (await call("POST", "/v2.0/networks", ADMIN, { network: { name: "sgnet", shared: true } })).json
    .network;
  const s = await call("POST", "/v2.0/subnets", ADMIN, {
    subnet: { network_id: net.id, cidr: "10.40.0.0/24", ip_version: 4 },
  });
  expect(s.status).toBe(201);
}, 60_000);

describe("security groups in the Networking front", () => {
  it("a project's first lists make its default group once, with Neutron's default rules", async () => {
    const lists = await Promise.all(
      Array.from({ length: 8 }, () => call("GET", "/v2.0/security-groups", DEMO)),
    );
    for (const l of lists) expect(l.status).toBe(200);
    const defaults = lists.map((l) => l.json.security_groups.filter((g: Json) => g.name === "default"));
    for (const d of defaults) expect(d.map((g: Json) => g.id)).toEqual([defaultGroupId("demo")]);
    const g = defaults[0][0];
    expect(g).toMatchObject({
      id: defaultGroupId("demo"),
      name: "default",
      description: "Default security group",
      project_id: "demo",
      tenant_id: "demo",
      tags: [],
      revision_number: 0,
    });
    expect(
      g.security_group_rules
        .map((r: Json) => [r.direction, r.ethertype, r.protocol, r.remote_group_id])
        .sort(),
    ).toEqual([
      ["egress", "IPv4", null, null],
      ["egress", "IPv6", null, null],
      ["ingress", "IPv4", null, g.id],
      ["ingress", "IPv6", null, g.id],
    ]);
    expect(g.security_group_rules.find((r: Json) => r.direction === "egress")).toMatchObject({
      project_id: "demo",
      security_group_id: g.id,
      port_range_min: null,
      port_range_max: null,
      remote_ip_prefix: null,
      normalized_cidr: null,
      remote_address_group_id: null,
      belongs_to_default_sg: true,
    });
    // counted once for the project's quotas
    expect(await securityGroupUsage("demo")).toEqual({ groups: 1, rules: 4 });
    const q = await call("GET", "/v2.0/quotas/demo/details", DEMO);
    expect(q.json.quota.security_group).toEqual({ limit: 10, used: 1, reserved: 0 });
    expect(q.json.quota.security_group_rule).toEqual({ limit: 100, used: 4, reserved: 0 });
    expect((await call("GET", "/v2.0/extensions/security-group", DEMO)).json.extension.alias).toBe(
      "security-group",
    );
  });

  it("create, show, update and delete; a second `default` and a renamed default group are Neutron's 409", async () => {
    const c = await call("POST", "/v2.0/security-groups", DEMO, {
      security_group: { name: "web", description: "web servers" },
    });
    expect(c.status).toBe(201);
    const g = c.json.security_group;
    expect(g).toMatchObject({ name: "web", description: "web servers", project_id: "demo" });
    expect(g.security_group_rules.map((r: Json) => [r.direction, r.ethertype]).sort()).toEqual([
      ["egress", "IPv4"],
      ["egress", "IPv6"],
    ]);
    expect(g.security_group_rules[0].belongs_to_default_sg).toBe(false);
    expect((await call("GET", `/v2.0/security-groups/${g.id}`, DEMO)).json.security_group).toEqual(g);
    const up = await call("PUT", `/v2.0/security-groups/${g.id}`, DEMO, {
      security_group: { name: "web2", description: "now" },
    });
    expect(up.json.security_group).toMatchObject({ name: "web2", description: "now", revision_number: 1 });
    expect(
      (await call("POST", "/v2.0/security-groups", DEMO, { security_group: { name: "Default" } })).json,
    ).toEqual(neutronError("SecurityGroupDefaultAlreadyExists", "Default security group already exists."));
    expect(
      (await call("PUT", `/v2.0/security-groups/${g.id}`, DEMO, { security_group: { name: "default" } }))
        .status,
    ).toBe(409);
    const def = defaultGroupId("demo");
    expect(
      (await call("PUT", `/v2.0/security-groups/${def}`, DEMO, { security_group: { name: "mine" } })).json,
    ).toEqual(
      neutronError("SecurityGroupCannotUpdateDefault", "Updating default security group not allowed."),
    );
    expect((await call("DELETE", `/v2.0/security-groups/${def}`, DEMO)).json).toEqual(
      neutronError(
        "SecurityGroupCannotRemoveDefault",
        "Insufficient rights for removing default security group.",
      ),
    );
    expect((await call("DELETE", `/v2.0/security-groups/${g.id}`, DEMO)).status).toBe(204);
    expect((await call("GET", `/v2.0/security-groups/${g.id}`, DEMO)).json).toEqual(
      neutronError("SecurityGroupNotFound", `Security group ${g.id} does not exist`),
    );
    expect((await call("DELETE", `/v2.0/security-groups/${g.id}`, DEMO)).status).toBe(404);
    // its rules went with it
    const rules = (await call("GET", `/v2.0/security-group-rules?security_group_id=${g.id}`, DEMO)).json;
    expect(rules.security_group_rules).toEqual([]);
    expect(await securityGroupUsage("demo")).toEqual({ groups: 1, rules: 4 });
  });

  it("members see their project's groups only; an admin sees all", async () => {
    const mine = (await call("POST", "/v2.0/security-groups", other, { security_group: { name: "db" } })).json
      .security_group;
    const demoList = (await call("GET", "/v2.0/security-groups", DEMO)).json.security_groups;
    expect(demoList.map((g: Json) => g.id)).not.toContain(mine.id);
    expect(demoList.every((g: Json) => g.project_id === "demo")).toBe(true);
    expect((await call("GET", `/v2.0/security-groups/${mine.id}`, DEMO)).status).toBe(404);
    expect((await call("DELETE", `/v2.0/security-groups/${mine.id}`, DEMO)).status).toBe(404);
    const all = (await call("GET", "/v2.0/security-groups", ADMIN)).json.security_groups.map(
      (g: Json) => g.id,
    );
    expect(all).toEqual(
      expect.arrayContaining([mine.id, defaultGroupId("demo"), defaultGroupId(otherProject)]),
    );
    // a member's rule may not name another project's group as its remote
    const r = await call("POST", "/v2.0/security-group-rules", DEMO, {
      security_group_rule: {
        security_group_id: defaultGroupId("demo"),
        direction: "ingress",
        remote_group_id: mine.id,
      },
    });
    expect(r.json).toEqual(neutronError("SecurityGroupNotFound", `Security group ${mine.id} does not exist`));
    // filters and paging as the other listings
    const named = await call("GET", "/v2.0/security-groups?name=default&fields=id&fields=name", ADMIN);
    expect(named.json.security_groups.every((g: Json) => Object.keys(g).sort().join() === "id,name")).toBe(
      true,
    );
    const page = await call("GET", "/v2.0/security-groups?limit=1", ADMIN);
    expect(page.json.security_groups).toHaveLength(1);
    expect(page.json.security_groups_links[0].rel).toBe("next");
    expect((await call("GET", "/v2.0/security-groups?colour=red", DEMO)).json).toEqual(
      neutronError("HTTPBadRequest", "['colour'] is invalid attribute for filtering"),
    );
  });

  it("rules: Neutron's checks, its 409 naming the rule a duplicate repeats, show, list and delete", async () => {
    const g = (await call("POST", "/v2.0/security-groups", DEMO, { security_group: { name: "ssh" } })).json
      .security_group;
    const ssh = {
      security_group_id: g.id,
      direction: "ingress",
      protocol: "tcp",
      port_range_min: 22,
      port_range_max: 22,
    };
    const made = await call("POST", "/v2.0/security-group-rules", DEMO, { security_group_rule: ssh });
    expect(made.status).toBe(201);
    const rule = made.json.security_group_rule;
    expect(rule).toMatchObject({ ...ssh, ethertype: "IPv4", remote_ip_prefix: null, project_id: "demo" });
    expect(
      (await call("POST", "/v2.0/security-group-rules", DEMO, { security_group_rule: ssh })).json,
    ).toEqual(
      neutronError("SecurityGroupRuleExists", `Security group rule already exists. Rule id is ${rule.id}.`),
    );
    // the same by number and with any prefix
    const same = { ...ssh, protocol: "6", remote_ip_prefix: "0.0.0.0/0" };
    expect(
      (await call("POST", "/v2.0/security-group-rules", DEMO, { security_group_rule: same })).status,
    ).toBe(409);
    const both = await call("POST", "/v2.0/security-group-rules", DEMO, {
      security_group_rule: {
        ...ssh,
        port_range_min: 23,
        port_range_max: 23,
        remote_ip_prefix: "10.0.0.0/8",
        remote_group_id: g.id,
      },
    });
    expect(both.status).toBe(400);
    expect(both.json.NeutronError.type).toBe("SecurityGroupMultipleRemoteEntites");
    const missing = "8e0f0a4c-0000-4000-8000-000000000000";
    expect(
      (
        await call("POST", "/v2.0/security-group-rules", DEMO, {
          security_group_rule: { ...ssh, security_group_id: missing },
        })
      ).json,
    ).toEqual(neutronError("SecurityGroupNotFound", `Security group ${missing} does not exist`));
    expect(
      (
        await call("POST", "/v2.0/security-group-rules", DEMO, {
          security_group_rule: { ...ssh, remote_group_id: "bad_group_id" },
        })
      ).json,
    ).toEqual(neutronError("SecurityGroupNotFound", "Security group bad_group_id does not exist"));
    expect(
      (
        await call("POST", "/v2.0/security-group-rules", DEMO, {
          security_group_rule: { security_group_id: g.id },
        })
      ).json,
    ).toEqual(
      neutronError("HTTPBadRequest", "Failed to parse request. Required attribute 'direction' not specified"),
    );
    // two identical rules at once: one is made, the other is the 409
    const http = { ...ssh, port_range_min: 80, port_range_max: 80 };
    const raced = await Promise.all(
      [1, 2, 3].map(() => call("POST", "/v2.0/security-group-rules", DEMO, { security_group_rule: http })),
    );
    expect(raced.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    const shown = await call("GET", `/v2.0/security-group-rules/${rule.id}`, DEMO);
    expect(shown.json.security_group_rule).toEqual(rule);
    expect((await call("GET", `/v2.0/security-group-rules/${rule.id}`, other)).status).toBe(404);
    const listed = await call(
      "GET",
      `/v2.0/security-group-rules?security_group_id=${g.id}&direction=ingress`,
      DEMO,
    );
    expect(listed.json.security_group_rules.map((r: Json) => r.port_range_min).sort()).toEqual([22, 80]);
    expect((await call("DELETE", `/v2.0/security-group-rules/${rule.id}`, other)).status).toBe(404);
    expect((await call("DELETE", `/v2.0/security-group-rules/${rule.id}`, DEMO)).status).toBe(204);
    expect((await call("DELETE", `/v2.0/security-group-rules/${rule.id}`, DEMO)).json).toEqual(
      neutronError("SecurityGroupRuleNotFound", `Security group rule ${rule.id} does not exist`),
    );
    // a bulk create is one group's, without the same rule twice
    const twice = await call("POST", "/v2.0/security-group-rules", DEMO, {
      security_group_rules: [ssh, ssh],
    });
    expect(twice.json).toEqual(
      neutronError("DuplicateSecurityGroupRuleInPost", "Duplicate Security Group Rule in POST."),
    );
    const bulk = await call("POST", "/v2.0/security-group-rules", DEMO, {
      security_group_rules: [ssh, { ...ssh, protocol: "udp" }],
    });
    expect(bulk.status).toBe(201);
    expect(bulk.json.security_group_rules).toHaveLength(2);
  });

  it("a group's delete takes the rules naming it as remote with it", async () => {
    const a = (await call("POST", "/v2.0/security-groups", DEMO, { security_group: { name: "a" } })).json
      .security_group;
    const b = (await call("POST", "/v2.0/security-groups", DEMO, { security_group: { name: "b" } })).json
      .security_group;
    const r = await call("POST", "/v2.0/security-group-rules", DEMO, {
      security_group_rule: {
        security_group_id: a.id,
        direction: "ingress",
        protocol: "udp",
        remote_group_id: b.id,
      },
    });
    expect(r.status).toBe(201);
    const before = await securityGroupUsage("demo");
    expect((await call("DELETE", `/v2.0/security-groups/${b.id}`, DEMO)).status).toBe(204);
    const after = (await call("GET", `/v2.0/security-groups/${a.id}`, DEMO)).json.security_group;
    expect(after.security_group_rules.map((x: Json) => x.id)).not.toContain(r.json.security_group_rule.id);
    expect(
      (await call("GET", `/v2.0/security-group-rules/${r.json.security_group_rule.id}`, DEMO)).status,
    ).toBe(404);
    // b and its two rules, and a's rule naming it
    expect(await securityGroupUsage("demo")).toEqual({ groups: before.groups - 1, rules: before.rules - 3 });
  });

  it("ports: the default group unless given, [] allowed, port security's checks, a group in use", async () => {
    const web = (await call("POST", "/v2.0/security-groups", DEMO, { security_group: { name: "webport" } }))
      .json.security_group;
    const plain = (await call("POST", "/v2.0/ports", DEMO, { port: { network_id: net.id } })).json.port;
    expect(plain).toMatchObject({ security_groups: [defaultGroupId("demo")], port_security_enabled: true });
    const none = (
      await call("POST", "/v2.0/ports", DEMO, { port: { network_id: net.id, security_groups: [] } })
    ).json.port;
    expect(none.security_groups).toEqual([]);
    const given = await call("POST", "/v2.0/ports", DEMO, {
      port: { network_id: net.id, security_groups: [web.id] },
    });
    expect(given.json.port.security_groups).toEqual([web.id]);
    expect(await memberCount(web.id)).toBe(1);
    // another project's group, or a group twice
    const theirs = (await call("GET", "/v2.0/security-groups", other)).json.security_groups[0];
    expect(
      (
        await call("POST", "/v2.0/ports", DEMO, {
          port: { network_id: net.id, security_groups: [theirs.id] },
        })
      ).json,
    ).toEqual(neutronError("SecurityGroupNotFound", `Security group ${theirs.id} does not exist`));
    expect(
      (
        await call("POST", "/v2.0/ports", DEMO, {
          port: { network_id: net.id, security_groups: [web.id, web.id] },
        })
      ).json,
    ).toEqual(
      neutronError(
        "HTTPBadRequest",
        `Invalid input for security_groups. Reason: Duplicate items in the list: '${web.id}'.`,
      ),
    );
    // no port security: no groups (the network owner may turn it off)
    const open = await call("POST", "/v2.0/ports", ADMIN, {
      port: { network_id: net.id, port_security_enabled: false, security_groups: [web.id] },
    });
    expect(open.json).toEqual(
      neutronError(
        "PortSecurityAndIPRequiredForSecurityGroups",
        "Port security must be enabled and port must have an IP address in order to use security groups.",
      ),
    );
    expect(
      (
        await call("PUT", `/v2.0/ports/${given.json.port.id}`, ADMIN, {
          port: { port_security_enabled: false },
        })
      ).json.NeutronError.type,
    ).toBe("PortSecurityPortHasSecurityGroup");
    const off = await call("PUT", `/v2.0/ports/${given.json.port.id}`, ADMIN, {
      port: { port_security_enabled: false, security_groups: [] },
    });
    expect(off.json.port).toMatchObject({ port_security_enabled: false, security_groups: [] });
    expect(await memberCount(web.id)).toBe(0);
    // the group in use: Neutron's 409 until its port leaves it
    const used = await call("PUT", `/v2.0/ports/${plain.id}`, DEMO, { port: { security_groups: [web.id] } });
    expect(used.json.port.security_groups).toEqual([web.id]);
    expect((await call("DELETE", `/v2.0/security-groups/${web.id}`, DEMO)).json).toEqual(
      neutronError("SecurityGroupInUse", `Security Group ${web.id} in use.`),
    );
    expect((await call("DELETE", `/v2.0/ports/${plain.id}`, DEMO)).status).toBe(204);
    expect(await memberCount(web.id)).toBe(0);
    expect((await call("DELETE", `/v2.0/security-groups/${web.id}`, DEMO)).status).toBe(204);
    // ports by group (a list attribute matches when it holds the value)
    const again = (await call("POST", "/v2.0/ports", DEMO, { port: { network_id: net.id } })).json.port;
    const byGroup = await call("GET", `/v2.0/ports?security_groups=${defaultGroupId("demo")}`, DEMO);
    const ids = byGroup.json.ports.map((p: Json) => p.id);
    expect(ids).toContain(again.id);
    expect(ids).not.toContain(none.id);
  });

  it("a default group an admin deleted is made again by the project's next port, or list", async () => {
    const def = defaultGroupId(otherProject);
    expect((await call("GET", `/v2.0/security-groups/${def}`, other)).status).toBe(200);
    expect((await call("DELETE", `/v2.0/security-groups/${def}`, ADMIN)).status).toBe(204);
    expect((await call("GET", `/v2.0/security-groups/${def}`, other)).status).toBe(404);
    // this container saw it a moment ago: the port's create finds it gone and makes it again
    const port = await call("POST", "/v2.0/ports", other, { port: { network_id: net.id } });
    expect(port.status).toBe(201);
    expect(port.json.port.security_groups).toEqual([def]);
    expect((await call("DELETE", `/v2.0/ports/${port.json.port.id}`, other)).status).toBe(204);
    expect((await call("DELETE", `/v2.0/security-groups/${def}`, ADMIN)).status).toBe(204);
    const listed = (await call("GET", "/v2.0/security-groups", other)).json.security_groups;
    expect(listed.map((g: Json) => g.id)).toContain(def);
  });

  it("the project's quota of groups, its default group counted", async () => {
    const saved = process.env.NOVALESS_NEUTRON_QUOTA_SECURITY_GROUP;
    process.env.NOVALESS_NEUTRON_QUOTA_SECURITY_GROUP = "3";
    try {
      const used = (await securityGroupUsage(otherProject)).groups;
      for (let i = used; i < 3; i++)
        expect(
          (await call("POST", "/v2.0/security-groups", other, { security_group: { name: `q${i}` } })).status,
        ).toBe(201);
      expect(
        (await call("POST", "/v2.0/security-groups", other, { security_group: { name: "over" } })).json,
      ).toEqual(neutronError("OverQuota", "Quota exceeded for resources: ['security_group']."));
      expect((await call("GET", `/v2.0/quotas/${otherProject}`, other)).json.quota.security_group).toBe(3);
    } finally {
      if (saved === undefined) delete process.env.NOVALESS_NEUTRON_QUOTA_SECURITY_GROUP;
      else process.env.NOVALESS_NEUTRON_QUOTA_SECURITY_GROUP = saved;
    }
  });
});
