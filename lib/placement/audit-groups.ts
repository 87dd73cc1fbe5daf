// The placement audit's check of the server groups' ledgers (lib/placement/group-claims.ts): each
// ledger's count of an instance's allocations on a host against the allocation items that carry
// the group. An entry with no allocation behind it would refuse the group's claims forever (a
// leak of the late check); an allocation the ledger does not count would let a concurrent claim
// through. Repair writes the counts the allocations say, conditioned on the ledger's version:
// every claim, release and move of a member's allocation bumps it, so a ledger that changed after
// it was read is left for the next run.
import { TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { listAllocations } from "./allocations.js";
import type { AuditFinding } from "./audit-classify.js";
import { type Ledger, type LedgerMembers, ledgerKey, ledgerUpdate, listLedgers } from "./group-claims.js";
import type { AllocationRecord } from "./types.js";

/** Per ledger key, what its members' allocation items count: instance → host → n. */
export function countedByAllocations(allocations: readonly AllocationRecord[]): Map<string, LedgerMembers> {
  const out = new Map<string, LedgerMembers>();
  for (const a of allocations) {
    if (!a.group) continue;
    const pk = ledgerKey(a.group, a.host);
    const members = out.get(pk) ?? {};
    const hosts = members[a.group.instance] ?? {};
    hosts[a.host] = (hosts[a.host] ?? 0) + 1;
    members[a.group.instance] = hosts;
    out.set(pk, members);
  }
  return out;
}

/** The group id a ledger key names. */
function groupOf(pk: string): string {
  return pk.split("#")[1] ?? pk;
}

/**
 * The ledger's entries that differ from the allocations (among `hosts` when given), and the
 * members it should hold: pure.
 */
export function ledgerDrift(
  ledger: Pick<Ledger, "pk" | "members">,
  actual: LedgerMembers,
  hosts?: ReadonlySet<string>,
): { findings: AuditFinding[]; fixed: LedgerMembers } {
  const findings: AuditFinding[] = [];
  const fixed: LedgerMembers = structuredClone(ledger.members);
  const instances = new Set([...Object.keys(ledger.members), ...Object.keys(actual)]);
  for (const instance of [...instances].sort()) {
    const counted = ledger.members[instance] ?? {};
    const held = actual[instance] ?? {};
    for (const host of [...new Set([...Object.keys(counted), ...Object.keys(held)])].sort()) {
      if (hosts && !hosts.has(host)) continue;
      const c = counted[host] ?? 0;
      const n = held[host] ?? 0;
      if (c === n) continue;
      const group = groupOf(ledger.pk);
      findings.push({
        kind: "group_ledger_mismatch",
        host,
        consumer: instance,
        detail:
          n === 0
            ? `server group ${group} counts instance ${instance} on ${host} (${c}) with no allocation behind it`
            : `server group ${group} counts ${c} allocation(s) of instance ${instance} on ${host}, the allocations say ${n}`,
      });
      const row = fixed[instance] ?? {};
      if (n > 0) row[host] = n;
      else delete row[host];
      if (Object.keys(row).length) fixed[instance] = row;
      else delete fixed[instance];
    }
  }
  return { findings, fixed };
}

/**
 * Every ledger checked against the allocations (read after it, consistently); with `repair`, each
 * drifted ledger rewritten at the version read.
 */
export async function auditGroupLedgers(opts: {
  repair: boolean;
  hosts?: ReadonlySet<string>;
}): Promise<AuditFinding[]> {
  const ledgers = await listLedgers();
  const allocations = await listAllocations();
  const actual = countedByAllocations(allocations);
  // an allocation whose ledger has no item at all (its version 0)
  const known = new Set(ledgers.map((l) => l.pk));
  for (const pk of actual.keys()) if (!known.has(pk)) ledgers.push({ pk, version: 0, members: {} });
  const out: AuditFinding[] = [];
  for (const ledger of ledgers.sort((a, b) => a.pk.localeCompare(b.pk))) {
    const { findings, fixed } = ledgerDrift(ledger, actual.get(ledger.pk) ?? {}, opts.hosts);
    if (!findings.length) continue;
    if (opts.repair) {
      const written = await dynamo()
        .send(new TransactWriteCommand({ TransactItems: [ledgerUpdate(ledger.pk, ledger.version, fixed)] }))
        .then(
          () => true,
          (err: unknown) => {
            if ((err as { name?: string }).name === "TransactionCanceledException") return false;
            throw err;
          },
        );
      for (const f of findings)
        if (written)
          f.repaired = `ledger ${ledger.pk} set from the allocations (version ${ledger.version + 1})`;
    }
    out.push(...findings);
  }
  return out;
}
