// The upload behaviour of the stack's CloudFront distribution (Lambda@Edge, functions/image-edge),
// for PUT /image/v2/images/{id}/file. API Gateway takes at most 10 MB and an image is larger, so
// the body goes to S3 instead, and the API does the rest (./upload.ts):
// - origin-request: ask the API to begin the upload, with the caller's token. The API checks
//   everything Glance checks (token, policy, owner, status, formats), moves the image to saving
//   and answers a presigned PutObject URL. The request is sent there (S3 as its origin), its body
//   streamed by CloudFront; the API's refusal is answered as it is.
// - origin-response: S3 stored it: ask the API to complete the upload (checksums, format,
//   active), and answer what it answers (Glance's 204). S3 refused it: ask the API to abort
//   (back to queued) and answer in Glance's shape.
// The function holds no credentials and reads no table: the presigned URL carries the API's
// authority, and the API's own domain comes from the distribution's origin. Locally the front does
// what CloudFront does (local/image-edge.ts) with these same two functions. This module imports
// nothing: it is the whole of the edge's bundle.

/** The header the edge sets on its calls to the API: which step of an upload it asks for. */
export const UPLOAD_STEP_HEADER = "x-novaless-upload";
export type UploadStep = "begin" | "complete" | "abort";

/** The CloudFront event shapes this function reads and answers (Lambda@Edge's event structure). */
export type CfHeaders = Record<string, { key?: string; value: string }[]>;
export interface CfCustomOrigin {
  domainName: string;
  port: number;
  protocol: "http" | "https";
  path: string;
  sslProtocols: string[];
  readTimeout: number;
  keepaliveTimeout: number;
  customHeaders: CfHeaders;
}
export interface CfRequest {
  method: string;
  uri: string;
  querystring: string;
  headers: CfHeaders;
  clientIp?: string;
  origin?: { custom?: CfCustomOrigin };
}
export interface CfResponse {
  status: string;
  statusDescription?: string;
  headers: CfHeaders;
  body?: string;
}
export interface CfEvent {
  Records: {
    cf: {
      config: { eventType: "origin-request" | "origin-response" | string };
      request: CfRequest;
      response?: CfResponse;
    };
  }[];
}

/** An HTTP call to the API (fetch on Lambda@Edge). */
export type ApiCall = (
  url: string,
  init: { method: string; headers: Record<string, string> },
) => Promise<{ status: number; headers: Record<string, string>; body: string }>;

const UPLOAD_PATH = /^\/image\/v2\/images\/[0-9a-fA-F-]{36}\/file$/;
/** Where the origin-response finds the API's URL of this upload (set by origin-request). */
const API_URL_HEADER = "x-novaless-upload-api";

/** S3's limit on one PutObject (Amazon S3 user guide, "Uploading objects"). */
export const MAX_PUT_BYTES = 5 * 1024 ** 3;

const one = (h: CfHeaders, name: string) => h[name]?.[0]?.value;

/** The caller's headers the API needs for a step: its token, and the host it called. */
function stepHeaders(req: CfRequest, step: UploadStep): Record<string, string> {
  const headers: Record<string, string> = { [UPLOAD_STEP_HEADER]: step };
  for (const name of ["x-auth-token", "content-type", "x-forwarded-host", "x-forwarded-proto"]) {
    const v = one(req.headers, name);
    if (v !== undefined) headers[name] = v;
  }
  return headers;
}

/** The API's answer as CloudFront's generated response. */
function answered(r: { status: number; headers: Record<string, string>; body: string }): CfResponse {
  const type = r.headers["content-type"];
  return {
    status: String(r.status),
    headers: type ? { "content-type": [{ key: "Content-Type", value: type }] } : {},
    ...(r.body ? { body: r.body } : {}),
  };
}

/** Glance's plain-text error, for what S3 answered. */
function glanceError(status: number, title: string, message: string): CfResponse {
  return {
    status: String(status),
    headers: { "content-type": [{ key: "Content-Type", value: "text/plain; charset=UTF-8" }] },
    body: `${status} ${title}\n\n${message}\n\n   `,
  };
}

/**
 * origin-request: a PUT of an image's data goes to S3 once the API has begun the upload; anything
 * else on the behaviour goes to the API unchanged.
 */
export async function originRequest(event: CfEvent, call: ApiCall): Promise<CfRequest | CfResponse> {
  const req = event.Records[0]!.cf.request;
  const api = req.origin?.custom;
  if (req.method !== "PUT" || !UPLOAD_PATH.test(req.uri) || !api) return req;
  // one PutObject takes at most 5 GB: refused before the image moves to saving
  if (Number(one(req.headers, "content-length") ?? 0) > MAX_PUT_BYTES)
    return glanceError(413, "Request Entity Too Large", "Image data is larger than one upload takes: 5 GB.");
  const apiUrl = `${api.protocol}://${api.domainName}${api.port && api.port !== 443 && api.port !== 80 ? `:${api.port}` : ""}${api.path}${req.uri}`;
  const begun = await call(apiUrl, { method: "PUT", headers: stepHeaders(req, "begin") });
  const location = begun.headers.location;
  if (begun.status !== 307 || !location) return answered(begun);
  const to = new URL(location);
  const headers: CfHeaders = {};
  // what the caller sent, less its own AWS headers (the URL's signature is the only authority)
  for (const [name, v] of Object.entries(req.headers)) if (!name.startsWith("x-amz-")) headers[name] = v;
  headers.host = [{ key: "Host", value: to.host }];
  headers[API_URL_HEADER] = [{ key: "X-Novaless-Upload-Api", value: apiUrl }];
  return {
    ...req,
    uri: decodeURIComponent(to.pathname),
    querystring: to.search.replace(/^\?/, ""),
    headers,
    origin: {
      custom: {
        domainName: to.hostname,
        port: Number(to.port || (to.protocol === "https:" ? 443 : 80)),
        protocol: to.protocol === "https:" ? "https" : "http",
        path: "",
        sslProtocols: ["TLSv1.2"],
        readTimeout: 60,
        keepaliveTimeout: 5,
        customHeaders: {},
      },
    },
  };
}

/** origin-response: S3's answer to the data's PUT becomes the API's completion (or its abort). */
export async function originResponse(event: CfEvent, call: ApiCall): Promise<CfResponse> {
  const { request: req, response } = event.Records[0]!.cf;
  const res = response!;
  const apiUrl = one(req.headers, API_URL_HEADER);
  if (!apiUrl) return res;
  const status = Number(res.status);
  if (status >= 200 && status < 300)
    return answered(await call(apiUrl, { method: "PUT", headers: stepHeaders(req, "complete") }));
  await call(apiUrl, { method: "PUT", headers: stepHeaders(req, "abort") });
  return glanceError(
    502,
    "Bad Gateway",
    `The image store refused the upload (${status} ${res.statusDescription ?? ""}); the image is queued again.`,
  );
}

/** Lambda@Edge's entry: one function for both events of the upload behaviour. */
export function edgeHandler(call: ApiCall) {
  return (event: CfEvent): Promise<CfRequest | CfResponse> =>
    event.Records[0]!.cf.config.eventType === "origin-response"
      ? originResponse(event, call)
      : originRequest(event, call);
}

/** fetch as the API call (Lambda@Edge's Node.js runtime, and the local front). */
export const fetchCall: ApiCall = async (url, init) => {
  const r = await fetch(url, { method: init.method, headers: init.headers, redirect: "manual" });
  return {
    status: r.status,
    headers: Object.fromEntries(r.headers.entries()),
    body: await r.text(),
  };
};
