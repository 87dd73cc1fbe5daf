// The IAM boundary of the local AWS: an HTTP reverse proxy on 127.0.0.1 in front of DynamoDB, SQS
// and the local Step Functions server. It knows the caller from the access key id of the signed
// request (as AWS and LocalStack do, never from the calling code), maps the request to the IAM
// action(s) and resource ARN(s) AWS would authorize, and answers AccessDeniedException as AWS does
// when the caller's policies do not allow it. Allowed requests are forwarded byte for byte, Host
// header included, so fauxqs builds queue URLs that point back at the gateway.
// In process (the local runtime): the SDK clients hand their signed requests to serve() without a
// socket (in-process.ts), and serve() hands the allowed ones to the emulators' request listeners.
// It also enforces SQS's queue-name rule (fauxqs does not) and SQS's limits (../sqs-limits.ts), and
// can inject DynamoDB throttling.
//
// Its jobs, one file each: requests.ts (what a signed request says: service, credential, signer),
// authorizations.ts (request → IAM actions and resources), authorizer.ts (the decision, and the
// services' own rules and throttles), upstreams.ts (forwarding), sqs-messages.ts (SenderId, and
// the sent/created announcements), answers.ts (the errors given in a service's stead).
import { Agent, createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { log } from "../../lib/log.js";
import { sqsLimits } from "../sqs-limits.js";
import { type Answer, answerOf, s3Answer } from "./answers.js";
import { Authorizer } from "./authorizer.js";
import type { Statement } from "./evaluate.js";
import { type FunctionUrlHandler, functionUrls } from "./function-urls.js";
import {
  credentialOf,
  presignExpired,
  principalContext,
  scopeService,
  serviceOf,
  userIdOf,
} from "./requests.js";
import { SqsMessages } from "./sqs-messages.js";
import { upstreamsOf } from "./upstreams.js";

export type Service = "dynamodb" | "sqs" | "states" | "s3";

export interface GatewayPrincipal {
  /** for messages and logs: the component */
  name: string;
  roleArn: string;
  /** arn:aws:sts::<account>:assumed-role/<role>/<session> */
  sessionArn: string;
  statements: Statement[];
  /** aws:PrincipalTag/<key> */
  tags?: Record<string, string>;
}

export interface GatewayPolicy {
  /** access key id → principal */
  principals: Map<string, GatewayPrincipal>;
  /** resource-based statements (queue policies) */
  resource: Statement[];
}

/** A request as it travels the gateway: what the SDK signed, the body whole. */
export interface RawRequest {
  method: string;
  /** path and query */
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: Buffer;
}

/** An emulator reached without a socket: its request listener, called in this process. */
export type Upstream = (req: RawRequest, signal?: AbortSignal) => Promise<RawResponse>;

export interface GatewayOptions {
  /** s3: fauxqs's, the sqs upstream, unless given */
  upstreams: { dynamodb: string; sqs: string; sfn?: string; s3?: string };
  /** emulators served in process; the others are reached over HTTP at their upstream URL */
  inProcess?: Partial<Record<Service, Upstream>>;
  policy: GatewayPolicy;
  /** probability that a DynamoDB item operation is throttled (ProvisionedThroughputExceededException) */
  dynamodbThrottleRate?: number;
  /** probability that a Step Functions StartExecution is throttled (ThrottlingException) */
  startExecutionThrottleRate?: number;
  random?: () => number;
  port?: number;
}

export interface Gateway {
  /** http://127.0.0.1:<port>: every AWS_ENDPOINT_URL_* of the components */
  endpoint: string;
  /** One request, as the HTTP endpoint serves it (IAM, then the emulator), without the socket. */
  serve(req: RawRequest, signal?: AbortSignal): Promise<RawResponse>;
  setPolicy(policy: GatewayPolicy): void;
  /**
   * Serves a function at a URL of its own (auth type AWS_IAM, local/iam/function-urls.ts) and
   * returns it: `<endpoint>/lambda-url/<name>/`.
   */
  functionUrl(name: string, functionArn: string, handler: FunctionUrlHandler): string;
  /** one more caller (a host's session), the policy otherwise unchanged */
  addPrincipal(accessKeyId: string, principal: GatewayPrincipal): void;
  setDynamodbThrottleRate(rate: number): void;
  setStartExecutionThrottleRate(rate: number): void;
  /** DynamoDB requests answered with an injected throttle so far */
  readonly throttled: number;
  /**
   * Calls `listener` for every message SQS accepted through SendMessage or SendMessageBatch (the
   * doorbell of the local fleet simulator: which host queue has something, and from when).
   */
  onMessageSent(listener: (sent: MessageSent) => void): void;
  /** Calls `listener` with the name of every queue SQS created (the simulator's registrations). */
  onQueueCreated(listener: (queueName: string) => void): void;
  stop(): Promise<void>;
}

/** A message SQS accepted: its queue, the delay before it can be received, and its body. */
export interface MessageSent {
  queueUrl: string;
  delaySeconds: number;
  body: string;
}

export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const authorizer = new Authorizer(opts);
  const agent = new Agent({ keepAlive: true });
  const limits = sqsLimits();
  const messages = new SqsMessages((key) => authorizer.principal(key));
  let endpoint = "";
  const urls = functionUrls(
    () => endpoint,
    principalContext,
    userIdOf,
    () => authorizer.resourceStatements,
  );
  const upstreamOf = upstreamsOf(opts, agent);

  async function serve(req: RawRequest, signal?: AbortSignal): Promise<RawResponse> {
    if (urls.handles(req.path)) return urls.serve(req, (key) => authorizer.principal(key));
    const body = req.body;
    const target = req.headers["x-amz-target"] as string | undefined;
    // S3 is REST: no target; its signature's scope names it
    const service = serviceOf(target) ?? (scopeService(credentialOf(req)) === "s3" ? "s3" : undefined);
    const upstream = service ? upstreamOf[service] : undefined;
    if (service === "s3" && upstream) {
      if (presignExpired(req.path)) return s3Answer(403, "AccessDenied", "Request has expired");
      const refused = authorizer.check("s3", req.method, req, body);
      if (refused)
        return refused.type.endsWith("UnrecognizedClientException")
          ? s3Answer(
              403,
              "InvalidAccessKeyId",
              "The AWS Access Key Id you provided does not exist in our records.",
            )
          : s3Answer(403, "AccessDenied", refused.message);
      try {
        return await upstream.call(req, signal);
      } catch (e) {
        if (signal?.aborted) throw e;
        return s3Answer(
          503,
          "ServiceUnavailable",
          `local IAM gateway: s3 at ${upstream.url} failed: ${(e as Error).message}`,
        );
      }
    }
    if (!service || !upstream) {
      return answerOf({
        status: 400,
        type: "com.amazon.coral.service#UnknownOperationException",
        message: `The local gateway serves the AWS JSON protocols of DynamoDB, SQS and Step Functions only (X-Amz-Target ${target ?? "missing"})`,
      });
    }
    const op = target!.slice(target!.indexOf(".") + 1);
    let refused: Answer | undefined;
    try {
      refused = authorizer.check(service, op, req, body);
    } catch (e) {
      refused = {
        status: 500,
        type: "com.amazon.coral.service#InternalFailure",
        message: `local IAM gateway: ${(e as Error).message}`,
      };
    }
    if (refused) return answerOf(refused);
    const sends = service === "sqs" && (op === "SendMessage" || op === "SendMessageBatch");
    const receives = service === "sqs" && op === "ReceiveMessage";
    const sender = messages.senderOf(req.headers);
    // whatever becomes of the send (refused, failed, answered), receives stop waiting for it
    const sent = sends ? messages.beginSend(messages.queueNameOf(body)) : undefined;
    const created =
      service === "sqs" && op === "CreateQueue"
        ? String((JSON.parse(body.toString("utf8") || "{}") as { QueueName?: string }).QueueName ?? "")
        : undefined;
    let res: RawResponse;
    try {
      // SQS's documented limits the emulators lack (local/sqs-limits.ts)
      res =
        service === "sqs"
          ? await limits.call(op, req, (r) => upstream.call(r, signal))
          : await upstream.call(req, signal);
    } catch (e) {
      sent?.();
      if (signal?.aborted) throw e;
      return answerOf({
        status: 502,
        type: "com.amazon.coral.service#ServiceUnavailable",
        message: `local IAM gateway: ${service} at ${upstream.url} failed: ${(e as Error).message}`,
      });
    }
    // after the answer, as a caller of CreateQueue would see it
    if (created && res.status === 200) {
      authorizer.queueCreated(created);
      for (const l of messages.createdListeners) l(created);
    }
    if (!(sends || receives) || res.status !== 200) {
      sent?.();
      return res;
    }
    // SQS's answers to sends name the messages, and its answers to receives say who sent
    // each: both pass through here whole.
    let out = res.body;
    try {
      if (sends) {
        messages.rememberSenders(op, out, sender);
        sent?.();
        if (messages.sentListeners.length) messages.announceSent(op, body, out);
      } else out = await messages.withSenders(body, out);
    } catch (e) {
      sent?.();
      log.warn("gateway.sqs_answer_unreadable", { error: e, op });
    }
    return { ...res, headers: { ...res.headers, "content-length": String(out.length) }, body: out };
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", () => res.destroy());
    req.on("end", () => {
      // a caller that hangs up (an aborted long poll) aborts the upstream request too
      const abort = new AbortController();
      res.on("close", () => {
        if (!res.writableFinished) abort.abort();
      });
      serve(
        {
          method: req.method ?? "POST",
          path: req.url ?? "/",
          headers: req.headers,
          body: Buffer.concat(chunks),
        },
        abort.signal,
      ).then(
        (a) => {
          // the upstream's own framing: the body is written whole here
          const { "transfer-encoding": _, connection: __, ...headers } = a.headers;
          res.writeHead(a.status, { ...headers, "content-length": String(a.body.length) });
          res.end(a.body);
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    serve,
    functionUrl: (name, arn, handler) => urls.register(name, arn, handler),
    setPolicy: (p) => authorizer.setPolicy(p),
    addPrincipal: (key, principal) => authorizer.addPrincipal(key, principal),
    setDynamodbThrottleRate(rate) {
      authorizer.dynamodbThrottleRate = rate;
    },
    setStartExecutionThrottleRate(rate) {
      authorizer.startExecutionThrottleRate = rate;
    },
    get throttled() {
      return authorizer.throttled;
    },
    onMessageSent(listener) {
      messages.sentListeners.push(listener);
    },
    onQueueCreated(listener) {
      messages.createdListeners.push(listener);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
