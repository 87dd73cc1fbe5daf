// What the placement audit reads of the Instances table: its consumers, by id, and the instances
// recorded on a host without an allocation there.
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { scanAll } from "../aws/dynamo-pages.js";
import { resources } from "../config.js";
import { getAllocation } from "./allocations.js";
import type { AuditFinding, ConsumerRecord } from "./audit-classify.js";
import type { AllocationRecord } from "./types.js";

/** The audit's view of these instances, read consistently. */
export async function readConsumers(ids: string[]): Promise<Map<string, ConsumerRecord>> {
  const items = await batchGetAll<ConsumerRecord>(
    resources().instancesTable,
    ids.map((id) => ({ id })),
    { ConsistentRead: true, ProjectionExpression: "id, deleted, vm_state, host, attempt" },
  );
  return new Map(items.map((item) => [item.id, item]));
}

/** One instance as the audit sees it, read consistently. */
export async function readConsumer(id: string): Promise<ConsumerRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: resources().instancesTable, Key: { id }, ConsistentRead: true }),
  );
  return r.Item as ConsumerRecord | undefined;
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
