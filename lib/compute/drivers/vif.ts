// A guest's ports on the host (Nova's libvirt vif.py for Neutron's Open vSwitch agent): each
// physical network is an Open vSwitch bridge the operator made ([ovs] bridge_mappings, as
// Neutron's openvswitch_agent.ini), and each port is a tap on it, tagged with its VLAN for a vlan
// network. Open vSwitch because one bridge then carries every VLAN of its physical network, libvirt
// tagging each port (<vlan><tag/>); with Linux bridges each VLAN would need a bridge of its own on
// every host (Neutron's linuxbridge agent makes one per network), and libvirt tags ports on a
// Linux bridge only in its 2025 releases (Debian 12 has 9.0). Pure.
import { BuildFailure, type GuestPort } from "./driver.js";

/** physical network → bridge */
export type BridgeMappings = Readonly<Record<string, string>>;

/**
 * "physnet1:br-ex,physnet2:br-vlan" → { physnet1: "br-ex", physnet2: "br-vlan" }, refusing what
 * neutron-lib's parse_mappings refuses (keys and values unique), with its texts.
 */
export function parseBridgeMappings(text: string): BridgeMappings {
  const out: Record<string, string> = {};
  for (const raw of text.split(",")) {
    const mapping = raw.trim();
    if (!mapping) continue;
    const parts = mapping.split(":");
    if (parts.length !== 2) throw new Error(`Invalid mapping: '${mapping}'`);
    const key = parts[0]!.trim();
    const value = parts[1]!.trim();
    if (!key) throw new Error(`Missing key in mapping: '${mapping}'`);
    if (!value) throw new Error(`Missing value in mapping: '${mapping}'`);
    if (key in out) throw new Error(`Key ${key} in mapping: '${mapping}' not unique`);
    if (Object.values(out).includes(value))
      throw new Error(`Value ${value} in mapping: '${mapping}' not unique`);
    out[key] = value;
  }
  return out;
}

/** Nova's PortBindingFailed: this host cannot plug the port; another host may (a reschedule). */
export class PortBindingFailed extends BuildFailure {
  override name = "PortBindingFailed";
}

/** A bridge's kind: Open vSwitch ([ovs] bridge_mappings) or a Linux bridge ([linux_bridge] bridge_mappings). */
export type BridgeKind = "openvswitch" | "linux";

/** A port and the bridge this host plugs it into. */
export interface BoundPort {
  port: GuestPort;
  bridge: string;
  kind: BridgeKind;
}

/** The host's mappings of both kinds; a physical network may be in one only. */
export interface HostBridges {
  ovs: BridgeMappings;
  linux: BridgeMappings;
}

/** Refuses a physical network mapped to both an Open vSwitch and a Linux bridge. */
export function checkBridgeKinds(b: HostBridges): void {
  const both = Object.keys(b.ovs).filter((physnet) => physnet in b.linux);
  if (both.length)
    throw new Error(
      `physical network ${both.join(", ")} is mapped in both [ovs] bridge_mappings and [linux_bridge] bridge_mappings`,
    );
}

/**
 * Each port's bridge on this host; PortBindingFailed, naming the host, the port and the network,
 * for a port whose physical network the host does not map (Neutron would not bind it here), or
 * a vlan port whose physical network is a Linux bridge (libvirt 9.0 cannot tag a port there).
 * `mappings`: the Open vSwitch bridges, or both kinds.
 */
export function bindPorts(
  ports: readonly GuestPort[],
  mappings: BridgeMappings | HostBridges,
  host: string,
): BoundPort[] {
  const b: HostBridges = isHostBridges(mappings) ? mappings : { ovs: mappings, linux: {} };
  return ports.map((port) => {
    const physnet = port.physical_network;
    const refuse = (why: string) =>
      new PortBindingFailed(
        `Binding failed for port ${port.port_id} on host ${host}: network ${port.network_name} (${port.network_id}) ${why}`,
      );
    const ovs = physnet === null ? undefined : b.ovs[physnet];
    if (ovs !== undefined) return { port, bridge: ovs, kind: "openvswitch" };
    const linux = physnet === null ? undefined : b.linux[physnet];
    if (linux !== undefined) {
      if (port.network_type === "vlan")
        throw refuse(
          `is a vlan network (VLAN ${port.segmentation_id}) on physical network ${physnet}, which host ${host} maps to Linux bridge ${linux} ([linux_bridge] bridge_mappings): libvirt tags VLANs only on Open vSwitch bridges`,
        );
      return { port, bridge: linux, kind: "linux" };
    }
    const mapped = (m: BridgeMappings) => (Object.keys(m).length ? Object.keys(m).join(", ") : "empty");
    const linuxToo = Object.keys(b.linux).length
      ? `, [linux_bridge] bridge_mappings: ${mapped(b.linux)}`
      : "";
    throw refuse(
      `is on physical network ${physnet ?? "(none)"}, which host ${host} does not map to a bridge ([ovs] bridge_mappings: ${mapped(b.ovs)}${linuxToo})`,
    );
  });
}

function isHostBridges(m: BridgeMappings | HostBridges): m is HostBridges {
  return typeof (m as HostBridges).ovs === "object" && typeof (m as HostBridges).linux === "object";
}
