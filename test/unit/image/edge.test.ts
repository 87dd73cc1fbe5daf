// The distribution's upload behaviour (lib/api/image/edge.ts) as CloudFront calls it, the API
// answered by a stub: which origin the PUT goes to, and what the caller is answered.
import { describe, expect, it } from "vitest";
import {
  type ApiCall,
  type CfEvent,
  type CfRequest,
  type CfResponse,
  edgeHandler,
  MAX_PUT_BYTES,
} from "../../../lib/api/image/edge.js";

const ID = "0f92c208-0639-4979-bf5f-189ab4e2b886";
const PRESIGNED = `https://bucket.s3.eu-west-1.amazonaws.com/images/${ID}?X-Amz-Signature=abc&X-Amz-Expires=3600`;

function request(over: Partial<CfRequest> = {}): CfRequest {
  return {
    method: "PUT",
    uri: `/image/v2/images/${ID}/file`,
    querystring: "",
    headers: {
      host: [{ key: "Host", value: "d111.cloudfront.net" }],
      "x-auth-token": [{ key: "X-Auth-Token", value: "tok" }],
      "content-type": [{ key: "Content-Type", value: "application/octet-stream" }],
      "content-length": [{ key: "Content-Length", value: "16711680" }],
      "x-amz-security-token": [{ key: "X-Amz-Security-Token", value: "theirs" }],
    },
    origin: {
      custom: {
        domainName: "abc.execute-api.eu-west-1.amazonaws.com",
        port: 443,
        protocol: "https",
        path: "",
        sslProtocols: ["TLSv1.2"],
        readTimeout: 30,
        keepaliveTimeout: 5,
        customHeaders: {},
      },
    },
    ...over,
  };
}

const event = (eventType: string, req: CfRequest, response?: CfResponse): CfEvent => ({
  Records: [{ cf: { config: { eventType }, request: req, ...(response ? { response } : {}) } }],
});

function api(answers: Record<string, { status: number; headers?: Record<string, string>; body?: string }>) {
  const calls: { url: string; step: string | undefined; token: string | undefined }[] = [];
  const call: ApiCall = async (url, init) => {
    const step = init.headers["x-novaless-upload"];
    calls.push({ url, step, token: init.headers["x-auth-token"] });
    const a = answers[step ?? ""]!;
    return { status: a.status, headers: a.headers ?? {}, body: a.body ?? "" };
  };
  return { call, calls };
}

describe("the upload behaviour's origin-request", () => {
  it("begins the upload at the API with the caller's token, then sends the PUT to the presigned URL, the caller's AWS headers dropped", async () => {
    const { call, calls } = api({ begin: { status: 307, headers: { location: PRESIGNED } } });
    const out = (await edgeHandler(call)(event("origin-request", request()))) as CfRequest;
    expect(calls).toEqual([
      {
        url: `https://abc.execute-api.eu-west-1.amazonaws.com/image/v2/images/${ID}/file`,
        step: "begin",
        token: "tok",
      },
    ]);
    expect(out.uri).toBe(`/images/${ID}`);
    expect(out.querystring).toBe("X-Amz-Signature=abc&X-Amz-Expires=3600");
    expect(out.origin?.custom).toMatchObject({
      domainName: "bucket.s3.eu-west-1.amazonaws.com",
      port: 443,
      protocol: "https",
    });
    expect(out.headers.host).toEqual([{ key: "Host", value: "bucket.s3.eu-west-1.amazonaws.com" }]);
    expect(out.headers["x-amz-security-token"]).toBeUndefined();
    expect(out.headers["x-novaless-upload-api"]?.[0]?.value).toBe(calls[0]!.url);
  });

  it("answers the API's refusal as it is, and S3 never sees the body", async () => {
    const { call } = api({
      begin: { status: 409, headers: { "content-type": "text/plain" }, body: "409 Conflict\n\nno" },
    });
    const out = (await edgeHandler(call)(event("origin-request", request()))) as CfResponse;
    expect(out).toEqual({
      status: "409",
      headers: { "content-type": [{ key: "Content-Type", value: "text/plain" }] },
      body: "409 Conflict\n\nno",
    });
  });

  it("refuses a body past one PutObject before the image moves, and passes anything else to the API", async () => {
    const { call, calls } = api({});
    const big = request();
    big.headers["content-length"] = [{ value: String(MAX_PUT_BYTES + 1) }];
    expect(((await edgeHandler(call)(event("origin-request", big))) as CfResponse).status).toBe("413");
    const get = request({ method: "GET" });
    expect(await edgeHandler(call)(event("origin-request", get))).toBe(get);
    expect(calls).toEqual([]);
  });
});

describe("the upload behaviour's origin-response", () => {
  const sent = () => {
    const r = request();
    r.headers["x-novaless-upload-api"] = [{ value: `https://api/image/v2/images/${ID}/file` }];
    return r;
  };

  it("completes the upload once S3 stored it and answers the API's 204", async () => {
    const { call, calls } = api({ complete: { status: 204 } });
    const out = await edgeHandler(call)(event("origin-response", sent(), { status: "200", headers: {} }));
    expect(out).toEqual({ status: "204", headers: {} });
    expect(calls.map((c) => c.step)).toEqual(["complete"]);
  });

  it("aborts it when S3 refused the PUT, in Glance's shape", async () => {
    const { call, calls } = api({ abort: { status: 204 } });
    const out = (await edgeHandler(call)(
      event("origin-response", sent(), { status: "403", statusDescription: "Forbidden", headers: {} }),
    )) as CfResponse;
    expect(out.status).toBe("502");
    expect(out.body).toMatch(/^502 Bad Gateway\n\nThe image store refused the upload \(403 Forbidden\)/);
    expect(calls.map((c) => c.step)).toEqual(["abort"]);
  });

  it("leaves any other response alone", async () => {
    const { call } = api({});
    const res = { status: "200", headers: {} };
    expect(await edgeHandler(call)(event("origin-response", request(), res))).toBe(res);
  });
});
