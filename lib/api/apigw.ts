// API Gateway HTTP API (payload 2.0) ⇄ the framework-free request and response.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { baseUrlFrom, type HttpRequest, type HttpResponse } from "./request.js";

export function fromApiGatewayEvent(event: APIGatewayProxyEventV2): HttpRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(event.headers ?? {})) headers[k.toLowerCase()] = v;
  const body =
    event.body === undefined || event.body === null
      ? undefined
      : event.isBase64Encoded
        ? Buffer.from(event.body, "base64").toString("utf8")
        : event.body;
  // a named stage prefixes the path (/prod/v2.1/…); links must keep it, routing must not see it
  let path = event.rawPath || "/";
  let baseUrl: string | undefined;
  const stage = event.requestContext?.stage;
  if (stage && stage !== "$default" && (path === `/${stage}` || path.startsWith(`/${stage}/`))) {
    path = path.slice(stage.length + 1) || "/";
    baseUrl = `${baseUrlFrom(headers)}/${stage}`;
  }
  return {
    method: event.requestContext?.http?.method ?? "GET",
    path: event.rawQueryString ? `${path}?${event.rawQueryString}` : path,
    headers,
    body,
    baseUrl,
  };
}

export function toApiGatewayResult(res: HttpResponse): APIGatewayProxyStructuredResultV2 {
  return { statusCode: res.status, headers: res.headers, body: res.body, isBase64Encoded: false };
}
