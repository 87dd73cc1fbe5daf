// The IAM gateway in front of the embedded DynamoDB, SQS and Step Functions, driven by the real
// SDK clients: who may do what is decided by the access key of the signed request alone.

import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import { CreateStateMachineCommand, SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Emulators, startEmulators } from "../../local/emulators.js";
import { type GatewayPrincipal, startGateway } from "../../local/iam/gateway.js";
import { identityOf } from "../../local/iam/identities.js";
import { userIdOf } from "../../local/iam/requests.js";

const ACCOUNT = "000000000000";
const TABLE = "iam-gateway-items";
const TABLE_ARN = `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/${TABLE}`;
const SM_ARN = `arn:aws:states:us-east-1:${ACCOUNT}:stateMachine:iam-gateway-sm`;
const SESSION = `arn:aws:sts::${ACCOUNT}:assumed-role/novaless-scheduler/novaless-scheduler`;

// The scheduler's key, allowed to read one table only; the operator's, allowed everything.
const reader = identityOf("scheduler");
const operator = identityOf("operator");
const principals = new Map<string, GatewayPrincipal>([
  [
    reader.accessKeyId,
    {
      name: "scheduler",
      roleArn: `arn:aws:iam::${ACCOUNT}:role/novaless-scheduler`,
      sessionArn: SESSION,
      statements: [{ Effect: "Allow", Action: ["dynamodb:GetItem"], Resource: [TABLE_ARN] }],
    },
  ],
  [
    operator.accessKeyId,
    {
      name: "operator",
      roleArn: `arn:aws:iam::${ACCOUNT}:role/novaless-operator`,
      sessionArn: `arn:aws:sts::${ACCOUNT}:assumed-role/novaless-operator/operator`,
      statements: [{ Effect: "Allow", Action: ["*"], Resource: ["*"] }],
    },
  ],
]);

let emulators: Emulators;
const config = (credentials: { accessKeyId: string; secretAccessKey: string }) => ({
  endpoint: emulators.gateway!.endpoint,
  region: "us-east-1",
  credentials,
  maxAttempts: 1,
});
const errorOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e as Error & { $metadata?: { httpStatusCode?: number } };
  }
  throw new Error("expected the call to fail");
};

beforeAll(async () => {
  emulators = await startEmulators({ sfn: {}, iam: { policy: { principals, resource: [] } } });
  const client = new DynamoDBClient(config(operator));
  await client.send(
    new CreateTableCommand({
      TableName: TABLE,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
    }),
  );
  // written only once ACTIVE: dynalite's CREATING ends on a timer, DynamoDB's after seconds
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: TABLE });
});
afterAll(async () => {
  await emulators?.stop();
});

describe("IAM at the gateway", () => {
  it("the environment points every client at the gateway, as the operator by default", () => {
    expect(emulators.env.AWS_ENDPOINT_URL_DYNAMODB).toBe(emulators.gateway!.endpoint);
    expect(emulators.env.AWS_ENDPOINT_URL_SQS).toBe(emulators.gateway!.endpoint);
    expect(emulators.env.AWS_ENDPOINT_URL_SFN).toBe(emulators.gateway!.endpoint);
    expect(emulators.env.AWS_ACCESS_KEY_ID).toBe(operator.accessKeyId);
  });

  it("an allowed call goes through to the emulator", async () => {
    await new DynamoDBClient(config(operator)).send(
      new PutItemCommand({ TableName: TABLE, Item: { pk: { S: "a" }, v: { S: "1" } } }),
    );
    const out = await new DynamoDBClient(config(reader)).send(
      new GetItemCommand({ TableName: TABLE, Key: { pk: { S: "a" } } }),
    );
    expect(out.Item?.v?.S).toBe("1");
  });

  it("a denied DynamoDB call: AccessDeniedException naming principal, action and resource", async () => {
    const e = await errorOf(
      new DynamoDBClient(config(reader)).send(
        new PutItemCommand({ TableName: TABLE, Item: { pk: { S: "b" } } }),
      ),
    );
    expect(e.name).toBe("AccessDeniedException");
    expect(e.message).toBe(
      `User: ${SESSION} is not authorized to perform: dynamodb:PutItem on resource: ${TABLE_ARN} because no identity-based policy allows the dynamodb:PutItem action`,
    );
    expect(e.$metadata?.httpStatusCode).toBe(400);
  });

  it("a denied SQS call and a denied StartExecution answer AccessDeniedException too", async () => {
    const { QueueUrl } = await new SQSClient(config(operator)).send(
      new CreateQueueCommand({ QueueName: "iam-q" }),
    );
    // The queue URL names the host the request was sent to (the gateway's): LocalStack does so
    // only with SQS_ENDPOINT_STRATEGY=dynamic (docs/localstack.md).
    expect(
      QueueUrl,
      "the queue URL should name the gateway's host (LocalStack: set SQS_ENDPOINT_STRATEGY=dynamic)",
    ).toContain(emulators.gateway!.endpoint.replace("http://", ""));
    const sqs = await errorOf(
      new SQSClient(config(reader)).send(new SendMessageCommand({ QueueUrl, MessageBody: "x" })),
    );
    expect(sqs.name).toBe("AccessDeniedException");
    expect(sqs.message).toContain(
      `perform: sqs:SendMessage on resource: arn:aws:sqs:us-east-1:${ACCOUNT}:iam-q`,
    );

    await new SFNClient(config(operator)).send(
      new CreateStateMachineCommand({
        name: "iam-gateway-sm",
        roleArn: `arn:aws:iam::${ACCOUNT}:role/x`,
        definition: JSON.stringify({ StartAt: "P", States: { P: { Type: "Pass", End: true } } }),
      }),
    );
    const sfn = await errorOf(
      new SFNClient(config(reader)).send(new StartExecutionCommand({ stateMachineArn: SM_ARN, input: "{}" })),
    );
    expect(sfn.name).toBe("AccessDeniedException");
    expect(sfn.message).toContain(`perform: states:StartExecution on resource: ${SM_ARN}`);
  });

  it("a decision holds for its policy's life only: setPolicy drops the remembered decisions", async () => {
    const get = () =>
      new DynamoDBClient(config(reader)).send(
        new GetItemCommand({ TableName: TABLE, Key: { pk: { S: "a" } } }),
      );
    const put = () =>
      new DynamoDBClient(config(reader)).send(
        new PutItemCommand({ TableName: TABLE, Item: { pk: { S: "c" } } }),
      );
    await get();
    expect((await errorOf(put())).name).toBe("AccessDeniedException");
    expect((await errorOf(put())).name).toBe("AccessDeniedException"); // a remembered refusal
    const gateway = emulators.gateway!;
    const revoked = new Map(principals);
    revoked.set(reader.accessKeyId, { ...principals.get(reader.accessKeyId)!, statements: [] });
    try {
      gateway.setPolicy({ principals: revoked, resource: [] });
      expect((await errorOf(get())).name).toBe("AccessDeniedException");
    } finally {
      gateway.setPolicy({ principals, resource: [] });
    }
    await get();
  });

  it("an unknown access key is refused as AWS refuses it", async () => {
    const e = await errorOf(
      new DynamoDBClient(config({ accessKeyId: "AKIAUNKNOWN000000000", secretAccessKey: "x" })).send(
        new GetItemCommand({ TableName: TABLE, Key: { pk: { S: "a" } } }),
      ),
    );
    expect(e.name).toBe("UnrecognizedClientException");
  });

  it("a receive already waiting names each message's sender, though its answer overtakes the send's", async () => {
    // SQS hands a message to a waiting long poll as it stores it, so the receive's answer can
    // reach the gateway before the send's (which names the message). Here SQS's answers to sends
    // are held back 300 ms, so every receive's answer comes first.
    const slow = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const sends = String(req.headers["x-amz-target"]).endsWith(".SendMessage");
        const up = httpRequest(
          new URL(req.url ?? "/", emulators.endpoints.sqs),
          { method: req.method, headers: req.headers },
          (upRes) => {
            const answer: Buffer[] = [];
            upRes.on("data", (c: Buffer) => answer.push(c));
            upRes.on("end", () =>
              setTimeout(
                () => {
                  res.writeHead(upRes.statusCode ?? 502, upRes.headers);
                  res.end(Buffer.concat(answer));
                },
                sends ? 300 : 0,
              ),
            );
          },
        );
        up.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r));
    const gateway = await startGateway({
      upstreams: {
        dynamodb: emulators.endpoints.dynamodb,
        sqs: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`,
      },
      policy: { principals, resource: [] },
    });
    try {
      const sqs = new SQSClient({ ...config(operator), endpoint: gateway.endpoint });
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: "iam-gateway-senders" }));
      const received = [];
      for (let i = 0; i < 3; i++) {
        const receive = sqs.send(
          new ReceiveMessageCommand({
            QueueUrl,
            WaitTimeSeconds: 5,
            MessageSystemAttributeNames: ["SenderId"],
          }),
        );
        await new Promise((r) => setTimeout(r, 50));
        await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `m${i}` }));
        received.push(...((await receive).Messages ?? []));
      }
      expect(received).toHaveLength(3);
      for (const m of received)
        expect(m.Attributes?.SenderId).toBe(userIdOf(principals.get(operator.accessKeyId)!));
    } finally {
      await gateway.stop();
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });
});

describe("SQS and DynamoDB limits through the gateway", () => {
  it("a queue name outside SQS's rule: InvalidParameterValue with SQS's message", async () => {
    const sqs = new SQSClient(config(operator));
    for (const QueueName of ["compute-1.example.org", "x".repeat(81)]) {
      const e = await errorOf(sqs.send(new CreateQueueCommand({ QueueName })));
      expect(e.name).toBe("InvalidParameterValue");
      expect(e.message).toBe(
        "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
      );
    }
    const fifo = await errorOf(
      sqs.send(new CreateQueueCommand({ QueueName: "q", Attributes: { FifoQueue: "true" } })),
    );
    expect(fifo.name).toBe("InvalidParameterValue");
    expect(fifo.message).toMatch(/must end with \.fifo suffix and be 1 to 80 in length/);
    const ok = await sqs.send(new CreateQueueCommand({ QueueName: "x".repeat(80) }));
    expect(ok.QueueUrl).toMatch(/x{80}$/);
  });

  it("a message over the queue's MaximumMessageSize is refused", async () => {
    const sqs = new SQSClient(config(operator));
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: "iam-small", Attributes: { MaximumMessageSize: "1024" } }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "x".repeat(1024) }));
    const e = await errorOf(sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: "x".repeat(1025) })));
    expect(e.message).toMatch(/Message must be shorter than 1024 bytes/);
  });

  it("an item over 400 KB is refused", async () => {
    const ddb = new DynamoDBClient(config(operator));
    const e = await errorOf(
      ddb.send(
        new PutItemCommand({ TableName: TABLE, Item: { pk: { S: "big" }, v: { S: "x".repeat(410_000) } } }),
      ),
    );
    expect(e.name).toBe("ValidationException");
    expect(e.message).toMatch(/Item size has exceeded the maximum allowed size/);
  });

  it("injected throttling answers ProvisionedThroughputExceededException as DynamoDB does", async () => {
    emulators.gateway!.setDynamodbThrottleRate(1);
    try {
      const e = await errorOf(
        new DynamoDBClient(config(reader)).send(
          new GetItemCommand({ TableName: TABLE, Key: { pk: { S: "a" } } }),
        ),
      );
      expect(e.name).toBe("ProvisionedThroughputExceededException");
      expect(e.message).toMatch(/^The level of configured provisioned throughput for the table was exceeded/);
    } finally {
      emulators.gateway!.setDynamodbThrottleRate(0);
    }
  });
});
