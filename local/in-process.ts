// The local runtime's transport: an SDK request handler that hands each signed request to the IAM
// gateway's serve() in this process, and the emulators' request listeners called without a socket
// (light-my-request builds the request and response objects a node listener expects). Every call
// is still serialized and signed by the real SDK client, held to IAM by the gateway, and answered
// by the emulator; only the sockets and HTTP parsing on both hops are gone (2-3 ms of CPU a call).

import type { IncomingHttpHeaders, RequestListener } from "node:http";
import { Readable } from "node:stream";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { HttpRequest, HttpResponse } from "@smithy/types";
import { inject } from "light-my-request";
import type { SdkRequestHandler } from "../lib/aws/clients.js";
import type { Gateway, RawRequest, RawResponse, Upstream } from "./iam/gateway.js";

/**
 * A node request listener (an emulator's HTTP server) as the gateway's upstream, and its close:
 * from then on a call is refused, as a closed socket would refuse it, and close waits for the calls
 * in flight. Without it a call still on its way when a runtime stops reaches dynalite after its
 * store closed, and dynalite throws "Database is closed" from its request handler, uncaught.
 */
export function listenerUpstream(listener: RequestListener): { call: Upstream; close(): Promise<void> } {
  let open = true;
  const inFlight = new Set<Promise<unknown>>();
  // not aborted: a listener answers soon, a long poll within its wait (the caller stops waiting)
  const call: Upstream = async (req) => {
    if (!open)
      throw Object.assign(new Error("connect ECONNREFUSED: the emulator has stopped"), {
        code: "ECONNREFUSED",
      });
    const injected = inject(listener, {
      method: req.method as "POST",
      url: req.path,
      headers: req.headers as Record<string, string>,
      payload: req.body,
    });
    inFlight.add(injected);
    try {
      const res = await injected;
      return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
    } finally {
      inFlight.delete(injected);
    }
  };
  return {
    call,
    close: async () => {
      open = false;
      await Promise.allSettled([...inFlight]);
    },
  };
}

function stringHeaders(h: RawResponse["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : String(v);
  return out;
}

function bodyOf(body: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (typeof body === "string") return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new Error("the in-process transport takes string or byte bodies (the AWS JSON protocols)");
}

function pathOf(r: HttpRequest): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(r.query ?? {}))
    for (const one of Array.isArray(v) ? v : [v]) if (one !== null && one !== undefined) query.append(k, one);
  const q = query.toString();
  return q ? `${r.path}?${q}` : r.path;
}

/**
 * Requests for the gateway's endpoint go to its serve() (or, from the functions' thread, to a
 * serve() that posts them to the main thread's gateway); any other endpoint (a test's own client
 * of an emulator, say) through the SDK's HTTP handler as usual.
 */
export function inProcessHandler(gateway: Pick<Gateway, "endpoint" | "serve">): SdkRequestHandler {
  const { hostname, port } = new URL(gateway.endpoint);
  let http: NodeHttpHandler | undefined;
  return {
    metadata: { handlerProtocol: "http/1.1" },
    async handle(request, options) {
      if (request.hostname !== hostname || String(request.port ?? "") !== port) {
        http ??= new NodeHttpHandler();
        return http.handle(request as Parameters<NodeHttpHandler["handle"]>[0], options);
      }
      const signal = options?.abortSignal as AbortSignal | undefined;
      if (signal?.aborted) throw abortError();
      const headers: IncomingHttpHeaders = {};
      for (const [k, v] of Object.entries(request.headers)) headers[k.toLowerCase()] = v;
      headers.host ??= `${hostname}:${port}`;
      const raw: RawRequest = {
        method: request.method,
        path: pathOf(request),
        headers,
        body: bodyOf(request.body),
      };
      const res = signal ? await abortable(gateway.serve(raw, signal), signal) : await gateway.serve(raw);
      const response: HttpResponse = {
        statusCode: res.status,
        headers: stringHeaders(res.headers),
        // S3's object bodies are streams to the SDK (GetObject's Body); the JSON protocols' bytes
        body: /\/s3\/aws4_request/.test(String(headers.authorization ?? ""))
          ? Readable.from(res.body)
          : res.body,
      };
      return { response };
    },
    // the SDK asks a handler for these when a client is configured; nothing here to configure
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {
      http?.destroy();
      http = undefined;
    },
  } as SdkRequestHandler;
}

/** `work`, or AbortError once `signal` aborts; the listener goes with the call (signals are shared). */
async function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError());
  });
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

function abortError(): Error {
  const e = new Error("Request aborted");
  e.name = "AbortError";
  return e;
}
