// Where the gateway forwards what it allows: each service's emulator, called in process through its
// request listener, or over HTTP at its URL; the request byte for byte, Host header included.
import { type Agent, request as httpRequest } from "node:http";
import type { GatewayOptions, RawResponse, Service, Upstream } from "./gateway.js";

/** A service's emulator: its URL (for messages) and how it is called. */
export type Upstreams = Record<Service, { url: string; call: Upstream } | undefined>;

export function upstreamsOf(opts: GatewayOptions, agent: Agent): Upstreams {
  const upstreamUrls: Record<Service, string | undefined> = {
    dynamodb: opts.upstreams.dynamodb,
    sqs: opts.upstreams.sqs,
    states: opts.upstreams.sfn,
    // fauxqs serves S3 beside SQS, on the same endpoint
    s3: opts.upstreams.s3 ?? opts.upstreams.sqs,
  };
  const inProcessOf = { ...opts.inProcess, s3: opts.inProcess?.s3 ?? opts.inProcess?.sqs };
  return Object.fromEntries(
    (Object.entries(upstreamUrls) as [Service, string | undefined][]).map(([service, url]) => [
      service,
      url ? { url, call: inProcessOf[service] ?? httpUpstream(url, agent) } : undefined,
    ]),
  ) as Upstreams;
}

/** An emulator over HTTP (an external one, or any without an in-process listener). */
function httpUpstream(base: string, agent: Agent): Upstream {
  return (req, signal) =>
    new Promise<RawResponse>((resolve, reject) => {
      const up = httpRequest(
        new URL(req.path, base),
        { method: req.method, headers: req.headers, agent, signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }),
          );
        },
      );
      up.on("error", reject);
      up.end(req.body);
    });
}
