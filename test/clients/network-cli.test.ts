// The `openstack` CLI (Debian python3-openstackclient 6.0) against the Networking front
// (/networking, the catalog's `network`): an admin's flat and vlan provider networks, a subnet
// with its gateway, pool and DNS server, ports with fixed IPs, a member's project network, and
// Neutron's errors as the CLI prints them. One runtime for the file, few commands (each is a
// forked Python of about a second); independent ones run side by side. A server's port is listed
// with `port list --server`.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Cloud, type Json, missing, startCloud, unique } from "./harness.js";

vi.setConfig({ testTimeout: 300_000 });

describe.skipIf(missing("openstack"))("the openstack CLI against the Networking front", () => {
  let cloud: Cloud;
  beforeAll(async () => {
    cloud = await startCloud();
  });
  afterAll(async () => {
    await cloud?.stop();
  });

  it("a shared flat network: create, list, show; a subnet; a fixed IP for one port only; delete", async () => {
    const net = unique("pubnet");
    const created = await cloud.openstack([
      "network",
      "create",
      "--provider-network-type",
      "flat",
      "--provider-physical-network",
      "physnet1",
      "--share",
      net,
    ]);
    expect(created).toMatchObject({
      name: net,
      shared: true,
      status: "ACTIVE",
      "router:external": false,
      "provider:network_type": "flat",
      "provider:physical_network": "physnet1",
      "provider:segmentation_id": null,
      project_id: expect.any(String),
    });

    const sub = unique("pubsub");
    const [listed, shown, subnet] = await Promise.all([
      cloud.openstack(["network", "list"]),
      cloud.openstack(["network", "show", net]),
      cloud.openstack([
        "subnet",
        "create",
        "--network",
        net,
        "--subnet-range",
        "10.30.0.0/24",
        "--gateway",
        "10.30.0.1",
        "--allocation-pool",
        "start=10.30.0.10,end=10.30.0.99",
        "--dns-nameserver",
        "10.30.0.2",
        sub,
      ]),
    ]);
    // the seeded `public` beside it
    expect((listed as Json[]).map((n) => n.Name)).toEqual(expect.arrayContaining([net, "public"]));
    expect(shown).toMatchObject({ id: created.id, name: net, shared: true });
    expect(subnet).toMatchObject({
      name: sub,
      network_id: created.id,
      cidr: "10.30.0.0/24",
      ip_version: 4,
      gateway_ip: "10.30.0.1",
      allocation_pools: [{ start: "10.30.0.10", end: "10.30.0.99" }],
      dns_nameservers: ["10.30.0.2"],
      enable_dhcp: true,
    });

    const port = unique("port");
    const [subnets, p1] = await Promise.all([
      cloud.openstack(["subnet", "list", "--network", net]),
      cloud.openstack([
        "port",
        "create",
        "--network",
        net,
        "--fixed-ip",
        `subnet=${sub},ip-address=10.30.0.20`,
        port,
      ]),
    ]);
    expect(subnets).toEqual([{ ID: subnet.id, Name: sub, Network: created.id, Subnet: "10.30.0.0/24" }]);
    expect(p1).toMatchObject({
      name: port,
      network_id: created.id,
      fixed_ips: [{ subnet_id: subnet.id, ip_address: "10.30.0.20" }],
      mac_address: expect.stringMatching(/^fa:16:3e(:[0-9a-f]{2}){3}$/),
      status: "DOWN",
    });

    // an address outside the pool may be asked for (as in Neutron), but by one port only
    const [taken, ports] = await Promise.all([
      cloud.openstackFails([
        "port",
        "create",
        "--network",
        net,
        "--fixed-ip",
        `subnet=${sub},ip-address=10.30.0.20`,
        unique("port"),
      ]),
      cloud.openstack(["port", "list", "--network", net]),
    ]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(
      `ConflictException: 409: Client Error for url: ${cloud.url}/networking/v2.0/ports, IP address 10.30.0.20 already allocated in subnet ${subnet.id}`,
    );
    // the refused port left nothing behind
    expect(ports).toEqual([
      expect.objectContaining({
        ID: p1.id,
        Name: port,
        "Fixed IP Addresses": [{ subnet_id: subnet.id, ip_address: "10.30.0.20" }],
      }),
    ]);

    // in Neutron's order: the subnet is in use while the port holds its address
    const inUse = await cloud.openstackFails(["subnet", "delete", sub], { json: false });
    expect(inUse.stderr).toContain(
      `Unable to complete operation on subnet ${subnet.id}: One or more ports have an IP allocation from this subnet.`,
    );
    await cloud.openstack(["port", "delete", port], { json: false });
    await cloud.openstack(["subnet", "delete", sub], { json: false });
    await cloud.openstack(["network", "delete", net], { json: false });
    const after: Json[] = await cloud.openstack(["network", "list"]);
    expect(after.map((n) => n.Name)).not.toContain(net);
  });

  it("a server's port: `port list --server` shows the port made on its host; its delete frees it", async () => {
    const name = unique("vm");
    const server = await cloud.openstack([
      "server",
      "create",
      "--flavor",
      "m1.tiny",
      "--image",
      "cirros",
      "--network",
      "public",
      "--wait",
      name,
    ]);
    const [address] = server.addresses.public;
    expect(address).toMatch(/^10\.20\./);
    const ports: Json[] = await cloud.openstack(["port", "list", "--server", name]);
    expect(ports).toEqual([
      expect.objectContaining({
        "Fixed IP Addresses": [{ subnet_id: expect.any(String), ip_address: address }],
        Status: "ACTIVE",
      }),
    ]);
    const port = await cloud.openstack(["port", "show", ports[0].ID]);
    expect(port).toMatchObject({
      device_id: server.id,
      device_owner: `compute:${server["OS-EXT-AZ:availability_zone"]}`,
      binding_host_id: server["OS-EXT-SRV-ATTR:host"],
      binding_vif_type: "bridge",
    });
    await cloud.openstack(["server", "delete", "--wait", name], { json: false });
    const after: Json[] = await cloud.openstack(["port", "list", "--network", "public"]);
    expect(after.map((p) => p.ID)).not.toContain(port.id);
  });

  it("a vlan network holds its VLAN: a second one on it is Neutron's 409 VlanIdInUse", async () => {
    const net = unique("vlan101");
    const vlan = (name: string) => [
      "network",
      "create",
      "--provider-network-type",
      "vlan",
      "--provider-physical-network",
      "physnet1",
      "--provider-segment",
      "101",
      name,
    ];
    const created = await cloud.openstack(vlan(net));
    expect(created).toMatchObject({
      name: net,
      shared: false,
      "provider:network_type": "vlan",
      "provider:physical_network": "physnet1",
      "provider:segmentation_id": 101,
    });
    const inUse = await cloud.openstackFails(vlan(unique("vlan101")));
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toContain(
      "ConflictException: 409, Unable to create the network. The VLAN 101 on physical network physnet1 is in use.",
    );
    await cloud.openstack(["network", "delete", net], { json: false });
  });

  it("a member's network is on its project; provider attributes and sharing are admins'", async () => {
    const net = unique("demonet");
    const adminOnly = unique("adminnet");
    const [created, , demoToken] = await Promise.all([
      cloud.openstack(["network", "create", net], { cloud: "demo" }),
      cloud.openstack(["network", "create", adminOnly]),
      cloud.openstack(["token", "issue"], { cloud: "demo" }),
    ]);
    // a project network is flat on physnet1 (docs/networking.md), but only an admin is told so:
    // the CLI shows the attributes the API left out as None
    expect(created).toMatchObject({
      name: net,
      project_id: demoToken.project_id,
      shared: false,
      "provider:network_type": null,
      "provider:physical_network": null,
      "provider:segmentation_id": null,
    });

    const [seen, asAdmin, shared] = await Promise.all([
      cloud.openstack(["network", "list"], { cloud: "demo" }),
      cloud.openstack(["network", "show", created.id]),
      cloud.openstackFails(["network", "create", "--share", unique("demoshared")], { cloud: "demo" }),
    ]);
    const names = (seen as Json[]).map((n) => n.Name);
    expect(names).toEqual(expect.arrayContaining([net, "public"]));
    expect(names).not.toContain(adminOnly);
    expect(asAdmin).toMatchObject({
      "provider:network_type": "flat",
      "provider:physical_network": "physnet1",
    });
    expect(shared.stderr).toContain(
      "HttpException: 403, (rule:create_network and rule:create_network:shared) is disallowed by policy",
    );
    await Promise.all([
      cloud.openstack(["network", "delete", net], { cloud: "demo", json: false }),
      cloud.openstack(["network", "delete", adminOnly], { json: false }),
    ]);
  });

  it("an unknown network and an overlapping subnet, as the CLI prints Neutron's 404 and 400", async () => {
    const net = unique("errnet");
    const created = await cloud.openstack(["network", "create", net]);
    await cloud.openstack([
      "subnet",
      "create",
      "--network",
      net,
      "--subnet-range",
      "10.31.0.0/24",
      unique("s"),
    ]);
    const unknown = "5b0d7b8e-1111-4000-8000-000000000000";
    const [missingNet, overlap, token] = await Promise.all([
      // the CLI asks for the id (the 404 below), then for a network by that name: none
      cloud.openstackFails(["network", "show", unknown]),
      cloud.openstackFails([
        "subnet",
        "create",
        "--network",
        net,
        "--subnet-range",
        "10.31.0.128/25",
        unique("s"),
      ]),
      cloud.openstack(["token", "issue"]),
    ]);
    const asked = await fetch(`${cloud.url}/networking/v2.0/networks/${unknown}`, {
      headers: { "X-Auth-Token": token.id },
    });
    expect(asked.status).toBe(404);
    expect(await asked.json()).toEqual({
      NeutronError: {
        type: "NetworkNotFound",
        message: `Network ${unknown} could not be found.`,
        detail: "",
      },
    });
    expect(missingNet.code).toBe(1);
    expect(missingNet.stderr).toContain(`No Network found for ${unknown}`);
    expect(overlap.code).toBe(1);
    expect(overlap.stderr).toContain(
      `BadRequestException: 400: Client Error for url: ${cloud.url}/networking/v2.0/subnets, Invalid input for operation: Requested subnet with cidr: 10.31.0.128/25 for network: ${created.id} overlaps with another subnet.`,
    );
  });
});
