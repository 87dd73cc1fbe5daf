// The little of netaddr SimpleCIDRAffinityFilter needs: parse an IPv4/IPv6 address or network and
// test membership. Addresses are byte arrays; a network keeps its prefix length.

export interface IpNetwork {
  bytes: Uint8Array;
  prefix: number;
}

/** An IPv4 (4 bytes) or IPv6 (16 bytes) address, or undefined if the text is neither. */
export function parseIp(text: string): Uint8Array | undefined {
  return text.includes(":") ? parseIpv6(text) : parseIpv4(text);
}

const parsed = new Map<string, Uint8Array | undefined>();

/**
 * parseIp, remembered: a filter asks it of every host's host_ip for each request. The address
 * returned is shared, so callers must not modify it. Bounded: forgets everything past 2^18 texts.
 */
export function parseIpCached(text: string): Uint8Array | undefined {
  let ip = parsed.get(text);
  if (ip === undefined && !parsed.has(text)) {
    if (parsed.size >= 262144) parsed.clear();
    ip = parseIp(text);
    parsed.set(text, ip);
  }
  return ip;
}

/**
 * An IPv4 address's 32 bits as a number (parseIp's bytes, big-endian), NaN when the text is not an
 * IPv4 address (an IPv6 one, or none). Read character by character: the fleet reads every host's.
 */
export function ipv4Number(text: string): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let k = 0; k <= text.length; k++) {
    const code = k < text.length ? text.charCodeAt(k) : 46; // "." ends the last part
    if (code === 46) {
      // parseIpv4: each of 4 parts is 1 to 3 digits, at most 255
      if (digits === 0 || part > 255 || ++parts > 4) return Number.NaN;
      value = value * 256 + part;
      part = 0;
      digits = 0;
    } else if (code >= 48 && code <= 57 && digits < 3) {
      part = part * 10 + (code - 48);
      digits++;
    } else return Number.NaN;
  }
  return parts === 4 ? value : Number.NaN;
}

/** "a.b.c.d/n", "a.b.c.d" (/32), "x::y/n" or "x::y" (/128), as netaddr.IPNetwork. */
export function parseNetwork(text: string): IpNetwork | undefined {
  const slash = text.indexOf("/");
  const addr = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!addr) return undefined;
  const bits = addr.length * 8;
  if (slash < 0) return { bytes: addr, prefix: bits };
  const p = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(p) || Number(p) > bits) return undefined;
  return { bytes: addr, prefix: Number(p) };
}

export function inNetwork(addr: Uint8Array, net: IpNetwork): boolean {
  if (addr.length !== net.bytes.length) return false;
  let bits = net.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((addr[i]! & mask) !== (net.bytes[i]! & mask)) return false;
  }
  return true;
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (const [i, p] of parts.entries()) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return undefined;
    out[i] = Number(p);
  }
  return out;
}

function parseIpv6(text: string): Uint8Array | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  // An embedded IPv4 tail ("::ffff:10.0.0.1") counts as two groups.
  const last = (halves.length === 2 ? tail : head).at(-1);
  let v4: Uint8Array | undefined;
  if (last?.includes(".")) {
    v4 = parseIpv4(last);
    if (!v4) return undefined;
    (halves.length === 2 ? tail : head).pop();
  }
  const words = head.length + tail.length + (v4 ? 2 : 0);
  if (halves.length === 1 ? words !== 8 : words > 7) return undefined;
  const all = [...head, ...Array<string>(8 - words).fill("0"), ...tail];
  const out = new Uint8Array(16);
  for (const [i, g] of all.entries()) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    const n = Number.parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  }
  if (v4) out.set(v4, 12);
  return out;
}
