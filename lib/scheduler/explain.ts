// Decisions explained, as data and as sentences. The detailed explanation names every host; the
// compact one (what an instance keeps, what the dry run returns) is bounded whatever the fleet:
// counts per stage, rejections grouped by reason with a few sample hosts, weigher values for the
// top hosts. Summaries in the style of kube-scheduler's FailedScheduling: "0/8 hosts are
// available: 5 lacked MEMORY_MB (needs 8192 MB, largest free 4096 MB), 3 are not in availability
// zone az2." Never shown to a non-admin user (NoValidHost.details).
import { withUnit } from "./resource-fit.js";
import type {
  ChosenHost,
  CompactStage,
  DecisionExplanation,
  DetailedExplanation,
  RankedHost,
  RejectionGroup,
  ResourceFitFailure,
} from "./types.js";

/** Hosts whose order and weigher values a compact explanation keeps. */
export const COMPACT_TOP = 5;
/** Sample hosts kept per group of rejections. */
export const COMPACT_SAMPLE = 5;

export interface CompactOptions {
  top?: number;
  sample?: number;
  /** the host the instance went to */
  chosen?: { host: string; nodename: string };
}

/** Rejections grouped by summary in first-seen order, counted, with the first `sample` hosts. */
export function groupRejections(
  rejections: Iterable<{ host: string; summary: string; fit?: ResourceFitFailure | undefined }>,
  sample = COMPACT_SAMPLE,
): RejectionGroup[] {
  const groups = new Map<string, RejectionGroup>();
  for (const r of rejections) {
    let g = groups.get(r.summary);
    if (!g) {
      g = { summary: r.summary, count: 0, sample: [] };
      groups.set(r.summary, g);
    }
    g.count++;
    if (g.sample.length < sample) g.sample.push(r.host);
    if (r.fit?.violation === "capacity") {
      const { resource_class, requested, free } = r.fit;
      g.capacity = { resource_class, requested, largest_free: Math.max(free, g.capacity?.largest_free ?? 0) };
    }
  }
  return [...groups.values()];
}

/** The bounded form of a detailed explanation. */
export function compactExplanation(d: DetailedExplanation, opts: CompactOptions = {}): DecisionExplanation {
  const top = opts.top ?? COMPACT_TOP;
  const stages: CompactStage[] = d.stages.map((s) => ({
    stage: s.stage,
    hosts_in: s.hosts_in,
    hosts_passed: s.hosts_passed,
    rejected: groupRejections(s.rejected, opts.sample),
    ...(s.skipped ? { skipped: s.skipped } : {}),
  }));
  const order = d.order.slice(0, top);
  const byHost = d.weighers.map((w) => new Map(w.hosts.map((h) => [key(h), h])));
  const explanation: DecisionExplanation = {
    index: d.index,
    requested: d.requested,
    hosts: d.hosts,
    stages,
    candidates: d.order.length,
    weighers: d.weighers.map((w, k) => ({
      weigher: w.weigher,
      hosts: order.map((o) => byHost[k]!.get(key(o))!),
    })),
    order,
  };
  if (opts.chosen) {
    const rank = d.order.findIndex(
      (o) => o.host === opts.chosen!.host && o.nodename === opts.chosen!.nodename,
    );
    if (rank >= 0) {
      const values = d.weighers.map((w, k) => {
        const { raw, normalized, multiplier } = byHost[k]!.get(key(d.order[rank]!))!;
        return { weigher: w.weigher, raw, normalized, multiplier };
      });
      explanation.chosen = { ...d.order[rank]!, rank, weighers: values };
    }
  }
  return explanation;
}

const key = (h: { host: string; nodename: string }) => `${h.host}\u0000${h.nodename}`;

interface Merged {
  count: number;
  capacity?: RejectionGroup["capacity"];
}

/** Every stage's groups merged by summary, largest first (pipeline order on ties). */
function mergedGroups(e: DecisionExplanation): [string, Merged][] {
  const merged = new Map<string, Merged>();
  for (const stage of e.stages) {
    for (const g of stage.rejected) {
      const m = merged.get(g.summary) ?? { count: 0 };
      m.count += g.count;
      if (g.capacity) {
        m.capacity = {
          ...g.capacity,
          largest_free: Math.max(g.capacity.largest_free, m.capacity?.largest_free ?? 0),
        };
      }
      merged.set(g.summary, m);
    }
  }
  // Map keeps first-seen order; a stable sort keeps it among equal counts.
  return [...merged.entries()].sort(([, a], [, b]) => b.count - a.count);
}

function describeGroups(groups: [string, Merged][]): string {
  return groups
    .map(([summary, g]) => `${g.count} ${verbFor(g.count, summary)}${capacityDetail(g)}`)
    .join(", ");
}

/**
 * "0/8 hosts are available: 5 lacked MEMORY_MB (needs 8192 MB, largest free 4096 MB), 3 are …";
 * `which` says which instance of a multi-create it was ("for instance 2 of 3").
 */
export function summarizeNoValidHost(e: DecisionExplanation, which?: string): string {
  const parts = describeGroups(mergedGroups(e));
  const head = `${e.candidates}/${e.hosts} hosts are available${which ? ` ${which}` : ""}`;
  return parts ? `${head}: ${parts}.` : `${head}.`;
}

/**
 * Why the chosen host: "host-3 chosen among 7 of 8 hosts: weight 1.73 (RAMWeigher 1 × 1,
 * CPUWeigher 1 × 0.73); 1 rejected: 1 is not in availability zone az2."
 */
export function summarizeSelection(e: DecisionExplanation): string {
  const c = e.chosen;
  if (!c) return summarizeNoValidHost(e);
  const groups = mergedGroups(e);
  const rejected = groups.reduce((n, [, g]) => n + g.count, 0);
  const why =
    e.candidates === 1
      ? "the only host left"
      : `${c.rank === 0 ? `highest weight ${fmt(c.weight)}` : `weight ${fmt(c.weight)}, ranked #${c.rank + 1}`}${weigherTerms(c)}`;
  const head = `${c.host} chosen among ${e.candidates} of ${e.hosts} hosts: ${why}`;
  return rejected > 0 ? `${head}; ${rejected} rejected: ${describeGroups(groups)}.` : `${head}.`;
}

function weigherTerms(c: ChosenHost): string {
  const terms = c.weighers
    .filter((w) => w.multiplier * w.normalized !== 0)
    .map((w) => `${w.weigher} ${fmt(w.multiplier)} × ${fmt(w.normalized)}`);
  return terms.length > 0 ? ` (${terms.join(", ")})` : "";
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(3)));
}

function capacityDetail(g: Merged): string {
  if (!g.capacity) return "";
  const { resource_class: rc, requested, largest_free } = g.capacity;
  return ` (needs ${withUnit(rc, requested)}, largest free ${withUnit(rc, largest_free)})`;
}

/** Summaries are written in the plural; "1 are disabled" reads "1 is disabled". */
export function verbFor(count: number, summary: string): string {
  if (count !== 1) return summary;
  return summary.replace(
    /^(are|were|have|lack|do|run|already run)\b/,
    (verb) =>
      ({
        are: "is",
        were: "was",
        have: "has",
        lack: "lacks",
        do: "does",
        run: "runs",
        "already run": "already runs",
      })[verb]!,
  );
}

/** A host-independent summary said of one host: "are disabled" → "host is disabled". */
export function reasonFromSummary(summary: string): string {
  return `host ${verbFor(1, summary)}`;
}

export type { RankedHost };
