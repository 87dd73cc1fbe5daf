// The placement audit's repair of one host: delete the leaks that are still leaks on a fresh read
// and recompute the provider's counters, in one transaction conditioned on its generation; run it
// twice and the second run changes nothing.
import { TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { resources } from "../config.js";
import { listAllocations } from "./allocations.js";
import { type AuditFinding, classesOf, classifyAllocation, sameMap } from "./audit-classify.js";
import { readConsumer } from "./audit-reads.js";
import { claimLimits, freeFor, sumAllocations } from "./capacity.js";
import { logChange } from "./change-log.js";
import { stamp } from "./feed.js";
import { getHost } from "./hosts.js";
import type { AllocationRecord, HostRecord, Resources } from "./types.js";

/** TransactWriteItems' limit, the provider's update included. */
const TRANSACTION_ITEMS = 100;

/**
 * Delete the leaks that are still leaks on a fresh read, and set usage to Σ of the allocations
 * left, num_instances to their count and free to capacity − usage, in one transaction
 * conditioned on the generation read (every claim and release bumps it, so the allocations read
 * at that generation are the host's). Marks each finding with what changed.
 */
export async function repairHost(
  audited: HostRecord,
  auditedAllocations: AllocationRecord[],
  leaks: AuditFinding[],
  counting: AuditFinding[],
  now: Date,
  grace: number,
): Promise<void> {
  const host = audited.host;
  for (;;) {
    const h = await getHost(host);
    if (!h) return;
    const allocations =
      h.generation === audited.generation ? auditedAllocations : await listAllocations({ host });
    const drop: AllocationRecord[] = [];
    for (const f of leaks) {
      if (f.repaired || f.kind === "claim_missing") continue;
      const alloc = allocations.find((a) => a.consumer === f.consumer);
      if (!alloc || alloc.attempt !== f.attempt) {
        f.repaired = "already gone";
        continue;
      }
      const again = classifyAllocation(alloc, await readConsumer(alloc.consumer), now, grace);
      if (again && again.kind !== "pending") drop.push(alloc);
      else f.repaired = undefined;
    }
    const dropping = drop.slice(0, TRANSACTION_ITEMS - 1);
    const dropped = new Set(dropping.map((a) => a.consumer));
    const remaining = allocations.filter((a) => !dropped.has(a.consumer));
    const sum = sumAllocations(remaining);
    const usage: Resources = {};
    for (const rc of classesOf(h, sum)) {
      if (h.inventories[rc] || sum[rc]) usage[rc] = sum[rc] ?? 0;
    }
    const free = freeFor(h.inventories, usage);
    const limits = claimLimits(h.inventories);
    const changes: string[] = [];
    if (!sameMap(limits, h.claim_limit ?? {})) changes.push(`claim_limit ${JSON.stringify(limits)}`);
    if ((h.num_instances ?? 0) !== remaining.length)
      changes.push(`num_instances ${h.num_instances ?? "missing"} → ${remaining.length}`);
    for (const rc of classesOf(h, usage)) {
      if ((h.usage[rc] ?? 0) !== (usage[rc] ?? 0))
        changes.push(`${rc} usage ${h.usage[rc] ?? 0} → ${usage[rc] ?? 0}`);
      if (h.free[rc] !== free[rc])
        changes.push(`${rc} free ${h.free[rc] ?? "missing"} → ${free[rc] ?? "removed"}`);
    }
    if (!dropping.length && !changes.length) {
      for (const f of counting) f.repaired ??= "already consistent";
      return;
    }
    const values: Record<string, unknown> = {
      ":usage": usage,
      ":free": free,
      ":limits": limits,
      ":count": remaining.length,
      ":one": 1,
      ":g": h.generation,
    };
    const changed = stamp(values);
    const names = resources();
    try {
      await dynamo().send(
        new TransactWriteCommand({
          TransactItems: [
            ...dropping.map((a) => ({
              Delete: {
                TableName: names.allocationsTable,
                Key: { consumer: a.consumer, host },
                ConditionExpression: "attempt = :a AND claimed_at = :t",
                ExpressionAttributeValues: { ":a": a.attempt, ":t": a.claimed_at },
              },
            })),
            {
              Update: {
                TableName: names.hostsTable,
                Key: { host },
                UpdateExpression:
                  "SET #usage = :usage, #free = :free, claim_limit = :limits, num_instances = :count, " +
                  `generation = generation + :one, ${changed}`,
                ConditionExpression: "generation = :g",
                ExpressionAttributeNames: { "#usage": "usage", "#free": "free" },
                ExpressionAttributeValues: values,
              },
            },
          ],
        }),
      );
    } catch (e) {
      // a claim or release landed: look again
      if ((e as { name?: string }).name === "TransactionCanceledException") continue;
      throw e;
    }
    await logChange(host, values);
    for (const a of dropping) {
      const f = leaks.find((l) => l.consumer === a.consumer)!;
      f.repaired = `released ${describe(a.resources)}`;
    }
    const summary = changes.join(", ") || "consistent";
    for (const f of counting) f.repaired = summary;
    if (dropping.length === drop.length) return;
  }
}

function describe(res: Resources): string {
  return (
    Object.entries(res)
      .filter(([, n]) => n)
      .map(([rc, n]) => `${rc}=${n}`)
      .join(" ") || "nothing"
  );
}
