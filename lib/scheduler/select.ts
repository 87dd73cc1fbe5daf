// Pure helpers for the claim loop (Nova's FilterScheduler._schedule): the order to try claims
// in, the in-memory consumption between instances, and alternates for reschedules.
import { resourceFit } from "./resource-fit.js";
import type { HostState, ResourceAmounts, Selection, WeighedHost } from "./types.js";

/**
 * Nova's _get_sorted_hosts tail: one host chosen at random among the best host_subset_size
 * (to spread concurrent schedulers that see the same weights), then the rest in weighed order.
 */
export function orderForClaims(
  weighed: readonly WeighedHost[],
  host_subset_size: number,
  random: () => number = Math.random,
): WeighedHost[] {
  if (weighed.length === 0) return [];
  const size = Math.min(Math.max(1, Math.floor(host_subset_size)), weighed.length);
  // min(): a random() that returns 1 must not fall off the subset.
  const i = Math.min(size - 1, Math.floor(random() * size));
  return [weighed[i]!, ...weighed.filter((_, j) => j !== i)];
}

/**
 * Nova's HostState.consume_from_request, on the claimed resources: the next instance of a
 * multi-create sees the host as fuller. Mutates `host`; pass a copy if the state is cached.
 * Disk is DISK_GB × 1024, so swap counts (Nova's consume omits swap; Placement counts it).
 */
export function consume(host: HostState, resources: ResourceAmounts): void {
  for (const [rc, amount] of Object.entries(resources)) {
    const inv = host.resources[rc];
    if (inv) inv.used += amount;
  }
  host.free_ram_mb -= resources.MEMORY_MB ?? 0;
  host.free_disk_mb -= (resources.DISK_GB ?? 0) * 1024;
  host.vcpus_used += resources.VCPU ?? 0;
  host.num_instances += 1;
}

export function toSelection(host: HostState, resources: ResourceAmounts): Selection {
  return { host: host.host, nodename: host.nodename, availability_zone: host.availability_zone, resources };
}

/**
 * Nova's _get_alternate_hosts: up to `count` (max_attempts − 1) other hosts, in weighed order,
 * never the chosen one nor any in `exclude` (every host selected for this request: they were
 * consumed and are poor bets). Unlike Nova, which reuses Placement's candidates unchecked, an
 * alternate must still fit the resources on the (consumed) in-memory state.
 */
export function pickAlternates(
  weighed: readonly WeighedHost[],
  chosen: Selection,
  count: number,
  exclude: ReadonlySet<string>,
): Selection[] {
  const alternates: Selection[] = [];
  for (const { host } of weighed) {
    if (alternates.length >= count) break;
    if (host.host === chosen.host || exclude.has(host.host)) continue;
    if (!resourceFit(host, chosen.resources).fit) continue;
    alternates.push(toSelection(host, chosen.resources));
  }
  return alternates;
}
