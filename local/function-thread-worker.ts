// The functions' thread (function-thread.ts): the same handlers the stack deploys, each invocation
// as its function's identity, their SDK calls handed to the main thread's IAM gateway.
import "./polyfills.js";
import { parentPort, workerData } from "node:worker_threads";
import type { Context } from "aws-lambda";
import { apiApp } from "../lib/api/http.js";
import { useRequestHandler } from "../lib/aws/clients.js";
import { runAs } from "../lib/aws/identity.js";
import { setLogFormat } from "../lib/log.js";
import { FUNCTION_HANDLERS } from "./function-handlers.js";
import type { HttpMessage, Invocation } from "./function-thread.js";
import type { RawRequest, RawResponse } from "./iam/gateway.js";
import { identityOf } from "./iam/identities.js";
import { inProcessHandler } from "./in-process.js";
import { asBuffer, exact, rpcOver } from "./threads.js";

if (!parentPort) throw new Error("function-thread-worker.ts runs in a worker thread");
const rpc = rpcOver(parentPort);
const { endpoint, logFormat, sockets } = workerData as {
  endpoint: string;
  logFormat: "json" | "human";
  sockets: boolean;
};
setLogFormat(logFormat);

// The SDK's calls: to the main thread's gateway by message (with `sockets`, over HTTP to it).
if (!sockets)
  useRequestHandler(
    inProcessHandler({
      endpoint,
      serve: async (request: RawRequest) => {
        const res = await rpc.call<RawResponse>("aws", { ...request, body: exact(request.body) });
        return { ...res, body: asBuffer(res.body) };
      },
    }),
  );

rpc.handle("invoke", (msg: Invocation) => {
  const context = {
    ...msg.context,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, msg.deadline - Date.now()),
  } as unknown as Context;
  return runAs(identityOf(msg.fn), async () => FUNCTION_HANDLERS[msg.fn](msg.event, context));
});

const app = apiApp();
rpc.handle("http", async (msg: HttpMessage): Promise<HttpMessage> => {
  const request = new Request(msg.url!, {
    method: msg.method!,
    headers: msg.headers,
    ...(msg.body ? { body: msg.body } : {}),
  });
  const res = await runAs(identityOf("api"), async () => app.fetch(request, {}));
  return { status: res.status, headers: [...res.headers.entries()], body: await res.arrayBuffer() };
});

await rpc.call("ready", {});
