// Reading instance records: one by id (consistent), a project's or every project's, a host's.
// The indexes carry only keys (and `deleted`): the records are then read whole by BatchGetItem.
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { batchGetAll } from "../aws/dynamo-batch.js";
import { queryAll, scanAll } from "../aws/dynamo-pages.js";
import { INSTANCES_BY_HOST_INDEX, INSTANCES_BY_PROJECT_INDEX } from "../resources.js";
import { instancesTable, recordOf } from "./codec.js";
import type { InstanceRecord } from "./types.js";

export async function getInstance(id: string): Promise<InstanceRecord | undefined> {
  const r = await dynamo().send(
    new GetCommand({ TableName: instancesTable(), Key: { id }, ConsistentRead: true }),
  );
  return r.Item ? recordOf(r.Item) : undefined;
}

/**
 * Live (not deleted) instances of one project, or of every project when none is given. The
 * project's index carries only the keys and `deleted`: the live ones are then read whole.
 */
export async function listInstances(
  projectId?: string,
  opts: { withDeleted?: boolean } = {},
): Promise<InstanceRecord[]> {
  // deleted ones (until their TTL) only for usage reports (os-simple-tenant-usage)
  // (a whole-table read skips the items that are not instances: console outputs, lib/instances/power.ts)
  const live = opts.withDeleted
    ? projectId
      ? { ExpressionAttributeValues: { ":p": projectId } }
      : { FilterExpression: "attribute_exists(created_at)", ExpressionAttributeValues: undefined }
    : { FilterExpression: "deleted = :f", ExpressionAttributeValues: { ":f": false } };
  const items = projectId
    ? await getInstances(
        (
          await queryAll<Pick<InstanceRecord, "id">>({
            TableName: instancesTable(),
            IndexName: INSTANCES_BY_PROJECT_INDEX,
            KeyConditionExpression: "project_id = :p",
            ...live,
            ExpressionAttributeValues: { ...live.ExpressionAttributeValues, ":p": projectId },
          })
        ).map((r) => r.id),
        opts.withDeleted,
      )
    : (await scanAll({ TableName: instancesTable(), ...live })).map(recordOf);
  return items.sort((a, b) => b.created_at.localeCompare(a.created_at) || a.id.localeCompare(b.id));
}

/**
 * Live instances placed on `host` (Nova's InstanceList.get_by_host): what a starting compute
 * service reconciles its guests with. The index carries the keys and `deleted`.
 */
export async function listInstancesOnHost(host: string): Promise<InstanceRecord[]> {
  const keys = await queryAll<Pick<InstanceRecord, "id">>({
    TableName: instancesTable(),
    IndexName: INSTANCES_BY_HOST_INDEX,
    KeyConditionExpression: "host = :h",
    FilterExpression: "deleted = :f",
    ExpressionAttributeValues: { ":h": host, ":f": false },
  });
  return (await getInstances(keys.map((r) => r.id))).filter((r) => r.host === host);
}

/**
 * The instances with these ids (those that exist), by BatchGetItem. A deleted one may be read
 * after its index entry said live: callers filter on `deleted` again.
 */
async function getInstances(ids: string[], withDeleted = false): Promise<InstanceRecord[]> {
  const items = await batchGetAll(
    instancesTable(),
    ids.map((id) => ({ id })),
  );
  const out = items.map(recordOf);
  return withDeleted ? out : out.filter((r) => !r.deleted);
}
