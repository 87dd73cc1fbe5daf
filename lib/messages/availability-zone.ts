// The availability_zone a server create may carry, read once for the API, the scheduler's zone
// rules and the planner's scenarios: Nova's "zone", "zone:host", "zone::node" and
// "zone:host:node" (the last three are an admin's ways to force a host or node).

/** Nova's parse_availability_zone: the zone, and the host and/or node it forces. */
export interface RequestedAz {
  /** null when only a host or node was given (then any zone) */
  zone: string | null;
  host: string | null;
  node: string | null;
}

/** An empty part asks for nothing; undefined for more than two colons, which Nova rejects. */
export function parseAvailabilityZone(value: string): RequestedAz | undefined {
  const parts = value.split(":");
  if (parts.length > 3) return undefined;
  const [zone, host, node] = parts;
  return { zone: zone || null, host: host || null, node: node || null };
}

/** The zone part of a RequestSpec's availability_zone alone: what the zone rules compare. */
export function requestedZone(value: string | undefined): string | null {
  return value ? (parseAvailabilityZone(value)?.zone ?? null) : null;
}

/**
 * Nova's _handle_availability_zone: the RequestSpec's zone, and the host and node the zone string
 * forces, added to those already forced (forcing skips the filters).
 */
export function zoneRequest(
  az: RequestedAz | null | undefined,
  forced: { force_hosts?: readonly string[] | undefined; force_nodes?: readonly string[] | undefined } = {},
): { availability_zone?: string; force_hosts?: string[]; force_nodes?: string[] } {
  const hosts = [...(forced.force_hosts ?? []), ...(az?.host ? [az.host] : [])];
  const nodes = [...(forced.force_nodes ?? []), ...(az?.node ? [az.node] : [])];
  return {
    ...(az?.zone ? { availability_zone: az.zone } : {}),
    ...(hosts.length ? { force_hosts: hosts } : {}),
    ...(nodes.length ? { force_nodes: nodes } : {}),
  };
}
