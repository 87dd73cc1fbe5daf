// Nova's os-services entries, as a version table: 2.11 adds forced_down; the id is the host name
// (for Nova's integer), the service's uuid from 2.53. There is one service per host here, its
// nova-compute. State and updated_at come from the heartbeat; a host that never heartbeated is
// down, updated_at null.
import type { ServiceHeartbeat } from "../../placement/liveness.js";
import { isHeartbeatAlive } from "../../placement/liveness.js";
import type { HostRecord } from "../../placement/types.js";
import { serviceNumber, serviceUuid } from "../host-ids.js";
import { viewFields } from "../microversion.js";
import { isoMicro } from "./format.js";

export interface ServiceContext {
  heartbeat: ServiceHeartbeat | undefined;
  serviceDownTime: number;
  now: number;
}

export const serviceView = viewFields<HostRecord, ServiceContext>([
  {
    fields: (h, c) => {
      const up =
        !h.service.forced_down &&
        c.heartbeat !== undefined &&
        isHeartbeatAlive(c.heartbeat, c.serviceDownTime, c.now);
      return {
        id: serviceNumber(h.host),
        binary: "nova-compute",
        host: h.host,
        zone: h.availability_zone,
        status: h.service.disabled ? "disabled" : "enabled",
        state: up ? "up" : "down",
        // Nova's servicegroup time, as its datetimes serialize: microseconds, no zone
        updated_at: c.heartbeat ? isoMicro(c.heartbeat.last_heartbeat) : null,
        disabled_reason: h.service.disabled_reason,
      };
    },
  },
  { min: "2.11", fields: (h) => ({ forced_down: h.service.forced_down }) },
  { min: "2.53", fields: (h) => ({ id: serviceUuid(h.host) }) },
]);

/** The answer of a pre-2.53 action: what was asked, as Nova echoes it. */
export function legacyServiceView(
  host: string,
  binary: string,
  change: { disabled?: boolean; disabled_reason?: string | null; forced_down?: boolean },
): { service: Record<string, unknown> } {
  const service: Record<string, unknown> = { host, binary };
  if (change.disabled !== undefined) service.status = change.disabled ? "disabled" : "enabled";
  if (change.disabled_reason) service.disabled_reason = change.disabled_reason;
  if (change.forced_down !== undefined) service.forced_down = change.forced_down;
  return { service };
}
