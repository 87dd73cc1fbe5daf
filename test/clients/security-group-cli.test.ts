// The `openstack` CLI (Debian python3-openstackclient 6.0) with security groups: a member's group
// and its rules (create, list, show, delete; Neutron's 409 for a duplicate rule as the CLI prints
// it), a server created in it (`server create --security-group`), `server add security group` and
// `server remove security group`, and the group in use until its server is gone. One runtime for
// the file; the commands run as the seeded member `demo`.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Cloud, type Json, missing, startCloud, unique } from "./harness.js";

vi.setConfig({ testTimeout: 300_000 });

describe.skipIf(missing("openstack"))("the openstack CLI with security groups", () => {
  let cloud: Cloud;
  beforeAll(async () => {
    cloud = await startCloud({ hosts: 2 });
  });
  afterAll(async () => {
    await cloud?.stop();
  });
  const demo = (args: string[], json = true) => cloud.openstack(args, { cloud: "demo", json });

  it("a group and its rules: create, list, show, a duplicate refused, delete", async () => {
    const name = unique("web");
    const group = await demo(["security", "group", "create", "--description", "web servers", name]);
    expect(group).toMatchObject({ name, description: "web servers", project_id: expect.any(String) });
    const listed: Json[] = await demo(["security", "group", "list"]);
    expect(listed.map((g) => g.Name)).toEqual(expect.arrayContaining([name, "default"]));

    const rule = await demo([
      "security",
      "group",
      "rule",
      "create",
      "--protocol",
      "tcp",
      "--dst-port",
      "22",
      name,
    ]);
    expect(rule).toMatchObject({
      direction: "ingress",
      // (openstacksdk's name for Neutron's ethertype)
      ether_type: "IPv4",
      protocol: "tcp",
      port_range_min: 22,
      port_range_max: 22,
      remote_ip_prefix: "0.0.0.0/0",
      security_group_id: group.id,
    });
    const dup = await cloud.openstackFails(
      ["security", "group", "rule", "create", "--protocol", "tcp", "--dst-port", "22", name],
      { cloud: "demo" },
    );
    expect(dup.stderr).toContain(`Security group rule already exists. Rule id is ${rule.id}.`);
    const rules: Json[] = await demo(["security", "group", "rule", "list", name]);
    expect(rules.map((r) => r.ID)).toContain(rule.id);
    expect(rules).toHaveLength(3);
    const shown = await demo(["security", "group", "show", name]);
    expect(shown.id).toBe(group.id);
    await demo(["security", "group", "rule", "delete", rule.id], false);
    expect(
      ((await demo(["security", "group", "rule", "list", name])) as Json[]).map((r) => r.ID),
    ).not.toContain(rule.id);
    await demo(["security", "group", "delete", name], false);
    const after: Json[] = await demo(["security", "group", "list"]);
    expect(after.map((g) => g.Name)).not.toContain(name);
  });

  it("a server in a group; `server add` and `server remove security group`; the group in use until it is gone", async () => {
    const group = unique("app");
    await demo(["security", "group", "create", group]);
    const vm = unique("vm");
    const server = await demo([
      "server",
      "create",
      "--flavor",
      "m1.tiny",
      "--image",
      "cirros",
      "--network",
      "public",
      "--security-group",
      group,
      "--wait",
      vm,
    ]);
    const names = (s: Json) => JSON.stringify(s.security_groups);
    expect(names(server)).toContain(group);
    expect(names(server)).not.toContain("default");
    const refused = await cloud.openstackFails(["security", "group", "delete", group], {
      cloud: "demo",
      json: false,
    });
    expect(refused.stderr).toContain("in use");

    await demo(["server", "add", "security", "group", vm, "default"], false);
    const added = await demo(["server", "show", vm]);
    expect(names(added)).toContain("default");
    expect(names(added)).toContain(group);
    await demo(["server", "remove", "security", "group", vm, group], false);
    const removed = await demo(["server", "show", vm]);
    expect(names(removed)).toContain("default");
    expect(names(removed)).not.toContain(group);
    const ports: Json[] = await demo(["port", "list", "--server", vm, "--long"]);
    expect(JSON.stringify(ports[0]["Security Groups"])).not.toContain(group);

    await demo(["security", "group", "delete", group], false);
    await demo(["server", "delete", "--wait", vm], false);
  });
});
