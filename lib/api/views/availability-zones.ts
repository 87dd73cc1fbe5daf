// Nova's os-availability-zone views. The detail lists each available zone's enabled hosts with
// their one service, nova-compute; novaless has no internal zone (no nova-conductor/scheduler
// services to show).
import type { Zone } from "../zones.js";
import { isoMicro } from "./format.js";

export function availabilityZonesView(zones: readonly Zone[]): { availabilityZoneInfo: unknown[] } {
  return {
    availabilityZoneInfo: zones.map((z) => ({
      zoneName: z.name,
      zoneState: { available: z.available },
      hosts: null,
    })),
  };
}

export function availabilityZonesDetailView(zones: readonly Zone[]): { availabilityZoneInfo: unknown[] } {
  return {
    availabilityZoneInfo: zones.map((z) => ({
      zoneName: z.name,
      zoneState: { available: z.available },
      hosts: z.available
        ? Object.fromEntries(
            z.hosts.map((h) => [
              h.host,
              {
                "nova-compute": {
                  available: h.up,
                  active: true,
                  updated_at: isoMicro(h.last_heartbeat),
                },
              },
            ]),
          )
        : null,
    })),
  };
}
