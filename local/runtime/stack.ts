// The stack as the local runtime deploys it: its resources' names (with the run's suffix), the
// IAM policies, timeouts, reservations and event source mappings the synthesized template gives
// them, refused where the deploy (or this runtime) could not honour them.
import { option, optionValue } from "../../lib/config.js";
import { BUILD_REQUESTS_QUEUE, COMPUTE_EVENTS, DLQ_SUFFIX } from "../../lib/resources.js";
import { AccountConcurrency } from "../concurrency.js";
import type { Statement } from "../iam/evaluate.js";
import type { GatewayPolicy } from "../iam/gateway.js";
import {
  ACCOUNT,
  type Component,
  FUNCTION_COMPONENTS,
  type FunctionComponent,
  functionArnOf,
  REGION,
} from "../iam/identities.js";
import { effectiveStatements, gatewayPolicy, hostPrincipal } from "../iam/policy.js";
import { type StackPolicies, stackPolicies } from "../iam/stack-policies.js";
import { localTables, runSuffix } from "../tables.js";
import type { RuntimeOptions } from "./options.js";
import { CONDUCTOR_ARN } from "./task-handlers.js";

export interface LocalStack {
  tables: ReturnType<typeof localTables>;
  computeQueuePrefix: string;
  buildRequestsQueue: string;
  computeEventsDlq: string;
  imagesBucket: string;
  policies: StackPolicies;
  /** each component's statements, the test's removals applied */
  statements: Record<Component, Statement[]>;
  /** what the gateway enforces: every component's and every host's session */
  gateway: GatewayPolicy;
  /** seconds, by function: the stack's, or the test's */
  timeouts: StackPolicies["timeouts"];
  /** the account's Lambda concurrency with the stack's reservations */
  account: AccountConcurrency;
}

export async function localStack(opts: RuntimeOptions, hostNames: string[]): Promise<LocalStack> {
  const suffix = runSuffix();
  const tables = localTables(suffix);
  const computeQueuePrefix = opts.computeQueuePrefix ?? `novaless${suffix}-compute-`;
  const buildRequestsQueue = `${BUILD_REQUESTS_QUEUE.localName}${suffix}`;
  const computeEventsDlq = `${COMPUTE_EVENTS.dlqLocalName}${suffix}`;
  const imagesBucket = `${String(option("imagesBucket").default)}${suffix}`;
  const policies = await stackPolicies({
    tables: Object.fromEntries(tables.map((t) => [t.id, t.localName])) as Record<
      (typeof tables)[number]["id"],
      string
    >,
    buildRequestsQueue,
    buildRequestsDlq: `${buildRequestsQueue}${DLQ_SUFFIX}`,
    computeEventsDlq,
    computeQueuePrefix,
    imagesBucket,
    functionArns: Object.fromEntries(FUNCTION_COMPONENTS.map((c) => [c, functionArnOf(c)])) as Record<
      FunctionComponent,
      string
    >,
    stateMachineArn: CONDUCTOR_ARN,
  });
  const statements = effectiveStatements(policies, opts.iam);
  const gateway = gatewayPolicy(policies, opts.iam);
  // Every host's own session, as it gets one on AWS (tagged novaless-host=<host>).
  for (const name of hostNames) gateway.principals.set(...hostPrincipal(name, statements["compute-host"]));
  checkEventSources(policies, buildRequestsQueue);
  return {
    tables,
    computeQueuePrefix,
    buildRequestsQueue,
    computeEventsDlq,
    imagesBucket,
    policies,
    statements,
    gateway,
    timeouts: { ...policies.timeouts, ...opts.lambdaTimeouts },
    account: accountConcurrency(policies, opts.concurrency),
  };
}

/**
 * Only the template's event source mappings run here, and only on queues the runtime makes:
 * one on another queue, or to no function of the stack, is refused rather than left unrun.
 */
function checkEventSources(policies: StackPolicies, buildRequestsQueue: string): void {
  const buildRequestsArn = `arn:aws:sqs:${REGION}:${ACCOUNT}:${buildRequestsQueue}`;
  for (const m of policies.eventSources)
    if (m.function !== "build-intake" || m.queueArn !== buildRequestsArn)
      throw new Error(
        `the stack maps ${m.queueArn} to ${m.functionName}; the local runtime runs build-requests' mapping to build-intake only`,
      );
  if (!policies.eventSources.length)
    throw new Error(
      "the stack has no event source mapping from build-requests to build-intake: no build would start",
    );
}

/**
 * The account's Lambda concurrency with the stack's reservations (refused, as the deploy would
 * be, when they leave less than the unreserved floor).
 */
function accountConcurrency(policies: StackPolicies, opts: RuntimeOptions["concurrency"] = {}) {
  const { unprotected, ...limits } = opts;
  const reserved = unprotected
    ? {}
    : Object.fromEntries(
        Object.entries(policies.reservedConcurrency).map(([fn, n]) => [`novaless-${fn}`, n]),
      );
  const account = new AccountConcurrency({
    accountLimit: optionValue<number>("lambda_concurrency_limit"),
    ...limits,
    reserved,
  });
  return account;
}
