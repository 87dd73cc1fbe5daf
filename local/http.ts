// The local HTTP front: what API Gateway does in AWS, on 127.0.0.1, serving the same Hono app with
// @hono/node-server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { authenticate } from "../lib/api/auth.js";
import { apiApp } from "../lib/api/http.js";
import type { HttpMessage } from "./function-thread.js";
import { exact } from "./threads.js";

export interface HttpFront {
  url: string;
  stop(): Promise<void>;
}

/**
 * The local runtime's own routes, beside the API (the deployed API has none of them): an admin
 * stops a simulated host (no more heartbeats nor queue reads; its guests stay as they were) or
 * starts it again, to try evacuation.
 */
export interface LocalHostControl {
  stop(host: string): Promise<void>;
  start(host: string): Promise<void>;
  has(host: string): boolean;
}

const LOCAL_HOST_ROUTE = /^\/local\/hosts\/([^/?]+)\/(stop|start)(?:\?.*)?$/;

type Reply = { status: number; body: unknown };

async function localHostRoute(
  req: IncomingMessage,
  control: LocalHostControl,
  around: <T>(fn: () => T) => T,
): Promise<Reply> {
  const m = LOCAL_HOST_ROUTE.exec(req.url ?? "")!;
  const host = decodeURIComponent(m[1]!);
  const headers = Object.fromEntries(
    Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v[0] : v]),
  );
  const auth = await around(() => authenticate(headers, { now: () => new Date() }));
  if (!auth)
    return {
      status: 401,
      body: {
        error: {
          code: 401,
          message: "The request you have made requires authentication.",
          title: "Unauthorized",
        },
      },
    };
  if (!auth.isAdmin)
    return {
      status: 403,
      body: { forbidden: { code: 403, message: `Only an admin may ${m[2]} a local host.` } },
    };
  if (!control.has(host))
    return {
      status: 404,
      body: { itemNotFound: { code: 404, message: `Compute host ${host} could not be found.` } },
    };
  await (m[2] === "stop" ? control.stop(host) : control.start(host));
  return { status: 202, body: { host, action: m[2] } };
}

/**
 * The API in the functions' thread (function-thread.ts): a request's method, URL, headers and body
 * bytes in, the response's out, with no Request or Response made in this thread.
 */
export type ApiCall = (request: HttpMessage) => Promise<HttpMessage>;

/** A node request as it crosses to the functions' thread, its body whole. */
async function messageOf(req: IncomingMessage): Promise<HttpMessage> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = chunks.length ? exact(Buffer.concat(chunks)) : undefined;
  const headers: [string, string][] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2)
    headers.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
  return {
    method: req.method ?? "GET",
    url: `http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`,
    headers,
    ...(body?.byteLength ? { body: body.buffer as ArrayBuffer } : {}),
  };
}

/** The API's answer from the functions' thread, which runs it as the API function's identity. */
async function answer(res: ServerResponse, api: ApiCall, req: IncomingMessage) {
  let out: HttpMessage;
  try {
    out = await api(await messageOf(req));
  } catch (e) {
    // what API Gateway answers when its integration fails
    out = {
      status: 500,
      headers: [["content-type", "application/json"]],
      body: new TextEncoder().encode(JSON.stringify({ message: "Internal Server Error", error: String(e) }))
        .buffer as ArrayBuffer,
    };
  }
  res.writeHead(out.status ?? 500, out.headers.flat());
  // a HEAD, 204 or 304 carries no body
  res.end(
    out.body && req.method !== "HEAD" && out.status !== 204 && out.status !== 304
      ? Buffer.from(out.body)
      : undefined,
  );
}

/**
 * `around` runs each request's handling, e.g. as the API function's identity (what API Gateway
 * invokes on AWS); `api` answers them (the API's app in this thread unless given).
 */
export async function startHttpFront(
  port: number,
  around: <T>(fn: () => T) => T = (fn) => fn(),
  hosts?: LocalHostControl,
  api?: ApiCall,
): Promise<HttpFront> {
  const app = api ? undefined : apiApp();
  const listener = app ? getRequestListener((request) => around(() => app.fetch(request, {}))) : undefined;
  const server: Server = createServer((req, res) => {
    // "//v2.1//servers/" routes as "/v2.1/servers", as API Gateway does
    if (req.url?.includes("//")) req.url = req.url.replace(/^([^?]*)/, (p) => p.replace(/\/{2,}/g, "/"));
    if (hosts && req.method === "POST" && LOCAL_HOST_ROUTE.test(req.url ?? "")) {
      req.resume();
      void localHostRoute(req, hosts, around)
        .catch((e: unknown) => ({ status: 500, body: { computeFault: { code: 500, message: String(e) } } }))
        .then((r) => {
          res.writeHead(r.status, { "content-type": "application/json" });
          res.end(JSON.stringify(r.body));
        });
      return;
    }
    if (listener) void listener(req, res);
    else void answer(res, api!, req);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
