// Which IAM authorizations a request needs, as AWS's Service Authorization Reference names them:
// the action(s) and resource ARN(s) of each DynamoDB, SQS, Step Functions and S3 operation.
import { ACCOUNT, PARTITION, REGION } from "./identities.js";

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
