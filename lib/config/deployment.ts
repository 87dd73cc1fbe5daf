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
  row({
    key: "conductor_log_level",
    group: "deployment",
    name: "conductor_log_level",
    nova: false,
    env: "NOVALESS_CONDUCTOR_LOG_LEVEL",
    kind: "string",
    default: "error",
    choices: ["all", "error", "fatal", "off"],
    help: "What the conductor state machine's executions log to CloudWatch Logs (its LoggingConfiguration level, any case; execution data never included). Express workflows keep no history but these logs: ERROR logs every failed Task, Map and execution; ALL logs every event of every build, about 27 a build and 9 KB (CloudWatch's vended logs bill them: about $4.30 a million builds, where ERROR costs nothing while builds succeed). A build's own steps are in its instance actions and the functions' logs either way.",
    topic: "deployment",
  }),
  row({
    key: "conductor_tracing",
    group: "deployment",
    name: "conductor_tracing",
    nova: false,
    env: "NOVALESS_CONDUCTOR_TRACING",
    kind: "bool",
    default: false,
    help: "X-Ray tracing of the conductor state machine's executions (Nova's osprofiler, which is off by default too). X-Ray bills each trace it records ($5 a million), and its default sampling rule records every execution up to one a second and 5% past that: up to $5 a million builds.",
    topic: "deployment",
  }),
];
