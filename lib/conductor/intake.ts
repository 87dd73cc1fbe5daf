// build-requests → conductor: validate each message and start one conductor execution for it.
import { createHash } from "node:crypto";
import { StartExecutionCommand } from "@aws-sdk/client-sfn";
import { sfnClient } from "../aws/clients.js";
import { sendToDeadLetter } from "../aws/send.js";
import { failedMessageIds } from "../aws/sqs-batch.js";
import { resources, schedulerConfig } from "../config.js";
import { log } from "../log.js";
import { type BuildRequest, parseBuildRequest } from "../messages/build-request.js";
import type { ConductorInput } from "../messages/scheduled.js";

export interface IntakeRecord {
  messageId: string;
  body: string;
}

/**
 * A deterministic execution name: a Standard workflow then refuses a second execution for the
 * same message (SQS's at-least-once), and an Express one is at least findable by it.
 */
export function executionName(msg: BuildRequest): string {
  const digest = createHash("sha256")
    .update(
      `${msg.request_id}|${msg.instance_uuids.join(",")}|${msg.retry.num_attempts}${msg.move ? `|${msg.move.migration_uuid}` : ""}`,
    )
    .digest("hex")
    .slice(0, 40);
  return `${msg.move ? "move" : "build"}-${msg.retry.num_attempts}-${digest}`;
}

/** Returns the message ids that failed and must be redelivered (SQS partial batch response). */
export function intake(records: IntakeRecord[]): Promise<string[]> {
  return failedMessageIds(records, intakeOne, (r, error) =>
    log.error("intake.start_failed", { message_id: r.messageId, error }),
  );
}

async function intakeOne(r: IntakeRecord): Promise<void> {
  const parsed = parseBuildRequest(r.body);
  if (!parsed.ok) {
    // Poison: it will never parse, so retrying is pointless. Park it with its reason.
    await sendToDeadLetter(resources().buildRequestsDlqUrl, r.body, parsed.reason, "build-requests");
    log.warn("intake.dead_lettered", { message_id: r.messageId, reason: parsed.reason });
    return;
  }
  const msg = parsed.value;
  const input: ConductorInput = { ...msg, config: { max_attempts: schedulerConfig().max_attempts } };
  try {
    await sfnClient().send(
      new StartExecutionCommand({
        stateMachineArn: resources().conductorStateMachineArn,
        name: executionName(msg),
        input: JSON.stringify(input),
      }),
    );
  } catch (e) {
    // The same message started it already (a Standard workflow's name is unique).
    if ((e as { name?: string }).name !== "ExecutionAlreadyExists") throw e;
  }
  log.info("intake.execution_started", {
    request_id: msg.request_id,
    instance_uuid: msg.instance_uuids.length === 1 ? msg.instance_uuids[0] : undefined,
    instance_uuids: msg.instance_uuids,
    attempt: msg.retry.num_attempts,
  });
}
