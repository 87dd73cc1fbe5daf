// Placement audit (Nova's `nova-manage placement audit`): every allocation item is checked against
// its consumer's instance record, every provider's usage against the sum of its allocation items
// and num_instances against their count, every free against capacity − usage. Repair deletes the
// leaked allocations and recomputes the provider's counters in one transaction per host,
// conditioned on the generation read, after checking each leak again against a fresh read; run it
// twice and the second run finds and changes nothing. The server groups' ledgers (the late
// affinity check) are checked against the allocations that carry their group (audit-groups.ts).
import { placementAuditGraceSeconds } from "../config.js";
import { listAllocations } from "./allocations.js";
import {
  type AuditFinding,
  type AuditReport,
  classifyAllocation,
  countingFindings,
} from "./audit-classify.js";
import { auditGroupLedgers } from "./audit-groups.js";
import { missingClaims, readConsumers } from "./audit-reads.js";
import { repairHost } from "./audit-repair.js";
import { getHost, listHosts } from "./hosts.js";
import type { AllocationRecord, HostRecord } from "./types.js";

/** Claims younger than this, of instances still in BUILD, may be mid-placement. */
export const DEFAULT_AUDIT_GRACE_SECONDS = 300;

export function auditGraceSeconds(): number {
  return placementAuditGraceSeconds();
}

export interface AuditOptions {
  repair?: boolean;
  /** default NOVALESS_PLACEMENT_AUDIT_GRACE_SECONDS, else 300 */
  graceSeconds?: number;
  /** only these hosts */
  hosts?: string[];
  now?: Date;
}

export async function auditPlacement(opts: AuditOptions = {}): Promise<AuditReport> {
  const now = opts.now ?? new Date();
  const grace = opts.graceSeconds ?? auditGraceSeconds();
  // Hosts, then their allocations, then instances: a claim lands on both items at once, so one
  // read after the host's sees at least what the host counted; an instance record read after its
  // claim is never older than it. Repair checks the generation, so what moved in between is re-read.
  const hosts = opts.hosts
    ? (await Promise.all(opts.hosts.map((h) => getHost(h)))).filter((h): h is HostRecord => Boolean(h))
    : await listHosts({ consistent: true });
  const wanted = new Set(hosts.map((h) => h.host));
  const byHost = new Map<string, AllocationRecord[]>();
  for (const a of await listAllocations(opts.hosts?.length === 1 ? { host: opts.hosts[0]! } : {})) {
    if (!wanted.has(a.host)) continue;
    byHost.set(a.host, [...(byHost.get(a.host) ?? []), a]);
  }
  const consumers = await readConsumers([...new Set([...byHost.values()].flat().map((a) => a.consumer))]);
  const missing = await missingClaims(wanted, byHost);
  const report: AuditReport = {
    hosts_checked: hosts.length,
    allocations_checked: 0,
    grace_seconds: grace,
    findings: [],
    pending: [],
    repair: Boolean(opts.repair),
  };
  for (const h of hosts.sort((a, b) => a.host.localeCompare(b.host))) {
    const allocations = (byHost.get(h.host) ?? []).sort((a, b) => a.consumer.localeCompare(b.consumer));
    const leaks: AuditFinding[] = [];
    for (const alloc of allocations) {
      report.allocations_checked++;
      const f = classifyAllocation(alloc, consumers.get(alloc.consumer), now, grace);
      if (f?.kind === "pending") report.pending.push(f);
      else if (f) leaks.push(f);
    }
    leaks.push(...missing.filter((f) => f.host === h.host));
    const counting = countingFindings(h, allocations);
    if (opts.repair && (leaks.length || counting.length))
      await repairHost(h, allocations, leaks, counting, now, grace);
    report.findings.push(...leaks, ...counting);
  }
  // After the hosts' repair (a leaked allocation deleted there leaves its group's ledger counting it).
  report.findings.push(
    ...(await auditGroupLedgers({ repair: Boolean(opts.repair), ...(opts.hosts ? { hosts: wanted } : {}) })),
  );
  return report;
}
