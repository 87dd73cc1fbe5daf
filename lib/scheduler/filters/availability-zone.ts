// Nova's AvailabilityZoneFilter: only hosts in the requested availability zone.
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
  hostPasses(host, spec, ctx) {
    // Only the az part is compared; a forced host/node is the force_* stages' business.
    const requested = spec.availability_zone?.split(":")[0];
    if (!requested) return { pass: true };
    // A host in no AZ aggregate is in [DEFAULT] default_availability_zone.
    const hostZone = host.availability_zone || ctx.config.default_availability_zone;
    if (hostZone === requested) return { pass: true };
    return {
      pass: false,
      reason: `host is in availability zone ${hostZone}, not ${requested}`,
      summary: `are not in availability zone ${requested}`,
    };
  },
};
