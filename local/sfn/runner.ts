// An execution run by aws-local-stepfunctions with AWS's limits: every state's and Task's input and
// output at most 256 KiB (States.DataLimitExceeded, which no Retry or Catch handles), an EXPRESS
// execution at most its maximum duration (States.Timeout), and each Task state served by its
// registered handler, its errors named as Step Functions names them.
import {
  ExecutionAbortedError,
  ExecutionError,
  ExecutionTimeoutError,
  type RunOptions,
  type StateMachine,
} from "aws-local-stepfunctions";
import { LambdaFunctionError, LambdaServiceError } from "../lambda.js";
import type { Executions } from "./executions.js";
import { type ExecutionRecord, MAX_PAYLOAD_BYTES, type MachineRecord, type TaskHandlers } from "./types.js";

/** One event of an execution's log (the interpreter does not export the type). */
type EventLog = ReturnType<StateMachine["run"]>["eventLogs"] extends AsyncGenerator<infer E> ? E : never;

export interface RunnerOptions {
  /** wait this long before every Retry instead of IntervalSeconds × BackoffRate^n */
  retryIntervalMs?: number;
  /** an EXPRESS execution's maximum duration */
  expressMaxDurationMs: number;
  /** the Task handlers of a state machine, by its name */
  handlersOf(stateMachineName: string): TaskHandlers | undefined;
}

export class Runner {
  constructor(
    private readonly executions: Executions,
    private readonly opts: RunnerOptions,
  ) {}

  /** Runs the execution to its end; resolves once it has settled (its handlers returned). */
  async run(m: MachineRecord, record: ExecutionRecord, input: unknown): Promise<void> {
    const overrides: NonNullable<RunOptions["overrides"]> = {
      taskResourceLocalHandlers: this.taskOverrides(m, record),
    };
    if (this.opts.retryIntervalMs !== undefined) {
      overrides.retryIntervalOverrides = Object.fromEntries(
        m.retrying.map((s) => [s, this.opts.retryIntervalMs!]),
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
          this.executions.finish(record, "TIMED_OUT", {
            error: "States.Timeout",
            cause: `The EXPRESS execution ran past its maximum duration of ${this.opts.expressMaxDurationMs / 1000} seconds.`,
          });
          execution.abort();
        }, this.opts.expressMaxDurationMs);
      }
      void this.watchEvents(record, execution.eventLogs);
      const output = await execution.result;
      // The last transition's events may still be on their way to the watcher.
      await macrotask();
      const text = JSON.stringify(output ?? null);
      if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) {
        this.dataLimitExceeded(record, undefined, "output");
      } else {
        this.executions.finish(record, "SUCCEEDED", { output: text });
      }
    } catch (e) {
      if (e instanceof ExecutionAbortedError) this.executions.finish(record, "ABORTED", {});
      else if (e instanceof ExecutionTimeoutError) {
        this.executions.finish(record, "TIMED_OUT", {
          error: "States.Timeout",
          cause: "The execution timed out.",
        });
      } else {
        const err = e instanceof ExecutionError && e.cause instanceof Error ? e.cause : (e as Error);
        this.executions.finish(record, "FAILED", {
          error: err?.name ?? "States.Runtime",
          cause: err?.message ?? String(e),
        });
      }
    }
    // An aborted or failed execution may still have handlers running (a Map's other iterations,
    // a Task interrupted by StopExecution): wait for them before calling it settled.
    while (record.inflight.size > 0) await Promise.all(record.inflight);
    this.executions.settle(record);
  }

  /**
   * Follows the interpreter's events: which state failed, and every state's input and output
   * (Map iterations' too) against the 256 KiB limit. Events arrive on microtasks, so a violation is
   * recorded before the next Task handler starts (each waits a macrotask first).
   */
  private async watchEvents(record: ExecutionRecord, events: AsyncGenerator<EventLog>) {
    for await (const event of events) {
      if (event.type === "StateEntered") record.transitions++;
      record.history.record(event, record.info);
      if (record.closed) continue;
      if (event.type === "StateFailed") record.failedState = event.state.name;
      if (event.type === "StateEntered" && sizeOf(event.state.input) > MAX_PAYLOAD_BYTES) {
        this.dataLimitExceeded(record, event.state.name, "input");
      } else if (event.type === "StateExited" && sizeOf(event.state.output) > MAX_PAYLOAD_BYTES) {
        this.dataLimitExceeded(record, event.state.name, "output");
      }
    }
  }

  /**
   * States.DataLimitExceeded: the execution fails at once, whatever Retry or Catch the state has
   * (as on AWS, States.ALL does not match it). Returns the error to throw from a Task.
   */
  private dataLimitExceeded(
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
      this.executions.finish(record, "FAILED", { error: "States.DataLimitExceeded", cause });
    }
    record.abort?.();
    return Object.assign(new Error(cause), {
      name: "States.DataLimitExceeded",
      isRetryable: false,
      isCatchable: false,
    });
  }

  private taskOverrides(m: MachineRecord, record: ExecutionRecord) {
    const registered = this.opts.handlersOf(m.name) ?? {};
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
        if (sizeOf(input) > MAX_PAYLOAD_BYTES) throw this.dataLimitExceeded(record, stateName, "input");
        record.history.taskScheduled(stateName, input);
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
          throw this.dataLimitExceeded(record, stateName, "output");
        return JSON.parse(result);
      };
    }
    return overrides as NonNullable<NonNullable<RunOptions["overrides"]>["taskResourceLocalHandlers"]>;
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
