import { runWatchdog } from "../../lib/conductor/watchdog.js";

/** Scheduled (EventBridge, every minute): fence and reschedule builds that died with their host. */
export async function handler(): Promise<{ actions: number }> {
  const actions = await runWatchdog();
  return { actions: actions.length };
}
