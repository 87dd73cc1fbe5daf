// network_data.json against Nova's own expectation (nova/tests/unit/network/test_network_info.py
// TestNetworkMetadata.test_get_network_metadata, its VIFs from fake_network_cache_model), and the
// exec driver's NOVALESS_FIXED_IPS.
import { describe, expect, it } from "vitest";
import { configDriveFiles } from "../../../lib/compute/drivers/config-drive.js";
import type { GuestPort, GuestSpec } from "../../../lib/compute/drivers/driver.js";
import { fixedIps, networkData, tapName } from "../../../lib/compute/drivers/network-data.js";

const PORT0 = "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9";
const PORT1 = "1b2c3d4e-5f60-4182-93a4-b5c6d7e8f901";
const SUBNET = "5e6f7a8b-0000-4000-8000-000000000001";

/** fake_network_cache_model's VIFs as ports: each subnet's second address is Nova's too. */
const novaPorts: GuestPort[] = [
  {
    port_id: PORT0,
    network_id: "00000000-0000-0000-0000-000000000000",
    network_name: "public",
    mac_address: "aa:aa:aa:aa:aa:aa",
    fixed_ips: [
      ...["10.10.0.2", "10.10.0.3"].map((ip_address) => ({
        subnet_id: SUBNET,
        ip_address,
        version: 4 as const,
        cidr: "10.10.0.0/24",
        gateway_ip: "10.10.0.1",
        dns_nameservers: ["1.2.3.4", "2.3.4.5"],
        host_routes: [{ destination: "0.0.0.0/24", nexthop: "192.168.1.1" }],
      })),
      ...["fd00::2", "fd00::3"].map((ip_address) => ({
        subnet_id: SUBNET,
        ip_address,
        version: 6 as const,
        cidr: "fd00::/48",
        gateway_ip: "fd00::1",
        dns_nameservers: ["1:2:3:4::", "2:3:4:5::"],
        host_routes: [{ destination: "::/48", nexthop: "fd00::1:1" }],
      })),
    ],
    network_type: "flat",
    physical_network: "physnet1",
    segmentation_id: null,
    mtu: 1500,
  },
  {
    port_id: PORT1,
    network_id: "11111111-1111-1111-1111-111111111111",
    network_name: "private",
    mac_address: "aa:aa:aa:aa:aa:ab",
    fixed_ips: [
      {
        subnet_id: SUBNET,
        ip_address: "192.168.0.2",
        version: 4,
        cidr: "192.168.0.0/24",
        gateway_ip: "192.168.0.1",
        dns_nameservers: ["1.2.3.4", "2.3.4.5"],
        host_routes: [],
      },
    ],
    network_type: "vlan",
    physical_network: "physnet2",
    segmentation_id: 101,
    mtu: 1500,
  },
];

/**
 * Nova's expected_json, verbatim but for the links' names: Nova's test VIFs have no devname, so it
 * names them interfaceN; a VIF from Neutron has one ("tap" + the port id, 14 characters), as ours.
 */
const novaExpected = {
  links: [
    { ethernet_mac_address: "aa:aa:aa:aa:aa:aa", id: "interface0", type: "phy", vif_id: PORT0, mtu: 1500 },
    { ethernet_mac_address: "aa:aa:aa:aa:aa:ab", id: "interface1", type: "phy", vif_id: PORT1, mtu: 1500 },
  ],
  networks: [
    {
      id: "network0",
      ip_address: "10.10.0.2",
      link: "interface0",
      netmask: "255.255.255.0",
      network_id: "00000000-0000-0000-0000-000000000000",
      routes: [
        { gateway: "10.10.0.1", netmask: "0.0.0.0", network: "0.0.0.0" },
        { gateway: "192.168.1.1", netmask: "255.255.255.0", network: "0.0.0.0" },
      ],
      services: [
        { address: "1.2.3.4", type: "dns" },
        { address: "2.3.4.5", type: "dns" },
      ],
      type: "ipv4",
    },
    {
      id: "network1",
      ip_address: "fd00::2",
      link: "interface0",
      netmask: "ffff:ffff:ffff::",
      network_id: "00000000-0000-0000-0000-000000000000",
      routes: [
        { gateway: "fd00::1", netmask: "::", network: "::" },
        { gateway: "fd00::1:1", netmask: "ffff:ffff:ffff::", network: "::" },
      ],
      services: [
        { address: "1:2:3:4::", type: "dns" },
        { address: "2:3:4:5::", type: "dns" },
      ],
      type: "ipv6",
    },
    {
      id: "network2",
      ip_address: "192.168.0.2",
      link: "interface1",
      netmask: "255.255.255.0",
      network_id: "11111111-1111-1111-1111-111111111111",
      routes: [{ gateway: "192.168.0.1", netmask: "0.0.0.0", network: "0.0.0.0" }],
      services: [
        { address: "1.2.3.4", type: "dns" },
        { address: "2.3.4.5", type: "dns" },
      ],
      type: "ipv4",
    },
  ],
  services: [
    { address: "1.2.3.4", type: "dns" },
    { address: "2.3.4.5", type: "dns" },
    { address: "1:2:3:4::", type: "dns" },
    { address: "2:3:4:5::", type: "dns" },
  ],
};

const devname = (s: string) =>
  s.replaceAll("interface0", tapName(PORT0)).replaceAll("interface1", tapName(PORT1));

describe("networkData", () => {
  it("is Nova's get_network_metadata for Nova's own VIFs (type ethernet shown as phy)", () => {
    const expected = JSON.parse(devname(JSON.stringify(novaExpected)));
    expect(networkData(novaPorts, "ethernet")).toEqual(expected);
  });

  it("keeps Nova's key order, and shows a legacy-exposed VIF type as it is", () => {
    const data = networkData(novaPorts, "ovs");
    expect(Object.keys(data)).toEqual(["links", "networks", "services"]);
    expect(Object.keys(data.links[0]!)).toEqual(["id", "vif_id", "type", "mtu", "ethernet_mac_address"]);
    expect(Object.keys(data.networks[0]!)).toEqual([
      "id",
      "type",
      "link",
      "ip_address",
      "netmask",
      "routes",
      "network_id",
      "services",
    ]);
    expect(data.links.map((l) => l.type)).toEqual(["ovs", "ovs"]);
    expect(networkData(novaPorts).links[0]!.type).toBe("bridge");
  });

  it("names the link tap + the port id's first 11 characters (Nova's NIC_NAME_LEN 14)", () => {
    expect(tapName(PORT0)).toBe("tap0a1b2c3d-4e");
  });

  it("gives no default route without a gateway, /64 and host routes in IPv6's short form, no link to a port without addresses", () => {
    const [p] = novaPorts;
    const data = networkData([
      {
        ...p!,
        fixed_ips: [
          {
            ...p!.fixed_ips[2]!,
            cidr: "2001:db8:0:1::/64",
            ip_address: "2001:db8:0:1::5",
            gateway_ip: null,
            host_routes: [{ destination: "2001:db8:0:2::/64", nexthop: "2001:db8:0:1::1" }],
          },
        ],
      },
      { ...novaPorts[1]!, fixed_ips: [] },
    ]);
    expect(data.links).toHaveLength(1);
    expect(data.networks).toEqual([
      expect.objectContaining({
        id: "network0",
        type: "ipv6",
        netmask: "ffff:ffff:ffff:ffff::",
        routes: [{ network: "2001:db8:0:2::", netmask: "ffff:ffff:ffff:ffff::", gateway: "2001:db8:0:1::1" }],
      }),
    ]);
  });

  it("is Nova's empty document for a guest without ports", () => {
    expect(networkData([])).toEqual({ links: [], networks: [], services: [] });
  });

  it("is the config drive's network_data.json", () => {
    const guest = { instance_uuid: PORT0, metadata: {}, ports: novaPorts } as unknown as GuestSpec;
    const file = configDriveFiles(guest, undefined, "ovs")["openstack/latest/network_data.json"];
    expect(JSON.parse(String(file))).toEqual(networkData(novaPorts, "ovs"));
    const bare = configDriveFiles({ ...guest, ports: undefined })["openstack/latest/network_data.json"];
    expect(JSON.parse(String(bare))).toEqual({ links: [], networks: [], services: [] });
  });
});

describe("fixedIps (NOVALESS_FIXED_IPS)", () => {
  it("lists every address, IPv4 first, space-separated", () => {
    expect(fixedIps(novaPorts)).toBe("10.10.0.2 10.10.0.3 192.168.0.2 fd00::2 fd00::3");
    expect(fixedIps([])).toBe("");
  });
});
