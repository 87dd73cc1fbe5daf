// One decision's outcome: the candidates with their weights, the order (computed lazily: the
// claim loop usually needs only the best few of thousands), and the trace of every stage, from
// which the detailed or the compact explanation is drawn on demand.
import { COMPACT_SAMPLE, COMPACT_TOP, type CompactOptions, reasonFromSummary } from "./explain.js";
import type { Fleet } from "./fleet.js";
import { describeFitFailure } from "./resource-fit.js";
import type {
  CompactStage,
  DecisionExplanation,
  DetailedExplanation,
  HostRejection,
  Rejection,
  RejectionGroup,
  ResourceAmounts,
  WeigherValues,
} from "./types.js";
import { multiplierAt, normalizedValue, type Weighing } from "./weigh.js";

/** Hosts rejected together, by a verdict on their shared aggregates: positions in order. */
export interface RejectedBlock {
  positions: Int32Array;
  rejection: Rejection;
}

/** One stage as it ran: positions rejected one by one (in order) with their rejections, and blocks. */
export interface StageTrace {
  stage: string;
  hosts_in: number;
  hosts_passed: number;
  rejected: number[];
  rejections: Rejection[];
  blocks: RejectedBlock[];
  skipped: string | undefined;
}

/** Every rejection of a stage in fleet order: one-by-one ones and blocks merged. */
function allRejected(s: StageTrace): { position: number; rejection: Rejection }[] {
  const all = s.rejected.map((position, k) => ({ position, rejection: s.rejections[k]! }));
  if (s.blocks.length === 0) return all;
  for (const b of s.blocks)
    for (const position of b.positions) all.push({ position, rejection: b.rejection });
  return all.sort((a, b) => a.position - b.position);
}

/** Below this many candidates, ordering them all is as cheap as picking the best. */
const SORT_ALL_BELOW = 256;

export class Decision {
  /** candidate slots (indexes into weighing.candidates) in weighed order, as far as computed */
  private ordered = new Int32Array(0);
  private complete = false;
  /** the weighers' raw values by candidate slot, when the weighing kept only the compact explanation's */
  private kept = new Map<number, Float64Array>();
  /** the fleet's version when weighed: raw values read from it since are the weighing's while equal */
  private readonly weighedAt: number;

  constructor(
    readonly fleet: Fleet,
    readonly index: number,
    /** what a claim must allocate */
    readonly requested: ResourceAmounts,
    readonly trace: readonly StageTrace[],
    readonly weighing: Weighing,
  ) {
    this.weighedAt = fleet.version;
  }

  /** positions of the hosts that passed every stage, in fleet order */
  get candidates(): Int32Array {
    return this.weighing.candidates;
  }

  get size(): number {
    return this.weighing.candidates.length;
  }

  /** The k-th best candidate's slot (0 is the best), or undefined past the last. */
  slotAt(k: number): number | undefined {
    if (k >= this.size) return undefined;
    if (k >= this.ordered.length) this.extend(k + 1);
    return this.ordered[k];
  }

  /** How many candidates share the best weight. */
  bestTies(): number {
    const best = this.slotAt(0);
    if (best === undefined) return 0;
    const w = this.weighing.weights;
    const top = w[best]!;
    let n = 0;
    for (let j = 0; j < w.length; j++) if (w[j] === top) n++;
    return n;
  }

  position(slot: number): number {
    return this.weighing.candidates[slot]!;
  }

  weight(slot: number): number {
    return this.weighing.weights[slot]!;
  }

  /** Weight descending, then host and node name in code-point order: the same on every Lambda. */
  private compare = (a: number, b: number): number => {
    const w = this.weighing.weights;
    if (w[a] !== w[b]) return w[b]! - w[a]!;
    const ha = this.fleet.hosts[this.weighing.candidates[a]!]!;
    const hb = this.fleet.hosts[this.weighing.candidates[b]!]!;
    return cmp(ha.host, hb.host) || cmp(ha.nodename, hb.nodename);
  };

  private extend(k: number): void {
    const n = this.size;
    const want = Math.max(k, 16, this.ordered.length * 4);
    if (n < SORT_ALL_BELOW || want * 8 >= n) {
      const all = Int32Array.from({ length: n }, (_, j) => j);
      this.ordered = all.sort(this.compare);
      this.complete = true;
      return;
    }
    // The best `want`: one pass, keeping a sorted prefix; most slots lose to its last element.
    const best: number[] = [];
    const w = this.weighing.weights;
    for (let j = 0; j < n; j++) {
      if (best.length === want) {
        // A lower weight loses to the last kept without compare() (a NaN weight goes through it).
        const last = w[best[want - 1]!]!;
        if (w[j]! < last || this.compare(j, best[want - 1]!) >= 0) continue;
      }
      let lo = 0;
      let hi = best.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (this.compare(best[mid]!, j) < 0) lo = mid + 1;
        else hi = mid;
      }
      best.splice(lo, 0, j);
      if (best.length > want) best.pop();
    }
    this.ordered = Int32Array.from(best);
  }

  /** Every candidate slot in weighed order. */
  orderedSlots(): Int32Array {
    if (!this.complete) this.extend(this.size);
    return this.ordered;
  }

  /** Where the candidate at `position` ranks (0 = best); -1 if it is not a candidate. */
  rankOf(position: number): number {
    const slot = this.slotOf(position);
    if (slot < 0) return -1;
    if (this.slotAt(0) === slot) return 0;
    // compare(j, slot) < 0, told by the weights where they differ (NaN goes through compare()).
    const w = this.weighing.weights;
    const own = w[slot]!;
    let rank = 0;
    for (let j = 0; j < this.size; j++) {
      if (w[j]! < own) continue;
      if (w[j]! > own || (j !== slot && this.compare(j, slot) < 0)) rank++;
    }
    return rank;
  }

  private slotOf(position: number): number {
    const c = this.weighing.candidates;
    let lo = 0;
    let hi = c.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (c[mid] === position) return mid;
      if (c[mid]! < position) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  private rejectionsOf(s: StageTrace): HostRejection[] {
    return allRejected(s).map(({ position, rejection: r }) => {
      const h = this.fleet.hosts[position]!;
      const reason = r.reason ?? (r.fit ? describeFitFailure(r.fit) : reasonFromSummary(r.summary));
      return {
        host: h.host,
        nodename: h.nodename,
        reason,
        summary: r.summary,
        ...(r.fit ? { fit: r.fit } : {}),
      };
    });
  }

  private values(slot: number): WeigherValues[] {
    const h = this.fleet.hosts[this.position(slot)]!;
    const raw = this.rawValues(slot);
    return this.weighing.runs.map((run, k) => ({
      host: h.host,
      nodename: h.nodename,
      raw: raw[k]!,
      normalized: normalizedValue(run, raw[k]!),
      multiplier: multiplierAt(this.fleet, run, this.position(slot)),
    }));
  }

  /** Each weigher's raw value for the candidate at `slot`, as weighed. */
  private rawValues(slot: number): ArrayLike<number> {
    const runs = this.weighing.runs;
    if (runs.length === 0 || runs[0]!.raw) return runs.map((run) => run.raw![slot]!);
    let raw = this.kept.get(slot);
    if (raw) return raw;
    const position = this.position(slot);
    if (this.fleet.version !== this.weighedAt) {
      const h = this.fleet.hosts[position]!;
      throw new Error(
        `The weighers' raw values of ${h.host} (${h.nodename}) were not kept and the hosts have changed since: ` +
          "ask for the detailed explanation before the decision, or keep the hosts explained (keepExplained).",
      );
    }
    // The fleet is as it was weighed: reading it again gives the same values.
    raw = Float64Array.from(runs, (run) => run.rawAt(position));
    this.kept.set(slot, raw);
    return raw;
  }

  /**
   * Keeps every candidate's raw values, read from the fleet while it is as weighed: before it
   * changes in the middle of the claims (a lost claim's host learnt), when the chosen host is not
   * known yet. Nothing when they are kept already, or when it is too late.
   */
  keepAll(): void {
    const runs = this.weighing.runs;
    if (runs.length === 0 || runs[0]!.raw || this.fleet.version !== this.weighedAt) return;
    const candidates = this.weighing.candidates;
    for (const run of runs) run.raw = Float64Array.from(candidates, (i) => run.rawAt(i));
  }

  /**
   * Keeps the weighers' raw values of the hosts the compact explanation names (the best `top` and
   * the host at `chosen`, a position), before the fleet changes (the chosen host consumed): a
   * weighing for the compact explanation only did not keep them for every candidate.
   */
  keepExplained(chosen?: number, top = COMPACT_TOP): void {
    if (this.weighing.runs[0]?.raw !== undefined) return;
    for (let k = 0; k < top; k++) {
      const slot = this.slotAt(k);
      if (slot === undefined) break;
      this.rawValues(slot);
    }
    const slot = chosen === undefined ? -1 : this.slotOf(chosen);
    if (slot >= 0) this.rawValues(slot);
  }

  private ranked(slot: number) {
    const h = this.fleet.hosts[this.position(slot)]!;
    return { host: h.host, nodename: h.nodename, weight: this.weight(slot) };
  }

  /** Every host's rejection and every candidate's weigher values: grows with the fleet. */
  detailed(): DetailedExplanation {
    const slots = [...this.orderedSlots()];
    const values = slots.map((s) => this.values(s));
    return {
      index: this.index,
      requested: this.requested,
      hosts: this.fleet.size,
      stages: this.trace.map((s) => ({
        stage: s.stage,
        hosts_in: s.hosts_in,
        hosts_passed: s.hosts_passed,
        rejected: this.rejectionsOf(s),
        ...(s.skipped ? { skipped: s.skipped } : {}),
      })),
      weighers: this.weighing.runs.map((run, k) => ({
        weigher: run.weigher.name,
        hosts: values.map((v) => v[k]!),
      })),
      order: slots.map((s) => this.ranked(s)),
    };
  }

  /** The bounded explanation, equal to compactExplanation(this.detailed()) without building it. */
  compact(opts: CompactOptions = {}): DecisionExplanation {
    const top = opts.top ?? COMPACT_TOP;
    const sample = opts.sample ?? COMPACT_SAMPLE;
    const stages: CompactStage[] = this.trace.map((s) => ({
      stage: s.stage,
      hosts_in: s.hosts_in,
      hosts_passed: s.hosts_passed,
      rejected: this.groups(s, sample),
      ...(s.skipped ? { skipped: s.skipped } : {}),
    }));
    const slots: number[] = [];
    for (let k = 0; k < top; k++) {
      const slot = this.slotAt(k);
      if (slot === undefined) break;
      slots.push(slot);
    }
    const values = slots.map((s) => this.values(s));
    const explanation: DecisionExplanation = {
      index: this.index,
      requested: this.requested,
      hosts: this.fleet.size,
      stages,
      candidates: this.size,
      weighers: this.weighing.runs.map((run, k) => ({
        weigher: run.weigher.name,
        hosts: values.map((v) => v[k]!),
      })),
      order: slots.map((s) => this.ranked(s)),
    };
    const chosen = opts.chosen;
    if (chosen) {
      const slot = this.findSlot(chosen.host, chosen.nodename);
      if (slot >= 0) {
        explanation.chosen = {
          ...this.ranked(slot),
          rank: this.rankOf(this.position(slot)),
          weighers: this.values(slot).map((v, k) => ({
            weigher: this.weighing.runs[k]!.weigher.name,
            raw: v.raw,
            normalized: v.normalized,
            multiplier: v.multiplier,
          })),
        };
      }
    }
    return explanation;
  }

  /**
   * groupRejections over a stage's trace (groups in order of their first host, the first few hosts
   * of each), without building a record per host nor visiting the hosts of blocks.
   */
  private groups(s: StageTrace, sample: number): RejectionGroup[] {
    type Entry = { group: RejectionGroup; first: number; positions: number[] };
    const bySummary = new Map<string, Entry>();
    const entry = (r: Rejection, position: number): Entry => {
      let e = bySummary.get(r.summary);
      if (!e) {
        e = { group: { summary: r.summary, count: 0, sample: [] }, first: position, positions: [] };
        bySummary.set(r.summary, e);
      }
      if (position < e.first) e.first = position;
      return e;
    };
    const capacity = (g: RejectionGroup, r: Rejection) => {
      if (r.fit?.violation !== "capacity") return;
      const { resource_class, requested, free } = r.fit;
      const known = g.capacity;
      // (the group's own record, updated in place: no object per host)
      if (known) {
        known.resource_class = resource_class;
        known.requested = requested;
        known.largest_free = Math.max(free, known.largest_free);
      } else g.capacity = { resource_class, requested, largest_free: Math.max(free, 0) };
    };
    let last: Rejection | undefined;
    let lastEntry: Entry | undefined;
    for (let k = 0; k < s.rejected.length; k++) {
      const r = s.rejections[k]!;
      // Neighbours often share a rejection, or its summary (hosts short by different amounts):
      // skip the lookup then (the list is in fleet order, so the group's first host is known).
      const e = r === last || r.summary === last?.summary ? lastEntry! : entry(r, s.rejected[k]!);
      last = r;
      lastEntry = e;
      e.group.count++;
      if (e.positions.length < sample) e.positions.push(s.rejected[k]!);
      capacity(e.group, r);
    }
    for (const b of s.blocks) {
      const e = entry(b.rejection, b.positions[0]!);
      e.group.count += b.positions.length;
      // A zone turns hundreds of classes away, one block each: keep only the `sample` smallest
      // positions (each block is in order), not five of every block to sort afterwards.
      for (let k = 0; k < Math.min(sample, b.positions.length); k++) {
        if (!keepSmallest(e.positions, b.positions[k]!, sample)) break;
      }
      capacity(e.group, b.rejection);
    }
    return [...bySummary.values()]
      .sort((a, b) => a.first - b.first)
      .map(({ group, positions }) => {
        group.sample = positions
          .sort((a, b) => a - b)
          .slice(0, sample)
          .map((i) => this.fleet.hosts[i]!.host);
        return group;
      });
  }

  private findSlot(host: string, nodename: string): number {
    const position = this.fleet.positionOf(host, nodename);
    return position === undefined ? -1 : this.slotOf(position);
  }
}

/**
 * Adds `position` to `kept` (at most `max` positions, unordered) if it is among the `max`
 * smallest seen; false when it is not, so neither is any larger one after it.
 */
function keepSmallest(kept: number[], position: number, max: number): boolean {
  if (kept.length < max) {
    kept.push(position);
    return true;
  }
  let largest = 0;
  for (let k = 1; k < kept.length; k++) if (kept[k]! > kept[largest]!) largest = k;
  if (position >= kept[largest]!) return false;
  kept[largest] = position;
  return true;
}

// Code-point order, not locale order.
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
