// The compute service record on the host item: what an operator (os-services) sets to take a
// host out of scheduling (disabled) or to declare it dead (forced_down). forced_down is mirrored
// onto the host's Services item, where the watchdog reads liveness.
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { isConditionalCheckFailed } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
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
  let updated: HostRecord;
  try {
    const r = await dynamo().send(
      new UpdateCommand({
        TableName: resources().hostsTable,
        Key: { host },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "attribute_exists(host)",
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    updated = r.Attributes as HostRecord;
  } catch (e) {
    if (isConditionalCheckFailed(e)) return undefined;
    throw e;
  }
  if (u.forced_down !== undefined) await mirrorForcedDown(host, u.forced_down);
  return updated;
}
