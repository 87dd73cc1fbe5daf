// The functions' thread (function-thread.ts): the same handlers the stack deploys, each invocation
// as its function's identity, their SDK calls handed to the main thread's IAM gateway.
import "./polyfills.js";
import { parentPort } from "node:worker_threads";
import type { Context } from "aws-lambda";
import { apiApp } from "../lib/api/http.js";
import { useRequestHandler } from "../lib/aws/clients.js";
import { runAs } from "../lib/aws/identity.js";
import { setLogFormat } from "../lib/log.js";
import { FUNCTION_HANDLERS } from "./function-handlers.js";
import type { HttpMessage, Invocation, ThreadSetup } from "./function-thread.js";
import { identityOf } from "./iam/identities.js";
import { inProcessHandler } from "./in-process.js";
import { callRaw, rpcOver } from "./threads.js";

if (!parentPort) throw new Error("function-thread-worker.ts runs in a worker thread");
const rpc = rpcOver(parentPort);
// Told once the runtime has made its emulators, tables and queues (function-thread.ts): the
// environment the functions read their configuration from, as the main thread's is then (no module
// here read it at import: lib/config.ts reads on every call, and the SDK's clients are made at
// their first call), and where their calls go.
rpc.handle("configure", (setup: ThreadSetup) => {
  for (const k of Object.keys(process.env)) if (!(k in setup.env)) delete process.env[k];
  Object.assign(process.env, setup.env);
  setLogFormat(setup.logFormat);
  // The SDK's calls: to the main thread's gateway by message (with `sockets`, over HTTP to it).
  if (!setup.sockets)
    useRequestHandler(
      inProcessHandler({
        endpoint: setup.endpoint,
        serve: callRaw(rpc, "aws"),
      }),
    );
});

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
