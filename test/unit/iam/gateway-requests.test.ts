import { describe, expect, it } from "vitest";
import {
  dynamodbAuthorizations,
  s3Authorizations,
  sqsAuthorizations,
  statesAuthorizations,
} from "../../../local/iam/authorizations.js";
import { accessDeniedMessage, queueNameError } from "../../../local/iam/authorizer.js";
import { presignExpired } from "../../../local/iam/requests.js";

const T = "arn:aws:dynamodb:us-east-1:000000000000:table/";
const Q = "arn:aws:sqs:us-east-1:000000000000:";

describe("requests → the IAM actions and resources AWS authorizes", () => {
  it("DynamoDB: the table, its index for Query/Scan, every table of a batch or transaction", () => {
    expect(dynamodbAuthorizations("GetItem", { TableName: "hosts" })).toEqual([
      { action: "dynamodb:GetItem", resource: `${T}hosts` },
    ]);
    expect(dynamodbAuthorizations("Query", { TableName: "instances", IndexName: "by-project" })).toEqual([
      { action: "dynamodb:Query", resource: `${T}instances/index/by-project` },
    ]);
    expect(dynamodbAuthorizations("BatchGetItem", { RequestItems: { a: {}, b: {} } })).toEqual([
      { action: "dynamodb:BatchGetItem", resource: `${T}a` },
      { action: "dynamodb:BatchGetItem", resource: `${T}b` },
    ]);
    expect(
      dynamodbAuthorizations("TransactWriteItems", {
        TransactItems: [{ ConditionCheck: { TableName: "a" } }, { Update: { TableName: "b" } }],
      }),
    ).toEqual([
      { action: "dynamodb:ConditionCheckItem", resource: `${T}a` },
      { action: "dynamodb:UpdateItem", resource: `${T}b` },
    ]);
  });

  it("SQS: the queue of QueueUrl (QueueName to create), batch calls as their single action", () => {
    expect(sqsAuthorizations("SendMessageBatch", { QueueUrl: "http://127.0.0.1:9/000000000000/q1" })).toEqual(
      [{ action: "sqs:SendMessage", resource: `${Q}q1` }],
    );
    expect(sqsAuthorizations("DeleteMessageBatch", { QueueUrl: "http://h/000000000000/q1" })[0]?.action).toBe(
      "sqs:DeleteMessage",
    );
    expect(sqsAuthorizations("CreateQueue", { QueueName: "q2" })).toEqual([
      { action: "sqs:CreateQueue", resource: `${Q}q2` },
    ]);
    expect(sqsAuthorizations("ListQueues", {})).toEqual([{ action: "sqs:ListQueues", resource: "*" }]);
  });

  it("Step Functions: the state machine or the execution", () => {
    const sm = "arn:aws:states:us-east-1:000000000000:stateMachine:c";
    expect(statesAuthorizations("StartExecution", { stateMachineArn: sm })).toEqual([
      { action: "states:StartExecution", resource: sm },
    ]);
    expect(statesAuthorizations("CreateStateMachine", { name: "c" })[0]?.resource).toBe(sm);
    expect(statesAuthorizations("DescribeExecution", { executionArn: "arn:e" })[0]?.resource).toBe("arn:e");
  });

  it("AccessDenied names the principal, the action and the resource, as AWS does", () => {
    expect(
      accessDeniedMessage(
        "arn:aws:sts::000000000000:assumed-role/r/s",
        { action: "dynamodb:GetItem", resource: `${T}x` },
        { allowed: false, reason: "implicit-deny" },
      ),
    ).toBe(
      `User: arn:aws:sts::000000000000:assumed-role/r/s is not authorized to perform: dynamodb:GetItem on resource: ${T}x because no identity-based policy allows the dynamodb:GetItem action`,
    );
  });
});

describe("SQS queue names", () => {
  it("1-80 of letters, digits, - and _; FIFO names end in .fifo within the 80", () => {
    expect(queueNameError("novaless-compute-host_1", false)).toBeUndefined();
    expect(queueNameError("x".repeat(80), false)).toBeUndefined();
    expect(queueNameError("x".repeat(81), false)).toBe(
      "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
    );
    expect(queueNameError("compute-1.example.org", false)).toMatch(/^Can only include/);
    expect(queueNameError("", false)).toMatch(/^Can only include/);
    expect(queueNameError(`${"x".repeat(75)}.fifo`, true)).toBeUndefined();
    expect(queueNameError(`${"x".repeat(76)}.fifo`, true)).toMatch(/^The name of a FIFO queue/);
    expect(queueNameError("plain", true)).toMatch(/must end with \.fifo suffix/);
  });
});

describe("S3 REST requests (path-style) → the action and the bucket or object ARN", () => {
  const B = "arn:aws:s3:::images-bucket";
  it("objects: GET and HEAD are s3:GetObject, PUT and a multipart upload's steps s3:PutObject, DELETE s3:DeleteObject, an abort its own", () => {
    expect(s3Authorizations("GET", "/images-bucket/images/abc")).toEqual([
      { action: "s3:GetObject", resource: `${B}/images/abc` },
    ]);
    expect(s3Authorizations("HEAD", "/images-bucket/images/abc")).toEqual([
      { action: "s3:GetObject", resource: `${B}/images/abc` },
    ]);
    expect(s3Authorizations("PUT", "/images-bucket/images/a%20b?x-id=PutObject")).toEqual([
      { action: "s3:PutObject", resource: `${B}/images/a b` },
    ]);
    expect(s3Authorizations("POST", "/images-bucket/images/abc?uploads")).toEqual([
      { action: "s3:PutObject", resource: `${B}/images/abc` },
    ]);
    expect(s3Authorizations("PUT", "/images-bucket/images/abc?partNumber=2&uploadId=u")).toEqual([
      { action: "s3:PutObject", resource: `${B}/images/abc` },
    ]);
    expect(s3Authorizations("DELETE", "/images-bucket/images/abc?uploadId=u")).toEqual([
      { action: "s3:AbortMultipartUpload", resource: `${B}/images/abc` },
    ]);
    expect(s3Authorizations("DELETE", "/images-bucket/images/abc")).toEqual([
      { action: "s3:DeleteObject", resource: `${B}/images/abc` },
    ]);
  });

  it("buckets: create, delete, list (and HEAD), and the account's bucket list", () => {
    expect(s3Authorizations("PUT", "/images-bucket")).toEqual([{ action: "s3:CreateBucket", resource: B }]);
    expect(s3Authorizations("DELETE", "/images-bucket/")).toEqual([
      { action: "s3:DeleteBucket", resource: B },
    ]);
    expect(s3Authorizations("GET", "/images-bucket?list-type=2&prefix=images%2F")).toEqual([
      { action: "s3:ListBucket", resource: B },
    ]);
    expect(s3Authorizations("HEAD", "/images-bucket")).toEqual([{ action: "s3:ListBucket", resource: B }]);
    expect(s3Authorizations("GET", "/")).toEqual([{ action: "s3:ListAllMyBuckets", resource: "*" }]);
  });
});

describe("S3 presigned URLs", () => {
  it("expire at X-Amz-Date + X-Amz-Expires", () => {
    const path =
      "/b/images/x?X-Amz-Credential=k%2F20261126%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261126T100000Z&X-Amz-Expires=3600";
    expect(presignExpired(path, Date.UTC(2026, 10, 26, 10, 59, 59))).toBe(false);
    expect(presignExpired(path, Date.UTC(2026, 10, 26, 11, 0, 1))).toBe(true);
    expect(presignExpired("/b/images/x")).toBe(false);
  });
});
