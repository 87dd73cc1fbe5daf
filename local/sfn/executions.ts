// The executions the endpoint knows: the running ones, and the last finished ones for
// Describe/ListExecutions (oldest forgotten first). STANDARD and EXPRESS differ here as on AWS:
// a STANDARD execution's name is its ARN and unique per state machine while it is remembered
// (StartExecution idempotent for the same input while it runs); an EXPRESS one's ARN is new each time.
import { randomUUID } from "node:crypto";
import { log } from "../../lib/log.js";
import { HistoryLog } from "./history-log.js";
import { ACCOUNT, REGION, requestIdOf, requireString, SfnError } from "./protocol.js";
import type {
  ExecutionInfo,
  ExecutionRecord,
  ExecutionRecordSummary,
  ExecutionStatus,
  MachineRecord,
} from "./types.js";

const executionObservers = new Set<(e: ExecutionRecordSummary) => void>();

/** Calls `observer` once per execution, when it has settled; returns the function that stops it. */
export function observeExecutions(observer: (e: ExecutionRecordSummary) => void): () => void {
  executionObservers.add(observer);
  return () => executionObservers.delete(observer);
}

export class Executions {
  private readonly records = new Map<string, ExecutionRecord>();
  /** STANDARD executions by `${stateMachineArn}\n${name}`: names are unique per state machine */
  private readonly standardByName = new Map<string, string>();
  private readonly finished: string[] = [];
  /** the executions not yet settled */
  readonly active = new Set<ExecutionRecord>();
  private idleWaiters: (() => void)[] = [];

  constructor(
    /** finished executions kept */
    private readonly maxFinished: number,
    private readonly onExecutionEnd?: (info: ExecutionInfo) => void,
    private readonly onLog?: (logGroupArn: string, line: string) => void,
  ) {}

  get(executionArn: string): ExecutionRecord | undefined {
    return this.records.get(executionArn);
  }

  require(arn: unknown): ExecutionRecord {
    const e = this.records.get(requireString(arn, "executionArn"));
    if (!e) throw new SfnError("ExecutionDoesNotExist", `Execution Does Not Exist: '${String(arn)}'`);
    return e;
  }

  /**
   * A new RUNNING execution of `m` (`started`), or, for STANDARD, the one still running with the
   * same name and input.
   */
  open(m: MachineRecord, name: string, input: string): { record: ExecutionRecord; started: boolean } {
    let executionArn: string;
    if (m.type === "STANDARD") {
      // StartExecution is idempotent for STANDARD: the same name and input while the first is
      // still running answers with that execution; once it has finished, or with another input,
      // the name is taken.
      const key = `${m.arn}\n${name}`;
      const previous = this.standardByName.get(key);
      const prev = previous === undefined ? undefined : this.records.get(previous);
      if (prev) {
        if (prev.info.status === "RUNNING" && prev.info.input === input)
          return { record: prev, started: false };
        throw new SfnError("ExecutionAlreadyExists", `Execution Already Exists: '${prev.info.executionArn}'`);
      }
      executionArn = `arn:aws:states:${REGION}:${ACCOUNT}:execution:${m.name}:${name}`;
      this.standardByName.set(key, executionArn);
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
      history: new HistoryLog(m.logging, executionArn, m.roleArn, m.tasks, REGION, this.onLog),
      traced: m.tracing,
    };
    this.records.set(executionArn, record);
    this.active.add(record);
    return { record, started: true };
  }

  /** The execution leaves RUNNING: its outcome recorded, logged when it failed, the oldest finished forgotten. */
  finish(
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
    this.finished.push(info.executionArn);
    while (this.finished.length > this.maxFinished) {
      const old = this.finished.shift()!;
      const gone = this.records.get(old);
      this.records.delete(old);
      if (gone?.info.type === "STANDARD")
        this.standardByName.delete(`${gone.info.stateMachineArn}\n${gone.info.name}`);
    }
    try {
      this.onExecutionEnd?.({ ...info });
    } catch (e) {
      log.warn("sfn.on_execution_end_failed", { execution_arn: info.executionArn, error: e });
    }
  }

  /** The execution has finished and its handlers have returned: observers and idle waiters hear of it. */
  settle(record: ExecutionRecord): void {
    const { info } = record;
    this.active.delete(record);
    for (const o of executionObservers) {
      o({
        stateMachineName: info.stateMachineName,
        type: info.type,
        status: info.status,
        durationMs: (info.stopDate ?? new Date()).getTime() - info.startDate.getTime(),
        transitions: record.transitions,
        logBytes: record.history.bytes,
        traced: record.traced,
      });
    }
    if (this.active.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** resolves when no execution is running and no Task handler is still in flight */
  waitForIdle(): Promise<void> {
    if (this.active.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** The executions of a state machine, newest first (as AWS lists them). */
  list(stateMachineArn: string, status: unknown): ExecutionInfo[] {
    return [...this.records.values()]
      .map((e) => e.info)
      .filter((i) => i.stateMachineArn === stateMachineArn && (status === undefined || i.status === status))
      .reverse();
  }
}
