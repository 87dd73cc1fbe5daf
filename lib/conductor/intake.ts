// build-requests → conductor: the drain build-intake runs every minute. What waits in the queue
// is what its sender could not start itself (lib/aws/send.ts): a large create's delayed chunks, a
// start that was throttled or failed. Each message is validated and its execution started, then
// deleted; a start that fails leaves it for its visibility timeout (maxReceiveCount sends it to
// the DLQ). No event source mapping: its pollers would cost about $0.26 a month, idle or not.
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { sendToDeadLetter } from "../aws/send.js";
import { startBuild } from "../aws/start-build.js";
import { resources } from "../config.js";
import { log } from "../log.js";
import { parseBuildRequest } from "../messages/build-request.js";

/** What one drain did. */
export interface DrainSummary {
  /** executions started (or found started) */
  started: number;
  /** malformed messages parked on the DLQ with their reason */
  dead_lettered: number;
  /** starts that failed: their messages come back after the visibility timeout */
  failed: number;
  /** ReceiveMessage calls */
  receives: number;
}

export interface DrainOptions {
  /** stop receiving once this much time has gone (the function's timeout, less a margin) */
  budgetMs: number;
  now?: () => number;
}

/**
 * Receives from build-requests (10 at a time, no wait) until it answers none or the budget is
 * spent; each message started (or dead-lettered), then deleted in one batch per receive. A
 * receive whose every start failed (Step Functions throttled or down) ends the drain: the next
 * minute's tries again.
 */
export async function drainBuildRequests(opts: DrainOptions): Promise<DrainSummary> {
  const now = opts.now ?? Date.now;
  const deadline = now() + opts.budgetMs;
  const queueUrl = resources().buildRequestsQueueUrl;
  const summary: DrainSummary = { started: 0, dead_lettered: 0, failed: 0, receives: 0 };
  while (now() < deadline) {
    const out = await sqsClient().send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ["SentTimestamp", "ApproximateReceiveCount"],
      }),
    );
    summary.receives++;
    const messages = out.Messages ?? [];
    if (messages.length === 0) break;
    const handled = await Promise.all(messages.map((m) => intakeOne(m, summary)));
    const done = messages.filter((_, i) => handled[i]);
    if (done.length) await deleteAll(queueUrl, done);
    if (done.length === 0) break;
  }
  if (summary.receives > 1 || summary.failed > 0) log.info("intake.drained", { ...summary });
  return summary;
}

/** true: the message is done with (started or parked) and may be deleted. */
async function intakeOne(m: Message, summary: DrainSummary): Promise<boolean> {
  const body = m.Body ?? "";
  const parsed = parseBuildRequest(body);
  try {
    if (!parsed.ok) {
      // Poison: it will never parse, so retrying is pointless. Park it with its reason.
      await sendToDeadLetter(resources().buildRequestsDlqUrl, body, parsed.reason, "build-requests");
      log.warn("intake.dead_lettered", { message_id: m.MessageId, reason: parsed.reason });
      summary.dead_lettered++;
      return true;
    }
    const msg = parsed.value;
    await startBuild(msg);
    const sent = Number(m.Attributes?.SentTimestamp);
    log.info("intake.execution_started", {
      request_id: msg.request_id,
      instance_uuid: msg.instance_uuids.length === 1 ? msg.instance_uuids[0] : undefined,
      instance_uuids: msg.instance_uuids,
      attempt: msg.retry.num_attempts,
      // how long it waited in build-requests (a delayed chunk: its delay included)
      ...(Number.isFinite(sent) ? { queued_ms: Date.now() - sent } : {}),
    });
    summary.started++;
    return true;
  } catch (error) {
    log.error("intake.start_failed", {
      message_id: m.MessageId,
      receive_count: Number(m.Attributes?.ApproximateReceiveCount) || undefined,
      error,
    });
    summary.failed++;
    return false;
  }
}

async function deleteAll(queueUrl: string, messages: Message[]): Promise<void> {
  const out = await sqsClient().send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
    }),
  );
  // not deleted: it comes back after its visibility timeout and is started again (same name)
  for (const f of out.Failed ?? [])
    log.warn("intake.delete_failed", { message_id: messages[Number(f.Id)]?.MessageId, code: f.Code });
}
