// The local HTTP front: what API Gateway does in AWS, on 127.0.0.1, serving the same Hono app with
// @hono/node-server.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { authenticate } from "../lib/api/auth.js";
import { apiApp } from "../lib/api/http.js";
import type { HttpMessage } from "./function-thread.js";
import { edgeUpload, isEdgeUpload } from "./image-edge.js";
import { exact } from "./threads.js";

export interface HttpFront {
  url: string;
  stop(): Promise<void>;
}

/**
 * The local runtime's own routes, beside the API (the deployed API has none of them), for an
 * admin to try faults by hand: a simulated host stops (no more heartbeats nor queue reads; its
 * guests stay as they were), starts again, or restarts (its agent's memory lost, what it keeps on
 * disk kept); compute-events' function URL refuses every report for a while (an outage of the
 * report path, heartbeats included).
 */
export interface LocalHostControl {
  stop(host: string): Promise<void>;
  start(host: string): Promise<void>;
  restart(host: string): Promise<void>;
  has(host: string): boolean;
  /** compute-events' URL answers 503 for this many seconds (0: no more) */
  refuseComputeEvents(seconds: number): void;
}

const LOCAL_HOST_ROUTE = /^\/local\/hosts\/([^/?]+)\/(stop|start|restart)(?:\?.*)?$/;
const LOCAL_FAULT_ROUTE = /^\/local\/faults\/compute-events(?:\?.*)?$/;
/** The longest outage the switch takes: a day (a longer one is a typo). */
const MAX_REFUSE_SECONDS = 86_400;

type Reply = { status: number; body: unknown };

const badRequest = (message: string): Reply => ({
  status: 400,
  body: { badRequest: { code: 400, message } },
});

/** The API's own answers to a caller without a token (401) or without the admin role (403). */
async function adminOnly(
  req: IncomingMessage,
  around: <T>(fn: () => T) => T,
  what: string,
): Promise<Reply | undefined> {
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
    return { status: 403, body: { forbidden: { code: 403, message: `Only an admin may ${what}.` } } };
  return undefined;
}

async function localHostRoute(
  req: IncomingMessage,
  control: LocalHostControl,
  around: <T>(fn: () => T) => T,
): Promise<Reply> {
  req.resume();
  const m = LOCAL_HOST_ROUTE.exec(req.url ?? "")!;
  const host = decodeURIComponent(m[1]!);
  const action = m[2] as "stop" | "start" | "restart";
  const refused = await adminOnly(req, around, `${action} a local host`);
  if (refused) return refused;
  if (!control.has(host))
    return {
      status: 404,
      body: { itemNotFound: { code: 404, message: `Compute host ${host} could not be found.` } },
    };
  await control[action](host);
  return { status: 202, body: { host, action } };
}

/** `{"refuse_seconds": N}`: N whole seconds, 0 to end an outage early. */
async function localFaultRoute(
  req: IncomingMessage,
  control: LocalHostControl,
  around: <T>(fn: () => T) => T,
): Promise<Reply> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const refused = await adminOnly(req, around, "inject a local fault");
  if (refused) return refused;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return badRequest("The request body is not valid JSON.");
  }
  const n = (body as { refuse_seconds?: unknown } | null)?.refuse_seconds;
  const keys = body && typeof body === "object" && !Array.isArray(body) ? Object.keys(body) : [];
  if (keys.length !== 1 || keys[0] !== "refuse_seconds")
    return badRequest('The body must be {"refuse_seconds": N}, and nothing else.');
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > MAX_REFUSE_SECONDS)
    return badRequest(`refuse_seconds must be a whole number of seconds from 0 to ${MAX_REFUSE_SECONDS}.`);
  control.refuseComputeEvents(n);
  return { status: 202, body: { fault: "compute-events", refuse_seconds: n } };
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
    const local =
      hosts && req.method === "POST"
        ? LOCAL_HOST_ROUTE.test(req.url ?? "")
          ? localHostRoute
          : LOCAL_FAULT_ROUTE.test(req.url ?? "")
            ? localFaultRoute
            : undefined
        : undefined;
    if (hosts && local) {
      void local(req, hosts, around)
        .catch((e: unknown) => ({ status: 500, body: { computeFault: { code: 500, message: String(e) } } }))
        .then((r) => {
          res.writeHead(r.status, { "content-type": "application/json" });
          res.end(JSON.stringify(r.body));
        });
      return;
    }
    // the distribution's upload behaviour (what CloudFront does on AWS, before API Gateway)
    if (isEdgeUpload(req)) {
      void edgeUpload(req, res, new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)).catch(
        (e: unknown) => {
          if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
          res.end(`502 Bad Gateway\n\n${String(e)}`);
        },
      );
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
