// Lambda function URLs (auth type AWS_IAM) at the local gateway: `<endpoint>/lambda-url/<function>/`.
// As Lambda does, a request is refused unless SigV4-signed for the service "lambda" by a known
// key (403), and unless the signer's policies allow both lambda:InvokeFunctionUrl (with
// lambda:FunctionUrlAuthType AWS_IAM) and, since 2025-10, lambda:InvokeFunction (with
// lambda:InvokedViaFunctionUrl true) on the function. The function then gets the payload format
// 2.0 event with the signer in requestContext.authorizer.iam, and its answer becomes the HTTP
// response: a throttle is 429, a failed or timed-out function 502, a request over 6 MB 413.
import { randomUUID } from "node:crypto";
import type { LambdaFunctionURLEventWithIAMAuthorizer } from "aws-lambda";
import { log } from "../../lib/log.js";
import { LambdaServiceError, MAX_REQUEST_BYTES } from "../lambda.js";
import { type Decision, evaluate, type RequestContext, type Statement } from "./evaluate.js";
import type { GatewayPrincipal, RawRequest, RawResponse } from "./gateway.js";
import { ACCOUNT, REGION } from "./identities.js";

export const FUNCTION_URL_PREFIX = "/lambda-url/";

/** The function behind a URL: the event in, what the handler returned out (or a Lambda error thrown). */
export type FunctionUrlHandler = (event: LambdaFunctionURLEventWithIAMAuthorizer) => Promise<unknown>;

function answer(status: number, body: unknown, headers: Record<string, string> = {}): RawResponse {
  const bytes = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  return {
    status,
    headers: {
      "content-type": "application/json",
      "x-amzn-requestid": randomUUID(),
      "content-length": String(bytes.length),
      ...headers,
    },
    body: bytes,
  };
}

const forbidden = () =>
  answer(403, { Message: "Forbidden" }, { "x-amzn-ErrorType": "AccessDeniedException" });

/** A function's result as Lambda maps it to the URL's response (payload format 2.0). */
function responseOf(result: unknown): RawResponse {
  const r = result as
    | { statusCode?: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean }
    | undefined;
  if (r && typeof r === "object" && typeof r.statusCode === "number") {
    const body = Buffer.from(r.body ?? "", r.isBase64Encoded ? "base64" : "utf8");
    return {
      status: r.statusCode,
      headers: { "content-type": "application/json", ...r.headers, "content-length": String(body.length) },
      body,
    };
  }
  // anything else is the body of a 200, as JSON
  return answer(200, result ?? null);
}

export interface FunctionUrls {
  /** Serves `handler` at a URL of its own; returns the URL (under the gateway's endpoint). */
  register(functionName: string, functionArn: string, handler: FunctionUrlHandler): string;
  handles(path: string): boolean;
  serve(
    req: RawRequest,
    principalOf: (accessKeyId: string) => GatewayPrincipal | undefined,
  ): Promise<RawResponse>;
}

export function functionUrls(
  endpoint: () => string,
  context: (p: GatewayPrincipal) => RequestContext,
  userIdOf: (p: GatewayPrincipal) => string,
  resourceStatements: () => Statement[],
): FunctionUrls {
  const registered = new Map<string, { arn: string; handler: FunctionUrlHandler }>();
  const nameOf = (path: string) => path.slice(FUNCTION_URL_PREFIX.length).split(/[/?]/)[0] ?? "";
  return {
    register(functionName, functionArn, handler) {
      registered.set(functionName, { arn: functionArn, handler });
      return `${endpoint()}${FUNCTION_URL_PREFIX}${functionName}/`;
    },
    handles: (path) => path.startsWith(FUNCTION_URL_PREFIX),
    async serve(req, principalOf) {
      const fn = registered.get(nameOf(req.path));
      if (!fn) return answer(404, { Message: null });
      const auth = String(req.headers.authorization ?? "");
      const [accessKey = "", , , service] = /Credential=([^,\s]+)/.exec(auth)?.[1]?.split("/") ?? [];
      // signed for another service, or not at all: the signature cannot match Lambda's
      if (service !== "lambda") return forbidden();
      const principal = principalOf(accessKey);
      if (!principal) return forbidden();
      const needs: [string, RequestContext][] = [
        ["lambda:InvokeFunctionUrl", { "lambda:FunctionUrlAuthType": "AWS_IAM" }],
        ["lambda:InvokeFunction", { "lambda:InvokedViaFunctionUrl": "true" }],
      ];
      for (const [action, extra] of needs) {
        const d: Decision = evaluate(principal.statements, resourceStatements(), {
          action,
          resource: fn.arn,
          principalArn: principal.roleArn,
          context: { ...context(principal), ...extra },
        });
        if (!d.allowed) {
          log.warn("iam.access_denied", { principal: principal.name, action, resource: fn.arn });
          return forbidden();
        }
      }
      if (req.body.length > MAX_REQUEST_BYTES)
        return answer(413, {
          Message: `Request must be smaller than ${MAX_REQUEST_BYTES} bytes for the InvokeFunction operation`,
        });
      const name = nameOf(req.path);
      // what follows /lambda-url/<function> is the URL's own path and query
      const [rest = "", rawQueryString = ""] = req.path
        .slice(FUNCTION_URL_PREFIX.length + name.length)
        .split("?");
      const rawPath = rest || "/";
      const now = new Date();
      const headers = Object.fromEntries(
        Object.entries(req.headers)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(",") : String(v)]),
      );
      const requestId = randomUUID();
      const text = req.body.toString("utf8");
      const binary = !Buffer.from(text, "utf8").equals(req.body);
      // principalOrgId and cognitoIdentity are null from Lambda, whatever the types say
      const event = {
        version: "2.0",
        routeKey: "$default",
        rawPath,
        rawQueryString,
        headers,
        requestContext: {
          accountId: "anonymous",
          apiId: name,
          domainName: headers.host ?? "",
          domainPrefix: name,
          http: {
            method: req.method,
            path: rawPath,
            protocol: "HTTP/1.1",
            sourceIp: "127.0.0.1",
            userAgent: headers["user-agent"] ?? "",
          },
          requestId,
          routeKey: "$default",
          stage: "$default",
          time: now.toISOString(),
          timeEpoch: now.getTime(),
          authorizer: {
            iam: {
              accessKey,
              accountId: ACCOUNT,
              callerId: userIdOf(principal),
              cognitoIdentity: null,
              principalOrgId: null,
              userArn: principal.sessionArn,
              userId: userIdOf(principal),
            },
          },
        },
        body: binary ? req.body.toString("base64") : text,
        isBase64Encoded: binary,
      } as unknown as LambdaFunctionURLEventWithIAMAuthorizer;
      try {
        return responseOf(await fn.handler(event));
      } catch (e) {
        if (e instanceof LambdaServiceError)
          return answer(
            e.statusCode,
            { Message: e.statusCode === 429 ? "Rate Exceeded." : e.message },
            { "x-amzn-ErrorType": e.name },
          );
        // the function failed or timed out: Lambda answers 502 and logs the error
        log.warn("function_url.function_failed", { function: name, region: REGION, error: e });
        return answer(502, { Message: "Internal Server Error" });
      }
    },
  };
}
