// Nova's SimpleCIDRAffinityFilter: hints build_near_host_ip and cidr (default "/24"): only hosts
// whose host_ip is in that network. Nova concatenates the two, so cidr is written "/24".
import { schedulerHint } from "../hints.js";
import { inNetwork, parseIpCached, parseNetwork } from "../ip.js";
import type { HostFilter, Rejection } from "../types.js";

export const SimpleCIDRAffinityFilter: HostFilter = {
  name: "SimpleCIDRAffinityFilter",
  // The address of a host does not change within a request.
  runOncePerRequest: true,
  runOnRebuild: false,
  prepare(spec) {
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
    return (host) => {
      const ip = parseIpCached(host.host_ip);
      if (!ip) return { summary, reason: `host_ip "${host.host_ip}" is not an IP address` };
      return inNetwork(ip, net) ? null : new OutsideNetwork(summary, host.host_ip, network);
    };
  },
};

/**
 * A host outside the network. A narrow network turns away nearly every host of the fleet, and
 * only a detailed explanation reads each one's reason: it is written when read, not per host.
 */
class OutsideNetwork implements Rejection {
  constructor(
    readonly summary: string,
    private readonly ip: string,
    private readonly network: string,
  ) {}

  get reason(): string {
    return `host_ip ${this.ip} is not in ${this.network}`;
  }
}
