// The libvirt host's security groups (Neutron's security group agent on the host, for
// LibvirtDriver): each port's filter made into nftables rules (port-filter-nft.ts) and loaded
// with `nft -f -`, one transaction per change, where the host's taps are (the driver's own
// network namespace; in the local hosts' harness, the libvirt daemon's). Ports on Linux bridges
// only: a frame between a tap and an Open vSwitch bridge passes no bridge hook, so nftables' bridge
// family never sees it, and the netdev hooks that do cannot track connections (such ports are
// left unfiltered, each said in the log, and the host's facts say so). A host without nft, or
// whose bridged IP traffic does not reach conntrack (br_netfilter), enforces nothing and says
// why in its facts and its log; the guests run all the same, as Neutron's agents run without
// their firewall.
import { log } from "../../log.js";
import type { GuestPort } from "./driver.js";
import { hostCommand } from "./host-command.js";
import { tapName } from "./network-data.js";
import {
  type FilteredPort,
  filteredPort,
  NFT_TABLE,
  nftTransaction,
  tapsInTable,
} from "./port-filter-nft.js";
import type { BoundPort } from "./vif.js";

/** nft answers in milliseconds; a transaction waits on the kernel's lock of the ruleset at most. */
const NFT_TIMEOUT_MS = 30_000;

export interface PortFiltersOptions {
  host: string;
  /** the network namespace of the host's taps, where nft runs (undefined: the agent's own) */
  netns?: string;
  /** why this host cannot filter at all, known before probing (a connection without taps) */
  unsupported?: string;
  /** the Open vSwitch bridges the host maps: their ports are not filtered (said in the facts) */
  ovsBridges: readonly string[];
}

/** A guest's ports, bound to this host's bridges, for a sweep. */
export interface GuestPorts {
  instanceUuid: string;
  ports: readonly BoundPort[];
}

export class PortFilters {
  private why: string | undefined;

  constructor(private readonly opts: PortFiltersOptions) {
    this.why = opts.unsupported ?? "not probed yet";
  }

  get enforced(): boolean {
    return this.why === undefined;
  }

  /** For os-hypervisors (cpu_info): whether and how the host enforces security groups, or why not. */
  facts(): Record<string, unknown> {
    if (this.why !== undefined)
      return { security_groups_enforced: false, security_groups_unenforced: this.why };
    const ovs = this.opts.ovsBridges.length
      ? `; ports on Open vSwitch bridges (${this.opts.ovsBridges.join(", ")}) are not filtered`
      : "";
    return {
      security_groups_enforced: true,
      security_groups_enforcement: `nftables (tables bridge and inet ${NFT_TABLE}): a chain per port on its tap, stateful through br_netfilter's conntrack, on Linux bridges${ovs}`,
    };
  }

  /**
   * At the agent's start: can this host filter (nft installed, bridged IP traffic tracked)? Then
   * every guest's ports filtered as its spec says, and the chains of taps no guest here has
   * removed, in one transaction (what a guest deleted or moved away while the agent was down left).
   * A host that cannot says why, in its log and its facts.
   */
  async start(guests: readonly GuestPorts[]): Promise<void> {
    if (this.opts.unsupported === undefined) {
      this.why = await this.probe();
      if (this.why === undefined) {
        try {
          const present = await this.tapsPresent();
          const define = guests.flatMap((g) => this.filtered(g.instanceUuid, g.ports));
          const keep = new Set(define.map((p) => p.tap));
          await this.nft(nftTransaction({ define, remove: present.filter((t) => !keep.has(t)) }));
        } catch (e) {
          this.why = `nft could not load the host's rules: ${(e as Error).message}`;
        }
      }
    }
    if (this.why !== undefined)
      log.warn("libvirt.security_groups_unenforced", { host: this.opts.host, why: this.why });
  }

  /** Whether nft runs and bridged IPv4 and IPv6 traffic reaches conntrack; why not, if not. */
  private async probe(): Promise<string | undefined> {
    try {
      await this.run(["nft", "--version"]);
    } catch (e) {
      return `nft does not run on host ${this.opts.host} (apt-get install nftables): ${(e as Error).message}`;
    }
    const keys = ["bridge-nf-call-iptables", "bridge-nf-call-ip6tables"];
    const values = await this.run(["cat", ...keys.map((k) => `/proc/sys/net/bridge/${k}`)]).catch(() => "");
    const on = values.split("\n").filter(Boolean);
    if (on.length !== keys.length)
      return `br_netfilter is not loaded on host ${this.opts.host}, so bridged traffic is not tracked (modprobe br_netfilter)`;
    const off = keys.filter((_, i) => on[i]!.trim() !== "1");
    if (off.length)
      return `net.bridge.${off.join(" and net.bridge.")} is 0 on host ${this.opts.host}, so bridged traffic is not tracked (sysctl -w net.bridge.${off[0]}=1)`;
    return undefined;
  }

  /**
   * Each port's filter enforced now, replacing what was enforced for it: chains for a filtered
   * port on a Linux bridge, none for one without a filter or with port security off.
   */
  async apply(instanceUuid: string, ports: readonly BoundPort[]): Promise<void> {
    if (!this.enforced || !ports.length) return;
    const define = this.filtered(instanceUuid, ports);
    const defined = new Set(define.map((p) => p.tap));
    const remove = ports.map((b) => tapName(b.port.port_id)).filter((t) => !defined.has(t));
    await this.nft(nftTransaction({ define, remove }), instanceUuid);
  }

  /** The ports' chains gone (a guest destroyed, or moved away). */
  async remove(instanceUuid: string, ports: readonly GuestPort[]): Promise<void> {
    if (!this.enforced || !ports.length) return;
    await this.nft(nftTransaction({ remove: ports.map((p) => tapName(p.port_id)) }), instanceUuid);
  }

  /** The ports of a guest that get chains; a filtered port on Open vSwitch is logged as unfiltered. */
  private filtered(instanceUuid: string, ports: readonly BoundPort[]): FilteredPort[] {
    const out: FilteredPort[] = [];
    for (const { port, bridge, kind } of ports) {
      const p = filteredPort(instanceUuid, port);
      if (!p) continue;
      if (kind === "linux") out.push(p);
      else
        log.warn("libvirt.port_unfiltered", {
          host: this.opts.host,
          instance_uuid: instanceUuid,
          port_id: port.port_id,
          why: `port ${port.port_id} is on Open vSwitch bridge ${bridge}, whose ports novaless does not filter`,
        });
    }
    return out;
  }

  private async tapsPresent(): Promise<string[]> {
    const listing = await this.run(["nft", "-j", "list", "table", "bridge", NFT_TABLE]).catch(
      () => undefined,
    );
    return listing ? tapsInTable(listing) : [];
  }

  private nft(ruleset: string, instance?: string): Promise<string> {
    return this.run(["nft", "-f", "-"], { input: ruleset, instance });
  }

  private run(argv: string[], more: { input?: string; instance?: string } = {}): Promise<string> {
    const where = this.opts.netns ? ["ip", "netns", "exec", this.opts.netns] : [];
    return hostCommand([...where, ...argv], {
      host: this.opts.host,
      timeoutMs: NFT_TIMEOUT_MS,
      ...more,
    });
  }
}
