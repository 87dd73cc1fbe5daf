// The shapes the local Step Functions endpoint keeps: state machines, executions, their handlers.
import type { StateMachine } from "aws-local-stepfunctions";
import type { HistoryLog, LoggingConfiguration } from "./history-log.js";

/** Step Functions' limit on an execution's input and output, and every state's (256 KiB). */
export const MAX_PAYLOAD_BYTES = 262_144;

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

export interface MachineRecord {
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
  /** where and what its executions log (CreateStateMachine's loggingConfiguration) */
  logging: LoggingConfiguration;
  /** tracingConfiguration.enabled: X-Ray traces its executions (sampled by the account's rules) */
  tracing: boolean;
}

export interface ExecutionRecord {
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
  /** its log lines, at its state machine's level */
  history: HistoryLog;
  /** its state machine traces with X-Ray */
  traced: boolean;
}

/** One finished execution, for the cost benchmark. */
export interface ExecutionRecordSummary {
  stateMachineName: string;
  type: StateMachineType;
  status: ExecutionStatus;
  durationMs: number;
  /** states entered (Map iterations' included): what Step Functions counts as transitions */
  transitions: number;
  /** bytes of the log lines its state machine's logging configuration sent to CloudWatch Logs */
  logBytes: number;
  /** its state machine traces with X-Ray */
  traced: boolean;
}
