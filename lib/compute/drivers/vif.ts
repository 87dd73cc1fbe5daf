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

/** A port and the bridge this host plugs it into. */
export interface BoundPort {
  port: GuestPort;
  bridge: string;
}

/**
 * Each port's bridge on this host; PortBindingFailed, naming the host, the port and the network,
 * for a port whose physical network the host does not map (Neutron would not bind it here).
 */
export function bindPorts(ports: readonly GuestPort[], mappings: BridgeMappings, host: string): BoundPort[] {
  return ports.map((port) => {
    const bridge = port.physical_network === null ? undefined : mappings[port.physical_network];
    if (bridge !== undefined) return { port, bridge };
    const mapped = Object.keys(mappings);
    throw new PortBindingFailed(
      `Binding failed for port ${port.port_id} on host ${host}: network ${port.network_name} (${port.network_id}) is on physical network ${port.physical_network ?? "(none)"}, which host ${host} does not map to a bridge ([ovs] bridge_mappings: ${mapped.length ? mapped.join(", ") : "empty"})`,
    );
  });
}
