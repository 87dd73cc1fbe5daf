// Nova's AvailabilityZoneFilter: only hosts in the requested availability zone. A host's zones are
// its aggregates' `availability_zone` metadata, else [DEFAULT] default_availability_zone.

import { aggregateMetadataByHost } from "../aggregates.js";
import { keyed } from "../checks.js";
import type { HostFilter } from "../types.js";

export interface ParsedAvailabilityZone {
  zone?: string;
  host?: string;
  node?: string;
}

/**
 * Nova's API forms "az", "az:host", "az::node" and "az:host:node" (the last three are admin
 * ways to force a host or node; the API turns them into force_hosts/force_nodes). An empty az
 * part means no zone constraint. Returns undefined for more than two colons, which Nova rejects.
 */
export function parseAvailabilityZone(value: string): ParsedAvailabilityZone | undefined {
  const parts = value.split(":");
  if (parts.length > 3) return undefined;
  const [zone, host, node] = parts;
  const parsed: ParsedAvailabilityZone = {};
  if (zone) parsed.zone = zone;
  if (host) parsed.host = host;
  if (node) parsed.node = node;
  return parsed;
}

export const AvailabilityZoneFilter: HostFilter = {
  name: "AvailabilityZoneFilter",
  // Availability zones do not change within a request.
  runOncePerRequest: true,
  reads: "aggregates",
  prepare(spec, ctx) {
    // Only the az part is compared; a forced host/node is the force_* stages' business.
    const requested = spec.availability_zone
      ? parseAvailabilityZone(spec.availability_zone)?.zone
      : undefined;
    if (!requested) return null;
    const summary = `are not in availability zone ${requested}`;
    const fallback = ctx.config.default_availability_zone;
    return keyed((host) => {
      const zones = aggregateMetadataByHost(host.aggregates).get("availability_zone");
      if (zones ? zones.has(requested) : requested === fallback) return null;
      const actual = zones ? [...zones].join(", ") : fallback;
      return { summary, reason: `host is in availability zone ${actual}, not ${requested}` };
    }, `${requested}\u0000${fallback}`);
  },
};
