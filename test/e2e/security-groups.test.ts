// Security groups on servers, on the local runtime with fake hosts and the seeded `public`
// network: a create's security_groups (names or ids, Nova's 400 for one the project does not
// have) on the ports the conductor makes; the server view's groups; addSecurityGroup and
// removeSecurityGroup with Nova's errors; os-security-groups up to 2.35 and a server's groups;
// and the hosts kept current: each build's ports carry their filters, and a rule added or
// deleted, a server joining or leaving a group (a build, the actions, a delete) casts
// refresh_port_filters to the hosts of the servers whose filters it changes (a build's or a
// delete's within the member sync's window: test/e2e/security-group-sync.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeDriver } from "../../lib/compute/drivers/fake.js";
import type { PortFilter } from "../../lib/messages/port-filter.js";
import { defaultGroupId } from "../../lib/network/security-groups.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";
import { admitted, publicAddressOf } from "./port-filters.js";

let runtime: Runtime;
let demo: Client;
let admin: Client;

beforeAll(async () => {
  ({ runtime, client: demo } = await startTestRuntime({ hosts: 2, buildMs: 20, seedNetwork: true }));
  admin = demo.as(ADMIN);
});
afterAll(async () => runtime?.stop());

// biome-ignore lint/suspicious/noExplicitAny: API bodies; the assertions check their shape
type Json = any;

const neutron = (c: Client, method: string, path: string, body?: unknown) =>
  c.call(method, `/networking/v2.0/${path}`, body);
const message = (r: { body: Record<string, { message?: string }> }) => Object.values(r.body)[0]?.message;

async function active(id: string): Promise<Json> {
  const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
  expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
  return s;
}

/** The filters the server's host enforces for its ports, by port (the fake driver records them). */
async function enforced(id: string): Promise<Map<string, PortFilter | undefined>> {
  const host = (await admin.get(`/v2.1/servers/${id}`)).body.server["OS-EXT-SRV-ATTR:host"];
  return (runtime.hosts.get(host)!.driver as FakeDriver).portFilters.get(id) ?? new Map();
}

/** The one port's filter of a server. */
const filterOf = async (id: string) => [...(await enforced(id)).values()][0];

const addressOf = (id: string) => publicAddressOf(demo, id);

describe("security groups on servers", () => {
  it("a create's groups are checked, put on its ports, shown in its view; a build carries its filter", async () => {
    const web = (await neutron(demo, "POST", "security-groups", { security_group: { name: "e2e-web" } })).body
      .security_group;
    const unknown = await demo.post("/v2.1/servers", {
      server: { name: "x", flavorRef: "1", imageRef: "cirros", security_groups: [{ name: "nope" }] },
    });
    expect(unknown.status).toBe(400);
    expect(message(unknown)).toBe("Unable to find security_group with name or id 'nope'");

    const created = await demo.post("/v2.1/servers", {
      server: {
        name: "sg1",
        flavorRef: "1",
        imageRef: "cirros",
        security_groups: [{ name: "e2e-web" }, { name: "default" }],
      },
    });
    expect(created.status).toBe(202);
    expect(created.body.server.security_groups).toEqual([{ name: "e2e-web" }, { name: "default" }]);
    const id = created.body.server.id;
    const s = await active(id);
    expect(s.security_groups).toEqual([{ name: "e2e-web" }, { name: "default" }]);
    const ports = (await neutron(demo, "GET", `ports?device_id=${id}`)).body.ports;
    expect(ports[0].security_groups).toEqual([web.id, defaultGroupId("demo")]);
    expect(ports[0].port_security_enabled).toBe(true);
    const f = await filterOf(id);
    expect(f).toMatchObject({
      port_security_enabled: true,
      security_groups: [web.id, defaultGroupId("demo")],
    });
    // (the two groups' egress rules are the same: filtered as one each)
    expect(
      f!.rules
        .filter((r) => r.direction === "egress")
        .flatMap((r) => r.remote_ips)
        .sort(),
    ).toEqual(["0.0.0.0/0", "::/0"]);

    // a rule added to one of its groups reaches its host; deleted, it goes again
    const rule = await neutron(demo, "POST", "security-group-rules", {
      security_group_rule: {
        security_group_id: web.id,
        direction: "ingress",
        protocol: "tcp",
        port_range_min: 443,
        port_range_max: 443,
      },
    });
    expect(rule.status).toBe(201);
    const has443 = (x: PortFilter | undefined) => !!x?.rules.some((r) => r.port_range_min === 443);
    expect(has443(await eventually(() => filterOf(id), has443))).toBe(true);
    expect(
      (await neutron(demo, "DELETE", `security-group-rules/${rule.body.security_group_rule.id}`)).status,
    ).toBe(204);
    expect(
      has443(
        await eventually(
          () => filterOf(id),
          (x) => !has443(x),
        ),
      ),
    ).toBe(false);

    await demo.delete(`/v2.1/servers/${id}`);
    await admin.waitForStatus(id, ["GONE"]);
    expect((await neutron(demo, "DELETE", `security-groups/${web.id}`)).status).toBe(204);
  });

  it("the default group admits its members: a server built, or deleted, changes its peers' filters", async () => {
    const a = await demo.createServer({ name: "peer-a" });
    await active(a);
    const b = await demo.createServer({ name: "peer-b" });
    await active(b);
    const [ipA, ipB] = [await addressOf(a), await addressOf(b)];
    // b's build told a's host to admit b; b's own filter admits a (its spawn's)
    expect(
      admitted(
        await eventually(
          () => filterOf(a),
          (f) => admitted(f).includes(`${ipB}/32`),
        ),
      ),
    ).toContain(`${ipB}/32`);
    expect(admitted(await filterOf(b))).toContain(`${ipA}/32`);
    // and not itself
    expect(admitted(await filterOf(a))).not.toContain(`${ipA}/32`);

    await demo.delete(`/v2.1/servers/${b}`);
    await admin.waitForStatus(b, ["GONE"]);
    expect(
      admitted(
        await eventually(
          () => filterOf(a),
          (f) => !admitted(f).includes(`${ipB}/32`),
        ),
      ),
    ).not.toContain(`${ipB}/32`);
    await demo.delete(`/v2.1/servers/${a}`);
    await admin.waitForStatus(a, ["GONE"]);
  });

  it("addSecurityGroup and removeSecurityGroup change the server's ports, its view, and its peers' filters", async () => {
    const db = (await neutron(demo, "POST", "security-groups", { security_group: { name: "e2e-db" } })).body
      .security_group;
    const a = await demo.createServer({ name: "act-a" });
    const b = await demo.createServer({ name: "act-b" });
    await active(a);
    await active(b);
    const ipB = await addressOf(b);
    await eventually(
      () => filterOf(a),
      (f) => admitted(f).includes(`${ipB}/32`),
    );

    const act = (id: string, body: unknown) => demo.post(`/v2.1/servers/${id}/action`, body);
    expect((await act(b, { addSecurityGroup: { name: "e2e-db" } })).status).toBe(202);
    const added = await act(b, { addSecurityGroup: { name: "e2e-db" } });
    expect(added.status).toBe(400);
    expect(message(added)).toBe(
      `Invalid input for security_groups. Reason: Duplicate items in the list: '${db.id}'.`,
    );
    expect(message(await act(b, { addSecurityGroup: { name: "nope" } }))).toBe(
      "Security group nope is not found for project demo",
    );
    expect((await act(b, { addSecurityGroup: { name: "  " } })).status).toBe(400);
    const view = (await demo.get(`/v2.1/servers/${b}`)).body.server;
    expect(view.security_groups).toEqual([{ name: "default" }, { name: "e2e-db" }]);
    const listed = (await demo.get(`/v2.1/servers/${b}/os-security-groups`)).body.security_groups;
    expect(listed.map((g: Json) => g.name)).toEqual(["default", "e2e-db"]);
    // the default group's ingress rules (IPv4 and IPv6) admit its own members
    expect(listed[0].rules.map((r: Json) => r.group)).toEqual([
      { name: "default", tenant_id: "demo" },
      { name: "default", tenant_id: "demo" },
    ]);
    await eventually(
      () => filterOf(b),
      (f) => f?.security_groups.includes(db.id) ?? false,
    );

    // b leaves default: a no longer admits it; the view shows what is left
    expect((await act(b, { removeSecurityGroup: { name: "default" } })).status).toBe(202);
    expect(
      admitted(
        await eventually(
          () => filterOf(a),
          (f) => !admitted(f).includes(`${ipB}/32`),
        ),
      ),
    ).not.toContain(`${ipB}/32`);
    const notThere = await act(b, { removeSecurityGroup: { name: "default" } });
    expect(notThere.status).toBe(404);
    expect(message(notThere)).toBe(`Security group default not associated with the instance ${b}`);
    expect((await act(b, { removeSecurityGroup: { name: db.id } })).status).toBe(202);
    // no group left: Nova leaves the key out (tempest's test_remove_server_all_security_groups)
    expect((await demo.get(`/v2.1/servers/${b}`)).body.server).not.toHaveProperty("security_groups");
    const f = await eventually(
      () => filterOf(b),
      (x) => x?.security_groups.length === 0,
    );
    expect(f).toEqual({ port_security_enabled: true, security_groups: [], rules: [] });

    // a server without ports has none to add a group to
    const portless = await demo.at("2.37").createServer({ name: "np", networks: "none" });
    await active(portless);
    const np = await act(portless, { addSecurityGroup: { name: "e2e-db" } });
    expect(np.status).toBe(404);
    expect(message(np)).toBe(`instance_id ${portless} could not be found as device id on any ports`);
    expect((await demo.get(`/v2.1/servers/${portless}`)).body.server).not.toHaveProperty("security_groups");
    await demo.delete(`/v2.1/servers/${portless}`);
    for (const id of [a, b]) await demo.delete(`/v2.1/servers/${id}`);
    for (const id of [a, b]) await admin.waitForStatus(id, ["GONE"]);
    expect((await neutron(demo, "DELETE", `security-groups/${db.id}`)).status).toBe(204);
  });

  it("os-security-groups and os-security-group-rules answer up to 2.35 and 404 after", async () => {
    const v235 = demo.at("2.35");
    const made = await v235.post("/v2.1/os-security-groups", {
      security_group: { name: "nova-sg", description: "d" },
    });
    expect(made.status).toBe(200);
    const g = made.body.security_group;
    expect(g).toEqual({
      id: expect.any(String),
      name: "nova-sg",
      description: "d",
      tenant_id: "demo",
      rules: [],
    });
    const rule = await v235.post("/v2.1/os-security-group-rules", {
      security_group_rule: { parent_group_id: g.id, ip_protocol: "tcp", from_port: 22, to_port: 22 },
    });
    expect(rule.body.security_group_rule).toMatchObject({
      parent_group_id: g.id,
      ip_protocol: "tcp",
      from_port: 22,
      to_port: 22,
      group: {},
      ip_range: { cidr: "0.0.0.0/0" },
    });
    const again = await v235.post("/v2.1/os-security-group-rules", {
      security_group_rule: { parent_group_id: g.id, ip_protocol: "tcp", from_port: 22, to_port: 22 },
    });
    expect(again.status).toBe(400);
    expect(message(again)).toBe(`This rule already exists in group ${g.id}`);
    const list = (await v235.get("/v2.1/os-security-groups")).body.security_groups;
    expect(list.map((x: Json) => x.name)).toEqual(expect.arrayContaining(["default", "nova-sg"]));
    expect((await v235.get(`/v2.1/os-security-groups/${g.id}`)).body.security_group.rules).toHaveLength(1);
    expect((await v235.get("/v2.1/os-security-groups/not-a-uuid")).status).toBe(400);
    const def = list.find((x: Json) => x.name === "default");
    const refused = await v235.delete(`/v2.1/os-security-groups/${def.id}`);
    expect(refused.status).toBe(400);
    expect(message(refused)).toBe("Insufficient rights for removing default security group.");
    expect((await demo.at("2.36").get("/v2.1/os-security-groups")).status).toBe(404);
    expect(
      (await v235.delete(`/v2.1/os-security-group-rules/${rule.body.security_group_rule.id}`)).status,
    ).toBe(202);
    expect((await v235.delete(`/v2.1/os-security-groups/${g.id}`)).status).toBe(202);
    expect((await v235.get(`/v2.1/os-security-groups/${g.id}`)).status).toBe(404);
  });
});
