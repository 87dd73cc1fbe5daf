// The conductor state machine (Nova's ComputeTaskManager.build_instances /
// schedule_and_build_instances), defined ONCE: the CDK stack deploys it and the local runtime
// runs it with aws-local-stepfunctions. JSONPath only, so both interpreters agree.
//
// Input: a build request (lib/messages/build-request.ts) plus `config.max_attempts`.

export interface ConductorArns {
  conductorFunctionArn: string;
  schedulerFunctionArn: string;
}

/** Task state names; the local runtime serves them by name. */
export const CONDUCTOR_TASKS = {
  maxRetriesExceeded: "MaxRetriesExceeded",
  claimAlternate: "ClaimAlternate",
  selectDestinations: "SelectDestinations",
  noValidHost: "NoValidHost",
  buildInstances: "BuildInstances",
  castToCompute: "CastToCompute",
  sendToHost: "SendToHost",
  buildFailed: "BuildFailed",
} as const;

const lambdaRetry = {
  ErrorEquals: [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
  ],
  IntervalSeconds: 1,
  MaxAttempts: 3,
  BackoffRate: 2,
};

/** Transient failures inside a step (throttling, a lost connection): every step is idempotent. */
const taskRetry = { ErrorEquals: ["Transient"], IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2 };

const failed = { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: CONDUCTOR_TASKS.buildFailed };

function conductorTask(arns: ConductorArns, action: string, extra: Record<string, unknown>) {
  return {
    Type: "Task",
    Resource: arns.conductorFunctionArn,
    Parameters: { action, "request.$": "$", ...extra },
    Retry: [lambdaRetry, taskRetry],
  };
}

export function conductorDefinition(arns: ConductorArns) {
  const T = CONDUCTOR_TASKS;
  return {
    Comment: "novaless conductor: schedule, claim and cast builds to compute hosts",
    StartAt: "CheckAttempts",
    States: {
      CheckAttempts: {
        Type: "Choice",
        Choices: [
          {
            Variable: "$.retry.num_attempts",
            NumericGreaterThanPath: "$.config.max_attempts",
            Next: T.maxRetriesExceeded,
          },
          { Variable: "$.alternates[0]", IsPresent: true, Next: T.claimAlternate },
        ],
        Default: T.selectDestinations,
      },
      [T.maxRetriesExceeded]: {
        ...conductorTask(arns, "max_retries_exceeded", {}),
        Catch: [failed],
        End: true,
      },
      // Alternates are claimed without running the filters again (Nova's conductor does the same).
      [T.claimAlternate]: {
        ...conductorTask(arns, "claim_alternate", {}),
        ResultPath: "$.scheduled",
        Catch: [
          { ErrorEquals: ["AlternatesExhausted"], ResultPath: "$.exhausted", Next: T.selectDestinations },
          failed,
        ],
        Next: T.buildInstances,
      },
      // Synchronous: the conductor waits for the scheduler, as Nova's select_destinations call.
      [T.selectDestinations]: {
        Type: "Task",
        Resource: arns.schedulerFunctionArn,
        Parameters: { "request.$": "$" },
        ResultPath: "$.scheduled",
        Retry: [lambdaRetry, taskRetry],
        Catch: [{ ErrorEquals: ["NoValidHost"], ResultPath: "$.error", Next: T.noValidHost }, failed],
        Next: T.buildInstances,
      },
      [T.noValidHost]: {
        ...conductorTask(arns, "no_valid_host", { "error.$": "$.error" }),
        Catch: [failed],
        End: true,
      },
      [T.buildInstances]: {
        ...conductorTask(arns, "build_instances", { "scheduled.$": "$.scheduled" }),
        ResultPath: "$.build",
        Catch: [failed],
        Next: T.castToCompute,
      },
      // Fan-out: cast each build to its host's own queue; the conductor does not wait for it.
      [T.castToCompute]: {
        Type: "Map",
        ItemsPath: "$.build.casts",
        MaxConcurrency: 10,
        ItemProcessor: {
          ProcessorConfig: { Mode: "INLINE" },
          StartAt: T.sendToHost,
          States: {
            [T.sendToHost]: {
              Type: "Task",
              Resource: "arn:aws:states:::sqs:sendMessage",
              Parameters: { "QueueUrl.$": "$.queue_url", "MessageBody.$": "$.message_body" },
              Retry: [{ ErrorEquals: ["States.ALL"], IntervalSeconds: 1, MaxAttempts: 5, BackoffRate: 2 }],
              End: true,
            },
          },
        },
        ResultPath: null,
        Catch: [failed],
        End: true,
      },
      // Anything unexpected: the instances go to ERROR with the cause and their claims are
      // released, rather than staying in BUILD.
      [T.buildFailed]: {
        Type: "Task",
        Resource: arns.conductorFunctionArn,
        Parameters: { action: "build_failed", "request.$": "$", "error.$": "$.error" },
        Retry: [lambdaRetry, taskRetry],
        End: true,
      },
    },
  };
}
