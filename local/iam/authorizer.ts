// The gateway's decision on a request, as AWS would make it: the signer known by its access key,
// each authorization it needs evaluated against its role's statements and the resource policies
// (a queue's tags included, for aws:ResourceTag), then the rules and throttles of the service.
import { DYNAMODB_DATA_OPERATIONS } from "../../lib/aws/meter.js";
import { log } from "../../lib/log.js";
import type { Answer } from "./answers.js";
import {
  type Authorization,
  dynamodbAuthorizations,
  s3Authorizations,
  sqsAuthorizations,
  statesAuthorizations,
} from "./authorizations.js";
import { type Decision, evaluate } from "./evaluate.js";
import type { GatewayOptions, GatewayPolicy, GatewayPrincipal, RawRequest, Service } from "./gateway.js";
import { credentialOf, principalContext } from "./requests.js";

/**
 * Decisions kept at most. The request context is a function of the principal alone and a policy is
 * fixed until setPolicy, so one evaluation per (access key, action, resource) holds for the
 * policy's life (10,000 hosts register with the same few dozen statements). Bounded: requests can
 * name any resource.
 */
const DECISIONS_MAX = 100_000;

export class Authorizer {
  private policy: GatewayPolicy;
  /** by access key, action and resource (and the queue's tags); setPolicy drops them */
  private decisions = new Map<string, Decision>();
  /** queue name → tags, from the CreateQueue/TagQueue requests allowed through */
  private readonly queueTags = new Map<string, Record<string, string>>();
  /** queues SQS created through the gateway: a GetQueueUrl refused for another is expected */
  private readonly queues = new Set<string>();
  dynamodbThrottleRate: number;
  startExecutionThrottleRate: number;
  /** DynamoDB requests answered with an injected throttle so far */
  throttled = 0;
  private readonly random: () => number;

  constructor(
    opts: Pick<GatewayOptions, "policy" | "dynamodbThrottleRate" | "startExecutionThrottleRate" | "random">,
  ) {
    this.policy = opts.policy;
    this.dynamodbThrottleRate = opts.dynamodbThrottleRate ?? 0;
    this.startExecutionThrottleRate = opts.startExecutionThrottleRate ?? 0;
    this.random = opts.random ?? Math.random;
  }

  get resourceStatements(): GatewayPolicy["resource"] {
    return this.policy.resource;
  }

  principal(accessKeyId: string): GatewayPrincipal | undefined {
    return this.policy.principals.get(accessKeyId);
  }

  setPolicy(policy: GatewayPolicy): void {
    this.policy = policy;
    this.decisions = new Map();
  }

  addPrincipal(accessKeyId: string, principal: GatewayPrincipal): void {
    this.policy.principals.set(accessKeyId, principal);
  }

  /** SQS created the queue (its CreateQueue answered 200). */
  queueCreated(name: string): void {
    this.queues.add(name);
  }

  /** undefined: forward; otherwise the answer AWS would give instead. */
  check(service: Service, op: string, req: RawRequest, body: Buffer): Answer | undefined {
    // the tags of the request being checked, recorded once it is allowed
    let pendingTags: { name: string; tags: Record<string, string> } | undefined;
    const key = credentialOf(req)?.split("/")[0];
    const principal = key ? this.policy.principals.get(key) : undefined;
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
        service === "sqs" ? this.queueTags.get(need.resource.split(":").pop() ?? "") : undefined;
      // a queue's tags are part of the decision (aws:ResourceTag): a tag change needs no flush
      const cacheKey = `${key}\n${need.action}\n${need.resource}${resourceTags ? `\n${JSON.stringify(resourceTags)}` : ""}`;
      let d = this.decisions.get(cacheKey);
      if (!d) {
        d = evaluate(principal.statements, this.policy.resource, {
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
        if (this.decisions.size >= DECISIONS_MAX) this.decisions.clear();
        this.decisions.set(cacheKey, d);
      }
      if (!d.allowed) {
        // A host asks for its queue before compute-events has created (and tagged) it: refused,
        // as on AWS, and it waits for the queue. Only a refusal of what exists is a warning.
        const expected =
          service === "sqs" && op === "GetQueueUrl" && !this.queues.has(String(parsed.QueueName ?? ""));
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
      const merged = { ...this.queueTags.get(pendingTags.name), ...pendingTags.tags };
      this.queueTags.set(pendingTags.name, merged);
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
      this.dynamodbThrottleRate > 0 &&
      this.random() < this.dynamodbThrottleRate
    ) {
      this.throttled++;
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
      this.startExecutionThrottleRate > 0 &&
      this.random() < this.startExecutionThrottleRate
    ) {
      return {
        status: 400,
        type: "com.amazonaws.swf.base.exceptions#ThrottlingException",
        message: "Rate exceeded",
      };
    }
    return undefined;
  }
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
