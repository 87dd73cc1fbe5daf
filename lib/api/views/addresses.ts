// Nova's addresses (views/ips.py): a server's fixed IPs by network name, from its network info
// cache (the ports the conductor bound). Hidden while the server builds, as Nova hides them.
import type { InstanceRecord, Vif } from "../../instances/types.js";

export interface AddressView {
  version: 4 | 6;
  addr: string;
  "OS-EXT-IPS:type"?: "fixed";
  "OS-EXT-IPS-MAC:mac_addr"?: string;
}

/** The server's addresses by network label; `extend` adds the type and MAC (the server views). */
export function addressesView(rec: InstanceRecord, extend: boolean): Record<string, AddressView[]> {
  if (rec.vm_state === "building") return {};
  const out: Record<string, AddressView[]> = {};
  for (const vif of rec.network_info ?? []) {
    out[vif.network_name] ??= [];
    const list = out[vif.network_name]!;
    for (const f of vif.fixed_ips) {
      list.push({
        version: f.version,
        addr: f.ip_address,
        ...(extend
          ? { "OS-EXT-IPS:type": "fixed" as const, "OS-EXT-IPS-MAC:mac_addr": vif.mac_address }
          : {}),
      });
    }
  }
  return out;
}

/** One of os-interface's interfaceAttachments (attach_interfaces.py); the tag from 2.70. */
export function interfaceAttachmentView(vif: Vif, showTag: boolean): Record<string, unknown> {
  return {
    net_id: vif.network_id,
    port_id: vif.port_id,
    mac_addr: vif.mac_address,
    port_state: "ACTIVE",
    fixed_ips: vif.fixed_ips.map((f) => ({ subnet_id: f.subnet_id, ip_address: f.ip_address })),
    ...(showTag ? { tag: vif.tag ?? null } : {}),
  };
}
