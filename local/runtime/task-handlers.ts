// The conductor's Task states served as the deployed stack wires them: its Lambda functions run as
// their own identities (under the state machine role's lambda:InvokeFunction), its casts to host
// queues go through the sqs:sendMessage integration with that role's credentials.
import { randomUUID } from "node:crypto";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import type { conductorDefinition } from "../../infra/conductor/definition.js";
import { sqsClient } from "../../lib/aws/clients.js";
import { runAs } from "../../lib/aws/identity.js";
import type { AccountConcurrency } from "../concurrency.js";
import type { HandlerFunction } from "../function-handlers.js";
import { evaluate, type Statement } from "../iam/evaluate.js";
import {
  ACCOUNT,
  type FunctionComponent,
  functionArnOf,
  identityOf,
  REGION,
  roleArnOf,
} from "../iam/identities.js";
import { sessionArnOf } from "../iam/policy.js";
import type { StackPolicies } from "../iam/stack-policies.js";
import { type LambdaHandler, LambdaServiceError, localFunction } from "../lambda.js";
import type { TaskHandler, TaskHandlers } from "../sfn-server.js";
import type { FaultOptions } from "./options.js";

export const CONDUCTOR_NAME = "novaless-conductor";
export const CONDUCTOR_ARN = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${CONDUCTOR_NAME}`;
/** The functions the conductor's definition names (its Lambda Tasks' Resources). */
export const LOCAL_ARNS = {
  conductorFunctionArn: functionArnOf("conductor"),
  schedulerFunctionArn: functionArnOf("scheduler"),
};

/**
 * What Step Functions reports when its role may not invoke the function: the Task fails with
 * Lambda.AWSLambdaException and Lambda's AccessDenied text as the cause.
 */
function checkInvoke(stateMachine: Statement[], functionArn: string): void {
  const action = "lambda:InvokeFunction";
  const d = evaluate(stateMachine, [], {
    action,
    resource: functionArn,
    principalArn: roleArnOf("state-machine"),
    context: { "aws:SecureTransport": "true" },
  });
  if (d.allowed) return;
  throw new LambdaServiceError(
    "AccessDeniedException",
    403,
    `User: ${sessionArnOf("state-machine")} is not authorized to perform: ${action} on resource: ${functionArn} ` +
      `because no identity-based policy allows the ${action} action`,
  );
}

/**
 * A failed sqs:sendMessage as the Step Functions integration reports it: SQS.AmazonSQSException
 * for an answer of the service (AccessDenied, throttling…), SQS.SdkClientException when no answer
 * came; the cause keeps SQS's message and its code.
 */
function sqsIntegrationError(e: unknown): Error {
  const err = e as Error & { $metadata?: { httpStatusCode?: number; requestId?: string } };
  const status = err.$metadata?.httpStatusCode;
  const out = new Error(
    status
      ? `${err.message} (Service: AmazonSQS; Status Code: ${status}; Error Code: ${err.name}; ` +
          `Request ID: ${err.$metadata?.requestId ?? randomUUID()}; Proxy: null)`
      : err.message,
  );
  out.name = status ? "SQS.AmazonSQSException" : "SQS.SdkClientException";
  return out;
}

/** Lambda's answer to a throttled invoke (Step Functions reports Lambda.TooManyRequestsException). */
function lambdaThrottled(fn: string): Error {
  return new LambdaServiceError(
    "TooManyRequestsException",
    429,
    `Rate Exceeded. (injected throttle of ${fn})`,
  );
}

/**
 * A component's function as Lambda runs it: its own identity, the stack's timeout
 * (Sandbox.Timedout past it) and Lambda's payload limits.
 */
export function functionOf(
  fn: FunctionComponent,
  timeouts: StackPolicies["timeouts"],
  handler: LambdaHandler,
  concurrency: AccountConcurrency,
) {
  return localFunction({
    name: `novaless-${fn}`,
    arn: functionArnOf(fn),
    timeoutSeconds: timeouts[fn],
    handler,
    runAs: (run) => runAs(identityOf(fn), run),
    concurrency,
  });
}

/**
 * Serve each Task state by its Resource, exactly as the deployed stack wires it: a Lambda Task
 * runs its handler as the function's identity once the state machine's role may invoke it; the
 * sqs:sendMessage integration sends with the state machine role's credentials.
 */
export function taskHandlersFor(
  definition: ReturnType<typeof conductorDefinition>,
  stateMachine: Statement[],
  timeouts: StackPolicies["timeouts"],
  concurrency: AccountConcurrency,
  handlerOf: (fn: HandlerFunction) => LambdaHandler,
  faults?: FaultOptions,
): TaskHandlers {
  const chance = (p: number | undefined) => Boolean(faults && p && faults.random() < p);
  const sendToHost = async (input: { QueueUrl: string; MessageBody: string }) => {
    const delay = faults?.maxHostMessageDelaySeconds
      ? Math.floor(faults.random() * (faults.maxHostMessageDelaySeconds + 1))
      : 0;
    const send = () =>
      sqsClient().send(
        new SendMessageCommand({
          QueueUrl: input.QueueUrl,
          MessageBody: input.MessageBody,
          DelaySeconds: delay,
        }),
      );
    try {
      const out = await send();
      if (chance(faults?.duplicateHostMessageRate)) await send();
      return out;
    } catch (e) {
      throw sqsIntegrationError(e);
    }
  };
  // Refusals (no permission, a throttle) come from the Lambda service before the function runs.
  const lambda = (fn: FunctionComponent, handler: LambdaHandler, throttleRate?: number): TaskHandler => {
    const f = functionOf(fn, timeouts, handler, concurrency);
    return (input) => {
      checkInvoke(stateMachine, f.arn);
      if (chance(throttleRate)) throw lambdaThrottled(f.arn);
      return f.invoke(input);
    };
  };
  const byResource: Record<string, TaskHandler> = {
    [LOCAL_ARNS.conductorFunctionArn]: lambda("conductor", (input, context) =>
      handlerOf("conductor")(input, context),
    ),
    [LOCAL_ARNS.schedulerFunctionArn]: lambda(
      "scheduler",
      async (input, context) => {
        const out = await handlerOf("scheduler")(input, context);
        if (faults?.schedulerDelayMs) await new Promise((r) => setTimeout(r, faults.schedulerDelayMs));
        return out;
      },
      faults?.schedulerFailureRate,
    ),
    "arn:aws:states:::sqs:sendMessage": (input) =>
      runAs(identityOf("state-machine"), () => sendToHost(input)),
  };
  const handlers: TaskHandlers = {};
  const walk = (
    states: Record<string, { Type: string; Resource?: string; ItemProcessor?: { States: object } }>,
  ) => {
    for (const [name, s] of Object.entries(states)) {
      if (s.Type === "Task") {
        const h = byResource[s.Resource ?? ""];
        if (!h) throw new Error(`local runtime cannot serve Task ${name} (Resource ${s.Resource})`);
        handlers[name] = h;
      }
      if (s.ItemProcessor) walk(s.ItemProcessor.States as typeof states);
    }
  };
  walk(definition.States as Parameters<typeof walk>[0]);
  return handlers;
}
