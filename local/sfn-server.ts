// A local AWS Step Functions endpoint: the real @aws-sdk/client-sfn, pointed at it with
// AWS_ENDPOINT_URL_SFN, creates state machines and starts executions here, and
// aws-local-stepfunctions runs the very ASL the stack deploys. Task states are served in-process
// by handlers registered per state machine and Task state name (Map ItemProcessor states too);
// a Task state without a handler fails the execution rather than calling AWS.
//
// AWS's limits hold here: every state's input and output, Map iterations' included, and every
// Task's input and result are at most 256 KiB, else the execution fails with
// States.DataLimitExceeded, which no Retry or Catch handles (not even States.ALL), before any
// later Task runs; an EXPRESS execution runs at most 5 minutes, else it is TIMED_OUT with
// States.Timeout.
//
// AWS JSON 1.0 protocol; operations: CreateStateMachine, DescribeStateMachine, ListStateMachines,
// StartExecution, StartSyncExecution, DescribeExecution, ListExecutions, StopExecution.
import "./polyfills.js";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  ExecutionAbortedError,
  ExecutionError,
  ExecutionTimeoutError,
  type RunOptions,
  StateMachine,
  type StateMachineDefinition,
} from "aws-local-stepfunctions";
import { log } from "../lib/log.js";
import { LambdaFunctionError, LambdaServiceError } from "./lambda.js";

/** One event of an execution's log (the interpreter does not export the type). */
type EventLog = ReturnType<StateMachine["run"]>["eventLogs"] extends AsyncGenerator<infer E> ? E : never;

const HOST = "127.0.0.1";
const REGION = "us-east-1";
const ACCOUNT = "000000000000";
/** Step Functions' limit on an execution's input and output, and every state's (256 KiB). */
const MAX_PAYLOAD_BYTES = 262_144;
/** An EXPRESS execution's maximum duration. */
const EXPRESS_MAX_DURATION_MS = 5 * 60_000;
const MAX_REQUEST_BYTES = 8 * 1_048_576;

// biome-ignore lint/suspicious/noExplicitAny: each handler declares the input its Task state's Parameters produce
export type TaskHandler = (input: any) => Promise<unknown> | unknown;
/** Task state name → handler; one map per state machine name. */
export type TaskHandlers = Record<string, TaskHandler>;

export type ExecutionStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED";
export type StateMachineType = "STANDARD" | "EXPRESS";

export interface ExecutionInfo {
  executionArn: string;
  stateMachineArn: string;
  stateMachineName: string;
  type: StateMachineType;
  name: string;
  status: ExecutionStatus;
  /** JSON text, as the API returns it */
  input: string;
  output?: string;
  error?: string;
  cause?: string;
  startDate: Date;
  stopDate?: Date;
}

export interface SfnServerOptions {
  /** 0 (the default) lets the OS pick a free port */
  port?: number;
  /** state machine name → its Task handlers */
  taskHandlers?: Record<string, TaskHandlers>;
  /** called once per execution, when it leaves RUNNING */
  onExecutionEnd?: (info: ExecutionInfo) => void;
  /** finished executions kept for Describe/ListExecutions, oldest forgotten first (default 10,000) */
  maxFinishedExecutions?: number;
  /** wait this long before every Retry instead of IntervalSeconds × BackoffRate^n (for tests) */
  retryIntervalMs?: number;
  /** an EXPRESS execution's maximum duration: 5 minutes, as AWS (shorter for tests) */
  expressMaxDurationMs?: number;
}

export interface SfnServer {
  /** http://127.0.0.1:<port>, for AWS_ENDPOINT_URL_SFN */
  readonly endpoint: string;
  readonly port: number;
  /** the server's request listener, for callers in this process (the IAM gateway) */
  readonly listener: RequestListener;
  /** replaces the handlers of a state machine, for the executions started from now on */
  setTaskHandlers(stateMachineName: string, handlers: TaskHandlers): void;
  /** a copy of what is known of an execution (running, or among the last finished ones) */
  getExecution(executionArn: string): ExecutionInfo | undefined;
  /** resolves when no execution is running and no Task handler is still in flight */
  waitForIdle(): Promise<void>;
  /** aborts every running execution, waits for their handlers, then closes the server */
  stop(): Promise<void>;
}

interface MachineRecord {
  arn: string;
  name: string;
  type: StateMachineType;
  definition: string;
  roleArn: string;
  creationDate: Date;
  machine: StateMachine;
  /** Task state name → Resource, nested states included */
  tasks: Map<string, string>;
  /** names of the states that have a Retry field, nested states included */
  retrying: string[];
}

interface ExecutionRecord {
  info: ExecutionInfo;
  abort?: () => void;
  /** set when the execution left RUNNING: no Task handler may start after that */
  closed: boolean;
  inflight: Set<Promise<void>>;
  /** resolves when the execution has finished and its handlers have returned */
  settled: Promise<void>;
  /** the last state that failed, for the log line */
  failedState?: string;
  /** ends an EXPRESS execution at its maximum duration */
  timer?: NodeJS.Timeout;
  /** states entered so far */
  transitions: number;
}

class SfnError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** One finished execution, for the cost benchmark. */
export interface ExecutionRecordSummary {
  stateMachineName: string;
  type: StateMachineType;
  status: ExecutionStatus;
  durationMs: number;
  /** states entered (Map iterations' included): what Step Functions counts as transitions */
  transitions: number;
}

const executionObservers = new Set<(e: ExecutionRecordSummary) => void>();

/** Calls `observer` once per execution, when it has settled; returns the function that stops it. */
export function observeExecutions(observer: (e: ExecutionRecordSummary) => void): () => void {
  executionObservers.add(observer);
  return () => executionObservers.delete(observer);
}

export async function startSfnServer(opts: SfnServerOptions = {}): Promise<SfnServer> {
  const handlers = new Map(Object.entries(opts.taskHandlers ?? {}));
  const maxFinished = opts.maxFinishedExecutions ?? 10_000;
  const expressMaxMs = opts.expressMaxDurationMs ?? EXPRESS_MAX_DURATION_MS;
  const machines = new Map<string, MachineRecord>();
  const executions = new Map<string, ExecutionRecord>();
  /** STANDARD executions by `${stateMachineArn}\n${name}`: names are unique per state machine */
  const standardByName = new Map<string, string>();
  const finished: string[] = [];
  const active = new Set<ExecutionRecord>();
  let idleWaiters: (() => void)[] = [];
  let stopping = false;

  function machineFor(arn: unknown): MachineRecord {
    const m = machines.get(requireString(arn, "stateMachineArn"));
    if (!m) {
      if (!/^arn:aws:states:[^:]+:\d{12}:stateMachine:[^:]+$/.test(String(arn))) {
        throw new SfnError("InvalidArn", `Invalid Arn: '${String(arn)}'`);
      }
      throw new SfnError("StateMachineDoesNotExist", `State Machine Does Not Exist: '${String(arn)}'`);
    }
    return m;
  }

  function executionFor(arn: unknown): ExecutionRecord {
    const e = executions.get(requireString(arn, "executionArn"));
    if (!e) throw new SfnError("ExecutionDoesNotExist", `Execution Does Not Exist: '${String(arn)}'`);
    return e;
  }

  function createStateMachine(body: Record<string, unknown>) {
    const name = requireString(body.name, "name");
    checkName(name);
    const definition = requireString(body.definition, "definition");
    const type = (body.type ?? "STANDARD") as StateMachineType;
    if (type !== "STANDARD" && type !== "EXPRESS") {
      throw new SfnError("ValidationException", `type must be STANDARD or EXPRESS, not ${String(type)}`);
    }
    const arn = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`;
    const existing = machines.get(arn);
    if (existing) {
      // As AWS: the same name, definition and type is the same state machine; anything else is a conflict.
      if (existing.definition === definition && existing.type === type) {
        return { stateMachineArn: arn, creationDate: epoch(existing.creationDate) };
      }
      throw new SfnError("StateMachineAlreadyExists", `State Machine Already Exists: '${arn}'`);
    }
    let parsed: StateMachineDefinition;
    let machine: StateMachine;
    try {
      parsed = JSON.parse(definition) as StateMachineDefinition;
      machine = new StateMachine(parsed);
    } catch (e) {
      throw new SfnError("InvalidDefinition", `Invalid State Machine Definition: ${(e as Error).message}`);
    }
    const tasks = new Map<string, string>();
    const retrying: string[] = [];
    collectStates(parsed, tasks, retrying);
    const record: MachineRecord = {
      arn,
      name,
      type,
      definition,
      roleArn:
        typeof body.roleArn === "string" ? body.roleArn : `arn:aws:iam::${ACCOUNT}:role/novaless-local`,
      creationDate: new Date(),
      machine,
      tasks,
      retrying,
    };
    machines.set(arn, record);
    return { stateMachineArn: arn, creationDate: epoch(record.creationDate) };
  }

  function describeStateMachine(body: Record<string, unknown>) {
    const m = machineFor(body.stateMachineArn);
    return {
      stateMachineArn: m.arn,
      name: m.name,
      status: "ACTIVE",
      definition: m.definition,
      roleArn: m.roleArn,
      type: m.type,
      creationDate: epoch(m.creationDate),
    };
  }

  function listStateMachines() {
    return {
      stateMachines: [...machines.values()].map((m) => ({
        stateMachineArn: m.arn,
        name: m.name,
        type: m.type,
        creationDate: epoch(m.creationDate),
      })),
    };
  }

  function startExecution(body: Record<string, unknown>): ExecutionRecord {
    if (stopping) throw new SfnError("ServiceUnavailable", "the local Step Functions endpoint is stopping");
    const m = machineFor(body.stateMachineArn);
    const name = body.name === undefined ? randomUUID() : requireString(body.name, "name");
    checkName(name);
    const input = body.input === undefined ? "{}" : requireString(body.input, "input");
    if (Buffer.byteLength(input) > MAX_PAYLOAD_BYTES) {
      throw new SfnError(
        "ValidationException",
        `1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have length less than or equal to ${MAX_PAYLOAD_BYTES}`,
      );
    }
    let parsedInput: unknown;
    try {
      parsedInput = JSON.parse(input);
    } catch (e) {
      throw new SfnError(
        "InvalidExecutionInput",
        `Invalid State Machine Execution Input: ${(e as Error).message}`,
      );
    }
    let executionArn: string;
    if (m.type === "STANDARD") {
      // StartExecution is idempotent for STANDARD: the same name and input while the first is
      // still running answers with that execution; once it has finished, or with another input,
      // the name is taken.
      const key = `${m.arn}\n${name}`;
      const previous = standardByName.get(key);
      const prev = previous === undefined ? undefined : executions.get(previous);
      if (prev) {
        if (prev.info.status === "RUNNING" && prev.info.input === input) return prev;
        throw new SfnError("ExecutionAlreadyExists", `Execution Already Exists: '${prev.info.executionArn}'`);
      }
      executionArn = `arn:aws:states:${REGION}:${ACCOUNT}:execution:${m.name}:${name}`;
      standardByName.set(key, executionArn);
    } else {
      executionArn = `arn:aws:states:${REGION}:${ACCOUNT}:express:${m.name}:${name}:${randomUUID()}`;
    }
    const info: ExecutionInfo = {
      executionArn,
      stateMachineArn: m.arn,
      stateMachineName: m.name,
      type: m.type,
      name,
      status: "RUNNING",
      input,
      startDate: new Date(),
    };
    const record: ExecutionRecord = {
      info,
      closed: false,
      inflight: new Set(),
      transitions: 0,
      settled: Promise.resolve(),
    };
    executions.set(executionArn, record);
    active.add(record);
    record.settled = run(m, record, parsedInput);
    return record;
  }

  async function run(m: MachineRecord, record: ExecutionRecord, input: unknown): Promise<void> {
    const overrides: NonNullable<RunOptions["overrides"]> = {
      taskResourceLocalHandlers: taskOverrides(m, record),
    };
    if (opts.retryIntervalMs !== undefined) {
      overrides.retryIntervalOverrides = Object.fromEntries(
        m.retrying.map((s) => [s, opts.retryIntervalMs!]),
      );
    }
    const { info } = record;
    try {
      const execution = m.machine.run(input as Parameters<StateMachine["run"]>[0], {
        overrides,
        context: {
          Execution: { Id: info.executionArn, Name: info.name, RoleArn: m.roleArn },
          StateMachine: { Id: m.arn, Name: m.name },
        },
      });
      record.abort = execution.abort;
      if (m.type === "EXPRESS") {
        record.timer = setTimeout(() => {
          finish(record, "TIMED_OUT", {
            error: "States.Timeout",
            cause: `The EXPRESS execution ran past its maximum duration of ${expressMaxMs / 1000} seconds.`,
          });
          execution.abort();
        }, expressMaxMs);
      }
      void watchEvents(record, execution.eventLogs);
      const output = await execution.result;
      // The last transition's events may still be on their way to the watcher.
      await macrotask();
      const text = JSON.stringify(output ?? null);
      if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
        dataLimitExceeded(record, undefined, "output");
      } else {
        finish(record, "SUCCEEDED", { output: text });
      }
    } catch (e) {
      if (e instanceof ExecutionAbortedError) finish(record, "ABORTED", {});
      else if (e instanceof ExecutionTimeoutError) {
        finish(record, "TIMED_OUT", { error: "States.Timeout", cause: "The execution timed out." });
      } else {
        const err = e instanceof ExecutionError && e.cause instanceof Error ? e.cause : (e as Error);
        finish(record, "FAILED", { error: err?.name ?? "States.Runtime", cause: err?.message ?? String(e) });
      }
    }
    // An aborted or failed execution may still have handlers running (a Map's other iterations,
    // a Task interrupted by StopExecution): wait for them before calling it settled.
    while (record.inflight.size > 0) await Promise.all(record.inflight);
    active.delete(record);
    for (const o of executionObservers) {
      o({
        stateMachineName: info.stateMachineName,
        type: info.type,
        status: info.status,
        durationMs: (info.stopDate ?? new Date()).getTime() - info.startDate.getTime(),
        transitions: record.transitions,
      });
    }
    if (active.size === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * Follows the interpreter's events: which state failed, and every state's input and output
   * (Map iterations' too) against the 256 KiB limit. Events arrive on microtasks, so a violation is
   * recorded before the next Task handler starts (each waits a macrotask first).
   */
  async function watchEvents(record: ExecutionRecord, events: AsyncGenerator<EventLog>) {
    for await (const event of events) {
      if (event.type === "StateEntered") record.transitions++;
      if (record.closed) continue;
      if (event.type === "StateFailed") record.failedState = event.state.name;
      if (event.type === "StateEntered" && sizeOf(event.state.input) > MAX_PAYLOAD_BYTES) {
        dataLimitExceeded(record, event.state.name, "input");
      } else if (event.type === "StateExited" && sizeOf(event.state.output) > MAX_PAYLOAD_BYTES) {
        dataLimitExceeded(record, event.state.name, "output");
      }
    }
  }

  /**
   * States.DataLimitExceeded: the execution fails at once, whatever Retry or Catch the state has
   * (as on AWS, States.ALL does not match it). Returns the error to throw from a Task.
   */
  function dataLimitExceeded(
    record: ExecutionRecord,
    state: string | undefined,
    what: "input" | "output",
  ): Error {
    const subject = state === undefined ? "The state/task" : `The state/task '${state}'`;
    const cause =
      what === "output"
        ? `${subject} returned a result with a size exceeding the maximum number of bytes service limit.`
        : `${subject} has an input with a size exceeding the maximum number of bytes service limit.`;
    if (!record.closed) {
      record.failedState = state;
      finish(record, "FAILED", { error: "States.DataLimitExceeded", cause });
    }
    record.abort?.();
    return Object.assign(new Error(cause), {
      name: "States.DataLimitExceeded",
      isRetryable: false,
      isCatchable: false,
    });
  }

  function taskOverrides(m: MachineRecord, record: ExecutionRecord) {
    const registered = handlers.get(m.name) ?? {};
    const overrides: Record<string, (input: unknown) => Promise<unknown>> = {};
    for (const [stateName, resource] of m.tasks) {
      const handler = registered[stateName];
      overrides[stateName] = async (input) => {
        // Let the event watcher judge the transition that led here before anything runs.
        await macrotask();
        if (record.closed) throw runtimeError(`execution ${record.info.executionArn} is no longer running`);
        if (!handler) {
          throw runtimeError(`no local handler for Task state ${stateName} of state machine ${m.name}`);
        }
        // The input after Parameters, as the Task would send it.
        if (sizeOf(input) > MAX_PAYLOAD_BYTES) throw dataLimitExceeded(record, stateName, "input");
        const call = (async () => handler(input))();
        const done = call.then(
          () => {},
          () => {},
        );
        record.inflight.add(done);
        let result: string;
        try {
          // What crosses a real Task boundary is JSON.
          result = JSON.stringify((await call) ?? null);
        } catch (e) {
          throw taskError(e, resource);
        } finally {
          record.inflight.delete(done);
        }
        if (Buffer.byteLength(result) > MAX_PAYLOAD_BYTES)
          throw dataLimitExceeded(record, stateName, "output");
        return JSON.parse(result);
      };
    }
    return overrides as NonNullable<NonNullable<RunOptions["overrides"]>["taskResourceLocalHandlers"]>;
  }

  function finish(
    record: ExecutionRecord,
    status: Exclude<ExecutionStatus, "RUNNING">,
    result: { output?: string; error?: string; cause?: string },
  ): void {
    if (record.closed) return;
    record.closed = true;
    clearTimeout(record.timer);
    const { info } = record;
    info.status = status;
    info.stopDate = new Date();
    if (result.output !== undefined) info.output = result.output;
    if (result.error !== undefined) info.error = result.error;
    if (result.cause !== undefined) info.cause = result.cause;
    if (status === "FAILED" || status === "TIMED_OUT") {
      log.error("sfn.execution_failed", {
        ...requestIdOf(info.input),
        execution_arn: info.executionArn,
        state_machine: info.stateMachineName,
        status,
        state: record.failedState,
        error: info.error,
        cause: info.cause,
      });
    }
    finished.push(info.executionArn);
    while (finished.length > maxFinished) {
      const old = finished.shift()!;
      const gone = executions.get(old);
      executions.delete(old);
      if (gone?.info.type === "STANDARD")
        standardByName.delete(`${gone.info.stateMachineArn}\n${gone.info.name}`);
    }
    try {
      opts.onExecutionEnd?.({ ...info });
    } catch (e) {
      log.warn("sfn.on_execution_end_failed", { execution_arn: info.executionArn, error: e });
    }
  }

  function stopExecution(body: Record<string, unknown>) {
    const record = executionFor(body.executionArn);
    if (record.info.status === "RUNNING") {
      finish(record, "ABORTED", {
        ...(typeof body.error === "string" ? { error: body.error } : {}),
        ...(typeof body.cause === "string" ? { cause: body.cause } : {}),
      });
      record.abort?.();
    }
    return { stopDate: epoch(record.info.stopDate ?? new Date()) };
  }

  function describeExecution(body: Record<string, unknown>) {
    const { info } = executionFor(body.executionArn);
    return {
      executionArn: info.executionArn,
      stateMachineArn: info.stateMachineArn,
      name: info.name,
      status: info.status,
      startDate: epoch(info.startDate),
      ...(info.stopDate ? { stopDate: epoch(info.stopDate) } : {}),
      input: info.input,
      inputDetails: { included: true },
      ...(info.output !== undefined ? { output: info.output, outputDetails: { included: true } } : {}),
      ...(info.error !== undefined ? { error: info.error } : {}),
      ...(info.cause !== undefined ? { cause: info.cause } : {}),
    };
  }

  function listExecutions(body: Record<string, unknown>) {
    const m = machineFor(body.stateMachineArn);
    const filter = body.statusFilter;
    const maxResults = typeof body.maxResults === "number" && body.maxResults > 0 ? body.maxResults : 100;
    const offset = typeof body.nextToken === "string" ? Number(body.nextToken) : 0;
    if (!Number.isInteger(offset) || offset < 0) throw new SfnError("InvalidToken", "Invalid Token");
    // Newest first, as AWS lists them.
    const all = [...executions.values()]
      .map((e) => e.info)
      .filter((i) => i.stateMachineArn === m.arn && (filter === undefined || i.status === filter))
      .reverse();
    const page = all.slice(offset, offset + maxResults);
    return {
      executions: page.map((i) => ({
        executionArn: i.executionArn,
        stateMachineArn: i.stateMachineArn,
        name: i.name,
        status: i.status,
        startDate: epoch(i.startDate),
        ...(i.stopDate ? { stopDate: epoch(i.stopDate) } : {}),
      })),
      ...(offset + maxResults < all.length ? { nextToken: String(offset + maxResults) } : {}),
    };
  }

  async function startSyncExecution(body: Record<string, unknown>) {
    const m = machineFor(body.stateMachineArn);
    if (m.type !== "EXPRESS") {
      throw new SfnError(
        "StateMachineTypeNotSupported",
        "This operation is not supported by this type of state machine",
      );
    }
    const record = startExecution(body);
    await record.settled;
    const { info } = record;
    return {
      executionArn: info.executionArn,
      stateMachineArn: info.stateMachineArn,
      name: info.name,
      startDate: epoch(info.startDate),
      stopDate: epoch(info.stopDate ?? new Date()),
      status: info.status,
      input: info.input,
      inputDetails: { included: true },
      ...(info.output !== undefined ? { output: info.output, outputDetails: { included: true } } : {}),
      ...(info.error !== undefined ? { error: info.error } : {}),
      ...(info.cause !== undefined ? { cause: info.cause } : {}),
    };
  }

  const operations: Record<string, (body: Record<string, unknown>) => unknown> = {
    CreateStateMachine: createStateMachine,
    DescribeStateMachine: describeStateMachine,
    ListStateMachines: listStateMachines,
    StartExecution: (body) => {
      const { info } = startExecution(body);
      return { executionArn: info.executionArn, startDate: epoch(info.startDate) };
    },
    StartSyncExecution: startSyncExecution,
    DescribeExecution: describeExecution,
    ListExecutions: listExecutions,
    StopExecution: stopExecution,
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const target = String(req.headers["x-amz-target"] ?? "");
      const op = operations[target.replace(/^AWSStepFunctions\./, "")];
      if (req.method !== "POST" || !target.startsWith("AWSStepFunctions.") || !op) {
        throw new SfnError("UnknownOperationException", `Unknown operation ${target || "(no X-Amz-Target)"}`);
      }
      const raw = await readBody(req);
      let body: unknown;
      try {
        body = raw.length === 0 ? {} : JSON.parse(raw);
      } catch {
        throw new SfnError("SerializationException", "the request body is not JSON");
      }
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw new SfnError("SerializationException", "the request body is not a JSON object");
      }
      reply(res, 200, await op(body as Record<string, unknown>));
    } catch (e) {
      if (e instanceof SfnError) {
        reply(
          res,
          e.code === "ServiceUnavailable" ? 503 : 400,
          { __type: e.code, message: e.message },
          e.code,
        );
      } else {
        log.error("sfn.internal_error", { error: e });
        reply(
          res,
          500,
          { __type: "InternalFailure", message: (e as Error)?.message ?? String(e) },
          "InternalFailure",
        );
      }
    }
  }

  const listener: RequestListener = (req, res) => void handle(req, res);
  const server = createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, HOST, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let stopped: Promise<void> | undefined;

  return {
    endpoint: `http://${HOST}:${port}`,
    port,
    listener,
    setTaskHandlers(stateMachineName, h) {
      handlers.set(stateMachineName, h);
    },
    getExecution(executionArn) {
      const e = executions.get(executionArn);
      return e ? { ...e.info } : undefined;
    },
    waitForIdle() {
      if (active.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    stop() {
      stopped ??= (async () => {
        stopping = true;
        for (const record of active) stopExecution({ executionArn: record.info.executionArn });
        await Promise.all([...active].map((r) => r.settled));
        await new Promise<void>((resolve, reject) => {
          server.close((err) => (err ? reject(err) : resolve()));
          server.closeAllConnections();
        });
      })();
      return stopped;
    },
  };
}

/** Task and retrying state names, through Map ItemProcessors/Iterators and Parallel branches. */
function collectStates(
  def: Pick<StateMachineDefinition, "States">,
  tasks: Map<string, string>,
  retrying: string[],
): void {
  for (const [name, state] of Object.entries(def.States)) {
    const s = state as {
      Type: string;
      Resource?: string;
      Retry?: unknown[];
      ItemProcessor?: StateMachineDefinition;
      Iterator?: StateMachineDefinition;
      Branches?: StateMachineDefinition[];
    };
    if (s.Type === "Task" && s.Resource) tasks.set(name, s.Resource);
    if (s.Retry) retrying.push(name);
    const nested = s.ItemProcessor ?? s.Iterator;
    if (nested) collectStates(nested, tasks, retrying);
    for (const branch of s.Branches ?? []) collectStates(branch, tasks, retrying);
  }
}

/**
 * The error a Task state fails with. Its name is what Retry and Catch match (the interpreter
 * compares ErrorEquals with error.name). For a Lambda resource: a function error keeps its
 * errorType, and `Cause` is the payload Lambda returned (errorType, errorMessage, trace); a refused
 * Invoke call is named as Step Functions names it (LambdaServiceError.stepFunctionsError).
 */
function taskError(e: unknown, resource: string): Error {
  const err = e instanceof Error ? e : new Error(String(e));
  if (!/^arn:aws[a-z-]*:lambda:/.test(resource)) return err;
  if (err instanceof LambdaServiceError) {
    const { name, cause } = err.stepFunctionsError;
    return named(name, cause);
  }
  const payload =
    err instanceof LambdaFunctionError
      ? err.payload
      : {
          errorType: err.name,
          errorMessage: err.message,
          trace: (err.stack ?? `${err.name}: ${err.message}`).split("\n"),
        };
  return named(err.name, JSON.stringify(payload));
}

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** An error that no Retry or Catch handles, as Step Functions' own States.Runtime. */
function runtimeError(message: string): Error {
  return Object.assign(new Error(message), {
    name: "States.Runtime",
    isRetryable: false,
    isCatchable: false,
  });
}

function sizeOf(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value ?? null));
}

function macrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function requireString(value: unknown, field: string): string {
  if (typeof value !== "string") {
    throw new SfnError(
      "ValidationException",
      `1 validation error detected: Value at '${field}' must be a string`,
    );
  }
  return value;
}

const FORBIDDEN_NAME_CHARS = new Set(' <>{}[]?*"#%\\^|~`$&,;:/');

/** Step Functions' rule for state machine and execution names. */
function checkName(name: string): void {
  const bad =
    name.length < 1 ||
    name.length > 80 ||
    [...name].some((ch) => {
      const c = ch.codePointAt(0)!;
      return FORBIDDEN_NAME_CHARS.has(ch) || /\s/.test(ch) || c <= 0x1f || (c >= 0x7f && c <= 0x9f);
    });
  if (bad) throw new SfnError("InvalidName", `Invalid Name: '${name}'`);
}

function requestIdOf(input: string): { request_id?: string } {
  try {
    const parsed = JSON.parse(input) as { request_id?: unknown };
    return typeof parsed?.request_id === "string" ? { request_id: parsed.request_id } : {};
  } catch {
    return {};
  }
}

function epoch(d: Date): number {
  return d.getTime() / 1000;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        reject(new SfnError("ValidationException", "the request is too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function reply(res: ServerResponse, status: number, body: unknown, errorType?: string): void {
  if (res.headersSent) return;
  const data = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/x-amz-json-1.0",
    "content-length": Buffer.byteLength(data),
    "x-amzn-requestid": randomUUID(),
    ...(errorType ? { "x-amzn-errortype": errorType } : {}),
  });
  res.end(data);
}
