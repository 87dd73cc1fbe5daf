// The local Step Functions endpoint through the real SFNClient (AWS_ENDPOINT_URL_SFN), running
// the real conductor ASL with its Task states served in-process.
import {
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  DescribeStateMachineCommand,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
  StartSyncExecutionCommand,
  StopExecutionCommand,
} from "@aws-sdk/client-sfn";
import { ReceiveMessageCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  CONDUCTOR_TASKS,
  conductorDefinition,
  DYNAMODB_TRANSIENT_ERRORS,
  LAMBDA_TRANSIENT_ERRORS,
  SQS_TRANSIENT_ERRORS,
} from "../../infra/conductor/definition.js";
import { ensureQueueWithDlq } from "../../lib/aws/queues.js";
import { COMPUTE_QUEUE } from "../../lib/resources.js";
import { applyEnv, type Emulators, startEmulators } from "../../local/emulators.js";
import { LambdaServiceError, localFunction } from "../../local/lambda.js";
import {
  type ExecutionInfo,
  type SfnServer,
  startSfnServer,
  type TaskHandlers,
} from "../../local/sfn-server.js";
import { runSuffix } from "../../local/tables.js";

const T = CONDUCTOR_TASKS;
const definition = JSON.stringify(
  conductorDefinition({
    conductorFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:conductor",
    schedulerFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:scheduler",
  }),
);

/** How many times a Task of the definition runs when every attempt fails with `error`. */
function attemptsOf(task: string, error: string): number {
  const states = (
    JSON.parse(definition) as {
      States: Record<string, { Retry?: { ErrorEquals: string[]; MaxAttempts?: number }[] }>;
    }
  ).States;
  const retrier = states[task]!.Retry?.find((r) => r.ErrorEquals.includes(error));
  return 1 + (retrier ? (retrier.MaxAttempts ?? 3) : 0);
}

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** A build request as build-intake hands it to the conductor. */
function buildRequest(extra: Record<string, unknown> = {}) {
  return {
    version: 1,
    request_id: "req-0001",
    reservation_id: "r-0001",
    project_id: "p1",
    user_id: "u1",
    instance_uuids: ["3f1e7a52-9b0c-4d1e-8f2a-5c6b7d8e9f01"],
    retry: { num_attempts: 1, hosts: [] },
    config: { max_attempts: 3 },
    ...extra,
  };
}

type Call = { task: string; input: Record<string, unknown> };

/** Conductor Task handlers that record their calls; `over` replaces some of them. */
function conductor(calls: Call[], over: TaskHandlers = {}): TaskHandlers {
  const record =
    (task: string, result: (input: Record<string, unknown>) => unknown): TaskHandlers[string] =>
    async (input: Record<string, unknown>) => {
      calls.push({ task, input });
      return over[task] ? over[task](input) : result(input);
    };
  return {
    [T.maxRetriesExceeded]: record(T.maxRetriesExceeded, () => ({ instances: "ERROR" })),
    [T.claimAlternate]: record(T.claimAlternate, () => [{ host: "alt-1", nodename: "alt-1" }]),
    [T.selectDestinations]: record(T.selectDestinations, () => [{ host: "host-1", nodename: "host-1" }]),
    [T.noValidHost]: record(T.noValidHost, () => ({ instances: "ERROR" })),
    [T.buildInstances]: record(T.buildInstances, (i) => {
      const host = (i.scheduled as { host: string }[])[0]!.host;
      return { casts: [{ queue_url: `queue-of-${host}`, message_body: JSON.stringify({ host }) }] };
    }),
    [T.sendToHost]: record(T.sendToHost, () => ({ MessageId: "m-1" })),
    [T.buildFailed]: record(T.buildFailed, () => ({ instances: "ERROR" })),
  };
}

describe("local Step Functions: the conductor", () => {
  let emulators: Emulators;
  let restoreEnv: () => void;
  let sfn: SFNClient;
  let sqs: SQSClient;
  let computeQueueUrl: string;
  const calls: Record<string, Call[]> = {};
  const ended: ExecutionInfo[] = [];
  const scenarios: Record<string, TaskHandlers> = {};
  const scenario = (name: string, over: TaskHandlers = {}) => {
    calls[name] = [];
    scenarios[name] = conductor(calls[name], over);
  };

  // Each scenario is its own state machine, so its handlers are registered when the server starts.
  scenario("happy", {
    [T.buildInstances]: () => ({
      casts: ["a", "b"].map((id) => ({ queue_url: computeQueueUrl, message_body: JSON.stringify({ id }) })),
    }),
    // The sqs:sendMessage integration, served with the SQS client against fauxqs.
    [T.sendToHost]: async (i: { QueueUrl: string; MessageBody: string }) => {
      const out = await sqs.send(new SendMessageCommand(i));
      return { MessageId: out.MessageId };
    },
  });
  // Capacity outcomes are answers (lib/conductor/types.ts): the invocations succeed.
  scenario("no-valid-host", {
    [T.selectDestinations]: () => ({
      hosts: [],
      selections: [],
      no_valid_host: { details: "0/1 hosts are available: 1 has not enough RAM." },
    }),
  });
  scenario("max-retries");
  scenario("alternate");
  scenario("move-refused", {
    [T.selectDestinations]: () => ({
      hosts: [],
      selections: [],
      refused: {
        error: "LiveMigrationRefused",
        message: "Migration pre-check error: host-1 cannot live-migrate",
      },
    }),
  });
  scenario("alternates-exhausted", {
    [T.claimAlternate]: () => ({
      hosts: [],
      selections: [],
      exhausted: { message: "no alternate could be claimed" },
    }),
  });
  scenario("unexpected", {
    [T.buildInstances]: () => {
      throw new TypeError("Cannot read properties of undefined (reading 'host')");
    },
  });
  // The step named in the request throws AWS's error `times` times, then succeeds.
  type Inject = { step: string; error: string; times: number };
  const injected = new Map<string, number>();
  const inject = (requestId: string, step: string, spec: Inject | undefined) => {
    if (!spec || spec.step !== step) return;
    const n = injected.get(requestId) ?? 0;
    if (n >= spec.times) return;
    injected.set(requestId, n + 1);
    throw named(spec.error, `injected ${spec.error} #${n + 1} in ${step}`);
  };
  type Req = { request_id: string; inject?: Inject };
  scenario("retry", {
    [T.selectDestinations]: (i: { request: Req }) => {
      inject(i.request.request_id, T.selectDestinations, i.request.inject);
      return [{ host: "host-1", nodename: "host-1" }];
    },
    [T.buildInstances]: (i: { request: Req }) => ({
      casts: [{ queue_url: "queue-of-host-1", message_body: JSON.stringify(i.request) }],
    }),
    [T.sendToHost]: (i: { MessageBody: string }) => {
      const req = JSON.parse(i.MessageBody) as Req;
      inject(req.request_id, T.sendToHost, req.inject);
      return { MessageId: "m-1" };
    },
  });
  // The scheduler served as a local Lambda function (1 s timeout): a throttled Invoke, or a
  // function that runs out its time, as the request says.
  let schedulerRuns = 0;
  const scheduler = localFunction({
    name: "scheduler",
    arn: "arn:aws:lambda:us-east-1:000000000000:function:scheduler",
    timeoutSeconds: 1,
    handler: async (event: { request: Req }) => {
      if (schedulerRuns++ < (event.request.inject?.step === "timeout" ? event.request.inject.times : 0)) {
        await new Promise((r) => setTimeout(r, 1_200));
      }
      return [{ host: "host-1", nodename: "host-1" }];
    },
  });
  scenario("lambda", {
    [T.selectDestinations]: (i: { request: Req }) => {
      const spec = i.request.inject;
      if (spec?.step === "throttle" && (injected.get(i.request.request_id) ?? 0) < spec.times) {
        injected.set(i.request.request_id, (injected.get(i.request.request_id) ?? 0) + 1);
        throw new LambdaServiceError("TooManyRequestsException", 429, "Rate Exceeded.");
      }
      return scheduler.invoke(i);
    },
  });
  // 256 KiB: a Task's own result over the limit, and a state whose output (input + result at its
  // ResultPath) is over it although the result alone is not. Both states have a States.ALL Catch.
  scenario("big-result", {
    [T.buildInstances]: () => ({ casts: [], pad: "x".repeat(300 * 1024) }),
  });
  scenario("big-state", {
    [T.selectDestinations]: () => ({ pad: "y".repeat(150 * 1024) }),
  });
  scenario("build-failed-fails", {
    [T.selectDestinations]: () => {
      throw new RangeError("boom");
    },
    [T.buildFailed]: () => {
      throw named("ConditionalCheckFailedException", "fenced");
    },
  });

  beforeAll(async () => {
    emulators = await startEmulators({
      sfn: {
        taskHandlers: Object.fromEntries(Object.entries(scenarios).map(([k, v]) => [`conductor-${k}`, v])),
        onExecutionEnd: (info) => ended.push(info),
        retryIntervalMs: 5,
      },
    });
    restoreEnv = applyEnv(emulators.env);
    sfn = new SFNClient({});
    sqs = new SQSClient({});
    ({ queueUrl: computeQueueUrl } = await ensureQueueWithDlq(
      // A queue of this run's own: on a shared SQS (NOVALESS_EXTERNAL_AWS=1) earlier runs' casts remain.
      `${COMPUTE_QUEUE.localName}host-1${runSuffix()}`,
      COMPUTE_QUEUE,
      sqs,
    ));
    for (const name of Object.keys(scenarios)) {
      await sfn.send(
        new CreateStateMachineCommand({ name: `conductor-${name}`, definition, type: "EXPRESS", roleArn }),
      );
    }
  });

  afterAll(async () => {
    sfn?.destroy();
    sqs?.destroy();
    restoreEnv?.();
    await emulators?.stop();
  });

  const roleArn = "arn:aws:iam::000000000000:role/conductor";
  const arnOf = (name: string) => `arn:aws:states:us-east-1:000000000000:stateMachine:conductor-${name}`;

  async function runConductor(name: string, input: Record<string, unknown>) {
    calls[name]!.length = 0;
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: arnOf(name), input: JSON.stringify(input) }),
    );
    await emulators.sfn!.waitForIdle();
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    return { ...described, tasks: calls[name]!.map((c) => c.task), calls: calls[name]! };
  }

  it("is started by startEmulators and reachable through AWS_ENDPOINT_URL_SFN", async () => {
    expect(emulators.env.AWS_ENDPOINT_URL_SFN).toBe(emulators.endpoints.sfn);
    expect(new URL(emulators.endpoints.sfn!).hostname).toBe("127.0.0.1");
    const sm = await sfn.send(new DescribeStateMachineCommand({ stateMachineArn: arnOf("happy") }));
    expect(sm).toMatchObject({
      name: "conductor-happy",
      type: "EXPRESS",
      status: "ACTIVE",
      definition,
      roleArn,
    });
    expect(sm.creationDate).toBeInstanceOf(Date);
  });

  it("happy path: schedule, build, and cast every build to its host's queue", async () => {
    const out = await runConductor("happy", buildRequest());
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.selectDestinations, T.buildInstances, T.sendToHost, T.sendToHost]);
    const [select, build, ...sends] = out.calls;
    expect(select!.input).toEqual({ request: buildRequest() });
    expect(build!.input).toEqual({
      action: "build_instances",
      request: { ...buildRequest(), scheduled: [{ host: "host-1", nodename: "host-1" }] },
      scheduled: [{ host: "host-1", nodename: "host-1" }],
    });
    expect(
      sends.map((s) => s.input).sort((a, b) => String(a.MessageBody).localeCompare(String(b.MessageBody))),
    ).toEqual([
      { QueueUrl: computeQueueUrl, MessageBody: JSON.stringify({ id: "a" }) },
      { QueueUrl: computeQueueUrl, MessageBody: JSON.stringify({ id: "b" }) },
    ]);
    // ResultPath null on the Map: the output is the state's input, the casts' results dropped.
    expect(JSON.parse(out.output!)).toMatchObject({
      scheduled: [{ host: "host-1" }],
      build: { casts: expect.any(Array) },
    });
    const got = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: computeQueueUrl, MaxNumberOfMessages: 10 }),
    );
    expect(got.Messages?.map((m) => JSON.parse(m.Body!).id).sort()).toEqual(["a", "b"]);
  });

  it("the scheduler's NoValidHost answer: the NoValidHost task runs with its details", async () => {
    const out = await runConductor("no-valid-host", buildRequest());
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.selectDestinations, T.noValidHost]);
    const input = out.calls[1]!.input as { action: string; no_valid_host: { details: string } };
    expect(input.action).toBe("no_valid_host");
    expect(input.no_valid_host).toEqual({ details: "0/1 hosts are available: 1 has not enough RAM." });
    expect(JSON.parse(out.output!)).toEqual({ instances: "ERROR" });
  });

  it("a live migration its checks refused (the scheduler's answer): BuildFailed with the refusal as $.error", async () => {
    const out = await runConductor("move-refused", buildRequest());
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.selectDestinations, T.buildFailed]);
    expect(out.calls[1]!.input).toMatchObject({
      action: "build_failed",
      error: {
        Error: "LiveMigrationRefused",
        Cause: "Migration pre-check error: host-1 cannot live-migrate",
      },
    });
  });

  it("num_attempts past max_attempts: MaxRetriesExceeded, without scheduling", async () => {
    const out = await runConductor(
      "max-retries",
      buildRequest({ retry: { num_attempts: 4, hosts: ["a", "b", "c"] } }),
    );
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.maxRetriesExceeded]);
    expect(out.calls[0]!.input).toMatchObject({ action: "max_retries_exceeded" });
  });

  it("num_attempts equal to max_attempts is still scheduled", async () => {
    calls["max-retries"]!.length = 0;
    const out = await runConductor(
      "max-retries",
      buildRequest({ retry: { num_attempts: 3, hosts: ["a", "b"] } }),
    );
    expect(out.tasks).toEqual([T.selectDestinations, T.buildInstances, T.sendToHost]);
  });

  it("alternates present: ClaimAlternate, then build on the claimed alternate", async () => {
    const alternates = [
      { host: "alt-1", nodename: "alt-1", availability_zone: "nova", resources: { VCPU: 1 } },
    ];
    const out = await runConductor(
      "alternate",
      buildRequest({ retry: { num_attempts: 2, hosts: ["h0"] }, alternates }),
    );
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.claimAlternate, T.buildInstances, T.sendToHost]);
    expect(out.calls[0]!.input).toMatchObject({ action: "claim_alternate", request: { alternates } });
    expect(out.calls[1]!.input).toMatchObject({ scheduled: [{ host: "alt-1" }] });
    expect(out.calls[2]!.input).toEqual({
      QueueUrl: "queue-of-alt-1",
      MessageBody: JSON.stringify({ host: "alt-1" }),
    });
  });

  it("an empty alternates list goes to the scheduler", async () => {
    calls.alternate!.length = 0;
    const out = await runConductor("alternate", buildRequest({ alternates: [] }));
    expect(out.tasks).toEqual([T.selectDestinations, T.buildInstances, T.sendToHost]);
  });

  it("AlternatesExhausted (ClaimAlternate's answer): back to SelectDestinations", async () => {
    const alternates = [{ host: "alt-1", nodename: "alt-1", availability_zone: "nova", resources: {} }];
    const out = await runConductor("alternates-exhausted", buildRequest({ alternates }));
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.claimAlternate, T.selectDestinations, T.buildInstances, T.sendToHost]);
    expect(out.calls[1]!.input).toMatchObject({
      request: { scheduled: { exhausted: { message: "no alternate could be claimed" } } },
    });
  });

  it("an unexpected error: BuildFailed with the error", async () => {
    const out = await runConductor("unexpected", buildRequest());
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([T.selectDestinations, T.buildInstances, T.buildFailed]);
    const input = out.calls[2]!.input as { action: string; error: { Error: string; Cause: string } };
    expect(input.action).toBe("build_failed");
    expect(input.error.Error).toBe("TypeError");
    expect(JSON.parse(input.error.Cause).errorMessage).toMatch(/reading 'host'/);
  });

  const happyTasks = [T.selectDestinations, T.buildInstances, T.sendToHost];

  it.each([...LAMBDA_TRANSIENT_ERRORS, ...DYNAMODB_TRANSIENT_ERRORS])(
    "%s from a Lambda step is retried by the conductor's Retry, and the next attempt succeeds",
    async (error) => {
      const out = await runConductor(
        "retry",
        buildRequest({ request_id: `req-${error}`, inject: { step: T.selectDestinations, error, times: 1 } }),
      );
      expect(out.status).toBe("SUCCEEDED");
      expect(out.tasks).toEqual([T.selectDestinations, ...happyTasks]);
    },
  );

  it.each([...SQS_TRANSIENT_ERRORS])("%s from the sendMessage cast is retried", async (error) => {
    const out = await runConductor(
      "retry",
      buildRequest({ request_id: `req-${error}`, inject: { step: T.sendToHost, error, times: 1 } }),
    );
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([...happyTasks, T.sendToHost]);
  });

  it.each(["ConditionalCheckFailedException", "AccessDeniedException", "ValidationException", "TypeError"])(
    "%s is not transient: BuildFailed at once, with the error's name",
    async (error) => {
      const out = await runConductor(
        "retry",
        buildRequest({ request_id: `req-${error}`, inject: { step: T.selectDestinations, error, times: 1 } }),
      );
      expect(out.status).toBe("SUCCEEDED");
      expect(out.tasks).toEqual([T.selectDestinations, T.buildFailed]);
      expect(out.calls[1]!.input).toMatchObject({ action: "build_failed", error: { Error: error } });
    },
  );

  it("a throttle that outlasts the retries: BuildFailed after the last attempt, naming the AWS error", async () => {
    const error = "ProvisionedThroughputExceededException";
    const n = attemptsOf(T.selectDestinations, error);
    expect(n).toBe(2);
    const out = await runConductor(
      "retry",
      buildRequest({ request_id: "req-throttled", inject: { step: T.selectDestinations, error, times: 99 } }),
    );
    expect(out.status).toBe("SUCCEEDED");
    expect(out.tasks).toEqual([...Array(n).fill(T.selectDestinations), T.buildFailed]);
    const failed = out.calls[n]!.input as { error: { Error: string; Cause: string } };
    expect(failed.error.Error).toBe(error);
    expect(JSON.parse(failed.error.Cause)).toMatchObject({
      errorType: error,
      errorMessage: `injected ${error} #${n} in ${T.selectDestinations}`,
    });
  });

  it("a local Lambda throttled, then timed out, is retried each time: Lambda.TooManyRequestsException, Sandbox.Timedout", async () => {
    const throttled = await runConductor(
      "lambda",
      buildRequest({ request_id: "req-lambda-throttle", inject: { step: "throttle", error: "", times: 99 } }),
    );
    const n = attemptsOf(T.selectDestinations, "Lambda.TooManyRequestsException");
    expect(n).toBe(4);
    expect(throttled.tasks).toEqual([...Array(n).fill(T.selectDestinations), T.buildFailed]);
    const throttleError = (throttled.calls[n]!.input as { error: { Error: string; Cause: string } }).error;
    expect(throttleError.Error).toBe("Lambda.TooManyRequestsException");
    expect(throttleError.Cause).toMatch(
      /^Rate Exceeded\. \(Service: AWSLambda; Status Code: 429; Error Code: TooManyRequestsException; Request ID: /,
    );

    schedulerRuns = 0;
    const timedOutOnce = await runConductor(
      "lambda",
      buildRequest({ request_id: "req-lambda-timeout-1", inject: { step: "timeout", error: "", times: 1 } }),
    );
    expect(timedOutOnce.status).toBe("SUCCEEDED");
    expect(timedOutOnce.tasks).toEqual([T.selectDestinations, ...happyTasks]);

    // Timeouts are retried once only.
    schedulerRuns = 0;
    const timedOut = await runConductor(
      "lambda",
      buildRequest({ request_id: "req-lambda-timeout-2", inject: { step: "timeout", error: "", times: 2 } }),
    );
    expect(timedOut.tasks).toEqual([T.selectDestinations, T.selectDestinations, T.buildFailed]);
    const timeoutError = (timedOut.calls[2]!.input as { error: { Error: string; Cause: string } }).error;
    expect(timeoutError.Error).toBe("Sandbox.Timedout");
    expect(JSON.parse(timeoutError.Cause)).toEqual({
      errorType: "Sandbox.Timedout",
      errorMessage: expect.stringMatching(/^RequestId: \S+ Error: Task timed out after 1\.00 seconds$/),
    });
  });

  /** Runs with stderr captured: an execution that fails logs it, and here that is expected. */
  async function quietly<T>(fn: () => Promise<T>): Promise<T> {
    const spy = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      return await fn();
    } finally {
      spy.mockRestore();
    }
  }

  it("a Task result over 256 KiB fails the execution with States.DataLimitExceeded, which States.ALL does not catch", async () => {
    const out = await quietly(() => runConductor("big-result", buildRequest()));
    expect(out).toMatchObject({
      status: "FAILED",
      error: "States.DataLimitExceeded",
      cause: `The state/task '${T.buildInstances}' returned a result with a size exceeding the maximum number of bytes service limit.`,
    });
    // Neither the Catch's BuildFailed nor the cast ran.
    expect(out.tasks).toEqual([T.selectDestinations, T.buildInstances]);
  });

  it("a state output over 256 KiB (input + result) fails the execution before the next Task runs", async () => {
    const out = await quietly(() => runConductor("big-state", buildRequest({ pad: "z".repeat(150 * 1024) })));
    expect(out).toMatchObject({ status: "FAILED", error: "States.DataLimitExceeded" });
    expect(out.cause).toContain(`'${T.selectDestinations}' returned a result`);
    expect(out.tasks).toEqual([T.selectDestinations]);
  });

  it("a failing BuildFailed fails the execution, logged as one JSON line on stderr", async () => {
    const writes: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    let out: Awaited<ReturnType<typeof runConductor>>;
    try {
      out = await runConductor("build-failed-fails", buildRequest());
    } finally {
      spy.mockRestore();
    }
    expect(out.status).toBe("FAILED");
    expect(out.error).toBe("ConditionalCheckFailedException");
    expect(JSON.parse(out.cause!)).toMatchObject({ errorMessage: "fenced" });
    const lines = writes.filter((w) => w.includes("sfn.execution_failed"));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: "error",
      event: "sfn.execution_failed",
      request_id: "req-0001",
      execution_arn: out.executionArn,
      state_machine: "conductor-build-failed-fails",
      state: T.buildFailed,
      error: "ConditionalCheckFailedException",
    });
  });

  it("reports every finished execution to onExecutionEnd", () => {
    expect(ended.length).toBeGreaterThanOrEqual(30);
    expect(ended.every((e) => e.status !== "RUNNING" && e.stopDate instanceof Date)).toBe(true);
  });
});

describe("local Step Functions: the API", () => {
  let server: SfnServer;
  let restoreEnv: () => void;
  let sfn: SFNClient;
  // Failed executions are logged on stderr; here they are expected, so they are kept out of the
  // test output (the conductor suite checks the log line itself).
  let stderr: { mockRestore(): void } | undefined;
  const gates: (() => void)[] = [];
  const releaseAll = () => {
    for (let g = gates.shift(); g; g = gates.shift()) g();
  };
  const work = async (input: { n?: number; wait?: boolean; fail?: string }) => {
    if (input.wait) await new Promise<void>((resolve) => gates.push(resolve));
    if (input.fail) throw named(input.fail, `failed with ${input.fail}`);
    return { doubled: (input.n ?? 0) * 2 };
  };
  const simple = (type: "STANDARD" | "EXPRESS") =>
    JSON.stringify({
      Comment: `a one-task ${type} machine`,
      StartAt: "Work",
      States: {
        Work: { Type: "Task", Resource: "arn:aws:lambda:us-east-1:000000000000:function:work", Next: "Done" },
        Done: { Type: "Succeed" },
      },
    });

  // 256 KiB inside a Map iteration and after a Task's Parameters; each state has a States.ALL
  // Catch (or Retry) that AWS would not apply.
  const limitCalls: string[] = [];
  const recordCall = (name: string) => () => {
    limitCalls.push(name);
    return {};
  };
  const lambda = (name: string) => `arn:aws:lambda:us-east-1:000000000000:function:${name}`;
  const catchAll = [{ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "Caught" }];
  const retryAll = [{ ErrorEquals: ["States.ALL"], MaxAttempts: 3 }];
  const caught = { Type: "Task", Resource: lambda("caught"), End: true };
  const mapLimit = JSON.stringify({
    StartAt: "Fan",
    States: {
      Fan: {
        Type: "Map",
        ItemsPath: "$.items",
        ItemSelector: { "big.$": "$.big", "item.$": "$$.Map.Item.Value" },
        ItemProcessor: {
          ProcessorConfig: { Mode: "INLINE" },
          StartAt: "Double",
          States: {
            // 150 KiB in, 300 KiB out: this iteration's state is over the limit.
            Double: { Type: "Pass", Parameters: { "a.$": "$.big", "b.$": "$.big" }, Next: "Send" },
            Send: { Type: "Task", Resource: lambda("send"), Retry: retryAll, End: true },
          },
        },
        Catch: catchAll,
        Next: "After",
      },
      After: { Type: "Task", Resource: lambda("after"), End: true },
      Caught: caught,
    },
  });
  const paramsLimit = JSON.stringify({
    StartAt: "Work",
    States: {
      Work: {
        Type: "Task",
        Resource: lambda("work"),
        Parameters: { "a.$": "$.big", "b.$": "$.big" },
        Retry: retryAll,
        Catch: catchAll,
        End: true,
      },
      Caught: caught,
    },
  });

  beforeAll(async () => {
    stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    server = await startSfnServer({
      taskHandlers: {
        standard: { Work: work },
        express: { Work: work },
        unserved: {},
        "map-limit": { Send: recordCall("Send"), After: recordCall("After"), Caught: recordCall("Caught") },
        "params-limit": { Work: recordCall("Work"), Caught: recordCall("Caught") },
      },
    });
    restoreEnv = applyEnv({
      AWS_ENDPOINT_URL_SFN: server.endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "x",
      AWS_SECRET_ACCESS_KEY: "x",
    });
    sfn = new SFNClient({ maxAttempts: 1 });
    for (const [name, type, definition] of [
      ["standard", "STANDARD", simple("STANDARD")],
      ["express", "EXPRESS", simple("EXPRESS")],
      ["unserved", "STANDARD", simple("STANDARD")],
      ["map-limit", "EXPRESS", mapLimit],
      ["params-limit", "EXPRESS", paramsLimit],
    ] as const) {
      await sfn.send(
        new CreateStateMachineCommand({ name, definition, type, roleArn: "arn:aws:iam::0:role/x" }),
      );
    }
  });

  afterAll(async () => {
    releaseAll();
    sfn?.destroy();
    restoreEnv?.();
    await server?.stop();
    stderr?.mockRestore();
  });

  const arn = (name: string) => `arn:aws:states:us-east-1:000000000000:stateMachine:${name}`;

  it("CreateStateMachine is idempotent for the same definition and rejects another or an invalid one", async () => {
    const again = await sfn.send(
      new CreateStateMachineCommand({
        name: "standard",
        definition: simple("STANDARD"),
        type: "STANDARD",
        roleArn: "r",
      }),
    );
    expect(again.stateMachineArn).toBe(arn("standard"));
    await expect(
      sfn.send(
        new CreateStateMachineCommand({ name: "standard", definition: simple("EXPRESS"), roleArn: "r" }),
      ),
    ).rejects.toMatchObject({ name: "StateMachineAlreadyExists" });
    await expect(
      sfn.send(
        new CreateStateMachineCommand({
          name: "broken",
          definition: JSON.stringify({ StartAt: "Nowhere", States: {} }),
          roleArn: "r",
        }),
      ),
    ).rejects.toMatchObject({ name: "InvalidDefinition" });
    await expect(
      sfn.send(new DescribeStateMachineCommand({ stateMachineArn: arn("missing") })),
    ).rejects.toMatchObject({ name: "StateMachineDoesNotExist", $metadata: { httpStatusCode: 400 } });
  });

  it("StartExecution, DescribeExecution and ListExecutions", async () => {
    const ok = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: arn("standard"), name: "double-21", input: '{"n":21}' }),
    );
    expect(ok.executionArn).toBe("arn:aws:states:us-east-1:000000000000:execution:standard:double-21");
    expect(ok.startDate).toBeInstanceOf(Date);
    const bad = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: arn("standard"), input: '{"fail":"Oops"}' }),
    );
    await server.waitForIdle();

    const done = await sfn.send(new DescribeExecutionCommand({ executionArn: ok.executionArn }));
    expect(done).toMatchObject({
      status: "SUCCEEDED",
      name: "double-21",
      stateMachineArn: arn("standard"),
      input: '{"n":21}',
    });
    expect(JSON.parse(done.output!)).toEqual({ doubled: 42 });
    expect(done.stopDate!.getTime()).toBeGreaterThanOrEqual(done.startDate!.getTime());
    const failed = await sfn.send(new DescribeExecutionCommand({ executionArn: bad.executionArn }));
    expect(failed).toMatchObject({ status: "FAILED", error: "Oops" });
    expect(JSON.parse(failed.cause!)).toMatchObject({ errorType: "Oops", errorMessage: "failed with Oops" });
    expect(failed.name).toMatch(/^[0-9a-f-]{36}$/);

    const all = await sfn.send(new ListExecutionsCommand({ stateMachineArn: arn("standard") }));
    expect(all.executions?.map((e) => e.executionArn)).toEqual([bad.executionArn, ok.executionArn]);
    const onlyFailed = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: arn("standard"), statusFilter: "FAILED" }),
    );
    expect(onlyFailed.executions?.map((e) => e.executionArn)).toEqual([bad.executionArn]);
    const page = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: arn("standard"), maxResults: 1 }),
    );
    expect(page.executions).toHaveLength(1);
    const next = await sfn.send(
      new ListExecutionsCommand({
        stateMachineArn: arn("standard"),
        maxResults: 1,
        nextToken: page.nextToken,
      }),
    );
    expect(next.executions?.map((e) => e.executionArn)).toEqual([ok.executionArn]);
    expect(next.nextToken).toBeUndefined();

    await expect(
      sfn.send(new DescribeExecutionCommand({ executionArn: `${ok.executionArn}-nope` })),
    ).rejects.toMatchObject({ name: "ExecutionDoesNotExist" });
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: arn("standard"), input: "{not json" })),
    ).rejects.toMatchObject({ name: "InvalidExecutionInput" });
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: arn("standard"), name: "has:colon" })),
    ).rejects.toMatchObject({ name: "InvalidName" });
  });

  it("STANDARD dedupes by name: same input while running → same execution; otherwise ExecutionAlreadyExists", async () => {
    const start = (input: string) =>
      sfn.send(new StartExecutionCommand({ stateMachineArn: arn("standard"), name: "req-dedupe", input }));
    const first = await start('{"n":1,"wait":true}');
    const second = await start('{"n":1,"wait":true}');
    expect(second.executionArn).toBe(first.executionArn);
    await expect(start('{"n":2,"wait":true}')).rejects.toMatchObject({
      name: "ExecutionAlreadyExists",
      $metadata: { httpStatusCode: 400 },
    });
    releaseAll();
    await server.waitForIdle();
    expect(server.getExecution(first.executionArn!)?.status).toBe("SUCCEEDED");
    // As AWS: a finished execution's name stays taken, whatever the input.
    await expect(start('{"n":1,"wait":true}')).rejects.toMatchObject({ name: "ExecutionAlreadyExists" });
  });

  it("EXPRESS does not dedupe names", async () => {
    const start = () =>
      sfn.send(
        new StartExecutionCommand({ stateMachineArn: arn("express"), name: "same", input: '{"n":3}' }),
      );
    const [a, b] = [await start(), await start()];
    expect(a.executionArn).not.toBe(b.executionArn);
    expect(a.executionArn).toMatch(/^arn:aws:states:us-east-1:000000000000:express:express:same:/);
    await server.waitForIdle();
    expect(server.getExecution(b.executionArn!)?.status).toBe("SUCCEEDED");
  });

  it("StartSyncExecution runs an EXPRESS machine to the end; STANDARD is not supported", async () => {
    // The SDK prefixes StartSyncExecution's host with "sync-" (as AWS's sync-states endpoint):
    // against a local endpoint the client needs disableHostPrefix.
    const sync = new SFNClient({ maxAttempts: 1, disableHostPrefix: true });
    try {
      const ok = await sync.send(
        new StartSyncExecutionCommand({ stateMachineArn: arn("express"), input: '{"n":5}' }),
      );
      expect(ok.status).toBe("SUCCEEDED");
      expect(JSON.parse(ok.output!)).toEqual({ doubled: 10 });
      const failed = await sync.send(
        new StartSyncExecutionCommand({ stateMachineArn: arn("express"), input: '{"fail":"NoValidHost"}' }),
      );
      expect(failed).toMatchObject({ status: "FAILED", error: "NoValidHost" });
      await expect(
        sync.send(new StartSyncExecutionCommand({ stateMachineArn: arn("standard"), input: "{}" })),
      ).rejects.toMatchObject({ name: "StateMachineTypeNotSupported" });
    } finally {
      sync.destroy();
    }
  });

  it("StopExecution aborts a running execution; waitForIdle waits for its handler", async () => {
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({ stateMachineArn: arn("standard"), input: '{"wait":true}' }),
    );
    await vi.waitFor(() => expect(gates).toHaveLength(1));
    const stopped = await sfn.send(
      new StopExecutionCommand({ executionArn, error: "Deleted", cause: "by the user" }),
    );
    expect(stopped.stopDate).toBeInstanceOf(Date);
    expect(await sfn.send(new DescribeExecutionCommand({ executionArn }))).toMatchObject({
      status: "ABORTED",
      error: "Deleted",
      cause: "by the user",
    });
    let idle = false;
    const waiting = server.waitForIdle().then(() => {
      idle = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(idle).toBe(false);
    releaseAll();
    await waiting;
    expect(server.getExecution(executionArn!)?.status).toBe("ABORTED");
  });

  it("a Task state without a local handler fails the execution instead of calling AWS", async () => {
    const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn: arn("unserved") }));
    await server.waitForIdle();
    const out = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(out).toMatchObject({ status: "FAILED", error: "States.Runtime" });
    expect(out.cause).toMatch(/no local handler for Task state Work/);
  });

  it("a Map iteration over 256 KiB fails the execution: no Retry, no Catch, no later Task", async () => {
    limitCalls.length = 0;
    const big = "b".repeat(150 * 1024);
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: arn("map-limit"),
        input: JSON.stringify({ big, items: [1, 2, 3] }),
      }),
    );
    await server.waitForIdle();
    const out = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(out).toMatchObject({
      status: "FAILED",
      error: "States.DataLimitExceeded",
      cause:
        "The state/task 'Double' returned a result with a size exceeding the maximum number of bytes service limit.",
    });
    expect(limitCalls).toEqual([]);
  });

  it("a Task input over 256 KiB after its Parameters fails the execution before the Task runs", async () => {
    limitCalls.length = 0;
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: arn("params-limit"),
        input: JSON.stringify({ big: "p".repeat(150 * 1024) }),
      }),
    );
    await server.waitForIdle();
    const out = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    expect(out).toMatchObject({
      status: "FAILED",
      error: "States.DataLimitExceeded",
      cause:
        "The state/task 'Work' has an input with a size exceeding the maximum number of bytes service limit.",
    });
    expect(limitCalls).toEqual([]);
  });

  it("answers unknown operations with an AWS JSON error", async () => {
    const res = await fetch(server.endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "AWSStepFunctions.TagResource",
      },
      body: "{}",
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ __type: "UnknownOperationException" });
  });
});

describe("local Step Functions: an EXPRESS execution's maximum duration", () => {
  it("past it, the execution is TIMED_OUT with States.Timeout and no later Task runs", async () => {
    let release!: () => void;
    const ran: string[] = [];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const server = await startSfnServer({
      expressMaxDurationMs: 100,
      taskHandlers: {
        long: {
          Slow: async () => {
            ran.push("Slow");
            await new Promise<void>((resolve) => {
              release = resolve;
            });
            return {};
          },
          Then: () => {
            ran.push("Then");
            return {};
          },
        },
      },
    });
    const sfn = new SFNClient({
      endpoint: server.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      maxAttempts: 1,
    });
    try {
      const lambda = "arn:aws:lambda:us-east-1:000000000000:function:w";
      const { stateMachineArn } = await sfn.send(
        new CreateStateMachineCommand({
          name: "long",
          type: "EXPRESS",
          roleArn: "r",
          definition: JSON.stringify({
            StartAt: "Slow",
            States: {
              Slow: { Type: "Task", Resource: lambda, Next: "Then" },
              Then: { Type: "Task", Resource: lambda, End: true },
            },
          }),
        }),
      );
      const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn }));
      await vi.waitFor(() => expect(server.getExecution(executionArn!)?.status).toBe("TIMED_OUT"), {
        timeout: 10_000,
      });
      release();
      await server.waitForIdle();
      expect(await sfn.send(new DescribeExecutionCommand({ executionArn }))).toMatchObject({
        status: "TIMED_OUT",
        error: "States.Timeout",
      });
      expect(ran).toEqual(["Slow"]);
    } finally {
      sfn.destroy();
      await server.stop();
      stderr.mockRestore();
    }
  });
});

describe("local Step Functions: stop", () => {
  it("aborts running executions, waits for their handlers, and closes", async () => {
    let finishHandler!: () => void;
    let handlerReturned = false;
    const server = await startSfnServer({
      taskHandlers: {
        slow: {
          Work: async () => {
            await new Promise<void>((resolve) => {
              finishHandler = resolve;
            });
            handlerReturned = true;
            return {};
          },
        },
      },
    });
    const sfn = new SFNClient({
      endpoint: server.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      maxAttempts: 1,
    });
    try {
      const definition = JSON.stringify({
        StartAt: "Work",
        States: {
          Work: { Type: "Task", Resource: "arn:aws:lambda:us-east-1:000000000000:function:w", End: true },
        },
      });
      const { stateMachineArn } = await sfn.send(
        new CreateStateMachineCommand({ name: "slow", definition, roleArn: "r" }),
      );
      const { executionArn } = await sfn.send(new StartExecutionCommand({ stateMachineArn }));
      await vi.waitFor(() => expect(finishHandler).toBeTypeOf("function"));
      const stopping = server.stop();
      await new Promise((r) => setTimeout(r, 20));
      expect(server.getExecution(executionArn!)?.status).toBe("ABORTED");
      expect(handlerReturned).toBe(false);
      finishHandler();
      await stopping;
      expect(handlerReturned).toBe(true);
      await expect(fetch(server.endpoint, { method: "POST" })).rejects.toThrow();
    } finally {
      sfn.destroy();
      await server.stop();
    }
  });
});
