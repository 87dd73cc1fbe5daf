// The local HTTP front: what API Gateway does in AWS, on 127.0.0.1, calling the same API code.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { handleHttp } from "../../lib/api/http.js";
import { MAX_REQUEST_BODY_BYTES } from "../../lib/config.js";
import { log } from "../../lib/log.js";

export interface HttpFront {
  url: string;
  stop(): Promise<void>;
}

/**
 * Keeps at most one byte past the limit (the API answers 413 for that) but reads the rest:
 * leaving the loop early would destroy the socket under a keep-alive client's next request.
 */
async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    const room = MAX_REQUEST_BODY_BYTES + 1 - kept;
    if (room <= 0) continue;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    chunks.push(part);
    kept += part.length;
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * `around` runs each request's handling, e.g. as the API function's identity (what API Gateway
 * invokes on AWS).
 */
export async function startHttpFront(
  port: number,
  around: <T>(fn: () => T) => T = (fn) => fn(),
): Promise<HttpFront> {
  const server: Server = createServer(async (req, res) => {
    try {
      const body = await readBody(req);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (v !== undefined) headers[k.toLowerCase()] = String(v);
      const out = await around(() =>
        handleHttp({
          method: req.method ?? "GET",
          path: req.url ?? "/",
          headers,
          body: body.length ? body : undefined,
          requestId: `req-${randomUUID()}`,
        }),
      );
      res.writeHead(out.status, out.headers);
      res.end(out.body);
    } catch (e) {
      log.error("http.unhandled", { error: e });
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ computeFault: { code: 500, message: "Unexpected API Error." } }));
    }
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
