// Placement audit (Nova's `nova-manage placement audit`): every allocation item is checked against
// its consumer's instance record, every provider's usage against the sum of its allocation items
// and num_instances against their count, every free against capacity − usage. Repair deletes the
// leaked allocations and recomputes the provider's counters in one transaction per host,
// conditioned on the generation read, after checking each leak again against a fresh read; run it
// twice and the second run finds and changes nothing.
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  GetCommand,
  TransactWriteCommand,
} from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { placementAuditGraceSeconds, resources } from "../config.js";
import { getAllocation, listAllocations } from "./allocations.js";
import { claimLimits, freeFor, sumAllocations } from "./capacity.js";
import { stamp } from "./feed.js";
import { getHost, listHosts } from "./hosts.js";
import type { AllocationRecord, HostRecord, ResourceClass, Resources } from "./types.js";

/** Claims younger than this, of instances still in BUILD, may be mid-placement. */
export const DEFAULT_AUDIT_GRACE_SECONDS = 300;

export function auditGraceSeconds(): number {
  return placementAuditGraceSeconds();
}

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
  | "units_mismatch";

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

export interface AuditOptions {
  repair?: boolean;
  /** default NOVALESS_PLACEMENT_AUDIT_GRACE_SECONDS, else 300 */
  graceSeconds?: number;
  /** only these hosts */
  hosts?: string[];
  now?: Date;
}

/** The instance fields the audit reads. */
export interface ConsumerRecord {
  id: string;
  deleted: boolean;
  vm_state: string;
  host: string | null;
  attempt: number;
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
  if (rec.deleted) return { ...base, kind: "consumer_deleted", detail: `instance ${consumer} is deleted` };
  if (rec.vm_state === "error") {
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

function classesOf(h: HostRecord, sum: Resources): ResourceClass[] {
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

function sameMap(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => a[k] === b[k]);
}

async function readConsumers(ids: string[]): Promise<Map<string, ConsumerRecord>> {
  const out = new Map<string, ConsumerRecord>();
  const table = resources().instancesTable;
  for (let i = 0; i < ids.length; i += 100) {
    let keys: Record<string, unknown>[] | undefined = ids.slice(i, i + 100).map((id) => ({ id }));
    while (keys?.length) {
      const r: BatchGetCommandOutput = await dynamo().send(
        new BatchGetCommand({
          RequestItems: {
            [table]: {
              Keys: keys,
              ConsistentRead: true,
              ProjectionExpression: "id, deleted, vm_state, host, attempt",
            },
          },
        }),
      );
      for (const item of r.Responses?.[table] ?? []) out.set(item.id as string, item as ConsumerRecord);
      keys = r.UnprocessedKeys?.[table]?.Keys;
    }
  }
  return out;
}

async function readConsumer(id: string): Promise<ConsumerRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: resources().instancesTable, Key: { id }, ConsistentRead: true }),
  );
  return r.Item as ConsumerRecord | undefined;
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
  return report;
}

/** The instance fields a missing claim is judged by; the Instances table's `host` and `attempt`. */
const MISSING_PROJECTION = {
  ProjectionExpression: "id, deleted, vm_state, #h, attempt",
  ExpressionAttributeNames: { "#h": "host" },
};

/**
 * Instances that run on one of `hosts` (by their record) without an allocation there. Instances
 * in BUILD are left out (their claim and their record move in several steps); a candidate is
 * read again, consistently, since a build may have claimed and gone ACTIVE after the allocations
 * were read.
 */
async function missingClaims(
  hosts: ReadonlySet<string>,
  byHost: ReadonlyMap<string, AllocationRecord[]>,
): Promise<AuditFinding[]> {
  const instances = await scanAll<ConsumerRecord>({
    TableName: resources().instancesTable,
    ConsistentRead: true,
    ...MISSING_PROJECTION,
  });
  const candidates = instances.filter(
    (rec) =>
      !rec.deleted &&
      rec.host &&
      hosts.has(rec.host) &&
      rec.vm_state !== "building" &&
      rec.vm_state !== "error" &&
      !(byHost.get(rec.host) ?? []).some((a) => a.consumer === rec.id),
  );
  const out: AuditFinding[] = [];
  for (const rec of candidates) {
    if (await getAllocation(rec.id, rec.host!)) continue;
    out.push({
      kind: "claim_missing",
      host: rec.host!,
      consumer: rec.id,
      attempt: rec.attempt,
      detail: `instance ${rec.id} is ${rec.vm_state} on ${rec.host} at attempt ${rec.attempt} without an allocation there`,
    });
  }
  return out;
}

/** TransactWriteItems' limit, the provider's update included. */
const TRANSACTION_ITEMS = 100;

/**
 * Delete the leaks that are still leaks on a fresh read, and set usage to Σ of the allocations
 * left, num_instances to their count and free to capacity − usage, in one transaction
 * conditioned on the generation read (every claim and release bumps it, so the allocations read
 * at that generation are the host's). Marks each finding with what changed.
 */
async function repairHost(
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

const LABEL: Record<AuditKind, string> = {
  consumer_missing: "leak",
  consumer_deleted: "leak",
  consumer_error: "leak",
  consumer_elsewhere: "leak",
  pending: "pending",
  claim_missing: "missing",
  usage_mismatch: "mismatch",
  instances_mismatch: "mismatch",
  free_mismatch: "mismatch",
  units_mismatch: "mismatch",
};

/** The report as the command prints it: one line per finding, what was changed after an arrow. */
export function formatAuditReport(r: AuditReport): string {
  const lines = [
    `${r.allocations_checked} allocation(s) on ${r.hosts_checked} host(s) checked (grace ${r.grace_seconds}s)`,
  ];
  for (const f of [...r.findings, ...r.pending]) {
    const what = f.consumer ? `consumer ${f.consumer}` : (f.resource_class ?? "inventories");
    const done = f.repaired ? `  → ${f.repaired}` : "";
    lines.push(`${LABEL[f.kind].padEnd(8)} ${f.host}  ${what}: ${f.detail}${done}`);
  }
  const repaired = r.findings.filter((f) => f.repaired).length;
  lines.push(
    r.findings.length === 0
      ? `no leaks or mismatches found${r.pending.length ? `; ${r.pending.length} pending` : ""}`
      : `${r.findings.length} leak(s)/mismatch(es) found${r.repair ? `, ${repaired} repaired` : "; run with --repair to fix them"}`,
  );
  return `${lines.join("\n")}\n`;
}

/**
 * nova-manage placement audit's return codes: 0 nothing found, 3 found (not all repaired),
 * 4 everything found was repaired.
 */
export function auditExitCode(r: AuditReport): number {
  if (r.findings.length === 0) return 0;
  return r.repair && r.findings.every((f) => f.repaired) ? 4 : 3;
}
