// A guest's ports on a libvirt host, pure: [ovs] bridge_mappings parsed as neutron-lib's
// parse_mappings, each port bound to its physical network's bridge or refused as Nova's
// PortBindingFailed, one <interface type='bridge'> per port (a vlan port tagged); the build
// message's guest carries its ports, and a guest without them is still valid.
import { describe, expect, it } from "vitest";
import { ConfigError, loadAgentConfig } from "../../../lib/compute/agent-config.js";
import { BuildFailure, type GuestPort, type GuestSpec } from "../../../lib/compute/drivers/driver.js";
import { domainXml, interfaceMacs, interfaceXml } from "../../../lib/compute/drivers/libvirt-xml.js";
import {
  bindPorts,
  checkBridgeKinds,
  PortBindingFailed,
  parseBridgeMappings,
} from "../../../lib/compute/drivers/vif.js";
import { guestSpec, spawnInstanceV1 } from "../../../lib/messages/compute.js";

const flat: GuestPort = {
  port_id: "0a1b2c3d-4e5f-4071-8293-a4b5c6d7e8f9",
  network_id: "9f8e7d6c-0000-4000-8000-000000000001",
  network_name: "public",
  mac_address: "fa:16:3e:11:22:33",
  fixed_ips: [
    {
      subnet_id: "5e6f7a8b-0000-4000-8000-000000000001",
      ip_address: "10.20.0.5",
      version: 4,
      cidr: "10.20.0.0/16",
      gateway_ip: "10.20.0.1",
      dns_nameservers: ["10.20.0.2"],
      host_routes: [],
    },
  ],
  network_type: "flat",
  physical_network: "physnet1",
  segmentation_id: null,
  mtu: 1500,
};
const vlan: GuestPort = {
  ...flat,
  port_id: "1b2c3d4e-5f60-4182-93a4-b5c6d7e8f901",
  network_id: "9f8e7d6c-0000-4000-8000-000000000002",
  network_name: "db-vlan",
  mac_address: "fa:16:3e:44:55:66",
  network_type: "vlan",
  physical_network: "physnet2",
  segmentation_id: 101,
  mtu: 1450,
};

const guest: GuestSpec = {
  instance_uuid: "0b3c2c8e-3d5f-4a8e-9f4e-2a7a1b9c0d11",
  name: "web",
  hostname: "web",
  project_id: "proj",
  user_id: "user",
  flavor: {
    id: "1",
    name: "m1.tiny",
    vcpus: 1,
    memory_mb: 512,
    root_gb: 1,
    ephemeral_gb: 0,
    swap: 0,
    extra_specs: {},
  },
  image: { id: "img-1", name: "cirros", properties: {} },
  metadata: {},
};

const MAPPINGS = parseBridgeMappings("physnet1:br-ex, physnet2:br-vlan");

describe("[ovs] bridge_mappings", () => {
  it("parses as neutron-lib's parse_mappings, refusing what it refuses with its texts", () => {
    expect(MAPPINGS).toEqual({ physnet1: "br-ex", physnet2: "br-vlan" });
    expect(parseBridgeMappings("")).toEqual({});
    expect(parseBridgeMappings(" physnet1:br-ex ,")).toEqual({ physnet1: "br-ex" });
    expect(() => parseBridgeMappings("physnet1")).toThrow("Invalid mapping: 'physnet1'");
    expect(() => parseBridgeMappings("a:b:c")).toThrow("Invalid mapping: 'a:b:c'");
    expect(() => parseBridgeMappings(":br-ex")).toThrow("Missing key in mapping: ':br-ex'");
    expect(() => parseBridgeMappings("physnet1:")).toThrow("Missing value in mapping: 'physnet1:'");
    expect(() => parseBridgeMappings("p:br-a,p:br-b")).toThrow("Key p in mapping: 'p:br-b' not unique");
    expect(() => parseBridgeMappings("p:br-a,q:br-a")).toThrow("Value br-a in mapping: 'q:br-a' not unique");
  });

  it("is read from compute.conf [ovs], and a malformed one stops the agent naming it", () => {
    const load = (conf: string) =>
      loadAgentConfig({
        argv: [],
        env: {
          NOVALESS_NOVALESS_EVENTS_URL: "https://q",
          NOVALESS_NOVALESS_COMPUTE_QUEUE_PREFIX: "p-",
        },
        readFile: (p) => (p === "/etc/novaless/compute.conf" ? conf : undefined),
        machine: { fqdn: "cn-01", ip: "10.0.0.1" },
      });
    expect(load("[ovs]\nbridge_mappings = physnet1:br-ex\n").config.ovs.bridge_mappings).toBe(
      "physnet1:br-ex",
    );
    expect(load("").config.ovs.bridge_mappings).toBeUndefined();
    expect(() => load("[ovs]\nbridge_mappings = physnet1\n")).toThrow(ConfigError);
    expect(() => load("[ovs]\nbridge_mappings = physnet1\n")).toThrow(
      `[ovs] bridge_mappings = "physnet1": Invalid mapping: 'physnet1'`,
    );
  });
});

describe("bindPorts", () => {
  it("puts each port on its physical network's bridge", () => {
    expect(bindPorts([flat, vlan], MAPPINGS, "kvm-1").map((b) => b.bridge)).toEqual(["br-ex", "br-vlan"]);
    expect(bindPorts([], {}, "kvm-1")).toEqual([]);
  });

  it("refuses a port on an unmapped physical network as PortBindingFailed, a BuildFailure naming host, port and network", () => {
    let err: unknown;
    try {
      bindPorts([flat, { ...vlan, physical_network: "physnet9" }], MAPPINGS, "kvm-1");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PortBindingFailed);
    expect(err).toBeInstanceOf(BuildFailure);
    const message = (err as Error).message;
    expect(message).toContain(`Binding failed for port ${vlan.port_id} on host kvm-1`);
    expect(message).toContain(`network db-vlan (${vlan.network_id}) is on physical network physnet9`);
    expect(message).toContain("[ovs] bridge_mappings: physnet1, physnet2");
  });
});

describe("Linux bridges ([linux_bridge] bridge_mappings)", () => {
  const BRIDGES = { ovs: {}, linux: { physnet1: "brq-flat", physnet2: "brq-vlan" } };

  it("puts a flat port on its physical network's Linux bridge, a plain tap without a virtualport", () => {
    const bound = bindPorts([flat], BRIDGES, "kvm-1");
    expect(bound).toEqual([{ port: flat, bridge: "brq-flat", kind: "linux" }]);
    const xml = domainXml(guest, { dir: "/d", rootFormat: "raw" }, "kvm", bound);
    expect(xml.match(/<interface type='bridge'>[\s\S]*?<\/interface>/)?.[0]).toBe(
      [
        "<interface type='bridge'>",
        "      <mac address='fa:16:3e:11:22:33'/>",
        "      <source bridge='brq-flat'/>",
        "      <target dev='tap0a1b2c3d-4e'/>",
        "      <model type='virtio'/>",
        "      <mtu size='1500'/>",
        "    </interface>",
      ].join("\n"),
    );
  });

  it("refuses a vlan port on a Linux bridge as PortBindingFailed naming host, port, network and VLAN", () => {
    let err: unknown;
    try {
      bindPorts([flat, vlan], BRIDGES, "kvm-1");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PortBindingFailed);
    expect((err as Error).message).toBe(
      `Binding failed for port ${vlan.port_id} on host kvm-1: network db-vlan (${vlan.network_id}) is a vlan network (VLAN 101) on physical network physnet2, which host kvm-1 maps to Linux bridge brq-vlan ([linux_bridge] bridge_mappings): libvirt tags VLANs only on Open vSwitch bridges`,
    );
  });

  it("names both kinds of mapping when a physical network is in neither", () => {
    const lost = { ...flat, physical_network: "physnet9" };
    expect(() => bindPorts([lost], { ovs: { physnet3: "br-ex" }, linux: { physnet1: "brq" } }, "h")).toThrow(
      "([ovs] bridge_mappings: physnet3, [linux_bridge] bridge_mappings: physnet1)",
    );
  });

  it("refuses a physical network mapped to both kinds, in compute.conf too", () => {
    expect(() => checkBridgeKinds({ ovs: { physnet1: "br-ex" }, linux: { physnet1: "brq" } })).toThrow(
      "physical network physnet1 is mapped in both [ovs] bridge_mappings and [linux_bridge] bridge_mappings",
    );
    const load = (conf: string) =>
      loadAgentConfig({
        argv: [],
        env: { NOVALESS_NOVALESS_EVENTS_URL: "https://q", NOVALESS_NOVALESS_COMPUTE_QUEUE_PREFIX: "p-" },
        readFile: (p) => (p === "/etc/novaless/compute.conf" ? conf : undefined),
        machine: { fqdn: "cn-01", ip: "10.0.0.1" },
      });
    expect(load("[linux_bridge]\nbridge_mappings = physnet1:brq\n").config.linux_bridge.bridge_mappings).toBe(
      "physnet1:brq",
    );
    expect(() =>
      load("[ovs]\nbridge_mappings = physnet1:br-ex\n[linux_bridge]\nbridge_mappings = physnet1:brq\n"),
    ).toThrow(ConfigError);
    expect(() => load("[linux_bridge]\nbridge_mappings = physnet1\n")).toThrow(
      `[linux_bridge] bridge_mappings = "physnet1": Invalid mapping: 'physnet1'`,
    );
  });
});

describe("domainXml's interfaces", () => {
  const xml = domainXml(
    guest,
    { dir: "/d", rootFormat: "raw" },
    "kvm",
    bindPorts([flat, vlan], MAPPINGS, "kvm-1"),
  );
  const interfaces = xml.match(/<interface type='bridge'>[\s\S]*?<\/interface>/g) ?? [];

  it("writes a flat port untagged on its bridge, as Nova's Open vSwitch VIF", () => {
    expect(interfaces).toHaveLength(2);
    expect(interfaces[0]).toBe(
      [
        "<interface type='bridge'>",
        "      <mac address='fa:16:3e:11:22:33'/>",
        "      <source bridge='br-ex'/>",
        "      <virtualport type='openvswitch'>",
        `        <parameters interfaceid='${flat.port_id}'/>`,
        "      </virtualport>",
        "      <target dev='tap0a1b2c3d-4e'/>",
        "      <model type='virtio'/>",
        "      <mtu size='1500'/>",
        "    </interface>",
      ].join("\n"),
    );
  });

  it("tags a vlan port with its segmentation id on its physical network's bridge", () => {
    expect(interfaces[1]).toContain("<source bridge='br-vlan'/>");
    expect(interfaces[1]).toMatch(/<vlan>\s*<tag id='101'\/>\s*<\/vlan>/);
    expect(interfaces[1]).toContain("<mtu size='1450'/>");
    expect(interfaces[1]).toContain("<target dev='tap1b2c3d4e-5f'/>");
  });

  it("writes no interface for a guest without ports, as before", () => {
    expect(domainXml(guest, { dir: "/d", rootFormat: "raw" }, "kvm")).not.toContain("<interface");
  });
});

describe("an attached port's <interface>", () => {
  it("is the one the domain's XML has for the port (what virsh attach-device and detach-device get)", () => {
    const [bound] = bindPorts([flat], MAPPINGS, "kvm-1");
    const inDomain = domainXml(guest, { dir: "/d", rootFormat: "raw" }, "kvm", [bound!]);
    expect(inDomain).toContain(interfaceXml(bound!));
  });

  it("is found by its MAC in a domain's XML, whatever libvirt adds to it", () => {
    const dumped = `<domain><devices>
    <interface type='bridge'>
      <mac address='FA:16:3E:11:22:33'/>
      <source bridge='br-ex'/>
      <alias name='net1'/>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x07' function='0x0'/>
    </interface>
    <interface type="network"><mac address="52:54:00:aa:bb:cc"/></interface>
    <controller type='pci'/><mac address='00:00:00:00:00:01'/>
  </devices></domain>`;
    expect([...interfaceMacs(dumped)]).toEqual(["fa:16:3e:11:22:33", "52:54:00:aa:bb:cc"]);
    expect(interfaceMacs("<domain/>").size).toBe(0);
  });
});

describe("the build message's guest", () => {
  const spawn = {
    version: 1,
    kind: "spawn_instance",
    request_id: "req-1",
    instance_uuid: guest.instance_uuid,
    host: "kvm-1",
    attempt: 1,
    guest,
  };

  it("is valid without ports (records from before ports, servers without any)", () => {
    const parsed = spawnInstanceV1.parse(spawn);
    expect(parsed.guest.ports).toBeUndefined();
  });

  it("carries its ports, kept whole", () => {
    const parsed = spawnInstanceV1.parse({ ...spawn, guest: { ...guest, ports: [flat, vlan] } });
    expect(parsed.guest.ports).toEqual([flat, vlan]);
    const asSpec: GuestSpec = parsed.guest;
    expect(asSpec.ports?.[1]?.segmentation_id).toBe(101);
  });

  it("refuses a malformed port", () => {
    const bad = (over: Partial<GuestPort>) =>
      guestSpec.safeParse({ ...guest, ports: [{ ...flat, ...over }] }).success;
    expect(bad({})).toBe(true);
    expect(bad({ mac_address: "fa:16:3e:11:22" })).toBe(false);
    expect(bad({ network_type: "vxlan" as "flat" })).toBe(false);
    expect(bad({ segmentation_id: 4095 })).toBe(false);
    expect(bad({ port_id: "not-a-uuid" })).toBe(false);
    expect(
      guestSpec.safeParse({
        ...guest,
        ports: [{ ...flat, fixed_ips: [{ ...flat.fixed_ips[0], version: 5 }] }],
      }).success,
    ).toBe(false);
  });
});
