// The hosts one scheduling run decides over, with what is worth knowing about them as a whole:
// which instance runs where, and which hosts share the same aggregates (a verdict that reads
// only aggregates is the same for all of them). Hosts are addressed by their position.
import { weightMultiplier } from "./aggregates.js";
import type {
  FleetIndex,
  HostAggregate,
  HostFacet,
  HostNumber,
  HostState,
  Rejection,
  ResourceAmounts,
} from "./types.js";

export class Fleet implements FleetIndex {
  readonly hosts: readonly HostState[];
  /** every aggregate (Placement's and the prefilters' view), hosts or not */
  readonly aggregates: readonly HostAggregate[];
  /**
   * Per facet, position → class id: hosts in one class have the same aggregates (traits,
   * hypervisor, metric names), so a verdict reading only that facet holds for all of them.
   */
  readonly classOf: Readonly<Record<HostFacet, Int32Array>>;
  readonly classCount: Readonly<Record<HostFacet, number>>;
  /** every position, in order */
  readonly all: Int32Array;
  /** two arrays of the fleet's size for the scheduler's passes (one decision at a time) */
  readonly scratch: readonly [Int32Array, Int32Array];
  /** per aggregate class, the aggregate list its hosts share */
  readonly aggregateLists: (readonly HostAggregate[])[];
  /** per aggregate class, its hosts' positions in order */
  readonly aggregateMembers: Int32Array[];
  /** instance uuid → position; built when first asked (only hints and server groups need it) */
  private instanceIndex: Map<string, number> | undefined;
  private readonly byName = new Map<string, number[]>();
  private readonly byLowerName = new Map<string, number[]>();
  private readonly columns = new Map<string, ResourceColumn>();
  private readonly multiplierTables = new Map<string, MultiplierTable>();
  private readonly verdictCache = new Map<string, (Rejection | null | undefined)[]>();
  private readonly masks = new Map<string, Uint8Array>();
  private readonly numbersByClass = new Map<string, Float64Array>();
  private readonly numbers: Record<HostNumber, Float64Array>;
  private readonly metrics = new Map<string, { value: Float64Array; has: Uint8Array }>();

  constructor(hosts: readonly HostState[], aggregates: readonly HostAggregate[]) {
    this.hosts = hosts;
    this.aggregates = aggregates;
    this.all = Int32Array.from(hosts.keys());
    this.scratch = [new Int32Array(hosts.length), new Int32Array(hosts.length)];
    this.numbers = Object.fromEntries(
      HOST_NUMBERS.map((f) => [f, Float64Array.from(hosts, (h) => h[f])]),
    ) as Record<HostNumber, Float64Array>;
    const facets = {
      aggregates: classes(hosts, (h) => h.aggregates.map((a) => a.id).join("\u0000")),
      traits: classes(hosts, (h) => [...h.traits].sort().join("\u0000")),
      hypervisor: classes(hosts, (h) =>
        JSON.stringify([h.supported_instances, h.hypervisor_type, h.hypervisor_version]),
      ),
      metrics: classes(hosts, (h) => Object.keys(h.metrics).sort().join("\u0000")),
      service: classes(hosts, (h) => JSON.stringify(h.service)),
    };
    this.classOf = {
      aggregates: facets.aggregates.of,
      traits: facets.traits.of,
      hypervisor: facets.hypervisor.of,
      metrics: facets.metrics.of,
      service: facets.service.of,
    };
    this.aggregateLists = [];
    this.classCount = {
      aggregates: facets.aggregates.count,
      traits: facets.traits.count,
      hypervisor: facets.hypervisor.count,
      metrics: facets.metrics.count,
      service: facets.service.count,
    };
    const sizes = new Int32Array(this.classCount.aggregates);
    for (const c of facets.aggregates.of) sizes[c]!++;
    this.aggregateMembers = Array.from(sizes, (size) => new Int32Array(size));
    const filled = new Int32Array(this.classCount.aggregates);
    for (const [i, c] of facets.aggregates.of.entries()) this.aggregateMembers[c]![filled[c]!++] = i;
    // One list object per aggregate class, so per-list memos hit.
    for (const [i, h] of hosts.entries()) {
      const c = facets.aggregates.of[i]!;
      this.aggregateLists[c] ??= h.aggregates;
      h.aggregates = this.aggregateLists[c]!;
      add(this.byName, h.host, i);
      add(this.byLowerName, h.host.toLowerCase(), i);
      for (const [rc, inv] of Object.entries(h.resources)) {
        let col = this.columns.get(rc);
        if (!col) {
          col = resourceColumn(hosts.length);
          this.columns.set(rc, col);
        }
        col.has[i] = 1;
        col.highestMin = Math.max(col.highestMin, inv.min_unit);
        col.lowestMax = Math.min(col.lowestMax, inv.max_unit);
        if (inv.step_size > 1) col.anyStep = true;
        col.capacity[i] = inv.capacity;
        col.used[i] = inv.used;
        col.min_unit[i] = inv.min_unit;
        col.max_unit[i] = inv.max_unit;
        col.step_size[i] = inv.step_size;
      }
    }
    for (const col of this.columns.values()) col.everywhere = col.has.every((v) => v === 1);
  }

  /**
   * Verdicts by facet class of a check whose `key` says all they depend on besides the facet:
   * kept for the fleet's life (facets do not change), so later requests reuse them.
   */
  verdicts(facet: HostFacet, key: string): (Rejection | null | undefined)[] {
    const k = `${facet}\u0000${key}`;
    let v = this.verdictCache.get(k);
    if (!v) {
      v = new Array(this.classCount[facet]);
      this.verdictCache.set(k, v);
    }
    return v;
  }

  classNumbers(key: string): Float64Array {
    let v = this.numbersByClass.get(key);
    if (!v) {
      v = new Float64Array(this.aggregateSetCount).fill(Number.NaN);
      this.numbersByClass.set(key, v);
    }
    return v;
  }

  hostAt(i: number): HostState {
    return this.hosts[i]!;
  }

  column(field: HostNumber): Float64Array {
    return this.numbers[field];
  }

  metric(name: string): { value: Float64Array; has: Uint8Array } {
    let m = this.metrics.get(name);
    if (!m) {
      m = { value: new Float64Array(this.hosts.length), has: new Uint8Array(this.hosts.length) };
      for (const [i, h] of this.hosts.entries()) {
        const v = h.metrics[name];
        if (v !== undefined) {
          m.value[i] = v;
          m.has[i] = 1;
        }
      }
      this.metrics.set(name, m);
    }
    return m;
  }

  /**
   * A resource class's inventories as arrays by position (undefined if no host has it): what the
   * resource check reads thousands of times per decision. consume() keeps `used` in step.
   */
  resourceColumn(rc: string): ResourceColumn | undefined {
    return this.columns.get(rc);
  }

  /** position → id of its aggregate list */
  get aggregateSetOf(): Int32Array {
    return this.classOf.aggregates;
  }

  get aggregateSetCount(): number {
    return this.classCount.aggregates;
  }

  get size(): number {
    return this.hosts.length;
  }

  /**
   * A weigher's multiplier per host (Nova's get_weight_multiplier: the option, overridden by the
   * smallest value of `option` in the host's aggregates), worked out once per aggregate class.
   */
  multipliers(option: string, configured: number, negated = false): MultiplierTable {
    const key = negated ? `-${option}` : option;
    let table = this.multiplierTables.get(key);
    if (table && table.configured !== configured) table = undefined;
    if (!table) {
      const sign = negated ? -1 : 1;
      const overridden = this.aggregateLists.some((list) => list.some((a) => option in a.metadata));
      const values = new Float64Array(this.aggregateSetCount);
      const known = new Uint8Array(this.aggregateSetCount);
      table = {
        configured,
        uniform: overridden ? undefined : sign * configured,
        at(host, c) {
          if (!known[c]) {
            values[c] = sign * weightMultiplier(host.aggregates, option, configured);
            known[c] = 1;
          }
          return values[c]!;
        },
      };
      this.multiplierTables.set(key, table);
    }
    return table;
  }

  /** consume() undone (an all-or-nothing request that failed part-way). */
  unconsume(i: number, resources: ResourceAmounts, instanceUuid?: string): void {
    const host = this.hosts[i]!;
    unconsumeHost(host, resources, instanceUuid);
    this.syncColumns(i, resources);
    if (instanceUuid && this.instanceIndex?.get(instanceUuid) === i) this.instanceIndex.delete(instanceUuid);
  }

  private syncColumns(i: number, resources: ResourceAmounts): void {
    const host = this.hosts[i]!;
    for (const rc of Object.keys(resources)) {
      const col = this.columns.get(rc);
      const inv = host.resources[rc];
      if (col && inv) col.used[i] = inv.used;
    }
    for (const f of CONSUMED) this.numbers[f][i] = host[f];
  }

  /** The position of the host and node, if in the fleet. */
  positionOf(host: string, nodename: string): number | undefined {
    return this.byName.get(host)?.find((i) => this.hosts[i]!.nodename === nodename);
  }

  /**
   * A mask by position of the hosts named (case-insensitively if asked, as Nova's ignore/force_hosts).
   * Shared for the same names: callers must not modify it.
   */
  named(names: Iterable<string>, caseInsensitive = false): Uint8Array {
    const list = [...names];
    const key = `${caseInsensitive}\u0000${list.join("\u0000")}`;
    let mask = this.masks.get(key);
    if (!mask) {
      mask = this.maskOf(list, caseInsensitive);
      if (this.masks.size > 64) this.masks.clear();
      this.masks.set(key, mask);
    }
    return mask;
  }

  private maskOf(names: readonly string[], caseInsensitive: boolean): Uint8Array {
    const mask = new Uint8Array(this.hosts.length);
    for (const name of names) {
      const found = caseInsensitive ? this.byLowerName.get(name.toLowerCase()) : this.byName.get(name);
      for (const i of found ?? []) mask[i] = 1;
    }
    return mask;
  }

  private get instanceHost(): Map<string, number> {
    if (!this.instanceIndex) {
      this.instanceIndex = new Map();
      for (const [i, h] of this.hosts.entries())
        for (const uuid of h.instances) this.instanceIndex.set(uuid, i);
    }
    return this.instanceIndex;
  }

  hostsWith(instanceUuids: readonly string[]): Set<number> {
    const out = new Set<number>();
    for (const uuid of instanceUuids) {
      const i = this.instanceHost.get(uuid);
      if (i !== undefined) out.add(i);
    }
    return out;
  }

  countsOf(instanceUuids: readonly string[]): Map<number, number> {
    const out = new Map<number, number>();
    for (const uuid of new Set(instanceUuids)) {
      const i = this.instanceHost.get(uuid);
      if (i !== undefined) out.set(i, (out.get(i) ?? 0) + 1);
    }
    return out;
  }

  /**
   * Nova's HostState.consume_from_request, on the claimed resources, and the placed instance
   * recorded on the host: the next instance (or request) sees the host as it now is. Disk is
   * DISK_GB × 1024, so swap counts (Nova's consume omits swap; Placement counts it).
   */
  consume(i: number, resources: ResourceAmounts, instanceUuid?: string): void {
    consumeHost(this.hosts[i]!, resources, instanceUuid);
    this.syncColumns(i, resources);
    if (instanceUuid) this.instanceIndex?.set(instanceUuid, i);
  }
}

const HOST_NUMBERS: readonly HostNumber[] = [
  "free_ram_mb",
  "free_disk_mb",
  "vcpus_total",
  "vcpus_used",
  "cpu_allocation_ratio",
  "num_instances",
  "num_io_ops",
  "failed_builds",
];

/** The fields consume() changes. */
const CONSUMED: readonly HostNumber[] = [
  "free_ram_mb",
  "free_disk_mb",
  "vcpus_used",
  "num_instances",
  "num_io_ops",
];

export interface MultiplierTable {
  /** the option's value the table is for */
  configured: number;
  /** the multiplier of every host, when no aggregate overrides the option */
  uniform: number | undefined;
  /** the multiplier of `host`, of aggregate class `c` */
  at(host: HostState, c: number): number;
}

/** consume() undone: a request that could not be placed whole gives back what it took. */
export function unconsumeHost(host: HostState, resources: ResourceAmounts, instanceUuid?: string): void {
  for (const [rc, amount] of Object.entries(resources)) {
    const inv = host.resources[rc];
    if (inv) inv.used -= amount;
  }
  host.free_ram_mb += resources.MEMORY_MB ?? 0;
  host.free_disk_mb += (resources.DISK_GB ?? 0) * 1024;
  host.vcpus_used -= resources.VCPU ?? 0;
  host.num_instances -= 1;
  host.num_io_ops -= 1;
  if (instanceUuid) host.instances = host.instances.filter((u) => u !== instanceUuid);
}

/** One resource class across the fleet; `has` is 0 where a host has no inventory of it. */
export interface ResourceColumn {
  /** every host has this class */
  everywhere: boolean;
  /** the largest min_unit and smallest max_unit of any host, and whether any step_size exceeds 1 */
  highestMin: number;
  lowestMax: number;
  anyStep: boolean;
  has: Uint8Array;
  capacity: Float64Array;
  used: Float64Array;
  /** Placement's bounds are integers up to 2^31 − 1 */
  min_unit: Int32Array;
  max_unit: Int32Array;
  step_size: Int32Array;
}

function resourceColumn(n: number): ResourceColumn {
  return {
    everywhere: false,
    highestMin: Number.NEGATIVE_INFINITY,
    lowestMax: Number.POSITIVE_INFINITY,
    anyStep: false,
    has: new Uint8Array(n),
    capacity: new Float64Array(n),
    used: new Float64Array(n),
    min_unit: new Int32Array(n),
    max_unit: new Int32Array(n),
    step_size: new Int32Array(n),
  };
}

/** consume() for a lone host state (no fleet). Mutates `host`. */
export function consumeHost(host: HostState, resources: ResourceAmounts, instanceUuid?: string): void {
  for (const [rc, amount] of Object.entries(resources)) {
    const inv = host.resources[rc];
    if (inv) inv.used += amount;
  }
  host.free_ram_mb -= resources.MEMORY_MB ?? 0;
  host.free_disk_mb -= (resources.DISK_GB ?? 0) * 1024;
  host.vcpus_used += resources.VCPU ?? 0;
  host.num_instances += 1;
  // Nova counts every scheduled instance as an I/O operation until its host reports again.
  host.num_io_ops += 1;
  if (instanceUuid && !host.instances.includes(instanceUuid)) host.instances.push(instanceUuid);
}

function classes(
  hosts: readonly HostState[],
  key: (h: HostState) => string,
): { of: Int32Array; count: number } {
  const ids = new Map<string, number>();
  const of = new Int32Array(hosts.length);
  for (const [i, h] of hosts.entries()) {
    const k = key(h);
    let id = ids.get(k);
    if (id === undefined) {
      id = ids.size;
      ids.set(k, id);
    }
    of[i] = id;
  }
  return { of, count: ids.size };
}

function add(index: Map<string, number[]>, key: string, i: number): void {
  const list = index.get(key);
  if (list) list.push(i);
  else index.set(key, [i]);
}
