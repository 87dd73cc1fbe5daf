// Nova's SimpleCIDRAffinityFilter: hints build_near_host_ip and cidr (default "/24"): only hosts
// whose host_ip is in that network. Nova concatenates the two, so cidr is written "/24".
import { schedulerHint } from "../hints.js";
import { type IpNetwork, inNetwork, parseIpCached, parseNetwork } from "../ip.js";
import type { FleetIndex, HostCheck, HostFilter, HostState, Rejection } from "../types.js";

export const SimpleCIDRAffinityFilter: HostFilter = {
  name: "SimpleCIDRAffinityFilter",
  // The address of a host does not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  prepare(spec, ctx) {
    const near = schedulerHint(spec, "build_near_host_ip");
    if (!near) return null;
    const cidr = schedulerHint(spec, "cidr") ?? "/24";
    const network = `${String(near)}${String(cidr)}`;
    const net = parseNetwork(network);
    if (!net) {
      const invalid = { summary: `cannot be matched: ${network} is not a network` };
      return () => invalid;
    }
    const summary = `are not in ${network}`;
    const check: HostCheck = (host) => {
      const ip = parseIpCached(host.host_ip);
      if (!ip) return { summary, reason: `host_ip "${host.host_ip}" is not an IP address` };
      return inNetwork(ip, net) ? null : new OutsideNetwork(summary, host, network);
    };
    if (net.bytes.length === 4) check.pass = ipv4Pass(ctx.fleet, net, check, summary, network);
    return check;
  },
};

/**
 * The check over many positions for an IPv4 network: the hosts' addresses as numbers (the
 * fleet's column), the network's prefix compared by division, no text read per host. A host
 * whose host_ip is not an IPv4 address goes through the check itself.
 */
function ipv4Pass(
  fleet: FleetIndex,
  net: IpNetwork,
  check: HostCheck,
  summary: string,
  network: string,
): HostCheck["pass"] {
  const [a, b, c, d] = net.bytes;
  // The address's first `prefix` bits: its value ÷ 2^(32 − prefix), rounded down (exact: < 2^32).
  const scale = 2 ** (32 - net.prefix);
  const wanted = Math.floor((((a! * 256 + b!) * 256 + c!) * 256 + d!) / scale);
  return (live, n, next, out) => {
    const ips = fleet.ipv4();
    let kept = 0;
    for (let j = 0; j < n; j++) {
      const i = live[j]!;
      const ip = ips[i]!;
      if (Math.floor(ip / scale) === wanted) next[kept++] = i;
      else {
        const host = fleet.hostAt(i);
        const r = Number.isNaN(ip) ? check(host, i) : new OutsideNetwork(summary, host, network);
        if (r) out.reject(i, r);
        else next[kept++] = i;
      }
    }
    return kept;
  };
}

/**
 * A host outside the network. A narrow network turns away nearly every host of the fleet, and
 * only a detailed explanation reads each one's reason: it is written when read, not per host.
 */
class OutsideNetwork implements Rejection {
  constructor(
    readonly summary: string,
    private readonly host: HostState,
    private readonly network: string,
  ) {}

  get reason(): string {
    return `host_ip ${this.host.host_ip} is not in ${this.network}`;
  }
}
