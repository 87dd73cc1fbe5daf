// An address's text to its value, with no Node import so that the web console shares it
// (console/src/model.ts counts a subnet's free addresses). The text must already be valid:
// cidr.ts's parseAddress checks it with node's validators first; the API answers only valid ones.

/** A dotted quad's value. */
export function parseV4(text: string): bigint {
  return text.split(".").reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

/** An IPv6 address's value (compressed or not, an IPv4 tail allowed). */
export function parseV6(text: string): bigint {
  let head = text;
  let tail4: bigint | undefined;
  // an embedded IPv4 tail (::ffff:10.0.0.1) is the last two groups
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    tail4 = parseV4(text.slice(lastColon + 1));
    head = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [left, right] = head.includes("::") ? head.split("::") : [head, undefined];
  const groups = (s: string | undefined) => (s ? s.split(":") : []);
  const l = groups(left);
  const r = groups(right);
  const all = right === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill("0"), ...r];
  let value = all.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
  if (tail4 !== undefined) value = (value & ~0xffffffffn) | tail4;
  return value;
}

/** A valid address's value, its version read from its form. */
export const addressValue = (text: string): bigint => (text.includes(":") ? parseV6(text) : parseV4(text));
