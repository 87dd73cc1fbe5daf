// What the placement audit reads of the Instances table: its consumers, by id, and the instances
// recorded on a host without an allocation there.
import { batchGetAll } from "../aws/dynamo-batch.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import { getAllocation } from "./allocations.js";
import type { AuditFinding, ConsumerRecord } from "./audit-classify.js";
import type { AllocationRecord } from "./types.js";

const CONSUMER_PROJECTION = {
  ProjectionExpression: "id, deleted, vm_state, #h, attempt, #m, launched_at",
  ExpressionAttributeNames: { "#h": "host", "#m": "migration" },
};

/**
 * The audit's view of these consumers, read consistently: an instance by its id, and a
 * migration's consumer (its uuid, in the Migrations table) as the instance it moves, marked
 * `via_migration`.
 */
export async function readConsumers(ids: string[]): Promise<Map<string, ConsumerRecord>> {
  const read = (keys: string[]) =>
    batchGetAll<ConsumerRecord>(
      resources().instancesTable,
      keys.map((id) => ({ id })),
      { ConsistentRead: true, ...CONSUMER_PROJECTION },
    );
  const out = new Map((await read(ids)).map((item) => [item.id, item]));
  const others = ids.filter((id) => !out.has(id));
  if (!others.length) return out;
  const migrations = await batchGetAll<{
    uuid: string;
    instance_uuid: string;
    migration_type: string;
    status: string;
    source_compute: string;
  }>(
    resources().migrationsTable,
    others.map((uuid) => ({ uuid })),
    {
      ConsistentRead: true,
      ProjectionExpression: "#u, instance_uuid, migration_type, #st, source_compute",
      ExpressionAttributeNames: { "#u": "uuid", "#st": "status" },
    },
  );
  const owners = new Map(
    (await read([...new Set(migrations.map((m) => m.instance_uuid))])).map((r) => [r.id, r]),
  );
  for (const m of migrations) {
    const owner = owners.get(m.instance_uuid);
    if (!owner) continue;
    const waits = m.migration_type === "evacuation" && m.status === "done";
    out.set(m.uuid, {
      ...owner,
      via_migration: true,
      ...(waits ? { evacuated_from: m.source_compute } : {}),
    });
  }
  return out;
}

/** One consumer as the audit sees it, read consistently. */
export async function readConsumer(id: string): Promise<ConsumerRecord | undefined> {
  return (await readConsumers([id])).get(id);
}

/** The instance fields a missing claim is judged by; the Instances table's `host` and `attempt`. */
const MISSING_PROJECTION = CONSUMER_PROJECTION;

/**
 * Who holds the allocation of the host a record names: its move's consumer while the record
 * still points at the source at the source's attempt (not yet finished, or not yet reverted).
 */
const holder = (rec: ConsumerRecord): string =>
  rec.migration && rec.migration.source_host === rec.host && rec.attempt !== rec.migration.attempt
    ? rec.migration.uuid
    : rec.id;

/**
 * Instances that run on one of `hosts` (by their record) without an allocation there. Instances
 * in BUILD are left out (their claim and their record move in several steps); a candidate is
 * read again, consistently, since a build may have claimed and gone ACTIVE after the allocations
 * were read.
 */
export async function missingClaims(
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
      !(byHost.get(rec.host) ?? []).some((a) => a.consumer === holder(rec)),
  );
  const out: AuditFinding[] = [];
  for (const rec of candidates) {
    if (await getAllocation(holder(rec), rec.host!)) continue;
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
