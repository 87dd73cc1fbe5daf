// SQS's documented limits at the local gateway (local/sqs-limits.ts), through the real SDK client
// over both transports the local runtime uses: sockets, and serve() in process.
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  QueueNameExists,
  SetQueueAttributesCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Emulators, startEmulators } from "../../local/emulators.js";
import { identityOf } from "../../local/iam/identities.js";
import { inProcessHandler } from "../../local/in-process.js";
import { runSuffix } from "../../local/tables.js";
import { operatorOnly } from "./local-aws.js";

const principals = operatorOnly();
// its own names when the SQS is shared (NOVALESS_EXTERNAL_AWS=1)
const P = `limits${runSuffix()}-`;
const MANY = 1_005;

let emulators: Emulators;
beforeAll(async () => {
  emulators = await startEmulators({ iam: { policy: { principals, resource: [] } } });
  const sqs = client("sockets");
  const names = Array.from({ length: MANY }, (_, i) => `${P}many-${String(i).padStart(4, "0")}`);
  for (let i = 0; i < names.length; i += 50) {
    await Promise.all(
      names.slice(i, i + 50).map((QueueName) => sqs.send(new CreateQueueCommand({ QueueName }))),
    );
  }
}, 120_000);
afterAll(async () => {
  await emulators?.stop();
});

function client(transport: "sockets" | "in-process"): SQSClient {
  return new SQSClient({
    endpoint: emulators.gateway!.endpoint,
    region: "us-east-1",
    credentials: identityOf("operator"),
    maxAttempts: 1,
    ...(transport === "in-process" ? { requestHandler: inProcessHandler(emulators.gateway!) } : {}),
  });
}

const errorOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e as Error & { Code?: string; $metadata?: { httpStatusCode?: number } };
  }
  throw new Error("expected the call to fail");
};

describe.each(["sockets", "in-process"] as const)("over %s", (transport) => {
  const sqs = () => client(transport);

  it("ListQueues without MaxResults: at most 1,000 URLs and no NextToken", async () => {
    const r = await sqs().send(new ListQueuesCommand({ QueueNamePrefix: `${P}many-` }));
    expect(r.QueueUrls).toHaveLength(1000);
    expect(r.NextToken).toBeUndefined();
  });

  it("ListQueues with MaxResults pages with NextToken to every queue, each once", async () => {
    const seen: string[] = [];
    let pages = 0;
    let NextToken: string | undefined;
    do {
      const r = await sqs().send(
        new ListQueuesCommand({ QueueNamePrefix: `${P}many-`, MaxResults: 400, NextToken }),
      );
      expect(r.QueueUrls!.length).toBeLessThanOrEqual(400);
      seen.push(...r.QueueUrls!);
      NextToken = r.NextToken;
      pages++;
    } while (NextToken);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(MANY);
    expect(seen.at(-1)).toMatch(new RegExp(`/${P}many-${MANY - 1}$`));
  });

  it("ListQueues refuses MaxResults outside 1-1000 and a token not its own", async () => {
    for (const MaxResults of [0, 1001]) {
      const e = await errorOf(sqs().send(new ListQueuesCommand({ QueueNamePrefix: P, MaxResults })));
      expect(e.name).toBe("InvalidParameterValue");
    }
    const e = await errorOf(
      sqs().send(new ListQueuesCommand({ QueueNamePrefix: P, MaxResults: 5, NextToken: "nonsense" })),
    );
    expect(e.name).toBe("InvalidParameterValue");
  });

  it("CreateQueue of an existing name: the same attributes answer its URL; a different one QueueNameExists", async () => {
    const QueueName = `${P}${transport}-same`;
    const Attributes = { VisibilityTimeout: "45", MessageRetentionPeriod: "600" };
    const first = await sqs().send(new CreateQueueCommand({ QueueName, Attributes }));
    const again = await sqs().send(new CreateQueueCommand({ QueueName, Attributes }));
    expect(again.QueueUrl).toBe(first.QueueUrl);
    // no attributes, or one at its value (or SQS's default for one never set): the same queue
    expect((await sqs().send(new CreateQueueCommand({ QueueName }))).QueueUrl).toBe(first.QueueUrl);
    expect(
      (await sqs().send(new CreateQueueCommand({ QueueName, Attributes: { DelaySeconds: "0" } }))).QueueUrl,
    ).toBe(first.QueueUrl);

    const e = await errorOf(
      sqs().send(
        new CreateQueueCommand({ QueueName, Attributes: { ...Attributes, VisibilityTimeout: "30" } }),
      ),
    );
    expect(e).toBeInstanceOf(QueueNameExists);
    expect(e.name).toBe("QueueNameExists");
    expect(e.Code).toBe("QueueAlreadyExists");
    expect(e.$metadata?.httpStatusCode).toBe(400);
    expect(e.message).toBe(
      "A queue already exists with the same name and a different value for attribute VisibilityTimeout",
    );

    // once the queue's attribute is set, that is what it is compared with
    await sqs().send(
      new SetQueueAttributesCommand({ QueueUrl: first.QueueUrl, Attributes: { VisibilityTimeout: "30" } }),
    );
    const now = await sqs().send(
      new CreateQueueCommand({ QueueName, Attributes: { ...Attributes, VisibilityTimeout: "30" } }),
    );
    expect(now.QueueUrl).toBe(first.QueueUrl);
  });

  it("a RedrivePolicy is compared as SQS stored it: compact, deadLetterTargetArn first, maxReceiveCount a number", async () => {
    const QueueName = `${P}${transport}-redrive`;
    const dlq = await sqs().send(new CreateQueueCommand({ QueueName: `${QueueName}-dlq` }));
    const arn = (
      await sqs().send(
        new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }),
      )
    ).Attributes!.QueueArn!;
    const asSent = `{"maxReceiveCount":"5", "deadLetterTargetArn":"${arn}"}`;
    const stored = JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 5 });
    const first = await sqs().send(
      new CreateQueueCommand({ QueueName, Attributes: { RedrivePolicy: asSent } }),
    );
    // the same text again is refused: SQS kept its own form of it
    const e = await errorOf(
      sqs().send(new CreateQueueCommand({ QueueName, Attributes: { RedrivePolicy: asSent } })),
    );
    expect(e).toBeInstanceOf(QueueNameExists);
    expect(e.message).toMatch(/attribute RedrivePolicy$/);
    // in SQS's form it is the same queue
    const again = await sqs().send(
      new CreateQueueCommand({ QueueName, Attributes: { RedrivePolicy: stored } }),
    );
    expect(again.QueueUrl).toBe(first.QueueUrl);
    const other = JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 6 });
    expect(
      await errorOf(sqs().send(new CreateQueueCommand({ QueueName, Attributes: { RedrivePolicy: other } }))),
    ).toBeInstanceOf(QueueNameExists);
  });
});
