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
import { createHash, randomUUID } from "node:crypto";
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { DYNAMODB_DATA_OPERATIONS } from "../../lib/aws/meter.js";
import { log } from "../../lib/log.js";
import { sqsLimits } from "../sqs-limits.js";
import { type Decision, evaluate, type RequestContext, type Statement } from "./evaluate.js";
import { type FunctionUrlHandler, functionUrls } from "./function-urls.js";
import { ACCOUNT, PARTITION, REGION } from "./identities.js";

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

/** One IAM authorization a request needs. */
export interface Authorization {
  action: string;
  resource: string;
}

const arn = (service: string, resource: string) =>
  `arn:${PARTITION}:${service}:${REGION}:${ACCOUNT}:${resource}`;
const tableArn = (name: unknown) => arn("dynamodb", `table/${String(name)}`);
const queueArnOfName = (name: unknown) => arn("sqs", String(name));
const queueArnOfUrl = (url: unknown) =>
  queueArnOfName(
    String(url ?? "")
      .split("/")
      .filter(Boolean)
      .pop() ?? "",
  );

/** What DynamoDB authorizes for an operation: the table (or index) of each item it touches. */
export function dynamodbAuthorizations(op: string, body: Record<string, unknown>): Authorization[] {
  switch (op) {
    case "BatchGetItem":
    case "BatchWriteItem":
      return Object.keys((body.RequestItems ?? {}) as object).map((t) => ({
        action: `dynamodb:${op}`,
        resource: tableArn(t),
      }));
    case "TransactWriteItems":
    case "TransactGetItems": {
      const actions: Record<string, string> = {
        ConditionCheck: "ConditionCheckItem",
        Put: "PutItem",
        Delete: "DeleteItem",
        Update: "UpdateItem",
        Get: "GetItem",
      };
      return ((body.TransactItems ?? []) as Record<string, { TableName?: string }>[]).flatMap((item) =>
        Object.entries(item).map(([kind, v]) => ({
          action: `dynamodb:${actions[kind] ?? kind}`,
          resource: tableArn(v.TableName),
        })),
      );
    }
    case "ListTables":
      return [{ action: "dynamodb:ListTables", resource: "*" }];
    case "Query":
    case "Scan":
      return [
        {
          action: `dynamodb:${op}`,
          resource: body.IndexName
            ? `${tableArn(body.TableName)}/index/${String(body.IndexName)}`
            : tableArn(body.TableName),
        },
      ];
    default:
      return [{ action: `dynamodb:${op}`, resource: body.TableName ? tableArn(body.TableName) : "*" }];
  }
}

const SQS_BATCH_ACTIONS: Record<string, string> = {
  SendMessageBatch: "SendMessage",
  DeleteMessageBatch: "DeleteMessage",
  ChangeMessageVisibilityBatch: "ChangeMessageVisibility",
};

/** What SQS authorizes: the queue, named by QueueUrl (QueueName for CreateQueue/GetQueueUrl). */
export function sqsAuthorizations(op: string, body: Record<string, unknown>): Authorization[] {
  const action = `sqs:${SQS_BATCH_ACTIONS[op] ?? op}`;
  if (op === "ListQueues") return [{ action, resource: "*" }];
  if (op === "CreateQueue" || op === "GetQueueUrl")
    return [{ action, resource: queueArnOfName(body.QueueName) }];
  return [{ action, resource: queueArnOfUrl(body.QueueUrl) }];
}

/** What Step Functions authorizes: the state machine, or the execution. */
export function statesAuthorizations(op: string, body: Record<string, unknown>): Authorization[] {
  const action = `states:${op}`;
  if (op === "CreateStateMachine")
    return [{ action, resource: arn("states", `stateMachine:${String(body.name)}`) }];
  const target = body.executionArn ?? body.stateMachineArn;
  return [{ action, resource: target === undefined ? "*" : String(target) }];
}

/**
 * What S3 authorizes for a path-style REST request (the local endpoint names no bucket hosts):
 * the bucket for bucket operations, the object for object operations, as S3's actions and ARNs
 * (arn:aws:s3:::<bucket>/<key>) name them in the Service Authorization Reference ("Actions,
 * resources, and condition keys for Amazon S3": HeadObject is s3:GetObject, HeadBucket
 * s3:ListBucket, a multipart upload's steps s3:PutObject).
 */
export function s3Authorizations(method: string, path: string): Authorization[] {
  const [pathname, query = ""] = path.split("?") as [string, string?];
  const slash = pathname.indexOf("/", 1);
  const bucket = decodeURIComponent(slash < 0 ? pathname.slice(1) : pathname.slice(1, slash));
  const key = slash < 0 ? "" : decodeURIComponent(pathname.slice(slash + 1));
  const m = method.toUpperCase();
  if (!bucket) return [{ action: "s3:ListAllMyBuckets", resource: "*" }];
  const bucketArn = `arn:${PARTITION}:s3:::${bucket}`;
  if (!key) {
    const params = new URLSearchParams(query);
    const action =
      m === "PUT"
        ? "s3:CreateBucket"
        : m === "DELETE"
          ? "s3:DeleteBucket"
          : m === "POST" && params.has("delete")
            ? "s3:DeleteObject"
            : "s3:ListBucket";
    return [{ action, resource: action === "s3:DeleteObject" ? `${bucketArn}/*` : bucketArn }];
  }
  // (a multipart upload's create, parts and complete are s3:PutObject; its abort is its own action)
  const uploads = new URLSearchParams(query).has("uploadId");
  const action =
    m === "GET" || m === "HEAD"
      ? "s3:GetObject"
      : m === "DELETE"
        ? uploads
          ? "s3:AbortMultipartUpload"
          : "s3:DeleteObject"
        : "s3:PutObject";
  return [{ action, resource: `${bucketArn}/${key}` }];
}

/**
 * A request's SigV4 credential (`<key id>/<date>/<region>/<service>/aws4_request`): the
 * Authorization header's, or a presigned URL's `X-Amz-Credential` (S3's query authentication).
 */
function credentialOf(req: Pick<RawRequest, "headers" | "path">): string | undefined {
  const header = /Credential=([^,\s]+)/.exec(req.headers.authorization ?? "")?.[1];
  if (header) return header;
  const query = req.path.includes("?")
    ? new URLSearchParams(req.path.slice(req.path.indexOf("?") + 1))
    : undefined;
  return query?.get("X-Amz-Credential") ?? undefined;
}

/** The service a credential's scope names. */
const scopeService = (credential: string | undefined): string | undefined => credential?.split("/")[3];

/**
 * A presigned request past its X-Amz-Date + X-Amz-Expires: S3's 403 AccessDenied "Request has
 * expired" (S3's "Authenticating requests: using query parameters").
 */
export function presignExpired(path: string, now = Date.now()): boolean {
  const q = new URLSearchParams(path.includes("?") ? path.slice(path.indexOf("?") + 1) : "");
  const date = q.get("X-Amz-Date");
  const expires = Number(q.get("X-Amz-Expires"));
  const m = date ? /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date) : undefined;
  if (!m || !Number.isFinite(expires)) return false;
  const signed = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  return now > signed + expires * 1000;
}

/** S3's REST error document. */
function s3Answer(status: number, code: string, message: string): RawResponse {
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</Message><RequestId>${randomUUID()}</RequestId></Error>`,
  );
  return {
    status,
    headers: { "content-type": "application/xml", "content-length": String(body.length) },
    body,
  };
}

/** SQS's rule for a queue name, with SQS's own message; undefined when the name is valid. */
export function queueNameError(name: string, fifo: boolean): string | undefined {
  if (fifo || name.endsWith(".fifo")) {
    return /^[A-Za-z0-9_-]{1,75}\.fifo$/.test(name) && fifo
      ? undefined
      : "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.";
  }
  return /^[A-Za-z0-9_-]{1,80}$/.test(name)
    ? undefined
    : "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length";
}

/**
 * aws:userid and SQS's SenderId of a role session: `<role id>:<session name>`. The role id is
 * AWS's unique id of the role (AROA…); locally a stable one from the role's ARN.
 */
export function userIdOf(p: Pick<GatewayPrincipal, "roleArn" | "sessionArn">): string {
  const session = p.sessionArn.split("/").slice(-1)[0] ?? "";
  return `${roleIdOf(p.roleArn)}:${session}`;
}

/** by role ARN: every request of a caller asks for its role's id (aws:userid, SenderId) */
const roleIds = new Map<string, string>();

/** A role's unique id as AWS forms them: AROA and 17 characters of [A-Z2-7]. */
export function roleIdOf(roleArn: string): string {
  const known = roleIds.get(roleArn);
  if (known) return known;
  const digest = createHash("sha256").update(roleArn).digest();
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let id = "AROA";
  for (let i = 0; i < 17; i++) id += alphabet.charAt(digest[i]! & 31);
  roleIds.set(roleArn, id);
  return id;
}

export function accessDeniedMessage(sessionArn: string, a: Authorization, d: Decision): string {
  const why =
    d.allowed || d.reason === "implicit-deny"
      ? `because no identity-based policy allows the ${a.action} action`
      : d.reason === "explicit-deny-identity"
        ? "with an explicit deny in an identity-based policy"
        : "with an explicit deny in a resource-based policy";
  return `User: ${sessionArn} is not authorized to perform: ${a.action} on resource: ${a.resource} ${why}`;
}

/** The global condition keys of a request, from its signer alone. */
function principalContext(principal: GatewayPrincipal): RequestContext {
  return {
    "aws:SecureTransport": "true", // the gateway stands in for HTTPS
    "aws:PrincipalArn": principal.roleArn,
    "aws:PrincipalAccount": ACCOUNT,
    "aws:RequestedRegion": REGION,
    "aws:userid": userIdOf(principal),
    ...Object.fromEntries(Object.entries(principal.tags ?? {}).map(([k, v]) => [`aws:PrincipalTag/${k}`, v])),
  };
}

function serviceOf(target: string | undefined): Service | undefined {
  if (!target) return undefined;
  if (target.startsWith("DynamoDB_")) return "dynamodb";
  if (target.startsWith("AmazonSQS.")) return "sqs";
  if (target.startsWith("AWSStepFunctions.")) return "states";
  return undefined;
}

interface Answer {
  status: number;
  type: string;
  message: string;
  /** SQS's awsQueryCompatible code (x-amzn-query-error) */
  queryError?: string;
}

function answerOf(a: Answer): RawResponse {
  const body = Buffer.from(JSON.stringify({ __type: a.type, message: a.message }));
  const headers: RawResponse["headers"] = {
    "content-type": "application/x-amz-json-1.0",
    "x-amzn-requestid": randomUUID(),
    "content-length": String(body.length),
  };
  if (a.queryError) headers["x-amzn-query-error"] = a.queryError;
  return { status: a.status, headers, body };
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

export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  let policy = opts.policy;
  /**
   * Decisions by access key, action and resource. The request context is a function of the
   * principal alone and a policy is fixed until setPolicy, so one evaluation per triple holds for
   * the policy's life (10,000 hosts register with the same few dozen statements); setPolicy drops
   * them. Bounded: requests can name any resource.
   */
  let decisions = new Map<string, Decision>();
  const DECISIONS_MAX = 100_000;
  let throttleRate = opts.dynamodbThrottleRate ?? 0;
  let throttled = 0;
  let startThrottleRate = opts.startExecutionThrottleRate ?? 0;
  const random = opts.random ?? Math.random;
  const agent = new Agent({ keepAlive: true });
  const limits = sqsLimits();
  const sentListeners: ((sent: MessageSent) => void)[] = [];
  const createdListeners: ((queueName: string) => void)[] = [];
  /** queue name → tags, from the CreateQueue/TagQueue requests allowed through */
  const queueTags = new Map<string, Record<string, string>>();
  /** queues SQS created through the gateway: a GetQueueUrl refused for another is expected */
  const queues = new Set<string>();
  /** the tags of the request being checked, recorded once it is allowed */
  let pendingTags: { name: string; tags: Record<string, string> } | undefined;
  /**
   * message id → SenderId of who sent it (SQS's `<role id>:<session>`), so ReceiveMessage answers
   * name the signer as SQS does (the emulator cannot know the caller). Bounded, oldest dropped.
   */
  const senders = new Map<string, string>();
  const SENDERS_MAX = 200_000;
  /**
   * queue name → the sends forwarded to it whose answers are not read yet. SQS hands a message to
   * a waiting receive as soon as it stores it, so the receive's answer can overtake the send's,
   * which names the message: such a receive waits for those sends before naming its senders.
   */
  const sending = new Map<string, Set<Promise<void>>>();
  const queueNameOf = (body: Buffer): string => {
    let url = "";
    try {
      url = String((JSON.parse(body.toString("utf8") || "{}") as { QueueUrl?: string }).QueueUrl ?? "");
    } catch {
      // a malformed request: SQS answers it, and no receive waits on it
    }
    return url.slice(url.lastIndexOf("/") + 1);
  };
  const beginSend = (queue: string): (() => void) => {
    let done!: () => void;
    const p = new Promise<void>((resolve) => {
      done = resolve;
    });
    const set = sending.get(queue) ?? new Set();
    sending.set(queue, set.add(p));
    return () => {
      done();
      set.delete(p);
      if (set.size === 0 && sending.get(queue) === set) sending.delete(queue);
    };
  };
  /** After SQS answered 200 to a send: one event per message it took. */
  const announceSent = (op: string, body: Buffer, answer: Buffer) => {
    const req = JSON.parse(body.toString("utf8")) as {
      QueueUrl?: string;
      DelaySeconds?: number;
      MessageBody?: string;
      Entries?: { Id: string; DelaySeconds?: number; MessageBody?: string }[];
    };
    const queueUrl = String(req.QueueUrl ?? "");
    const messages =
      op === "SendMessage"
        ? [{ delaySeconds: req.DelaySeconds ?? 0, body: req.MessageBody ?? "" }]
        : (() => {
            const ok = new Set(
              (
                (JSON.parse(answer.toString("utf8")) as { Successful?: { Id: string }[] }).Successful ?? []
              ).map((e) => e.Id),
            );
            return (req.Entries ?? [])
              .filter((e) => ok.has(e.Id))
              .map((e) => ({ delaySeconds: e.DelaySeconds ?? 0, body: e.MessageBody ?? "" }));
          })();
    for (const m of messages) for (const l of sentListeners) l({ queueUrl, ...m });
  };
  /** SQS's SenderId of the request's signer, or undefined for an unknown key. */
  const senderOf = (headers: IncomingHttpHeaders): string | undefined => {
    const key = /Credential=([^/,\s]+)\//.exec(headers.authorization ?? "")?.[1];
    const principal = key ? policy.principals.get(key) : undefined;
    return principal ? userIdOf(principal) : undefined;
  };
  const rememberSenders = (op: string, answer: Buffer, sender: string | undefined) => {
    if (!sender) return;
    const a = JSON.parse(answer.toString("utf8")) as {
      MessageId?: string;
      Successful?: { MessageId: string }[];
    };
    const ids = op === "SendMessage" ? [a.MessageId] : (a.Successful ?? []).map((e) => e.MessageId);
    for (const id of ids) {
      if (!id) continue;
      if (senders.size >= SENDERS_MAX) senders.delete(senders.keys().next().value as string);
      senders.set(id, sender);
    }
  };
  const withSenders = async (request: Buffer, answer: Buffer): Promise<Buffer> => {
    const req = JSON.parse(request.toString("utf8")) as {
      AttributeNames?: string[];
      MessageSystemAttributeNames?: string[];
    };
    const asked = [...(req.AttributeNames ?? []), ...(req.MessageSystemAttributeNames ?? [])];
    if (!asked.includes("SenderId") && !asked.includes("All")) return answer;
    const a = JSON.parse(answer.toString("utf8")) as {
      Messages?: { MessageId?: string; Attributes?: Record<string, string> }[];
    };
    const pending = sending.get(queueNameOf(request));
    if (pending && (a.Messages ?? []).some((m) => m.MessageId && !senders.has(m.MessageId))) {
      await Promise.all([...pending]);
    }
    for (const m of a.Messages ?? []) {
      const sender = m.MessageId ? senders.get(m.MessageId) : undefined;
      if (sender) m.Attributes = { ...m.Attributes, SenderId: sender };
    }
    return Buffer.from(JSON.stringify(a));
  };
  let endpoint = "";
  const urls = functionUrls(
    () => endpoint,
    principalContext,
    userIdOf,
    () => policy.resource,
  );
  const upstreamUrls: Record<Service, string | undefined> = {
    dynamodb: opts.upstreams.dynamodb,
    sqs: opts.upstreams.sqs,
    states: opts.upstreams.sfn,
    // fauxqs serves S3 beside SQS, on the same endpoint
    s3: opts.upstreams.s3 ?? opts.upstreams.sqs,
  };
  const inProcessOf = { ...opts.inProcess, s3: opts.inProcess?.s3 ?? opts.inProcess?.sqs };
  const upstreamOf = Object.fromEntries(
    (Object.entries(upstreamUrls) as [Service, string | undefined][]).map(([service, url]) => [
      service,
      url ? { url, call: inProcessOf[service] ?? httpUpstream(url, agent) } : undefined,
    ]),
  ) as Record<Service, { url: string; call: Upstream } | undefined>;

  /** undefined: forward; otherwise the answer AWS would give instead. */
  function check(service: Service, op: string, req: RawRequest, body: Buffer): Answer | undefined {
    pendingTags = undefined;
    const key = credentialOf(req)?.split("/")[0];
    const principal = key ? policy.principals.get(key) : undefined;
    if (!principal) {
      return {
        status: service === "sqs" ? 403 : 400,
        type: "com.amazon.coral.service#UnrecognizedClientException",
        message: "The security token included in the request is invalid.",
      };
    }
    let parsed: Record<string, unknown> = {};
    if (service !== "s3") {
      try {
        parsed = body.length ? (JSON.parse(body.toString("utf8")) as Record<string, unknown>) : {};
      } catch {
        return undefined; // malformed: the service itself answers SerializationException
      }
    }
    const needs =
      service === "dynamodb"
        ? dynamodbAuthorizations(op, parsed)
        : service === "sqs"
          ? sqsAuthorizations(op, parsed)
          : service === "s3"
            ? s3Authorizations(req.method, req.path)
            : statesAuthorizations(op, parsed);
    const contextOf = () => principalContext(principal);
    if (service === "sqs" && (op === "CreateQueue" || op === "TagQueue")) {
      // A queue's tags, for aws:ResourceTag conditions (SQS's ABAC) on later calls. Recorded as
      // asked: a refused request changes nothing that a decision depends on.
      const name =
        op === "CreateQueue"
          ? String(parsed.QueueName ?? "")
          : (String(parsed.QueueUrl ?? "")
              .split("/")
              .pop() ?? "");
      const tags = (op === "CreateQueue" ? parsed.tags : parsed.Tags) as Record<string, string> | undefined;
      if (tags && Object.keys(tags).length) pendingTags = { name, tags };
    }
    for (const need of needs) {
      const resourceTags =
        service === "sqs" ? queueTags.get(need.resource.split(":").pop() ?? "") : undefined;
      // a queue's tags are part of the decision (aws:ResourceTag): a tag change needs no flush
      const cacheKey = `${key}\n${need.action}\n${need.resource}${resourceTags ? `\n${JSON.stringify(resourceTags)}` : ""}`;
      let d = decisions.get(cacheKey);
      if (!d) {
        d = evaluate(principal.statements, policy.resource, {
          action: need.action,
          resource: need.resource,
          principalArn: principal.roleArn,
          context: {
            ...contextOf(),
            ...Object.fromEntries(
              Object.entries(resourceTags ?? {}).map(([k, v]) => [`aws:ResourceTag/${k}`, v]),
            ),
          },
        });
        if (decisions.size >= DECISIONS_MAX) decisions.clear();
        decisions.set(cacheKey, d);
      }
      if (!d.allowed) {
        // A host asks for its queue before compute-events has created (and tagged) it: refused,
        // as on AWS, and it waits for the queue. Only a refusal of what exists is a warning.
        const expected =
          service === "sqs" && op === "GetQueueUrl" && !queues.has(String(parsed.QueueName ?? ""));
        log[expected ? "debug" : "warn"]("iam.access_denied", {
          principal: principal.name,
          action: need.action,
          resource: need.resource,
          ...(expected ? { queue_exists: false } : {}),
        });
        return {
          status: service === "sqs" ? 403 : 400,
          type: "com.amazon.coral.service#AccessDeniedException",
          message: accessDeniedMessage(principal.sessionArn, need, d),
        };
      }
    }
    if (pendingTags) {
      const merged = { ...queueTags.get(pendingTags.name), ...pendingTags.tags };
      queueTags.set(pendingTags.name, merged);
      pendingTags = undefined;
    }
    if (service === "sqs" && op === "CreateQueue") {
      const attributes = (parsed.Attributes ?? {}) as Record<string, string>;
      const error = queueNameError(String(parsed.QueueName ?? ""), attributes.FifoQueue === "true");
      if (error) {
        return {
          status: 400,
          type: "com.amazonaws.sqs#InvalidParameterValue",
          message: error,
          queryError: "InvalidParameterValue;Sender",
        };
      }
    }
    if (
      service === "dynamodb" &&
      DYNAMODB_DATA_OPERATIONS.has(op) &&
      throttleRate > 0 &&
      random() < throttleRate
    ) {
      throttled++;
      return {
        status: 400,
        type: "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        message:
          "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
      };
    }
    if (
      service === "states" &&
      op === "StartExecution" &&
      startThrottleRate > 0 &&
      random() < startThrottleRate
    ) {
      return {
        status: 400,
        type: "com.amazonaws.swf.base.exceptions#ThrottlingException",
        message: "Rate exceeded",
      };
    }
    return undefined;
  }

  async function serve(req: RawRequest, signal?: AbortSignal): Promise<RawResponse> {
    if (urls.handles(req.path)) return urls.serve(req, (key) => policy.principals.get(key));
    const body = req.body;
    const target = req.headers["x-amz-target"] as string | undefined;
    // S3 is REST: no target; its signature's scope names it
    const service = serviceOf(target) ?? (scopeService(credentialOf(req)) === "s3" ? "s3" : undefined);
    const upstream = service ? upstreamOf[service] : undefined;
    if (service === "s3" && upstream) {
      if (presignExpired(req.path)) return s3Answer(403, "AccessDenied", "Request has expired");
      const refused = check("s3", req.method, req, body);
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
      refused = check(service, op, req, body);
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
    const sender = senderOf(req.headers);
    // whatever becomes of the send (refused, failed, answered), receives stop waiting for it
    const sent = sends ? beginSend(queueNameOf(body)) : undefined;
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
      queues.add(created);
      for (const l of createdListeners) l(created);
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
        rememberSenders(op, out, sender);
        sent?.();
        if (sentListeners.length) announceSent(op, body, out);
      } else out = await withSenders(body, out);
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
    setPolicy(p) {
      policy = p;
      decisions = new Map();
    },
    addPrincipal(key, principal) {
      policy.principals.set(key, principal);
    },
    setDynamodbThrottleRate(rate) {
      throttleRate = rate;
    },
    setStartExecutionThrottleRate(rate) {
      startThrottleRate = rate;
    },
    get throttled() {
      return throttled;
    },
    onMessageSent(listener) {
      sentListeners.push(listener);
    },
    onQueueCreated(listener) {
      createdListeners.push(listener);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
