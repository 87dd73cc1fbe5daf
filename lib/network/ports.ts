// A port's addresses as Neutron's IPAM gives them, shared by the Networking front and the
// conductor's port binding (lib/instances/ports.ts).
import { randomBytes } from "node:crypto";
import { NetworkingError, parseAddress, parseCidr } from "./cidr.js";
import { allocateAddress, claimAddress } from "./store/addresses.js";
import { type FixedIp, getSubnet, type Network, type Port, type Subnet } from "./store/table.js";

/** Neutron's base MAC, fa:16:3e (its default base_mac), and three random octets. */
export function generatedMac(): string {
  return ["fa", "16", "3e", ...[...randomBytes(3)].map((b) => b.toString(16).padStart(2, "0"))].join(":");
}

/** One entry of a port's fixed_ips as asked: a subnet, an address, or both. */
export interface FixedIpRequest {
  subnet_id?: string;
  ip_address?: string;
}

/** The subnets of a network that still exist (`settled`: made well before; see getSubnet). */
export async function subnetsOf(network: Network, settled = false): Promise<Subnet[]> {
  return (await Promise.all(network.subnets.map((id) => getSubnet(id, settled)))).filter(
    (s): s is Subnet => !!s,
  );
}

/** The subnet of the network an address is in; Neutron's InvalidIpForNetwork (400) when none. */
export function subnetFor(subnets: readonly Subnet[], ipAddress: string): Subnet {
  const a = parseAddress(ipAddress);
  const subnet =
    a &&
    subnets.find((s) => {
      const cidr = parseCidr(s.cidr);
      return a.version === cidr.version && a.value >= cidr.first && a.value <= cidr.last;
    });
  if (!subnet)
    throw new NetworkingError(
      400,
      "InvalidIpForNetwork",
      `IP address ${ipAddress} is not a valid IP for any of the subnets on the specified network.`,
    );
  return subnet;
}

/** A port not written yet, by its id: what allocate wins for it, its create writes. */
const isUnwritten = (p: Port | { unwritten: string }): p is { unwritten: string } =>
  typeof p.unwritten === "string";

/**
 * Give a port the addresses asked for: each `{subnet_id?, ip_address?}`; without fixed_ips, as
 * Neutron's IPAM does, one address from the network's IPv4 subnets (the first with one free)
 * and one from its IPv6 subnets. Idempotent (allocateAddress answers what the port holds).
 * Answers the addresses given (or found held) here; `port` as its caller holds it saves a read.
 * A port not written yet (`{ unwritten: id }`) gets them won only (claimAddress): its create
 * writes them, in the one write of the port.
 */
export async function allocate(
  port: Port | { unwritten: string },
  network: Network,
  wanted: FixedIpRequest[] | undefined,
): Promise<FixedIp[]> {
  // a build's port is on a network the API saw with its subnets: read as settled
  const subnets = await subnetsOf(network, isUnwritten(port));
  const given: FixedIp[] = [];
  const take = async (s: Subnet, ip?: string) => {
    const address = isUnwritten(port)
      ? await claimAddress(s, port.unwritten, ip)
      : await allocateAddress(s, port.id, ip, port);
    given.push({ subnet_id: s.id, ip_address: address });
  };
  if (wanted === undefined) {
    for (const version of [4, 6] as const) {
      const candidates = subnets.filter((s) => s.ip_version === version);
      for (const [i, s] of candidates.entries()) {
        try {
          await take(s);
          break;
        } catch (e) {
          if (
            !(e instanceof NetworkingError && e.type === "IpAddressGenerationFailure") ||
            i === candidates.length - 1
          )
            throw e;
        }
      }
    }
    return given;
  }
  for (const f of wanted) {
    let subnet: Subnet | undefined;
    if (f.subnet_id !== undefined) {
      subnet = await getSubnet(f.subnet_id);
      if (!subnet)
        throw new NetworkingError(404, "SubnetNotFound", `Subnet ${f.subnet_id} could not be found.`);
    } else {
      subnet = subnetFor(subnets, f.ip_address!);
    }
    await take(subnet, f.ip_address);
  }
  return given;
}
