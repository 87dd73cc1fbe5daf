// The operator's account of a NoValidHost, in the style of kube-scheduler's FailedScheduling:
// "0/8 hosts are available: 5 lacked MEMORY_MB (needs 8192 MB, largest free 4096 MB), 3 are not
// in availability zone az2." Never shown to a non-admin user (NoValidHost.details).
import { withUnit } from "./resource-fit.js";
import type { DecisionExplanation } from "./types.js";

interface Group {
  count: number;
  /** first-seen position, so equal counts keep pipeline order */
  seen: number;
  /** for "lacked" groups: the request and the most any rejected host had free */
  capacity?: { resource_class: string; requested: number; largestFree: number };
}

/** `numHosts`: how many hosts the decision started from. Groups are counted, largest first. */
export function summarizeNoValidHost(explanation: DecisionExplanation, numHosts: number): string {
  const groups = new Map<string, Group>();
  for (const stage of explanation.stages) {
    for (const r of stage.rejected) {
      let g = groups.get(r.summary);
      if (!g) {
        g = { count: 0, seen: groups.size };
        groups.set(r.summary, g);
      }
      g.count++;
      if (r.fit?.violation === "capacity") {
        const { resource_class, requested, free } = r.fit;
        g.capacity = { resource_class, requested, largestFree: Math.max(free, g.capacity?.largestFree ?? 0) };
      }
    }
  }
  const parts = [...groups.entries()]
    .sort(([, a], [, b]) => b.count - a.count || a.seen - b.seen)
    .map(([summary, g]) => `${g.count} ${verbFor(g.count, summary)}${capacityDetail(g)}`);
  const head = `${explanation.order.length}/${numHosts} hosts are available`;
  return parts.length > 0 ? `${head}: ${parts.join(", ")}.` : `${head}.`;
}

function capacityDetail(g: Group): string {
  if (!g.capacity) return "";
  const { resource_class: rc, requested, largestFree } = g.capacity;
  return ` (needs ${withUnit(rc, requested)}, largest free ${withUnit(rc, largestFree)})`;
}

/** Summaries are written in the plural; "1 are disabled" reads "1 is disabled". */
function verbFor(count: number, summary: string): string {
  if (count !== 1) return summary;
  return summary.replace(/^(are|were|have)\b/, (verb) => ({ are: "is", were: "was", have: "has" })[verb]!);
}
