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

/** The states that route on a step's answer (capacity outcomes are answers, not errors). */
export const CONDUCTOR_ROUTING = {
  checkAttempts: "CheckAttempts",
  alternateClaimed: "AlternateClaimed",
  hostFound: "HostFound",
  moveRefused: "MoveRefused",
} as const;

/**
 * The timeouts of the two functions the conductor invokes, declared here once: the stack
 * (infra/constructs/functions.ts) deploys them and the retry budget
 * (test/unit/conductor/retry-budget.test.ts) is computed from them.
 * - scheduler, 30 s: a cold start at 10,000 hosts reads every host once (3.3 s on dynalite,
 *   docs/benchmarks.md) and rebuilds the fleet (about 60 ms), then decides and claims for up to
 *   the 100 instances of one build request (MAX_INSTANCES_PER_REQUEST; a few ms and one
 *   transaction each).
 * - conductor, 15 s: its longest step writes two or three items per instance, one after the
 *   other (BuildInstances, BuildFailed): about 300 calls for a build request's 100 instances, some 6 s at 20 ms.
 */
export const CONDUCTOR_FUNCTION_TIMEOUT_SECONDS = { scheduler: 30, conductor: 15 } as const;

/**
 * Errors that may mean the function ran out its time (or ran and died): each costs a whole
 * function timeout. AWS reports a function timeout or an out-of-memory end as Lambda.Unknown,
 * and the Invoke client's own timeout as Lambda.ClientExecutionTimeoutException (Step Functions'
 * "Handle Lambda service exceptions"); the local runtime reports Sandbox.Timedout.
 */
export const LAMBDA_TIMEOUT_ERRORS = [
  "Sandbox.Timedout",
  "States.Timeout",
  "Lambda.Unknown",
  "Lambda.ClientExecutionTimeoutException",
] as const;

/**
 * What the Lambda service answers when it refuses an Invoke without running the function (Step
 * Functions prefixes the service's exception with "Lambda."): a throttle, a 5xx, a failed call.
 */
export const LAMBDA_SERVICE_ERRORS = [
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
] as const;

/** Every Lambda error a step retries; every step is idempotent, so a step is re-run whole. */
export const LAMBDA_TRANSIENT_ERRORS = [...LAMBDA_SERVICE_ERRORS, ...LAMBDA_TIMEOUT_ERRORS] as const;

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
// MaxDelaySeconds): builds that failed together do not all come back together.
//
// Attempts are bounded so that every path through the state machine, each step retried to its
// last attempt, still reaches its end (BuildFailed at worst) inside an Express execution's 5
// minutes with a fifth to spare: test/unit/conductor/retry-budget.test.ts walks this definition
// and fails when a MaxAttempts or a function's timeout outgrows it.
const backoff = { IntervalSeconds: 1, BackoffRate: 2, MaxDelaySeconds: 8, JitterStrategy: "FULL" } as const;

/** The Retry list of a Task that invokes one of our Lambda functions. */
const lambdaRetry = [
  // The function ran (to its timeout, or failed inside on DynamoDB's throttling or a fault):
  // once more only, since each costs up to a whole function timeout. No Task TimeoutSeconds: a
  // synchronous invoke ends when the function does.
  { ErrorEquals: [...LAMBDA_TIMEOUT_ERRORS, ...DYNAMODB_TRANSIENT_ERRORS], ...backoff, MaxAttempts: 1 },
  // Refused before the function ran: cheap, so a few times.
  { ErrorEquals: [...LAMBDA_SERVICE_ERRORS], ...backoff, MaxAttempts: 3 },
];

/** The Retry list of the sqs:sendMessage cast. */
const sqsRetry = [{ ErrorEquals: [...SQS_TRANSIENT_ERRORS], ...backoff, MaxAttempts: 2 }];

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
  const C = CONDUCTOR_ROUTING;
  return {
    Comment: "novaless conductor: schedule, claim and cast builds to compute hosts",
    StartAt: C.checkAttempts,
    States: {
      [C.checkAttempts]: {
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
        Catch: [failed],
        Next: C.alternateClaimed,
      },
      // None could be claimed (lib/conductor/types.ts AlternatesExhaustedAnswer): reschedule.
      [C.alternateClaimed]: {
        Type: "Choice",
        Choices: [{ Variable: "$.scheduled.exhausted", IsPresent: true, Next: T.selectDestinations }],
        Default: T.buildInstances,
      },
      // Synchronous: the conductor waits for the scheduler, as Nova's select_destinations call.
      [T.selectDestinations]: {
        Type: "Task",
        Resource: arns.schedulerFunctionArn,
        Parameters: { "request.$": "$" },
        ResultPath: "$.scheduled",
        Retry: lambdaRetry,
        Catch: [failed],
        Next: C.hostFound,
      },
      // The scheduler's NoValidHost answer, or a live migration its checks refused
      // (lib/conductor/types.ts NoValidHostAnswer, MoveRefusedAnswer).
      [C.hostFound]: {
        Type: "Choice",
        Choices: [
          { Variable: "$.scheduled.no_valid_host", IsPresent: true, Next: T.noValidHost },
          { Variable: "$.scheduled.refused", IsPresent: true, Next: C.moveRefused },
        ],
        Default: T.buildInstances,
      },
      // BuildFailed fails the move with the refusal's text and status (liveRefusalFault).
      [C.moveRefused]: {
        Type: "Pass",
        Parameters: { "Error.$": "$.scheduled.refused.error", "Cause.$": "$.scheduled.refused.message" },
        ResultPath: "$.error",
        Next: T.buildFailed,
      },
      [T.noValidHost]: {
        ...conductorTask(arns, "no_valid_host", { "no_valid_host.$": "$.scheduled.no_valid_host" }),
        Catch: [failed],
        End: true,
      },
      [T.buildInstances]: {
        ...conductorTask(arns, "build_instances", { "scheduled.$": "$.scheduled" }),
        ResultPath: "$.build",
        Catch: [failed],
        Next: T.castToCompute,
      },
      // Fan-out: cast each build to its host's own queue; the conductor does not wait for it. 40
      // at a time, the most an inline Map runs ("Using Map state in Inline mode"): the casts of a
      // max_count create take a few rounds of the retry budget, not one per ten instances.
      [T.castToCompute]: {
        Type: "Map",
        ItemsPath: "$.build.casts",
        MaxConcurrency: 40,
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
