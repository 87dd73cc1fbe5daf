// Nova's AvailabilityZoneFilter: only hosts in the requested availability zone. A host's zones are
// its aggregates' `availability_zone` metadata, else [DEFAULT] default_availability_zone.

import { requestedZone } from "../../messages/availability-zone.js";
import { aggregateMetadataByHost } from "../aggregates.js";
import type { HostFilter } from "../types.js";

export const AvailabilityZoneFilter: HostFilter = {
  name: "AvailabilityZoneFilter",
  // Availability zones do not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  reads: { host: "aggregates", spec: ["availability_zone"], config: ["default_availability_zone"] },
  prepare(spec, ctx) {
    // Only the az part is compared; a forced host/node is the force_* stages' business.
    const requested = requestedZone(spec.availability_zone);
    if (!requested) return null;
    const summary = `are not in availability zone ${requested}`;
    const fallback = ctx.config.default_availability_zone;
    return (host) => {
      const zones = aggregateMetadataByHost(host.aggregates).get("availability_zone");
      if (zones ? zones.has(requested) : requested === fallback) return null;
      const actual = zones ? [...zones].join(", ") : fallback;
      return { summary, reason: `host is in availability zone ${actual}, not ${requested}` };
    };
  },
};
