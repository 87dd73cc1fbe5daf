// Starting the conductor's execution for one build request: its name and input written once, for
// every sender (sendBuildRequest starts it directly) and for build-intake's drain of build-requests
// (a delayed chunk of a large create, or a request whose direct start was refused).
import { createHash } from "node:crypto";
import { StartExecutionCommand } from "@aws-sdk/client-sfn";
import { resources, schedulerConfig } from "../config.js";
import type { BuildRequest } from "../messages/build-request.js";
import type { ConductorInput } from "../messages/scheduled.js";
import { sfnClient } from "./clients.js";

/**
 * A deterministic execution name: a Standard workflow then refuses a second execution for the
 * same request (a sender's retry, SQS's at-least-once), and an Express one is at least findable by it.
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

export function conductorInput(msg: BuildRequest): ConductorInput {
  return { ...msg, config: { max_attempts: schedulerConfig().max_attempts } };
}

/**
 * Starts the conductor's execution for `msg`. The same request started already (a Standard
 * workflow's name is unique) counts as started; any other failure throws, after the SDK's own
 * retries.
 */
export async function startBuild(msg: BuildRequest): Promise<void> {
  try {
    await sfnClient().send(
      new StartExecutionCommand({
        stateMachineArn: resources().conductorStateMachineArn,
        name: executionName(msg),
        input: JSON.stringify(conductorInput(msg)),
      }),
    );
  } catch (e) {
    if ((e as { name?: string }).name !== "ExecutionAlreadyExists") throw e;
  }
}

/** Step Functions' and the SDK's names for "not now": a throttle, a fault of the service. */
const UNAVAILABLE = new Set([
  "ThrottlingException",
  "TooManyRequestsException",
  "RequestLimitExceeded",
  "ServiceUnavailable",
  "ServiceUnavailableException",
  "InternalServerError",
  "InternalFailure",
  "InternalServerException",
  "TimeoutError",
  "RequestTimeout",
]);

/**
 * A start that failed for want of the service, not for the request: throttled, a 5xx, or no
 * answer at all (a network error has no HTTP status). Such a request waits in build-requests for
 * the drain; a refusal of the request itself (validation, access denied, no such state machine)
 * does not.
 */
export function isStartUnavailable(e: unknown): boolean {
  const err = e as { name?: string; code?: unknown; $metadata?: { httpStatusCode?: number } };
  if (err?.name && UNAVAILABLE.has(err.name)) return true;
  const status = err?.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500 || status === 429;
  // no answer: a connection refused or reset (ECONNREFUSED, ECONNRESET…), a socket timeout
  return typeof err?.code === "string" && /^E[A-Z]+$/.test(err.code);
}
