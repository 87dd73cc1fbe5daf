// The local HTTP front: what API Gateway does in AWS, on 127.0.0.1, serving the same Hono app with
// @hono/node-server.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { apiApp } from "../lib/api/http.js";

export interface HttpFront {
  url: string;
  stop(): Promise<void>;
}

/**
 * `around` runs each request's handling, e.g. as the API function's identity (what API Gateway
 * invokes on AWS).
 */
export async function startHttpFront(
  port: number,
  around: <T>(fn: () => T) => T = (fn) => fn(),
): Promise<HttpFront> {
  const app = apiApp();
  const listener = getRequestListener((request) => around(() => app.fetch(request, {})));
  const server: Server = createServer((req, res) => {
    // "//v2.1//servers/" routes as "/v2.1/servers", as API Gateway does
    if (req.url?.includes("//")) req.url = req.url.replace(/^([^?]*)/, (p) => p.replace(/\/{2,}/g, "/"));
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
