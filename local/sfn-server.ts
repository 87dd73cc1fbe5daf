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
//
// sfn/: machines.ts (the state machines), executions.ts (the executions kept, STANDARD's and
// EXPRESS's names), runner.ts (an execution's run and its limits), actions.ts (the API's
// execution actions), protocol.ts (errors, checks, bodies).
import "./polyfills.js";
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { log } from "../lib/log.js";
import { Actions } from "./sfn/actions.js";
import { Executions } from "./sfn/executions.js";
import { Machines } from "./sfn/machines.js";
import { readBody, reply, SfnError } from "./sfn/protocol.js";
import { Runner } from "./sfn/runner.js";
import type { ExecutionInfo, TaskHandlers } from "./sfn/types.js";

export { observeExecutions } from "./sfn/executions.js";
export type {
  ExecutionInfo,
  ExecutionRecordSummary,
  ExecutionStatus,
  StateMachineType,
  TaskHandler,
  TaskHandlers,
} from "./sfn/types.js";

const HOST = "127.0.0.1";
/** An EXPRESS execution's maximum duration. */
const EXPRESS_MAX_DURATION_MS = 5 * 60_000;

export interface SfnServerOptions {
  /** 0 (the default) lets the OS pick a free port */
  port?: number;
  /** state machine name → its Task handlers */
  taskHandlers?: Record<string, TaskHandlers>;
  /** called once per execution, when it leaves RUNNING */
  onExecutionEnd?: (info: ExecutionInfo) => void;
  /** each line an execution's logging configuration sends to CloudWatch Logs, with its log group */
  onLog?: (logGroupArn: string, line: string) => void;
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

export async function startSfnServer(opts: SfnServerOptions = {}): Promise<SfnServer> {
  const handlers = new Map(Object.entries(opts.taskHandlers ?? {}));
  const executions = new Executions(opts.maxFinishedExecutions ?? 10_000, opts.onExecutionEnd, opts.onLog);
  const runner = new Runner(executions, {
    ...(opts.retryIntervalMs !== undefined ? { retryIntervalMs: opts.retryIntervalMs } : {}),
    expressMaxDurationMs: opts.expressMaxDurationMs ?? EXPRESS_MAX_DURATION_MS,
    handlersOf: (name) => handlers.get(name),
  });
  const actions = new Actions(new Machines(), executions, runner);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const target = String(req.headers["x-amz-target"] ?? "");
      const op = actions.operations[target.replace(/^AWSStepFunctions\./, "")];
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
    waitForIdle: () => executions.waitForIdle(),
    stop() {
      stopped ??= (async () => {
        actions.stopping = true;
        for (const record of executions.active) actions.stop({ executionArn: record.info.executionArn });
        await Promise.all([...executions.active].map((r) => r.settled));
        await new Promise<void>((resolve, reject) => {
          server.close((err) => (err ? reject(err) : resolve()));
          server.closeAllConnections();
        });
      })();
      return stopped;
    },
  };
}
