// IPv4 and IPv6 addresses and subnets as Neutron reads them, pure: parsing (with neutron-lib's
// validators' 400 texts), the default gateway and allocation pools (neutron/db/ipam_backend_mixin.py
// and neutron/ipam/utils.py), the pools' checks, overlaps, and address ↔ BigInt. BigInt throughout:
// an IPv6 address is 128 bits.
import { isIPv4, isIPv6 } from "node:net";
import { parseV4, parseV6 } from "./address.js";

export type IpVersion = 4 | 6;

/** A Neutron fault: its HTTP status, its exception class (NeutronError's `type`) and its message. */
export class NetworkingError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = "NetworkingError";
  }
}

/** neutron-lib's InvalidInput: "Invalid input for operation: …." */
export const invalidInput = (detail: string) =>
  new NetworkingError(400, "InvalidInput", `Invalid input for operation: ${detail}.`);

/** An attribute refused by its validator (neutron-lib's attributes: "Invalid input for <attr>. Reason: …."). */
const invalidAttribute = (attr: string, reason: string) =>
  new NetworkingError(400, "HTTPBadRequest", `Invalid input for ${attr}. Reason: ${reason}.`);

export interface Address {
  version: IpVersion;
  value: bigint;
}

export interface Cidr {
  version: IpVersion;
  /** the network address (host bits cleared, as Neutron stores a subnet's cidr) */
  first: bigint;
  /** the last address (IPv4's broadcast) */
  last: bigint;
  prefixlen: number;
  /** `<network>/<prefixlen>`, normalized */
  text: string;
}

/** Neutron's allocation_pools entry: an inclusive range. */
export interface IpRange {
  start: string;
  end: string;
}

const bitsOf = (v: IpVersion) => (v === 4 ? 32 : 128);

/** An address, or undefined when the text is none (node's own validators decide, as strictly as netaddr). */
export function parseAddress(text: string): Address | undefined {
  if (typeof text !== "string") return undefined;
  if (isIPv4(text)) return { version: 4, value: parseV4(text) };
  // a zone (fe80::1%eth0) is no address of a subnet
  if (isIPv6(text) && !text.includes("%")) return { version: 6, value: parseV6(text) };
  return undefined;
}

/** The text of an address: dotted quad, or IPv6 compressed as RFC 5952 (netaddr's form, lower case). */
export function formatAddress(value: bigint, version: IpVersion): string {
  if (version === 4) {
    return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join(".");
  }
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  // the longest run of two or more zero groups, the first of equals, becomes "::"
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(":");
  if (best < 0) return hex(groups);
  return `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

/** Normalize an address's text (the form stored and compared): undefined when it is none. */
export function normalizeAddress(text: string): string | undefined {
  const a = parseAddress(text);
  return a ? formatAddress(a.value, a.version) : undefined;
}

/**
 * A subnet's cidr, host bits cleared (Neutron stores `<network>/<prefixlen>`). Refused with
 * neutron-lib's validate_subnet text, and Neutron's for a /0 and for IPv6's `::`.
 */
export function parseCidr(text: string): Cidr {
  const bad = () => invalidAttribute("cidr", `'${text}' is not a valid IP subnet`);
  if (typeof text !== "string" || text.trim() !== text) throw bad();
  const slash = text.indexOf("/");
  if (slash < 0) throw bad();
  const address = parseAddress(text.slice(0, slash));
  const lenText = text.slice(slash + 1);
  if (!address || !/^\d{1,3}$/.test(lenText)) throw bad();
  const prefixlen = Number(lenText);
  const bits = bitsOf(address.version);
  if (prefixlen > bits) throw bad();
  if (prefixlen === 0) throw invalidInput("0 is not allowed as CIDR prefix length");
  const hostBits = BigInt(bits - prefixlen);
  const first = (address.value >> hostBits) << hostBits;
  const last = first | ((1n << hostBits) - 1n);
  if (address.version === 6 && first === 0n) throw invalidInput("IPv6 subnet '::' is not supported");
  return {
    version: address.version,
    first,
    last,
    prefixlen,
    text: `${formatAddress(first, address.version)}/${prefixlen}`,
  };
}

export const contains = (cidr: Cidr, a: Address) =>
  a.version === cidr.version && a.value >= cidr.first && a.value <= cidr.last;

/** Two subnets share an address. */
export const overlaps = (a: Cidr, b: Cidr) =>
  a.version === b.version && a.first <= b.last && b.first <= a.last;

/**
 * Neutron's refusal of a subnet whose cidr overlaps one of its network's
 * (ipam_backend_mixin._validate_subnet_cidr: the other subnet is not named).
 */
export function checkNoOverlap(cidr: Cidr, others: readonly string[], networkId: string): void {
  if (others.some((o) => overlaps(cidr, parseCidr(o)))) {
    throw invalidInput(
      `Requested subnet with cidr: ${cidr.text} for network: ${networkId} overlaps with another subnet`,
    );
  }
}

/**
 * An address Neutron lets a port hold on the subnet (ipam/utils.py check_subnet_ip): in the cidr
 * and not the network address (IPv6's subnet-router anycast is a router's, and there are no
 * routers here), nor IPv4's broadcast (netaddr has none for a /31 or /32). Pools bound only what
 * is handed out unasked; a requested fixed IP may be anywhere valid in the subnet, as in Neutron.
 */
export function isValidForSubnet(cidr: Cidr, a: Address): boolean {
  if (!contains(cidr, a) || a.value === cidr.first) return false;
  return !(cidr.version === 4 && cidr.prefixlen <= 30 && a.value === cidr.last);
}

/**
 * Neutron's default gateway_ip: IPv4's first address after the network's, IPv6's the network
 * address itself (the subnet-router anycast; ipam_backend_mixin._gateway_ip_str).
 */
export function defaultGateway(cidr: Cidr): string {
  return formatAddress(cidr.version === 4 ? cidr.first + 1n : cidr.first, cidr.version);
}

/** The usable span of a subnet (validate_allocation_pools' bounds). */
function usable(cidr: Cidr): { first: bigint; last: bigint } {
  if (cidr.version === 4) {
    return cidr.prefixlen <= 30 ? { first: cidr.first + 1n, last: cidr.last - 1n } : cidr;
  }
  return { first: cidr.first + 1n, last: cidr.last };
}

export interface Range {
  first: bigint;
  last: bigint;
}

const rangeText = (r: IpRange) => `${r.start}-${r.end}`;

/**
 * Neutron's default allocation pools (ipam/utils.py generate_pools): the usable span less the
 * gateway (a /31 or /32 keeps all of its addresses).
 */
export function defaultPools(cidr: Cidr, gateway: string | null): IpRange[] {
  const span = cidr.first === cidr.last ? cidr : usable(cidr);
  const gw = gateway === null ? undefined : parseAddress(gateway);
  const pieces: Range[] =
    gw && gw.version === cidr.version && gw.value >= span.first && gw.value <= span.last
      ? [
          { first: span.first, last: gw.value - 1n },
          { first: gw.value + 1n, last: span.last },
        ].filter((r) => r.first <= r.last)
      : [span];
  return pieces.map((r) => ({
    start: formatAddress(r.first, cidr.version),
    end: formatAddress(r.last, cidr.version),
  }));
}

/**
 * Pools given with a subnet, checked as Neutron checks them (validate_allocation_pools and the
 * gateway's conflict): each a valid range of the subnet's version inside its usable span, no two
 * overlapping, the gateway in none. Returns them as ranges, in the order given.
 */
export function checkPools(pools: readonly IpRange[], cidr: Cidr, gateway: string | null): Range[] {
  const ranges = pools.map((p) => {
    const start = parseAddress(p?.start);
    const end = parseAddress(p?.end);
    if (
      !start ||
      !end ||
      start.version !== cidr.version ||
      end.version !== cidr.version ||
      start.value > end.value
    ) {
      throw new NetworkingError(
        400,
        "InvalidAllocationPool",
        `The allocation pool ${rangeText(p)} is not valid.`,
      );
    }
    const span = usable(cidr);
    if (start.value < span.first || end.value > span.last) {
      throw new NetworkingError(
        400,
        "OutOfBoundsAllocationPool",
        `The allocation pool ${rangeText(p)} spans beyond the subnet cidr ${cidr.text}.`,
      );
    }
    return { first: start.value, last: end.value };
  });
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      if (ranges[i]!.first <= ranges[j]!.last && ranges[j]!.first <= ranges[i]!.last) {
        throw new NetworkingError(
          409,
          "OverlappingAllocationPools",
          `Found overlapping allocation pools: ${rangeText(pools[i]!)} ${rangeText(pools[j]!)} for subnet ${cidr.text}.`,
        );
      }
    }
  }
  const gw = gateway === null ? undefined : parseAddress(gateway);
  if (gw) {
    const hit = ranges.findIndex((r) => gw.value >= r.first && gw.value <= r.last);
    if (hit >= 0) {
      throw new NetworkingError(
        409,
        "GatewayConflictWithAllocationPools",
        `Gateway ip ${gateway} conflicts with allocation pool ${rangeText(pools[hit]!)}.`,
      );
    }
  }
  return ranges;
}

/** Pools (stored, already checked) as ranges. */
export function rangesOf(pools: readonly IpRange[]): Range[] {
  return pools.map((p) => ({ first: parseAddress(p.start)!.value, last: parseAddress(p.end)!.value }));
}

/** How many addresses the pools hold. */
export const poolSize = (ranges: readonly Range[]) =>
  ranges.reduce((n, r) => n + (r.last - r.first + 1n), 0n);

/** The pools' index-th address, counting through them in order (0 ≤ index < poolSize). */
export function addressAt(ranges: readonly Range[], index: bigint): bigint {
  let i = index;
  for (const r of ranges) {
    const size = r.last - r.first + 1n;
    if (i < size) return r.first + i;
    i -= size;
  }
  throw new RangeError(`address ${index} is beyond the pools`);
}

/** Whether the address is in one of the pools. */
export const inPools = (ranges: readonly Range[], value: bigint) =>
  ranges.some((r) => value >= r.first && value <= r.last);
