// Sending to the queues of the flow. Bodies are validated before they leave, so a bug here shows
// up at the sender and not as a dead letter downstream.
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { resources } from "../config.js";
import { log } from "../log.js";
import { type BuildRequest, buildRequestV2 } from "../messages/build-request.js";
import { type ComputeMessage, computeMessage } from "../messages/compute.js";
import { sqsClient } from "./clients.js";
import { REASON_ATTRIBUTE, SOURCE_ATTRIBUTE } from "./dead-letters.js";
import { isStartUnavailable, startBuild } from "./start-build.js";

/**
 * Hands a build request to the conductor. Without a delay its execution is started here and now
 * (no queue between: an SQS event source's pollers would cost about $0.26 a month whatever the
 * traffic). With one (`delaySeconds`: SQS's DelaySeconds, 0-900; a large create's later chunks), or
 * when the start is throttled or Step Functions fails (after the SDK's retries), the request waits
 * in build-requests, durable, and build-intake's drain (every minute) starts it. A body that fails
 * its schema throws here, at the sender; so does a start refused for the request itself.
 * Where no conductor is configured (a producer's tests without a state machine), it is queued.
 */
export async function sendBuildRequest(msg: BuildRequest, delaySeconds = 0): Promise<void> {
  const valid = buildRequestV2.parse(msg);
  if (delaySeconds > 0 || !resources().conductorStateMachineArn)
    return queueBuildRequest(valid, delaySeconds);
  try {
    await startBuild(valid);
  } catch (e) {
    if (!isStartUnavailable(e)) throw e;
    log.warn("build_request.queued_after_start_failed", {
      request_id: valid.request_id,
      instance_uuids: valid.instance_uuids,
      attempt: valid.retry.num_attempts,
      error: e,
    });
    await queueBuildRequest(valid, 0);
  }
}

async function queueBuildRequest(msg: BuildRequest, delaySeconds: number): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: resources().buildRequestsQueueUrl,
      MessageBody: JSON.stringify(msg),
      ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}),
    }),
  );
}

export function computeMessageBody(msg: ComputeMessage): string {
  return JSON.stringify(computeMessage.parse(msg));
}

export async function castToCompute(queueUrl: string, msg: ComputeMessage): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: computeMessageBody(msg) }),
  );
}

/** A malformed message goes to the dead-letter queue with its reason, never silently dropped. */
export async function sendToDeadLetter(
  dlqUrl: string,
  body: string,
  reason: string,
  source: string,
): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: dlqUrl,
      MessageBody: body.length ? body : "(empty body)",
      MessageAttributes: {
        [REASON_ATTRIBUTE]: { DataType: "String", StringValue: reason.slice(0, 1000) },
        [SOURCE_ATTRIBUTE]: { DataType: "String", StringValue: source },
      },
    }),
  );
}
