// The hosts the scheduler decides over, with what is worth knowing about them as a whole: which
// hosts share the same aggregates (a verdict that reads only aggregates is the same for all of
// them), numbers and inventories as arrays. Hosts are addressed by their position. A warm
// scheduler keeps one Fleet and applies each refresh's changed hosts to it (update()).
import { weightMultiplier } from "./aggregates.js";
import { ipv4Number } from "./ip.js";
import type {
  FleetIndex,
  HostAggregate,
  HostFacet,
  HostNumber,
  HostResource,
  HostState,
  Rejection,
  ResourceAmounts,
} from "./types.js";

export class Fleet implements FleetIndex {
  private list: HostState[] = [];
  private aggs: readonly HostAggregate[] = [];
  private classOfFacet!: Record<HostFacet, Int32Array>;
  private classCounts!: Record<HostFacet, number>;
  private scratchArrays!: [Int32Array, Int32Array];
  private zeroArray!: Float64Array;
  private weighArray!: Float64Array;
  private changes = 0;
  private changing: (() => void) | undefined;
  private rejectionArrays!: { positions: Int32Array; reasons: (Rejection | undefined)[] };
  private lists: (readonly HostAggregate[])[] = [];
  private members: Int32Array[] = [];
  private classIds!: Record<HostFacet, Map<string, number>>;
  private byName = new Map<string, number[]>();
  private byLowerName = new Map<string, number[]>();
  private columns = new Map<string, ResourceColumn>();
  private multiplierTables = new Map<string, MultiplierTable>();
  private verdictCache = new Map<string, (Rejection | null | undefined)[]>();
  private masks = new Map<string, Uint8Array>();
  private numbersByClass = new Map<string, Float64Array>();
  private numbers!: Record<HostNumber, Float64Array>;
  private metrics = new Map<string, { value: Float64Array; has: Uint8Array }>();
  private ipv4Column: Float64Array | undefined;
  private byClassScratch = {
    failAt: new Int32Array(0),
    bulk: new Uint8Array(0),
    leaving: new Int32Array(0),
    cursor: new Int32Array(0),
  };

  constructor(hosts: readonly HostState[], aggregates: readonly HostAggregate[]) {
    this.build(hosts, aggregates);
  }

  /** by position; update() replaces a host in place and appends new ones at the end */
  get hosts(): readonly HostState[] {
    return this.list;
  }

  /** every aggregate (Placement's and the prefilters' view), hosts or not */
  get aggregates(): readonly HostAggregate[] {
    return this.aggs;
  }

  /**
   * Per facet, position → class id: hosts in one class have the same aggregates (traits,
   * hypervisor, metric names), so a verdict reading only that facet holds for all of them. A class
   * id stands for one facet value for the fleet's life (a host whose facet changes moves to
   * another class), so verdicts kept per class stay true across update().
   */
  get classOf(): Readonly<Record<HostFacet, Int32Array>> {
    return this.classOfFacet;
  }

  get classCount(): Readonly<Record<HostFacet, number>> {
    return this.classCounts;
  }

  /** two arrays of the fleet's size for the scheduler's passes (one decision at a time) */
  get scratch(): readonly [Int32Array, Int32Array] {
    return this.scratchArrays;
  }

  /** a 0 per position, never written: the raw values of a weigher with nothing to weigh */
  get zeros(): Float64Array {
    return this.zeroArray;
  }

  /**
   * Arrays by aggregate class for one decision's passes (the scheduler's, one decision at a time),
   * at least as long as there are classes; their contents are the last decision's.
   */
  get classScratch(): { failAt: Int32Array; bulk: Uint8Array; leaving: Int32Array; cursor: Int32Array } {
    const n = this.aggregateSetCount;
    if (this.byClassScratch.failAt.length < n) {
      this.byClassScratch = {
        failAt: new Int32Array(n),
        bulk: new Uint8Array(n),
        leaving: new Int32Array(n),
        cursor: new Int32Array(n),
      };
    }
    return this.byClassScratch;
  }

  /** room for one weigher's raw values (the scheduler's, one decision at a time) */
  get weighScratch(): Float64Array {
    return this.weighArray;
  }

  /**
   * Counts the changes to host states (update, consume, unconsume): what a decision read from the
   * fleet is still there while it is the same.
   */
  get version(): number {
    return this.changes;
  }

  /**
   * `hook` runs once, before the host states next change (update, consume, unconsume), then is
   * forgotten; one at a time (undefined forgets it): a decision keeping what it read of them.
   */
  beforeChange(hook: (() => void) | undefined): void {
    this.changing = hook;
  }

  private change(): void {
    const hook = this.changing;
    this.changing = undefined;
    hook?.();
    this.changes++;
  }

  /** room for one decision's rejections, host by host (the scheduler's, one decision at a time) */
  get rejectionScratch(): { positions: Int32Array; reasons: (Rejection | undefined)[] } {
    return this.rejectionArrays;
  }

  /** per aggregate class, the aggregate list its hosts share */
  get aggregateLists(): readonly (readonly HostAggregate[])[] {
    return this.lists;
  }

  /** per aggregate class, its hosts' positions in order (empty once its last host moved away) */
  get aggregateMembers(): readonly Int32Array[] {
    return this.members;
  }

  /** Every index from scratch: the constructor, and update() when positions or aggregates move. */
  private build(hosts: readonly HostState[], aggregates: readonly HostAggregate[]): void {
    const n = hosts.length;
    this.list = [...hosts];
    this.aggs = aggregates;
    this.scratchArrays = [new Int32Array(n), new Int32Array(n)];
    this.zeroArray = new Float64Array(n);
    this.weighArray = new Float64Array(n);
    this.rejectionArrays = { positions: new Int32Array(n), reasons: new Array(n).fill(undefined) };
    this.numbers = Object.fromEntries(
      HOST_NUMBERS.map((f) => [f, Float64Array.from(hosts, (h) => h[f])]),
    ) as Record<HostNumber, Float64Array>;
    this.classIds = {
      aggregates: new Map(),
      traits: new Map(),
      hypervisor: new Map(),
      metrics: new Map(),
      service: new Map(),
    };
    this.classOfFacet = {
      aggregates: new Int32Array(n),
      traits: new Int32Array(n),
      hypervisor: new Int32Array(n),
      metrics: new Int32Array(n),
      service: new Int32Array(n),
    };
    this.classCounts = { aggregates: 0, traits: 0, hypervisor: 0, metrics: 0, service: 0 };
    this.lists = [];
    this.members = [];
    this.byName = new Map();
    this.byLowerName = new Map();
    this.columns = new Map();
    this.multiplierTables = new Map();
    this.verdictCache = new Map();
    this.masks = new Map();
    this.numbersByClass = new Map();
    this.metrics = new Map();
    this.ipv4Column = undefined;
    const members: number[][] = [];
    for (const [i, h] of this.list.entries()) {
      for (const facet of FACETS) this.classOfFacet[facet][i] = this.classFor(facet, h);
      const c = this.classOfFacet.aggregates[i]!;
      // One list object per aggregate class, so per-list memos hit.
      this.lists[c] ??= h.aggregates;
      h.aggregates = this.lists[c]!;
      members[c] ??= [];
      members[c]!.push(i);
      add(this.byName, h.host, i);
      add(this.byLowerName, h.host.toLowerCase(), i);
      for (const [rc, inv] of Object.entries(h.resources)) {
        let col = this.columns.get(rc);
        if (!col) {
          col = resourceColumn(n);
          this.columns.set(rc, col);
        }
        setInventory(col, i, inv);
      }
    }
    this.members = members.map((m) => Int32Array.from(m));
    for (const col of this.columns.values()) summarize(col);
  }

  /** The class id of the host's facet value, a new one for a value not seen before. */
  private classFor(facet: HostFacet, h: HostState): number {
    const ids = this.classIds[facet];
    const k = FACET_KEYS[facet](h);
    let id = ids.get(k);
    if (id === undefined) {
      id = ids.size;
      ids.set(k, id);
      this.classCounts[facet] = ids.size;
    }
    return id;
  }

  /**
   * A refresh: the changed hosts' new states (by host and node name) and the hosts gone (by host
   * name). A known host is replaced at its position and only what it touches is redone (its
   * numbers, inventories, classes, the aggregate members lists it leaves and joins); the fleet
   * then decides exactly as one built fresh from the same host states in the same order. New
   * hosts (appended at the end), removed ones, or aggregates whose contents changed (pass them
   * all as `aggregates`, with the member hosts' new states) rebuild every index: rare events, a
   * host joining or leaving or an operator's edit. Aggregates are told apart by their ids.
   */
  update(
    changed: readonly HostState[],
    opts: { removed?: readonly string[]; aggregates?: readonly HostAggregate[] } = {},
  ): void {
    this.change();
    const removed = new Set(opts.removed ?? []);
    const aggregates = opts.aggregates ?? this.aggs;
    let rebuild =
      removed.size > 0 || (opts.aggregates !== undefined && !sameAggregates(aggregates, this.aggs));
    const positions: number[] = [];
    for (const h of changed) {
      const i = this.positionOf(h.host, h.nodename);
      positions.push(i ?? -1);
      if (i === undefined || removed.has(h.host)) rebuild = true;
    }
    if (rebuild) {
      const hosts = [...this.list];
      // New hosts in the order they came, a host given twice once (its last state).
      const appended = new Map<string, HostState>();
      for (const [k, h] of changed.entries()) {
        if (positions[k]! >= 0) hosts[positions[k]!] = h;
        else appended.set(`${h.host}\u0000${h.nodename}`, h);
      }
      this.build(
        [...hosts, ...appended.values()].filter((h) => !removed.has(h.host)),
        aggregates,
      );
      return;
    }
    for (const [k, h] of changed.entries()) this.replaceAt(positions[k]!, h);
  }

  /** The host at `i` becomes `h` (same host and node): its entries in every index follow. */
  private replaceAt(i: number, h: HostState): void {
    const old = this.list[i]!;
    this.list[i] = h;
    for (const f of HOST_NUMBERS) this.numbers[f][i] = h[f];
    const oldAggregateClass = this.classOfFacet.aggregates[i]!;
    for (const facet of FACETS) this.classOfFacet[facet][i] = this.classFor(facet, h);
    const c = this.classOfFacet.aggregates[i]!;
    if (c !== oldAggregateClass) {
      // New arrays (a decision's blocks may hold the old ones), copied, not rebuilt host by host.
      this.members[oldAggregateClass] = withoutPosition(this.members[oldAggregateClass]!, i);
      this.members[c] = withPosition(this.members[c] ?? new Int32Array(0), i);
      if (this.lists[c] === undefined) {
        this.lists[c] = h.aggregates;
        // Tables sized by the aggregate classes, and the multipliers' "overridden" flag.
        this.multiplierTables.clear();
        this.numbersByClass.clear();
      }
    }
    h.aggregates = this.lists[c]!;
    for (const [rc, col] of this.columns) {
      const inv = h.resources[rc];
      if (inv) setInventory(col, i, inv);
      else clearInventory(col, i);
      if (!sameBounds(old.resources[rc], inv)) summarize(col);
    }
    for (const [rc, inv] of Object.entries(h.resources)) {
      if (this.columns.has(rc)) continue;
      const col = resourceColumn(this.list.length);
      setInventory(col, i, inv);
      summarize(col);
      this.columns.set(rc, col);
    }
    if (this.ipv4Column) this.ipv4Column[i] = ipv4Number(h.host_ip);
    for (const [name, m] of this.metrics) {
      const v = h.metrics[name];
      m.value[i] = v ?? 0;
      m.has[i] = v === undefined ? 0 : 1;
    }
  }

  /**
   * Verdicts by facet class of a check whose `key` says all they depend on besides the facet:
   * kept for the fleet's life (a class is one facet value), so later requests reuse them.
   */
  verdicts(facet: HostFacet, key: string): (Rejection | null | undefined)[] {
    const k = `${facet}\u0000${key}`;
    let v = this.verdictCache.get(k);
    if (!v) {
      v = new Array(this.classCounts[facet]);
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
    return this.list[i]!;
  }

  column(field: HostNumber): Float64Array {
    return this.numbers[field];
  }

  numberColumn(name: string): Float64Array | undefined {
    return Object.hasOwn(this.numbers, name) ? this.numbers[name as HostNumber] : undefined;
  }

  metric(name: string): { value: Float64Array; has: Uint8Array } {
    let m = this.metrics.get(name);
    if (!m) {
      m = { value: new Float64Array(this.list.length), has: new Uint8Array(this.list.length) };
      for (const [i, h] of this.list.entries()) {
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

  ipv4(): Float64Array {
    if (!this.ipv4Column) this.ipv4Column = Float64Array.from(this.list, (h) => ipv4Number(h.host_ip));
    return this.ipv4Column;
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
    return this.classOfFacet.aggregates;
  }

  get aggregateSetCount(): number {
    return this.classCounts.aggregates;
  }

  get size(): number {
    return this.list.length;
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
      const overridden = this.lists.some((list) => list.some((a) => option in a.metadata));
      const values = new Float64Array(this.aggregateSetCount);
      const known = new Uint8Array(this.aggregateSetCount);
      table = {
        configured,
        uniform: overridden ? undefined : sign * configured,
        values,
        known,
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

  /**
   * Nova's HostState.consume_from_request, on the claimed resources: the next instance (or
   * request) sees the host as it now is, until a refresh brings its stored state. Disk is
   * DISK_GB × 1024, so swap counts (Nova's consume omits swap; Placement counts it).
   */
  consume(i: number, resources: ResourceAmounts): void {
    this.change();
    consumeHost(this.list[i]!, resources);
    this.syncColumns(i, resources);
  }

  /** consume() undone (an all-or-nothing request that failed part-way). */
  unconsume(i: number, resources: ResourceAmounts): void {
    this.change();
    unconsumeHost(this.list[i]!, resources);
    this.syncColumns(i, resources);
  }

  private syncColumns(i: number, resources: ResourceAmounts): void {
    const host = this.list[i]!;
    for (const rc of Object.keys(resources)) {
      const col = this.columns.get(rc);
      const inv = host.resources[rc];
      if (col && inv) col.used[i] = inv.used;
    }
    for (const f of CONSUMED) this.numbers[f][i] = host[f];
  }

  /** The position of the host and node, if in the fleet. */
  positionOf(host: string, nodename: string): number | undefined {
    return this.byName.get(host)?.find((i) => this.list[i]!.nodename === nodename);
  }

  positionsOf(host: string): readonly number[] {
    return this.byName.get(host) ?? NONE;
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
    const mask = new Uint8Array(this.list.length);
    for (const name of names) {
      const found = caseInsensitive ? this.byLowerName.get(name.toLowerCase()) : this.byName.get(name);
      for (const i of found ?? []) mask[i] = 1;
    }
    return mask;
  }
}

const NONE: readonly number[] = [];

const FACETS: readonly HostFacet[] = ["aggregates", "traits", "hypervisor", "metrics", "service"];

/** A facet's value as text: hosts with the same text are one class. */
const FACET_KEYS: Readonly<Record<HostFacet, (h: HostState) => string>> = {
  aggregates: (h) => h.aggregates.map((a) => a.id).join("\u0000"),
  traits: (h) => [...h.traits].sort().join("\u0000"),
  hypervisor: (h) => JSON.stringify([h.supported_instances, h.hypervisor_type, h.hypervisor_version]),
  metrics: (h) => Object.keys(h.metrics).sort().join("\u0000"),
  service: (h) => JSON.stringify(h.service),
};

function sameAggregates(a: readonly HostAggregate[], b: readonly HostAggregate[]): boolean {
  if (a === b) return true;
  return JSON.stringify(a) === JSON.stringify(b);
}

function sameBounds(a: HostResource | undefined, b: HostResource | undefined): boolean {
  if (!a || !b) return a === b;
  return a.min_unit === b.min_unit && a.max_unit === b.max_unit && a.step_size === b.step_size;
}

function setInventory(col: ResourceColumn, i: number, inv: HostResource): void {
  col.has[i] = 1;
  col.capacity[i] = inv.capacity;
  col.used[i] = inv.used;
  col.min_unit[i] = inv.min_unit;
  col.max_unit[i] = inv.max_unit;
  col.step_size[i] = inv.step_size;
}

function clearInventory(col: ResourceColumn, i: number): void {
  col.has[i] = 0;
  col.capacity[i] = 0;
  col.used[i] = 0;
  col.min_unit[i] = 0;
  col.max_unit[i] = 0;
  col.step_size[i] = 0;
}

/** The column's bounds over the hosts that have the class, and whether every host has it. */
function summarize(col: ResourceColumn): void {
  col.highestMin = Number.NEGATIVE_INFINITY;
  col.lowestMax = Number.POSITIVE_INFINITY;
  col.anyStep = false;
  col.everywhere = true;
  for (let i = 0; i < col.has.length; i++) {
    if (col.has[i] !== 1) {
      col.everywhere = false;
      continue;
    }
    if (col.min_unit[i]! > col.highestMin) col.highestMin = col.min_unit[i]!;
    if (col.max_unit[i]! < col.lowestMax) col.lowestMax = col.max_unit[i]!;
    if (col.step_size[i]! > 1) col.anyStep = true;
  }
}

/** The HostState numbers the fleet keeps in columns. */
export const HOST_NUMBERS: readonly HostNumber[] = [
  "free_ram_mb",
  "free_disk_mb",
  "vcpus_total",
  "vcpus_used",
  "cpu_allocation_ratio",
  "num_instances",
  "num_io_ops",
  "failed_builds",
];

/** Where `i` goes in the ascending `sorted`: the count of its elements below `i`. */
function rank(sorted: Int32Array, i: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < i) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The ascending positions `sorted` and `i` (not among them), as a new array. */
function withPosition(sorted: Int32Array, i: number): Int32Array {
  const at = rank(sorted, i);
  const out = new Int32Array(sorted.length + 1);
  out.set(sorted.subarray(0, at));
  out[at] = i;
  out.set(sorted.subarray(at), at + 1);
  return out;
}

/** The ascending positions `sorted` without `i`, as a new array. */
function withoutPosition(sorted: Int32Array, i: number): Int32Array {
  const at = rank(sorted, i);
  if (sorted[at] !== i) return sorted.slice();
  const out = new Int32Array(sorted.length - 1);
  out.set(sorted.subarray(0, at));
  out.set(sorted.subarray(at + 1), at);
  return out;
}

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
  /** at()'s answers by class, where `known` (read inline by the weighing's loops) */
  readonly values: Float64Array;
  readonly known: Uint8Array;
}

/** consume() undone: a request that could not be placed whole gives back what it took. */
export function unconsumeHost(host: HostState, resources: ResourceAmounts): void {
  for (const [rc, amount] of Object.entries(resources)) {
    const inv = host.resources[rc];
    if (inv) inv.used -= amount;
  }
  host.free_ram_mb += resources.MEMORY_MB ?? 0;
  host.free_disk_mb += (resources.DISK_GB ?? 0) * 1024;
  host.vcpus_used -= resources.VCPU ?? 0;
  host.num_instances -= 1;
  host.num_io_ops -= 1;
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
export function consumeHost(host: HostState, resources: ResourceAmounts): void {
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
}

function add(index: Map<string, number[]>, key: string, i: number): void {
  const list = index.get(key);
  if (list) list.push(i);
  else index.set(key, [i]);
}
