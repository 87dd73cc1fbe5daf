// Sending to the queues of the flow. Bodies are validated before they leave, so a bug here shows
// up at the sender and not as a dead letter downstream.
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { resources } from "../config.js";
import { type BuildRequest, buildRequestV2 } from "../messages/build-request.js";
import {
  type ComputeMessage,
  type HostCast,
  hostCast,
  type RefreshPortFilters,
} from "../messages/compute.js";
import {
  type SecurityGroupsMemberUpdated,
  securityGroupsMemberUpdatedV1,
} from "../messages/security-group-sync.js";
import { sqsClient } from "./clients.js";
import { REASON_ATTRIBUTE, SOURCE_ATTRIBUTE } from "./dead-letters.js";

/**
 * Hands a build request to the conductor: one message on build-requests, which build-intake's
 * event source starts (lib/conductor/intake.ts). `delaySeconds`: SQS's DelaySeconds (0-900), the
 * message hidden that long after it is sent (a large create's later chunks). A body that fails
 * its schema throws here, at the sender.
 */
export async function sendBuildRequest(msg: BuildRequest, delaySeconds = 0): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: resources().buildRequestsQueueUrl,
      MessageBody: JSON.stringify(buildRequestV2.parse(msg)),
      ...(delaySeconds > 0 ? { DelaySeconds: delaySeconds } : {}),
    }),
  );
}

/**
 * A security group's member sync on build-requests, hidden `delaySeconds` (the sync window) so
 * that the changes of the window are applied by one sync (lib/instances/security-group-refresh.ts).
 */
export async function sendMemberSync(msg: SecurityGroupsMemberUpdated, delaySeconds: number): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({
      QueueUrl: resources().buildRequestsQueueUrl,
      MessageBody: JSON.stringify(securityGroupsMemberUpdatedV1.parse(msg)),
      ...(delaySeconds > 0 ? { DelaySeconds: Math.min(900, Math.round(delaySeconds)) } : {}),
    }),
  );
}

export function computeMessageBody(msg: HostCast): string {
  return JSON.stringify(hostCast.parse(msg));
}

export async function castToCompute(queueUrl: string, msg: ComputeMessage): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: computeMessageBody(msg) }),
  );
}

/** A host's filters' refresh (lib/instances/security-group-refresh.ts): one cast for its servers. */
export async function castPortFilters(queueUrl: string, msg: RefreshPortFilters): Promise<void> {
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
