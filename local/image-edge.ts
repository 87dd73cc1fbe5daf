// The CloudFront distribution's upload behaviour, locally: a PUT of an image's data runs the same
// Lambda@Edge functions the stack deploys (lib/api/image/edge.ts), and this front does what
// CloudFront does between them: it sends the request where origin-request pointed it (the images
// bucket's presigned URL, the body streamed, never buffered here) and hands the origin's answer to
// origin-response. The edge's own calls to the API carry the upload header and go to the API.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import {
  type CfEvent,
  type CfHeaders,
  type CfRequest,
  type CfResponse,
  fetchCall,
  originRequest,
  originResponse,
} from "../lib/api/image/edge.js";
import { UPLOAD_STEP_HEADER } from "../lib/api/image/upload.js";

export const UPLOAD_PATH = /^\/image\/v2\/images\/[^/?]+\/file(?:\?.*)?$/;

/** A PUT of an image's data from a caller (the edge's own calls to the API are not). */
export const isEdgeUpload = (req: IncomingMessage): boolean =>
  req.method === "PUT" && UPLOAD_PATH.test(req.url ?? "") && req.headers[UPLOAD_STEP_HEADER] === undefined;

/** Headers CloudFront does not forward to an origin as they came (hop-by-hop). */
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "expect", "host"]);

function cfHeaders(req: IncomingMessage): CfHeaders {
  const h: CfHeaders = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const key = req.rawHeaders[i]!;
    const values = h[key.toLowerCase()] ?? [];
    values.push({ key, value: req.rawHeaders[i + 1]! });
    h[key.toLowerCase()] = values;
  }
  return h;
}

function send(res: ServerResponse, r: CfResponse): void {
  const headers: Record<string, string> = {};
  for (const [name, vs] of Object.entries(r.headers)) headers[name] = vs.map((v) => v.value).join(", ");
  res.writeHead(Number(r.status), headers);
  res.end(r.body !== undefined && r.status !== "204" ? r.body : undefined);
}

/** The behaviour for one request; `api` is the API origin's URL (this front). */
export async function edgeUpload(req: IncomingMessage, res: ServerResponse, api: URL): Promise<void> {
  const [path, query = ""] = (req.url ?? "/").split("?", 2) as [string, string?];
  const request: CfRequest = {
    method: req.method ?? "PUT",
    uri: path,
    querystring: query,
    headers: cfHeaders(req),
    origin: {
      custom: {
        domainName: api.hostname,
        port: Number(api.port),
        protocol: "http",
        path: "",
        sslProtocols: ["TLSv1.2"],
        readTimeout: 60,
        keepaliveTimeout: 5,
        customHeaders: {},
      },
    },
  };
  const event = (response?: CfResponse): CfEvent => ({
    Records: [
      {
        cf: {
          config: { eventType: response ? "origin-response" : "origin-request" },
          request: routed,
          ...(response ? { response } : {}),
        },
      },
    ],
  });
  let routed: CfRequest = request;
  const decided = await originRequest(event(), fetchCall);
  if ("status" in decided) {
    req.resume();
    send(res, decided);
    return;
  }
  routed = decided;
  const o = routed.origin!.custom!;
  const headers: [string, string][] = [];
  for (const [name, vs] of Object.entries(routed.headers))
    if (!HOP.has(name)) for (const v of vs) headers.push([name, v.value]);
  const url = `${o.protocol}://${o.domainName}:${o.port}${o.path}${routed.uri}${routed.querystring ? `?${routed.querystring}` : ""}`;
  let origin: CfResponse;
  try {
    const r = await fetch(url, {
      method: routed.method,
      headers,
      body: Readable.toWeb(req) as ReadableStream,
      duplex: "half",
    } as RequestInit);
    await r.arrayBuffer();
    origin = {
      status: String(r.status),
      statusDescription: r.statusText,
      headers: Object.fromEntries([...r.headers.entries()].map(([k, v]) => [k, [{ key: k, value: v }]])),
    };
  } catch (e) {
    // CloudFront's own answer when the origin cannot be reached, handed to origin-response alike
    origin = { status: "502", statusDescription: String(e), headers: {} };
  }
  send(res, await originResponse(event(origin), fetchCall));
}
