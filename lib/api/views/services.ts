import type { ServiceHeartbeat } from "../../placement/liveness.js";
import { isHeartbeatAlive } from "../../placement/liveness.js";
import type { HostRecord } from "../../placement/types.js";

/**
 * Nova's os-services entry (2.53+: the id is the service's; here the host name). State and
 * updated_at come from the heartbeat; a host that never heartbeated is down, updated_at null.
 */
export function serviceView(
  h: HostRecord,
  heartbeat: ServiceHeartbeat | undefined,
  serviceDownTime: number,
  now: number,
) {
  const up =
    !h.service.forced_down && heartbeat !== undefined && isHeartbeatAlive(heartbeat, serviceDownTime, now);
  return {
    id: h.host,
    binary: "nova-compute",
    host: h.host,
    zone: h.availability_zone,
    status: h.service.disabled ? "disabled" : "enabled",
    state: up ? "up" : "down",
    updated_at: heartbeat?.last_heartbeat ?? null,
    disabled_reason: h.service.disabled_reason,
    forced_down: h.service.forced_down,
  };
}
