// The API's HTTP entry as the integration tests call it: JSON in, the answer with its JSON parsed
// (undefined when the answer is not JSON, as Glance's plain-text refusals).
import type { ApiDeps } from "../../lib/api/deps.js";
import { handleHttp } from "../../lib/api/router.js";

export interface CallOptions {
  token?: string;
  subject?: string;
  body?: unknown;
  /** more headers (a PATCH's media type, a microversion), over the JSON content type */
  headers?: Record<string, string>;
}

export function httpCaller(deps: ApiDeps, baseUrl: string) {
  return async (method: string, path: string, opts: CallOptions = {}) => {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (opts.token) headers["x-auth-token"] = opts.token;
    if (opts.subject) headers["x-subject-token"] = opts.subject;
    Object.assign(headers, opts.headers);
    const r = await handleHttp(
      {
        method,
        path,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        baseUrl,
      },
      deps,
    );
    const isJson = r.headers["content-type"]?.startsWith("application/json");
    // biome-ignore lint/suspicious/noExplicitAny: the answers' JSON is arbitrary; the assertions check its shape
    const json: any = r.body && isJson ? JSON.parse(r.body) : undefined;
    return { ...r, json };
  };
}
