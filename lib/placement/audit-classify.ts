// The placement audit's judgement, pure: an allocation against its consumer's instance record,
// and a provider's counters (usage, num_instances, free, claim_limit) against its allocations.
import { claimLimits, freeFor, sumAllocations } from "./capacity.js";
import type { AllocationRecord, HostRecord, ResourceClass, Resources } from "./types.js";

export type AuditKind =
  /** no instance record with the consumer's id */
  | "consumer_missing"
  | "consumer_deleted"
  | "consumer_error"
  /** the instance record names another host, or this host at another attempt */
  | "consumer_elsewhere"
  /** not (yet) a leak: an instance in BUILD whose claim is younger than the grace period */
  | "pending"
  /**
   * an instance recorded on the host (not building, not in ERROR, not deleted) without its
   * allocation there: the host's usage does not count it. Reported, never repaired: claiming now
   * could overcommit the host, and the operator decides (Nova's heal_allocations).
   */
  | "claim_missing"
  | "usage_mismatch"
  /** num_instances differs from the count of the host's allocation items */
  | "instances_mismatch"
  | "free_mismatch"
  /** `claim_limit` does not match the inventories (claims would skip a unit check, or read) */
  | "units_mismatch"
  /**
   * a server group's ledger (the late affinity check) counts an instance on a host other than
   * its allocation items there do: an entry with no allocation behind it, typically
   */
  | "group_ledger_mismatch";

export interface AuditFinding {
  kind: AuditKind;
  host: string;
  consumer?: string;
  attempt?: number;
  resource_class?: string;
  detail: string;
  /** what the repair changed; absent when not repaired */
  repaired?: string;
}

export interface AuditReport {
  hosts_checked: number;
  allocations_checked: number;
  grace_seconds: number;
  /** leaks and mismatches */
  findings: AuditFinding[];
  /** claims that may be mid-placement; reported, never repaired */
  pending: AuditFinding[];
  repair: boolean;
}

/** The instance fields the audit reads. */
export interface ConsumerRecord {
  id: string;
  deleted: boolean;
  vm_state: string;
  host: string | null;
  attempt: number;
  /** when it last ran (a build's or a rebuild's spawn); absent or null for one that never ran */
  launched_at?: string | null;
  /** the move in progress (lib/instances/types.ts MoveContext, the fields read here) */
  migration?: { uuid: string; source_host: string; dest_host: string | null; attempt: number | null };
  /** this record was found through a migration's consumer: the instance that migration moves */
  via_migration?: boolean;
  /** ...an evacuation done, whose source (this host) has not come back to destroy its copy */
  evacuated_from?: string;
}

/**
 * One allocation against its consumer's record: undefined when it is where the record says,
 * else what is wrong with it (or `pending`).
 */
export function classifyAllocation(
  alloc: AllocationRecord,
  rec: ConsumerRecord | undefined,
  now: Date,
  graceSeconds: number,
): AuditFinding | undefined {
  const { host, consumer } = alloc;
  const base = { host, consumer, attempt: alloc.attempt };
  if (!rec) return { ...base, kind: "consumer_missing", detail: `instance ${consumer} does not exist` };
  const move = rec.deleted ? undefined : rec.migration;
  if (rec.via_migration) {
    // Nova's migration-based allocation: the source, held by the move's own consumer while it lasts
    if (move?.uuid === consumer && move.source_host === host) return undefined;
    // Nova keeps an evacuated server's source allocation until its source is back and cleans up
    if (!rec.deleted && rec.evacuated_from === host) return undefined;
    const detail = `migration ${consumer} of instance ${rec.id} ${rec.deleted ? "(deleted)" : "is over"}`;
    return { ...base, kind: rec.deleted ? "consumer_deleted" : "consumer_elsewhere", detail };
  }
  // the destination, claimed for the instance before the record points there
  if (move?.dest_host === host && move.attempt === alloc.attempt) return undefined;
  if (rec.deleted) return { ...base, kind: "consumer_deleted", detail: `instance ${consumer} is deleted` };
  // Nova keeps the allocation of a server that ran on its host and failed there (a failed
  // rebuild); a build in ERROR released its claims, so one it still holds is a leak
  const ranHere = rec.launched_at && rec.host === host && rec.attempt === alloc.attempt;
  if (rec.vm_state === "error" && !ranHere) {
    return { ...base, kind: "consumer_error", detail: `instance ${consumer} is in ERROR` };
  }
  if (rec.host === host && rec.attempt === alloc.attempt) return undefined;
  const where = rec.host ? `on ${rec.host} at attempt ${rec.attempt}` : `unplaced at attempt ${rec.attempt}`;
  const detail = `claimed for attempt ${alloc.attempt}; instance ${consumer} is ${rec.vm_state} ${where}`;
  const ageSeconds = (now.getTime() - Date.parse(alloc.claimed_at)) / 1000;
  // The scheduler claims before the conductor records the host: a young claim of an instance
  // still building may be exactly that.
  if (rec.vm_state === "building" && ageSeconds < graceSeconds) {
    return {
      ...base,
      kind: "pending",
      detail: `${detail}; claimed ${Math.max(0, Math.round(ageSeconds))}s ago, within the grace period of ${graceSeconds}s`,
    };
  }
  return { ...base, kind: "consumer_elsewhere", detail };
}

export function classesOf(h: HostRecord, sum: Resources): ResourceClass[] {
  return [
    ...new Set([...Object.keys(h.inventories), ...Object.keys(h.usage), ...Object.keys(sum)]),
  ].sort() as ResourceClass[];
}

/**
 * Usage against Σ of the host's allocation items, num_instances against their count, and free
 * against capacity − usage, per class.
 */
export function countingFindings(h: HostRecord, allocations: readonly AllocationRecord[]): AuditFinding[] {
  const out: AuditFinding[] = [];
  const sum = sumAllocations(allocations);
  for (const rc of classesOf(h, sum)) {
    const used = h.usage[rc] ?? 0;
    const summed = sum[rc] ?? 0;
    if (used !== summed) {
      out.push({
        kind: "usage_mismatch",
        host: h.host,
        resource_class: rc,
        detail: `${rc} usage ${used} differs from the sum of allocations ${summed}`,
      });
    }
  }
  if ((h.num_instances ?? 0) !== allocations.length) {
    out.push({
      kind: "instances_mismatch",
      host: h.host,
      detail: `num_instances ${h.num_instances ?? "missing"} differs from the ${allocations.length} allocation(s) on the host`,
    });
  }
  const expected = freeFor(h.inventories, h.usage);
  for (const rc of Object.keys(expected) as ResourceClass[]) {
    if (h.free[rc] !== expected[rc]) {
      out.push({
        kind: "free_mismatch",
        host: h.host,
        resource_class: rc,
        detail: `${rc} free ${h.free[rc] ?? "missing"} differs from capacity − usage ${expected[rc]}`,
      });
    }
  }
  const limits = claimLimits(h.inventories);
  if (!sameMap(limits, h.claim_limit ?? {})) {
    out.push({
      kind: "units_mismatch",
      host: h.host,
      detail: `claim_limit ${JSON.stringify(h.claim_limit ?? {})} differs from the inventories' ${JSON.stringify(limits)}`,
    });
  }
  return out;
}

export function sameMap(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => a[k] === b[k]);
}
