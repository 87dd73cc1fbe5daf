import type { HostRecord } from "../../placement/types.js";

/** Nova's os-services entry (2.53+: the id is the service's; here the host name). */
export function serviceView(h: HostRecord, up: boolean) {
  return {
    id: h.host,
    binary: "nova-compute",
    host: h.host,
    zone: h.availability_zone,
    status: h.service.disabled ? "disabled" : "enabled",
    state: up ? "up" : "down",
    updated_at: h.service.last_heartbeat,
    disabled_reason: h.service.disabled_reason,
    forced_down: h.service.forced_down,
  };
}
