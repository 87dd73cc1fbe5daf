// The functions that run beside the state machine, each as Lambda runs it: compute-events behind
// its function URL, build-intake behind its event source on build-requests, the build watchdog on
// its schedule.
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { sqsClient } from "../../lib/aws/clients.js";
import { runAs } from "../../lib/aws/identity.js";
import type { WatchdogAction } from "../../lib/conductor/watchdog.js";
import { log } from "../../lib/log.js";
import { type EventSource, mappingRefusal, startEventSource } from "../event-source.js";
import type { HandlerFunction } from "../function-handlers.js";
import type { FunctionUrlHandler } from "../iam/function-urls.js";
import { identityOf } from "../iam/identities.js";
import { type LambdaHandler, LambdaServiceError } from "../lambda.js";
import type { buildLines } from "./build-lines.js";
import type { RuntimeOptions } from "./options.js";
import type { LocalStack } from "./stack.js";
import { functionOf } from "./task-handlers.js";

type HandlerOf = (fn: HandlerFunction) => LambdaHandler;
type BuildLines = ReturnType<typeof buildLines>;

/**
 * compute-events as its function URL serves it, with the local fault switch: while refused, the
 * URL answers as Lambda does when it cannot serve.
 */
export function computeEvents(
  stack: LocalStack,
  handlerOf: HandlerOf,
  builds: BuildLines,
  delayMs: number | undefined,
): { handler: FunctionUrlHandler; refuse(seconds: number): void } {
  const eventsFunction = functionOf(
    "compute-events",
    stack.timeouts,
    delayMs
      ? async (event, context) => {
          const out = await handlerOf("compute-events")(event, context);
          await new Promise((r) => setTimeout(r, delayMs));
          return out;
        }
      : handlerOf("compute-events"),
    stack.account,
  );
  let refuseUntil = 0;
  return {
    handler: async (event) => {
      if (Date.now() < refuseUntil)
        throw new LambdaServiceError("ServiceException", 503, "Service Unavailable (local fault switch)");
      const out = await eventsFunction.invoke(event);
      builds.reported(event, out);
      return out;
    },
    refuse: (seconds) => {
      refuseUntil = Date.now() + seconds * 1000;
      log.warn("runtime.compute_events_refused", { seconds });
    },
  };
}

/**
 * build-intake's event sources on build-requests, as the template declares them (refused here
 * where AWS would refuse them), polling with the function's role; its reservation and timeout
 * hold. Returns what stops them.
 */
export async function startIntake(
  opts: RuntimeOptions,
  stack: LocalStack,
  queueUrl: string,
  handlerOf: HandlerOf,
  builds: BuildLines,
): Promise<() => Promise<unknown>> {
  const asIntake = <T>(fn: () => T): T => runAs(identityOf("build-intake"), fn);
  const intakeFunction = functionOf("build-intake", stack.timeouts, handlerOf("build-intake"), stack.account);
  const intakeQueue = await asIntake(() =>
    sqsClient().send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["VisibilityTimeout"] }),
    ),
  );
  const visibilityTimeoutSeconds = Number(intakeQueue.Attributes?.VisibilityTimeout);
  const sources: EventSource[] = [];
  const stop = async () => Promise.all(sources.map((source) => source.stop()));
  try {
    for (const mapping of stack.policies.eventSources) {
      const refused = mappingRefusal(
        mapping,
        { visibilityTimeoutSeconds, fifo: stack.buildRequestsQueue.endsWith(".fifo") },
        stack.timeouts["build-intake"],
        // its handler answers an SQSBatchResponse (functions/build-intake/handler.ts)
        true,
      );
      if (refused) throw new Error(`build-intake's event source mapping is refused: ${refused}`);
      sources.push(
        asIntake(() =>
          startEventSource({
            mapping,
            queueUrl,
            visibilityTimeoutSeconds,
            unbounded: opts.concurrency?.unprotected,
            handler: (event: SQSEvent) => {
              builds.requested(event);
              return intakeFunction.invoke(event) as Promise<SQSBatchResponse>;
            },
          }),
        ),
      );
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return stop;
}

/**
 * The build watchdog on its schedule (every `intervalMs`, 0: never). The deployed handler answers
 * only a count; locally the actions themselves come back.
 */
export function startWatchdog(
  stack: LocalStack,
  handlerOf: HandlerOf,
  intervalMs: number,
): { run(): Promise<WatchdogAction[]>; stop(): Promise<void> } {
  const watchdogFunction = functionOf(
    "build-watchdog",
    stack.timeouts,
    handlerOf("build-watchdog"),
    stack.account,
  );
  const run = () => watchdogFunction.invoke({}) as Promise<WatchdogAction[]>;
  return { run, stop: every(intervalMs, run, "watchdog.failed") };
}

/**
 * Runs `run` every `ms` (0: never), a run still going when the next is due skipped, as a
 * scheduled Lambda with a reservation of 1 would be; returns what stops it (and waits for the run
 * in flight, so that none outlives the emulators).
 */
function every(ms: number, run: () => Promise<unknown>, failed: string): () => Promise<void> {
  if (ms <= 0) return async () => {};
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = run()
      .then(
        () => {},
        (e) => log.error(failed, { error: e }),
      )
      .finally(() => {
        running = undefined;
      });
  }, ms);
  return async () => {
    clearInterval(timer);
    await running;
  };
}
