import type { Context } from "aws-lambda";
import { runWatchdog } from "../../lib/conductor/watchdog.js";
import { withObservability } from "../../lib/metrics.js";

/** Scheduled (EventBridge, every minute): fence and reschedule builds that died with their host. */
export async function handler(_event?: unknown, context?: Context): Promise<{ actions: number }> {
  return withObservability(context, async () => ({ actions: (await runWatchdog()).length }));
}
