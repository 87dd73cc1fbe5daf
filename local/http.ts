// The local HTTP front: what API Gateway does in AWS, on 127.0.0.1, serving the same Hono app with
// @hono/node-server.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { authenticate } from "../lib/api/auth.js";
import { apiApp } from "../lib/api/http.js";

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

/** What answers the API's requests: its app here, or the functions' thread (function-thread.ts). */
export type ApiFetch = (request: Request) => Promise<Response> | Response;

/**
 * `around` runs each request's handling, e.g. as the API function's identity (what API Gateway
 * invokes on AWS); `api` answers them (the API's app in this thread unless given).
 */
export async function startHttpFront(
  port: number,
  around: <T>(fn: () => T) => T = (fn) => fn(),
  hosts?: LocalHostControl,
  api?: ApiFetch,
): Promise<HttpFront> {
  const app = api ? undefined : apiApp();
  const listener = getRequestListener((request) =>
    around(() => (app ? app.fetch(request, {}) : api!(request))),
  );
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
    void listener(req, res);
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
