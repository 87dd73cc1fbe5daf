// The compute service record on the host item: what an operator (os-services) sets to take a
// host out of scheduling (disabled) or to declare it dead (forced_down). forced_down is mirrored
// onto the host's Services item, where the watchdog reads liveness.
import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld, unlessConditionFails } from "../aws/dynamo-errors.js";
import { deleteQueueWithDlq } from "../aws/queues.js";
import { resources } from "../config.js";
import { logChange } from "./change-log.js";
import { stamp } from "./feed.js";
import { mirrorForcedDown } from "./liveness.js";
import type { HostRecord } from "./types.js";

export interface ServiceUpdate {
  disabled?: boolean;
  /** kept only while disabled, as Nova clears it on enable */
  disabled_reason?: string | null;
  forced_down?: boolean;
}

/** Returns the updated host, or undefined when there is no such host. */
export async function setServiceStatus(host: string, u: ServiceUpdate): Promise<HostRecord | undefined> {
  const sets: string[] = [];
  const values: Record<string, unknown> = {};
  if (u.disabled !== undefined) {
    sets.push("service.disabled = :disabled", "service.disabled_reason = :reason");
    values[":disabled"] = u.disabled;
    values[":reason"] = u.disabled ? (u.disabled_reason ?? null) : null;
  } else if (u.disabled_reason !== undefined) {
    sets.push("service.disabled_reason = :reason");
    values[":reason"] = u.disabled_reason;
  }
  if (u.forced_down !== undefined) {
    sets.push("service.forced_down = :forced");
    values[":forced"] = u.forced_down;
  }
  if (!sets.length) throw new Error("setServiceStatus: nothing to change");
  // Every provider write moves it on the scheduler's change feed.
  sets.push(stamp(values));
  const r = await unlessConditionFails(
    dynamo().send(
      new UpdateCommand({
        TableName: resources().hostsTable,
        Key: { host },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(host)",
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    ),
  );
  if (!r) return undefined;
  await logChange(host, values);
  const updated = r.Attributes as HostRecord;
  if (u.forced_down !== undefined) await mirrorForcedDown(host, u.forced_down);
  return updated;
}

/** Nova's reason shown on a deleted service while its provider item remains. */
export const DELETED_REASON = "deleted";

/**
 * DELETE /os-services/{id}: mark the compute service deleted, only while the host holds no
 * allocation (one conditional write, so a concurrent claim either lands first and refuses the
 * delete, or finds the host disabled). The provider item stays (the API may not delete it: least
 * privilege), disabled and on the change feed so the scheduler drops it at once.
 * With `queueUrl`, the host's queue and its DLQ go too, after the write (a delete refused by a
 * claim keeps the queue its new instance needs): the stack did not create them, so nothing else
 * would. The caller has checked that they are empty, or that the service is forced down.
 */
export async function deleteComputeService(
  host: string,
  at: string,
  queueUrl?: string,
): Promise<"deleted" | "not-found" | "busy"> {
  const values: Record<string, unknown> = { ":at": at, ":true": true, ":reason": DELETED_REASON, ":zero": 0 };
  const deleted = await conditionHeld(
    dynamo().send(
      new UpdateCommand({
        TableName: resources().hostsTable,
        Key: { host },
        UpdateExpression: `SET service.deleted_at = :at, service.disabled = :true, service.disabled_reason = :reason, ${stamp(values)}`,
        ConditionExpression:
          "attribute_exists(host) AND attribute_not_exists(service.deleted_at) AND num_instances = :zero",
        ExpressionAttributeValues: values,
      }),
    ),
  );
  if (deleted) {
    await logChange(host, values);
    if (queueUrl) await deleteQueueWithDlq(queueUrl);
    return "deleted";
  }
  const r = await dynamo().send(
    new GetCommand({ TableName: resources().hostsTable, Key: { host }, ConsistentRead: true }),
  );
  const h = r.Item as HostRecord | undefined;
  return !h || h.service.deleted_at ? "not-found" : "busy";
}
