// The scheduler's account of its decisions, for admins: the last decision kept on an instance
// (os-scheduling) and a dry run (os-scheduler/plan).

import type { SchedulingRecord } from "../../instances/types.js";
import type { PlanResult } from "../../scheduler/manager.js";

export function schedulingView(rec: SchedulingRecord | undefined | null): { scheduling: unknown } {
  // an item may hold an empty map where no decision was written yet
  if (!rec || rec.decided_at === undefined) return { scheduling: null };
  return {
    scheduling: {
      attempt: rec.attempt,
      decided_at: rec.decided_at,
      host: rec.host,
      summary: rec.summary,
      explanation: rec.explanation ?? null,
    },
  };
}

/** `warnings`: what the request asks that the scheduler would ignore (lib/scheduler/hints.ts). */
export function planView(p: PlanResult, warnings: string[]): { plan: Record<string, unknown> } {
  return {
    plan: {
      selections: p.selections.map((s) => ({
        host: s.host,
        nodename: s.nodename,
        alternates: s.alternates.map((a) => ({ host: a.host, nodename: a.nodename })),
      })),
      summary: p.summary,
      no_valid_host: p.no_valid_host,
      warnings,
      explanations: p.explanations,
    },
  };
}
