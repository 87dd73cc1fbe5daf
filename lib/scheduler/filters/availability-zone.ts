// Nova's AvailabilityZoneFilter: only hosts in the requested availability zone, or (none requested)
// in one of the zones the server's networks are available in (their availability_zone_hints). A
// host's zones are its aggregates' `availability_zone` metadata, else [DEFAULT]
// default_availability_zone.

import { requestedZone } from "../../messages/availability-zone.js";
import { aggregateMetadataByHost } from "../aggregates.js";
import type { HostFilter } from "../types.js";

export const AvailabilityZoneFilter: HostFilter = {
  name: "AvailabilityZoneFilter",
  // Availability zones do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  reads: {
    host: "aggregates",
    spec: ["availability_zone", "network_availability_zones"],
    config: ["default_availability_zone"],
  },
  prepare(spec, ctx) {
    // Only the az part is compared; a forced host/node is the force_* stages' business. (The API
    // refused a requested zone outside the networks' zones.)
    const zone = requestedZone(spec.availability_zone);
    const wanted = zone ? [zone] : (spec.network_availability_zones ?? []);
    if (wanted.length === 0) return null;
    const named = wanted.join(", ");
    const summary = zone
      ? `are not in availability zone ${zone}`
      : `are not in an availability zone of the server's networks (${named})`;
    const fallback = ctx.config.default_availability_zone;
    return (host) => {
      const zones = aggregateMetadataByHost(host.aggregates).get("availability_zone");
      if (wanted.some((w) => (zones ? zones.has(w) : w === fallback))) return null;
      const actual = zones ? [...zones].join(", ") : fallback;
      return { summary, reason: `host is in availability zone ${actual}, not ${named}` };
    };
  },
};
