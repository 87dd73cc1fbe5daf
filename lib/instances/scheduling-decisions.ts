// The scheduler's explanations, kept in the Scheduling table (one item per instance), not on the
// instance's record.
import { gunzipSync, gzipSync } from "node:zlib";
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { dynamo } from "../aws/clients.js";
import { conditionHeld } from "../aws/dynamo-errors.js";
import { resources } from "../config.js";
import type { SchedulingRecord } from "./types.js";

/**
 * Scheduler: keep the explanation of its decision for `attempt` apart from the instance (one
 * item per instance in the Scheduling table, its explanation gzipped), so no transition of the
 * instance pays for it. A stale re-run for an older attempt cannot overwrite a newer decision.
 */
export async function recordSchedulingDecision(id: string, decision: SchedulingRecord): Promise<boolean> {
  const { explanation, ...rest } = decision;
  return conditionHeld(
    dynamo().send(
      new PutCommand({
        TableName: resources().schedulingTable,
        Item: { id, ...rest, explanation_gz: gzipSync(JSON.stringify(explanation ?? null)) },
        ConditionExpression: "attribute_not_exists(id) OR attempt <= :n",
        ExpressionAttributeValues: { ":n": decision.attempt },
      }),
    ),
  );
}

/** The last scheduling decision recorded for an instance (admins: os-scheduling). */
export async function getSchedulingDecision(id: string): Promise<SchedulingRecord | undefined> {
  const r = await dynamo().send(new GetCommand({ TableName: resources().schedulingTable, Key: { id } }));
  if (!r.Item) return undefined;
  const {
    id: _id,
    explanation_gz,
    ...rest
  } = r.Item as Omit<SchedulingRecord, "explanation"> & {
    id: string;
    explanation_gz: Uint8Array;
  };
  return { ...rest, explanation: JSON.parse(gunzipSync(explanation_gz).toString("utf8")) };
}
