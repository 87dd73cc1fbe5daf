// build-requests → conductor: build-intake's SQS event source hands it batches of build requests
// (every sender's: the API's chunks, a failed build's reschedule, the watchdog's resends, a move's
// or unshelve's reschedule), and it starts one Express execution per request. It is the only
// starter of conductor executions, so the queue is the one buffer in front of Step Functions.
// The queue's other kind is a security group's member sync (Neutron's security_groups_member_updated,
// gathered over a window: lib/instances/security-group-refresh.ts), which it applies itself: one
// cast per affected host, no execution.
// Partial batch responses (Powertools' BatchProcessor): a request whose start fails stays on the
// queue and comes back; a malformed one goes to the DLQ with its reason, and so does a sync that
// failed on its last receive.
import { createHash } from "node:crypto";
import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import { StartExecutionCommand } from "@aws-sdk/client-sfn";
import { ChangeMessageVisibilityCommand } from "@aws-sdk/client-sqs";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import { sfnClient, sqsClient } from "../aws/clients.js";
import { sendToDeadLetter } from "../aws/send.js";
import { resources, schedulerConfig } from "../config.js";
import { syncGroupMembers } from "../instances/security-group-refresh.js";
import { log } from "../log.js";
import type { BuildRequest } from "../messages/build-request.js";
import type { ConductorInput } from "../messages/scheduled.js";
import {
  isMemberSync,
  parseBuildRequestsMessage,
  type SecurityGroupsMemberUpdated,
} from "../messages/security-group-sync.js";
import { hostQueueUrl } from "../placement/host-queues.js";
import { BUILD_REQUESTS_QUEUE } from "../resources.js";

/**
 * How long a request whose start failed stays hidden before its next try: from the first,
 * doubling with each receive, up to the last. Without it, it would wait out the queue's visibility
 * timeout (six times the function's, AWS's advice for an event source), three minutes.
 * Under build-requests' maxReceiveCount (lib/resources.ts) this gives Step Functions about five
 * minutes to answer again before the request goes to the DLQ.
 */
export const START_RETRY_SECONDS = { first: 2, max: 60 } as const;

/**
 * A deterministic execution name: a Standard workflow then refuses a second execution for the
 * same request (SQS's at-least-once, a sender's retry), and an Express one is at least findable by
 * it. The conductor's steps are idempotent either way (claims by consumer, writes fenced by attempt).
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

/** The start's delay after the `receiveCount`-th receive failed (START_RETRY_SECONDS). */
export function startRetrySeconds(receiveCount: number): number {
  const n = Math.max(1, Math.floor(receiveCount) || 1);
  return Math.min(START_RETRY_SECONDS.max, START_RETRY_SECONDS.first * 2 ** (n - 1));
}

/** One batch of build-intake's event source: the ids of the records to be received again. */
export function intake(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  return processPartialResponse(event, intakeOne, new BatchProcessor(EventType.SQS), {
    ...(context ? { context } : {}),
    // a batch whose every start failed (Step Functions throttled or down) is not an error of the
    // function: each record says so and comes back after its own delay
    throwOnFullBatchFailure: false,
  });
}

async function intakeOne(record: SQSRecord): Promise<void> {
  const parsed = parseBuildRequestsMessage(record.body);
  if (!parsed.ok) {
    // Poison: it will never parse, so retrying is pointless. Park it with its reason.
    await sendToDeadLetter(resources().buildRequestsDlqUrl, record.body, parsed.reason, "build-requests");
    log.warn("intake.dead_lettered", { message_id: record.messageId, reason: parsed.reason });
    return;
  }
  if (isMemberSync(parsed.value)) return memberSync(record, parsed.value);
  const msg = parsed.value;
  try {
    await startExecution(msg);
  } catch (error) {
    return retryAfterFailure(record, msg.request_id, "intake.start_failed", error);
  }
  const sent = Number(record.attributes.SentTimestamp);
  log.info("intake.execution_started", {
    request_id: msg.request_id,
    instance_uuid: msg.instance_uuids.length === 1 ? msg.instance_uuids[0] : undefined,
    instance_uuids: msg.instance_uuids,
    attempt: msg.retry.num_attempts,
    // how long it waited in build-requests (a delayed chunk: its delay included)
    ...(Number.isFinite(sent) ? { queued_ms: Date.now() - sent } : {}),
  });
}

/**
 * A group's member sync, applied here. One that fails comes back after the start's delays; on its
 * last receive it goes to the DLQ with its reason (a redrive would not say why).
 */
async function memberSync(record: SQSRecord, msg: SecurityGroupsMemberUpdated): Promise<void> {
  const receives = Number(record.attributes.ApproximateReceiveCount) || 1;
  try {
    await syncGroupMembers(msg, log, hostQueueUrl);
  } catch (error) {
    const reason = `member sync of security group ${msg.security_group_id} failed on receive ${receives}: ${
      error instanceof Error ? error.message : String(error)
    }`;
    if (receives >= BUILD_REQUESTS_QUEUE.maxReceiveCount) {
      await sendToDeadLetter(resources().buildRequestsDlqUrl, record.body, reason, "build-requests");
      log.error("intake.member_sync_dead_lettered", { message_id: record.messageId, reason });
      return;
    }
    return retryAfterFailure(record, msg.request_id, "intake.member_sync_failed", error);
  }
}

/**
 * A message whose work failed: logged with its receive count, made visible again after the
 * start's delay for that count, and reported failed to the batch (the error rethrown).
 */
async function retryAfterFailure(
  record: SQSRecord,
  requestId: string,
  event: "intake.start_failed" | "intake.member_sync_failed",
  error: unknown,
): Promise<never> {
  const receives = Number(record.attributes.ApproximateReceiveCount) || 1;
  const fields = {
    message_id: record.messageId,
    request_id: requestId,
    receive_count: receives,
    retry_in_seconds: startRetrySeconds(receives),
    error,
  };
  if (event === "intake.start_failed") log.error(event, fields);
  else log.warn(event, fields);
  await retryLater(record, startRetrySeconds(receives));
  throw error;
}

async function startExecution(msg: BuildRequest): Promise<void> {
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
    // The same request started it already (a Standard workflow's name is unique).
    if ((e as { name?: string }).name !== "ExecutionAlreadyExists") throw e;
  }
}

/**
 * The record, reported failed, stays on the queue hidden for `seconds` (from now) rather than the
 * queue's visibility timeout. If that fails too it still comes back, only later.
 */
async function retryLater(record: SQSRecord, seconds: number): Promise<void> {
  try {
    await sqsClient().send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: resources().buildRequestsQueueUrl,
        ReceiptHandle: record.receiptHandle,
        VisibilityTimeout: seconds,
      }),
    );
  } catch (error) {
    log.warn("intake.retry_delay_failed", { message_id: record.messageId, error });
  }
}
