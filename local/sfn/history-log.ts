// The execution history events a state machine's LoggingConfiguration sends to CloudWatch Logs,
// made from the interpreter's events: AWS's event types for the state's type and resource, the
// level's filter, and the log line's shape (id, type, details, previous_event_id,
// event_timestamp, execution_arn, redrive_count). Express workflows keep no other history, and
// these lines are billed as vended logs: the cost bench counts their bytes. Which types each level
// keeps, and that includeExecutionData false drops input, inputDetails, output and outputDetails
// only, follow LocalStack's implementation (asl/eval/event/logging.py, event_manager.py), which is
// checked against AWS's.
import type { StateMachine } from "aws-local-stepfunctions";
import { SfnError } from "./protocol.js";

type EventLog = ReturnType<StateMachine["run"]>["eventLogs"] extends AsyncGenerator<infer E> ? E : never;

export type LogLevel = "ALL" | "ERROR" | "FATAL" | "OFF";

export interface LoggingConfiguration {
  level: LogLevel;
  includeExecutionData: boolean;
  /** the destination log group's ARN (ends with ":*"), absent at OFF */
  logGroupArn?: string;
}

const FATAL_TYPES = new Set(["ExecutionAborted", "ExecutionFailed", "ExecutionTimedOut"]);
const ERROR_TYPES = new Set([
  ...FATAL_TYPES,
  "FailStateEntered",
  "LambdaFunctionFailed",
  "LambdaFunctionScheduleFailed",
  "LambdaFunctionStartFailed",
  "LambdaFunctionTimedOut",
  "MapStateAborted",
  "MapStateFailed",
  "MapIterationAborted",
  "MapIterationFailed",
  "ParallelStateAborted",
  "ParallelStateFailed",
  "TaskFailed",
  "TaskStartFailed",
  "TaskStateAborted",
  "TaskSubmitFailed",
  "TaskTimedOut",
  "WaitStateAborted",
]);

/**
 * CreateStateMachine's loggingConfiguration, checked as AWS checks it: a level of ALL, ERROR,
 * FATAL or OFF (OFF when absent), and above OFF exactly one CloudWatch Logs destination.
 */
export function parseLoggingConfiguration(raw: unknown): LoggingConfiguration {
  if (raw === undefined || raw === null) return { level: "OFF", includeExecutionData: false };
  const c = raw as {
    level?: unknown;
    includeExecutionData?: unknown;
    destinations?: { cloudWatchLogsLogGroup?: { logGroupArn?: unknown } }[];
  };
  const level = (c.level ?? "OFF") as LogLevel;
  if (!["ALL", "ERROR", "FATAL", "OFF"].includes(level))
    throw new SfnError(
      "ValidationException",
      `1 validation error detected: Value '${String(level)}' at 'loggingConfiguration.level' failed to satisfy constraint: Member must satisfy enum value set: [ALL, ERROR, FATAL, OFF]`,
    );
  const destinations = c.destinations ?? [];
  if (destinations.length > 1)
    throw new SfnError(
      "InvalidLoggingConfiguration",
      "Invalid Logging Configuration: Must have exactly one destination.",
    );
  const arn = destinations[0]?.cloudWatchLogsLogGroup?.logGroupArn;
  if (level !== "OFF" && typeof arn !== "string")
    throw new SfnError(
      "InvalidLoggingConfiguration",
      "Invalid Logging Configuration: Must specify exactly one Log Destination.",
    );
  if (typeof arn === "string" && !/^arn:aws[\w-]*:logs:[^:]+:\d{12}:log-group:[^:]+:\*$/.test(arn))
    throw new SfnError(
      "InvalidLoggingConfiguration",
      `Invalid Logging Configuration: the log group ARN '${arn}' is not valid (a CloudWatch Logs log group's ARN, ending with :*).`,
    );
  return {
    level,
    includeExecutionData: c.includeExecutionData === true,
    ...(typeof arn === "string" ? { logGroupArn: arn } : {}),
  };
}

export function loggedAt(level: LogLevel, type: string): boolean {
  if (level === "ALL") return true;
  if (level === "ERROR") return ERROR_TYPES.has(type);
  if (level === "FATAL") return FATAL_TYPES.has(type);
  return false;
}

/**
 * A history event; its details made only for a line the level keeps (most events at ERROR are
 * numbered, never written: a state's input can be kilobytes).
 */
interface HistoryEvent {
  type: string;
  details?: () => Record<string, unknown>;
}

/** `arn:aws:states:::sqs:sendMessage` → sqs, sendMessage; a Lambda function's ARN → lambda. */
function resourceOf(resource: string | undefined): { lambda: boolean; type: string; name: string } {
  const m = /^arn:aws[\w-]*:states:::([^:]+):([^.:]+)/.exec(resource ?? "");
  if (m) return { lambda: false, type: m[1]!, name: m[2]! };
  return { lambda: true, type: "lambda", name: resource ?? "" };
}

/**
 * One execution's log session: numbers the history events as AWS does (each event's
 * previous_event_id the one before it), keeps those the level logs, and hands each line on.
 */
export class HistoryLog {
  private lastId = 0;
  /** bytes written, for the cost bench */
  bytes = 0;

  constructor(
    private readonly config: LoggingConfiguration,
    private readonly executionArn: string,
    private readonly roleArn: string,
    /** Task state name → Resource */
    private readonly tasks: Map<string, string>,
    private readonly region: string,
    private readonly sink?: (logGroupArn: string, line: string) => void,
  ) {}

  /** The history events of one interpreter event, logged at the configured level. */
  record(event: EventLog, end?: { status: string; error?: string; cause?: string }): void {
    if (this.config.level === "OFF") return;
    for (const h of this.historyOf(event, end)) this.write(h, event.timestamp);
  }

  private write(h: HistoryEvent, timestamp: number): void {
    const id = ++this.lastId;
    if (!loggedAt(this.config.level, h.type)) return;
    const line = JSON.stringify({
      id: String(id),
      type: h.type,
      ...(h.details ? { details: h.details() } : {}),
      previous_event_id: String(id - 1),
      event_timestamp: String(timestamp),
      execution_arn: this.executionArn,
      redrive_count: "0",
    });
    this.bytes += Buffer.byteLength(line);
    this.sink?.(this.config.logGroupArn!, line);
  }

  /**
   * A state's or the execution's input or output, as the line carries it: left out without
   * includeExecutionData (input, inputDetails, output and outputDetails; nothing else).
   */
  private dataOf(key: "input" | "output", value: unknown): Record<string, unknown> {
    if (!this.config.includeExecutionData) return {};
    return { [key]: JSON.stringify(value ?? null), [`${key}Details`]: { truncated: false } };
  }

  /** `end`: how the runner ended an execution the interpreter reports as terminated */
  private historyOf(e: EventLog, end?: { status: string; error?: string; cause?: string }): HistoryEvent[] {
    switch (e.type) {
      case "ExecutionStarted":
        return [
          {
            type: "ExecutionStarted",
            details: () => ({ ...this.dataOf("input", e.input), roleArn: this.roleArn }),
          },
        ];
      case "ExecutionSucceeded":
        return [{ type: "ExecutionSucceeded", details: () => this.dataOf("output", e.output) }];
      case "ExecutionFailed":
        return [
          { type: "ExecutionFailed", details: () => ({ error: e.Error, cause: String(e.Cause ?? "") }) },
        ];
      case "ExecutionAborted":
      case "ExecutionTimeout": {
        // the runner's own ends (its timeout, the payload limit) abort the interpreter
        const details = end?.error === undefined ? {} : { error: end.error, cause: end.cause ?? "" };
        if (end?.status === "TIMED_OUT" || e.type === "ExecutionTimeout")
          return [{ type: "ExecutionTimedOut", details: () => details }];
        if (end?.status === "FAILED") return [{ type: "ExecutionFailed", details: () => details }];
        return [{ type: "ExecutionAborted", details: () => details }];
      }
      case "MapIterationStarted":
      case "MapIterationSucceeded":
      case "MapIterationFailed":
        return [{ type: e.type, details: () => ({ name: e.parentState.name, index: e.index }) }];
      case "ParallelBranchStarted":
      case "ParallelBranchSucceeded":
      case "ParallelBranchFailed":
        return [];
      case "StateEntered": {
        const { name, type, input } = e.state;
        const entered: HistoryEvent = {
          type: `${type}StateEntered`,
          details: () => ({ name, ...this.dataOf("input", input) }),
        };
        // (AWS's MapStateStarted also says how many items: left out, ItemsPath is not resolved here)
        if (type === "Map") return [entered, { type: "MapStateStarted", details: () => ({}) }];
        return [entered];
      }
      case "StateRetried":
        // a Task's next attempt is scheduled by its handler's call (taskScheduled)
        return [];
      case "StateFailed": {
        const { name, type } = e.state;
        const error = { error: e.Error, cause: String(e.Cause ?? "") };
        if (type === "Map") return [{ type: "MapStateFailed", details: () => ({}) }];
        if (type === "Parallel") return [{ type: "ParallelStateFailed", details: () => ({}) }];
        if (type !== "Task") return [];
        const r = resourceOf(this.tasks.get(name));
        return r.lambda
          ? [{ type: "LambdaFunctionFailed", details: () => error }]
          : [{ type: "TaskFailed", details: () => ({ ...error, resource: r.name, resourceType: r.type }) }];
      }
      case "StateCaught":
        return [];
      case "StateExited": {
        const { name, type, output } = e.state;
        const exited: HistoryEvent = {
          type: `${type}StateExited`,
          details: () => ({ name, ...this.dataOf("output", output) }),
        };
        if (type === "Map") return [{ type: "MapStateSucceeded", details: () => ({}) }, exited];
        if (type !== "Task") return [exited];
        const r = resourceOf(this.tasks.get(name));
        const succeeded: HistoryEvent = r.lambda
          ? { type: "LambdaFunctionSucceeded", details: () => this.dataOf("output", output) }
          : {
              type: "TaskSucceeded",
              details: () => ({ resource: r.name, resourceType: r.type, ...this.dataOf("output", output) }),
            };
        return [succeeded, exited];
      }
      default:
        return [];
    }
  }

  /**
   * A Task's attempt, from its handler's call: the input after Parameters, as the Task sends it
   * (the interpreter's events carry the state's input before them).
   */
  taskScheduled(name: string, input: unknown): void {
    if (this.config.level === "OFF") return;
    for (const h of this.scheduled(name, input)) this.write(h, Date.now());
  }

  private scheduled(name: string, input: unknown): HistoryEvent[] {
    const resource = this.tasks.get(name);
    const r = resourceOf(resource);
    if (r.lambda)
      return [
        { type: "LambdaFunctionScheduled", details: () => ({ resource, ...this.dataOf("input", input) }) },
        { type: "LambdaFunctionStarted" },
      ];
    return [
      {
        type: "TaskScheduled",
        details: () => ({
          resource: r.name,
          resourceType: r.type,
          region: this.region,
          parameters: JSON.stringify(input ?? null),
        }),
      },
      { type: "TaskStarted", details: () => ({ resource: r.name, resourceType: r.type }) },
    ];
  }
}
