// The functions' own thread: the Lambda handlers (and the API that API Gateway invokes) run in a
// worker thread (threads.ts), apart from the emulators, the IAM gateway, the state machine's
// interpreter and the hosts, as Lambda runs each function apart from AWS's services.
//
// Nothing changes for a call: the thread's SDK clients still serialize and sign each request, and
// the request still reaches the gateway's serve() (IAM, then the emulator) in the main thread: the
// bytes cross by postMessage instead of a socket. An invocation crosses as Lambda's JSON would
// (localFunction's limits, timeout and concurrency stay in the main thread).

import type { HandlerFunction } from "./function-handlers.js";
import type { RawRequest, RawResponse } from "./iam/gateway.js";
import type { LambdaContext, LambdaHandler } from "./lambda.js";
import { serveRaw, startThread, type Thread } from "./threads.js";

export interface Invocation {
  fn: HandlerFunction;
  event: unknown;
  /** the context's plain fields */
  context: Record<string, string>;
  /** the invocation's deadline (epoch ms): getRemainingTimeInMillis counts to it */
  deadline: number;
}

/** An HTTP request or response as it crosses: the body's bytes whole. */
export interface HttpMessage {
  method?: string;
  url?: string;
  status?: number;
  headers: [string, string][];
  body?: ArrayBuffer;
}

export interface FunctionThread extends Pick<Thread, "name" | "utilization"> {
  /** the function's handler, run in the thread */
  handler(fn: HandlerFunction): LambdaHandler;
  /** the API's app, run in the thread as the API function's identity: a request in, its response out */
  http(request: HttpMessage): Promise<HttpMessage>;
  stop(): Promise<void>;
}

/** What the thread needs once the runtime has it: the gateway, the log format, the environment. */
export interface FunctionThreadConfig {
  /** the gateway's endpoint (what the thread's clients are configured with) and its serve() */
  gateway: { endpoint: string; serve(req: RawRequest): Promise<RawResponse> };
  logFormat: "json" | "human";
  /** the thread's SDK calls over HTTP to the gateway's endpoint, not by message */
  sockets?: boolean;
}

/** What the thread is told before its first invocation (function-thread-worker.ts). */
export interface ThreadSetup {
  endpoint: string;
  logFormat: "json" | "human";
  sockets: boolean;
  /** the main thread's environment as it is then (tables, queues, the conductor's ARN) */
  env: Record<string, string>;
}

/**
 * Starts the functions' thread now: its modules load (most of its start) while the runtime makes
 * its emulators, tables and queues. `configure` hands it what those gave, and resolves once the
 * thread can be invoked; `stop` ends it either way.
 */
export function spawnFunctionThread(): {
  configure(opts: FunctionThreadConfig): Promise<FunctionThread>;
  stop(): Promise<void>;
} {
  const starting = startThread("functions", "./function-thread-worker.ts", {});
  // a failed start is configure's to report; stop has nothing to end then
  starting.catch(() => {});
  const stop = async () => {
    const thread = await starting.catch(() => undefined);
    await thread?.stop();
  };
  return {
    stop,
    configure: async (opts) => {
      const thread = await starting;
      serveRaw(thread.rpc, "aws", (req) => opts.gateway.serve(req));
      const env = Object.fromEntries(
        Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
      );
      await thread.rpc.call("configure", {
        endpoint: opts.gateway.endpoint,
        logFormat: opts.logFormat,
        sockets: Boolean(opts.sockets),
        env,
      } satisfies ThreadSetup);
      return {
        handler: (fn) => (event: unknown, context: LambdaContext) =>
          thread.rpc.call("invoke", {
            fn,
            event,
            context: {
              functionName: context.functionName,
              functionVersion: context.functionVersion,
              invokedFunctionArn: context.invokedFunctionArn,
              memoryLimitInMB: context.memoryLimitInMB,
              awsRequestId: context.awsRequestId,
              logGroupName: context.logGroupName,
              logStreamName: context.logStreamName,
            },
            deadline: Date.now() + context.getRemainingTimeInMillis(),
          } satisfies Invocation),
        http: (request) => thread.rpc.call<HttpMessage>("http", request, request.body ? [request.body] : []),
        name: thread.name,
        utilization: thread.utilization,
        stop,
      };
    },
  };
}
