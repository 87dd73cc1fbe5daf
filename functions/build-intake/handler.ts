import type { Context } from "aws-lambda";
import { type DrainSummary, drainBuildRequests } from "../../lib/conductor/intake.js";
import { withObservability } from "../../lib/metrics.js";

/** What a receive and its starts may still take once the budget is spent (the SDK's retries). */
const MARGIN_MS = 10_000;
/** without a Lambda context (a direct call): a drain of at most this long */
const DEFAULT_BUDGET_MS = 20_000;

/** EventBridge's schedule, every minute: drain build-requests (lib/conductor/intake.ts). */
export async function handler(_event: unknown, context?: Context): Promise<DrainSummary> {
  return withObservability(context, () =>
    drainBuildRequests({
      budgetMs: context ? Math.max(0, context.getRemainingTimeInMillis() - MARGIN_MS) : DEFAULT_BUDGET_MS,
    }),
  );
}
