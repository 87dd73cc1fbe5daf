// The stack's sizing, read when it is synthesized.
import { type ConfigOption, row } from "./option.js";

/**
 * What the stack is sized for, read when it is synthesized (`-c <name>=…` or the variable): the
 * build path's Lambda concurrency (infra/constructs/functions.ts, docs/deploy.md).
 */
export const DEPLOYMENT_OPTIONS: readonly ConfigOption[] = [
  row({
    key: "fleet_size",
    group: "deployment",
    name: "fleet_size",
    nova: false,
    env: "NOVALESS_FLEET_SIZE",
    kind: "int",
    default: 1000,
    min: 0,
    help: "Compute hosts the stack is sized for. compute-events gets a reserved concurrency of max(5, ceil(fleet_size / 100)), build-intake max(5, ceil(fleet_size / 200)), which is also its build-requests event source's MaximumConcurrency (up to 1,000; with 0, that bound without a reservation): past compute-events' reservation Lambda answers a host's report with 429 and the host sends it again, so a fleet-wide re-registration or heartbeat storm does not take the account's concurrency from the API, scheduler and conductor. 0: no reservation (an account whose limit cannot spare it).",
    topic: "deployment",
  }),
  row({
    key: "lambda_concurrency_limit",
    group: "deployment",
    name: "lambda_concurrency_limit",
    nova: false,
    env: "NOVALESS_LAMBDA_CONCURRENCY_LIMIT",
    kind: "int",
    default: 1000,
    min: 1,
    help: "The account's Lambda concurrency limit in the stack's region (Service Quotas, Concurrent executions: 1,000 by default, as low as 10 on a new account). A synth whose reservations would leave less than the 100 Lambda keeps unreserved fails. The local runtime models this limit.",
    topic: "deployment",
  }),
];
