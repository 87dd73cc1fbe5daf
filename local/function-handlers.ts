// The functions' handlers as the local runtime invokes them, in the main thread (runtime.ts) or
// in the functions' own (function-thread-worker.ts): the handlers the stack deploys.
import { handler as intakeHandler } from "../functions/build-intake/handler.js";
import { handler as computeEventsHandler } from "../functions/compute-events/handler.js";
import { handler as conductorHandler } from "../functions/conductor/handler.js";
import { handler as schedulerHandler } from "../functions/scheduler/handler.js";
import { runWatchdog } from "../lib/conductor/watchdog.js";
import type { FunctionComponent } from "./iam/identities.js";
import type { LambdaHandler } from "./lambda.js";

/** The functions invoked as Lambda handlers (the API answers HTTP: http.ts, function-thread.ts). */
export type HandlerFunction = Exclude<FunctionComponent, "api">;

/** The deployed watchdog answers only a count; locally its actions come back (runtime/functions.ts). */
export const FUNCTION_HANDLERS: Record<HandlerFunction, LambdaHandler> = {
  "build-intake": intakeHandler,
  "compute-events": computeEventsHandler,
  conductor: conductorHandler,
  scheduler: schedulerHandler,
  "build-watchdog": () => runWatchdog(),
};
