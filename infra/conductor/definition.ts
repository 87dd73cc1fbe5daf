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

/**
 * What the Lambda service reports when an Invoke itself fails (Step Functions prefixes the
 * service's exception with "Lambda."), and a function that ran past its timeout: the function
 * never finished, so the step is re-run whole (every step is idempotent).
 */
export const LAMBDA_TRANSIENT_ERRORS = [
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
  "Lambda.Unknown",
  "Sandbox.Timedout",
  "States.Timeout",
] as const;

/**
 * DynamoDB throttling and server faults raised inside a handler: the function error's
 * errorType is the SDK error's name, and Step Functions names the Task's error after it.
 */
export const DYNAMODB_TRANSIENT_ERRORS = [
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "RequestLimitExceeded",
  "InternalServerError",
] as const;

/**
 * What the sqs:sendMessage integration reports for throttling and service faults: the SDK's
 * client error, SQS's generic service exception (throttling is not modelled apart from
 * RequestThrottled) and the modelled RequestThrottled.
 */
export const SQS_TRANSIENT_ERRORS = [
  "SQS.SdkClientException",
  "SQS.AmazonSQSException",
  "SQS.RequestThrottledException",
] as const;

// Exponential backoff with full jitter (each wait drawn from [0, interval x rate^n], at most
// MaxDelaySeconds): builds that failed together do not all come back together. Attempts are
// bounded so an Express execution (5 minutes at most) still reaches BuildFailed.
const backoff = { IntervalSeconds: 1, BackoffRate: 2, MaxDelaySeconds: 8, JitterStrategy: "FULL" } as const;

/**
 * Timeouts are retried once only: a function that ran out its time once (30 s) is likely to do
 * it again, and three of them would not fit in an Express execution. No Task TimeoutSeconds: a
 * synchronous invoke ends when the function does (Sandbox.Timedout at its own timeout), so
 * Step Functions never waits longer than the function's timeout.
 */
const timeoutErrors: readonly string[] = ["Sandbox.Timedout", "States.Timeout"];

/** The Retry list of a Task that invokes one of our Lambda functions. */
const lambdaRetry = [
  { ErrorEquals: [...timeoutErrors], ...backoff, MaxAttempts: 1 },
  {
    ErrorEquals: [
      ...LAMBDA_TRANSIENT_ERRORS.filter((e) => !timeoutErrors.includes(e)),
      ...DYNAMODB_TRANSIENT_ERRORS,
    ],
    ...backoff,
    MaxAttempts: 4,
  },
];

/** The Retry list of the sqs:sendMessage cast. */
const sqsRetry = [{ ErrorEquals: [...SQS_TRANSIENT_ERRORS], ...backoff, MaxAttempts: 4 }];

const failed = { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: CONDUCTOR_TASKS.buildFailed };

function conductorTask(arns: ConductorArns, action: string, extra: Record<string, unknown>) {
  return {
    Type: "Task",
    Resource: arns.conductorFunctionArn,
    Parameters: { action, "request.$": "$", ...extra },
    Retry: lambdaRetry,
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
        Retry: lambdaRetry,
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
              Retry: sqsRetry,
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
        Retry: lambdaRetry,
        End: true,
      },
    },
  };
}
