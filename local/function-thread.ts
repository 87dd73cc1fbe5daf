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
import { asBuffer, exact, startThread, type Thread } from "./threads.js";

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

export async function startFunctionThread(opts: {
  /** the gateway's endpoint (what the thread's clients are configured with) and its serve() */
  gateway: { endpoint: string; serve(req: RawRequest): Promise<RawResponse> };
  logFormat: "json" | "human";
  /** the thread's SDK calls over HTTP to the gateway's endpoint, not by message */
  sockets?: boolean;
}): Promise<FunctionThread> {
  const thread = await startThread("functions", "./function-thread-worker.ts", {
    endpoint: opts.gateway.endpoint,
    logFormat: opts.logFormat,
    sockets: Boolean(opts.sockets),
  });
  thread.rpc.handle("aws", async (req: RawRequest) => {
    const res = await opts.gateway.serve({ ...req, body: asBuffer(req.body) });
    return { ...res, body: exact(res.body) };
  });
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
    stop: () => thread.stop(),
  };
}
