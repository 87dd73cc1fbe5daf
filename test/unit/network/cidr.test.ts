// Addresses and subnets as Neutron reads them: parsing and its 400 texts, the default gateway and
// pools, the pools' checks, overlaps and the address arithmetic the allocator counts with.
import { describe, expect, it } from "vitest";
import {
  addressAt,
  checkNoOverlap,
  checkPools,
  defaultGateway,
  defaultPools,
  formatAddress,
  inPools,
  isValidForSubnet,
  NetworkingError,
  normalizeAddress,
  overlaps,
  parseAddress,
  parseCidr,
  poolSize,
  rangesOf,
} from "../../../lib/network/cidr.js";

function refusal(f: () => unknown): { status: number; type: string; message: string } {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(NetworkingError);
    const n = e as NetworkingError;
    return { status: n.status, type: n.type, message: n.message };
  }
  throw new Error("not refused");
}

const v4 = (text: string) => parseAddress(text)!.value;

describe("addresses", () => {
  it("reads and writes IPv4 and IPv6 as integers", () => {
    expect(parseAddress("10.20.0.1")).toEqual({ version: 4, value: 0x0a140001n });
    expect(formatAddress(0x0a140001n, 4)).toBe("10.20.0.1");
    expect(parseAddress("2001:db8::1")).toEqual({ version: 6, value: (0x20010db8n << 96n) | 1n });
    expect(parseAddress("::ffff:10.0.0.1")!.value).toBe((0xffffn << 32n) | 0x0a000001n);
    expect(parseAddress("::")!.value).toBe(0n);
  });

  it("writes IPv6 as RFC 5952 (netaddr's form): lower case, the longest zero run as ::", () => {
    expect(normalizeAddress("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(normalizeAddress("2001:db8:0:0:1:0:0:0")).toBe("2001:db8:0:0:1::");
    expect(normalizeAddress("2001:db8:0:1:1:1:1:1")).toBe("2001:db8:0:1:1:1:1:1");
    expect(normalizeAddress("fe80:0:0:0:0:0:0:0")).toBe("fe80::");
    expect(normalizeAddress("0:0:0:0:0:0:0:1")).toBe("::1");
  });

  it("refuses what is not an address", () => {
    for (const bad of [
      "",
      "10.0.0",
      "10.0.0.256",
      "010.0.0.1",
      "2001:db8:::1",
      "fe80::1%eth0",
      " 10.0.0.1",
    ]) {
      expect(parseAddress(bad), bad).toBeUndefined();
    }
  });
});

describe("cidrs", () => {
  it("normalizes the host bits away, as Neutron stores a subnet's cidr", () => {
    expect(parseCidr("10.20.3.4/16").text).toBe("10.20.0.0/16");
    expect(parseCidr("2001:DB8::5/64").text).toBe("2001:db8::/64");
    const c = parseCidr("192.168.1.0/28");
    expect([c.first, c.last, c.prefixlen, c.version]).toEqual([v4("192.168.1.0"), v4("192.168.1.15"), 28, 4]);
  });

  it("refuses a bad cidr with neutron-lib's texts", () => {
    for (const bad of [
      "10.0.0.0",
      "10.0.0.0/33",
      "10.0.0.0/x",
      "nonsense/24",
      "2001:db8::/129",
      " 10.0.0.0/24",
    ]) {
      expect(
        refusal(() => parseCidr(bad)),
        bad,
      ).toEqual({
        status: 400,
        type: "HTTPBadRequest",
        message: `Invalid input for cidr. Reason: '${bad}' is not a valid IP subnet.`,
      });
    }
    expect(refusal(() => parseCidr("0.0.0.0/0")).message).toBe(
      "Invalid input for operation: 0 is not allowed as CIDR prefix length.",
    );
    expect(refusal(() => parseCidr("::/64")).message).toBe(
      "Invalid input for operation: IPv6 subnet '::' is not supported.",
    );
  });

  it("finds overlaps, and refuses a subnet overlapping one of its network's", () => {
    expect(overlaps(parseCidr("10.0.0.0/16"), parseCidr("10.0.5.0/24"))).toBe(true);
    expect(overlaps(parseCidr("10.0.0.0/24"), parseCidr("10.0.1.0/24"))).toBe(false);
    expect(overlaps(parseCidr("10.0.0.0/8"), parseCidr("2001:db8::/64"))).toBe(false);
    expect(() =>
      checkNoOverlap(parseCidr("10.1.0.0/24"), ["10.0.0.0/24", "2001:db8::/64"], "net-1"),
    ).not.toThrow();
    expect(refusal(() => checkNoOverlap(parseCidr("10.0.0.128/25"), ["10.0.0.0/24"], "net-1"))).toEqual({
      status: 400,
      type: "InvalidInput",
      message:
        "Invalid input for operation: Requested subnet with cidr: 10.0.0.128/25 for network: net-1 overlaps with another subnet.",
    });
  });
});

describe("gateway and pools, as Neutron's defaults", () => {
  it("IPv4: the first usable address is the gateway, the pool the rest less network and broadcast", () => {
    const c = parseCidr("10.20.0.0/16");
    expect(defaultGateway(c)).toBe("10.20.0.1");
    expect(defaultPools(c, "10.20.0.1")).toEqual([{ start: "10.20.0.2", end: "10.20.255.254" }]);
    const small = parseCidr("192.168.1.0/28");
    expect(defaultPools(small, defaultGateway(small))).toEqual([
      { start: "192.168.1.2", end: "192.168.1.14" },
    ]);
    expect(poolSize(rangesOf(defaultPools(small, defaultGateway(small))))).toBe(13n);
  });

  it("splits the pool around a gateway in the middle, and keeps it whole without a gateway", () => {
    const c = parseCidr("10.0.0.0/24");
    expect(defaultPools(c, "10.0.0.100")).toEqual([
      { start: "10.0.0.1", end: "10.0.0.99" },
      { start: "10.0.0.101", end: "10.0.0.254" },
    ]);
    expect(defaultPools(c, null)).toEqual([{ start: "10.0.0.1", end: "10.0.0.254" }]);
    // a gateway outside the subnet leaves the pool whole
    expect(defaultPools(c, "10.9.9.9")).toEqual([{ start: "10.0.0.1", end: "10.0.0.254" }]);
  });

  it("a /31 and a /32 keep every address (no network or broadcast to spare)", () => {
    expect(defaultPools(parseCidr("10.0.0.0/31"), null)).toEqual([{ start: "10.0.0.0", end: "10.0.0.1" }]);
    expect(defaultPools(parseCidr("10.0.0.7/32"), null)).toEqual([{ start: "10.0.0.7", end: "10.0.0.7" }]);
  });

  it("IPv6: the gateway is the network address (subnet-router anycast), the pool all after it", () => {
    const c = parseCidr("2001:db8::/64");
    expect(defaultGateway(c)).toBe("2001:db8::");
    expect(defaultPools(c, "2001:db8::")).toEqual([
      { start: "2001:db8::1", end: "2001:db8::ffff:ffff:ffff:ffff" },
    ]);
    expect(poolSize(rangesOf(defaultPools(c, "2001:db8::")))).toBe(2n ** 64n - 1n);
    const small = parseCidr("2001:db8::/124");
    expect(defaultPools(small, defaultGateway(small))).toEqual([
      { start: "2001:db8::1", end: "2001:db8::f" },
    ]);
  });
});

describe("pools given", () => {
  const c = parseCidr("10.0.0.0/24");

  it("accepts valid pools away from the gateway", () => {
    const ranges = checkPools(
      [
        { start: "10.0.0.10", end: "10.0.0.20" },
        { start: "10.0.0.30", end: "10.0.0.30" },
      ],
      c,
      "10.0.0.1",
    );
    expect(poolSize(ranges)).toBe(12n);
    expect(formatAddress(addressAt(ranges, 11n), 4)).toBe("10.0.0.30");
    expect(inPools(ranges, v4("10.0.0.25"))).toBe(false);
  });

  it("refuses with Neutron's texts", () => {
    expect(refusal(() => checkPools([{ start: "10.0.0.20", end: "10.0.0.10" }], c, null))).toEqual({
      status: 400,
      type: "InvalidAllocationPool",
      message: "The allocation pool 10.0.0.20-10.0.0.10 is not valid.",
    });
    expect(refusal(() => checkPools([{ start: "2001:db8::1", end: "2001:db8::2" }], c, null)).type).toBe(
      "InvalidAllocationPool",
    );
    expect(refusal(() => checkPools([{ start: "10.0.0.0", end: "10.0.0.10" }], c, null))).toEqual({
      status: 400,
      type: "OutOfBoundsAllocationPool",
      message: "The allocation pool 10.0.0.0-10.0.0.10 spans beyond the subnet cidr 10.0.0.0/24.",
    });
    expect(
      refusal(() =>
        checkPools(
          [
            { start: "10.0.0.10", end: "10.0.0.20" },
            { start: "10.0.0.20", end: "10.0.0.30" },
          ],
          c,
          null,
        ),
      ),
    ).toEqual({
      status: 409,
      type: "OverlappingAllocationPools",
      message:
        "Found overlapping allocation pools: 10.0.0.10-10.0.0.20 10.0.0.20-10.0.0.30 for subnet 10.0.0.0/24.",
    });
    expect(refusal(() => checkPools([{ start: "10.0.0.1", end: "10.0.0.20" }], c, "10.0.0.5"))).toEqual({
      status: 409,
      type: "GatewayConflictWithAllocationPools",
      message: "Gateway ip 10.0.0.5 conflicts with allocation pool 10.0.0.1-10.0.0.20.",
    });
  });
});

describe("addresses a port may hold (Neutron's check_subnet_ip)", () => {
  it("IPv4: anywhere in the subnet but its network and broadcast addresses, pools or not", () => {
    const c = parseCidr("10.0.0.0/24");
    expect(isValidForSubnet(c, parseAddress("10.0.0.1")!)).toBe(true);
    expect(isValidForSubnet(c, parseAddress("10.0.0.254")!)).toBe(true);
    expect(isValidForSubnet(c, parseAddress("10.0.0.0")!)).toBe(false);
    expect(isValidForSubnet(c, parseAddress("10.0.0.255")!)).toBe(false);
    expect(isValidForSubnet(c, parseAddress("10.0.1.1")!)).toBe(false);
    expect(isValidForSubnet(c, parseAddress("2001:db8::1")!)).toBe(false);
  });

  it("IPv6: anywhere but the network address", () => {
    const c = parseCidr("2001:db8::/124");
    expect(isValidForSubnet(c, parseAddress("2001:db8::f")!)).toBe(true);
    expect(isValidForSubnet(c, parseAddress("2001:db8::")!)).toBe(false);
    expect(isValidForSubnet(c, parseAddress("2001:db8::10")!)).toBe(false);
  });
});
