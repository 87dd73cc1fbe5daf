// Lambda's concurrency as the local runtime models it (local/concurrency.ts): the account's
// limit, reservations that guarantee and cap, the unreserved floor, TooManyRequestsException
// (429) with its Reason; and an SQS event source's MaximumConcurrency and throttled batches,
// against the embedded SQS through the real SDK client.
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { AccountConcurrency } from "../../local/concurrency.js";
import { startEventSource } from "../../local/event-source.js";
import { LambdaServiceError, localFunction } from "../../local/lambda.js";
import { useLocalAws } from "./local-aws.js";

useLocalAws();

const caught = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
};

describe("the account's concurrency", () => {
  it("a reservation guarantees its function and caps it; the others share the unreserved pool", () => {
    const account = new AccountConcurrency({ accountLimit: 10, unreservedMinimum: 2, reserved: { a: 3 } });
    expect(account.unreservedPool).toBe(7);
    const a = [1, 2, 3].map(() => account.acquire("a"));
    const capped = caught(() => account.acquire("a")) as LambdaServiceError;
    expect(capped).toBeInstanceOf(LambdaServiceError);
    expect([capped.name, capped.statusCode, capped.message, capped.reason]).toEqual([
      "TooManyRequestsException",
      429,
      "Rate Exceeded.",
      "ReservedFunctionConcurrentInvocationLimitExceeded",
    ]);
    expect(capped.stepFunctionsError.name).toBe("Lambda.TooManyRequestsException");
    // the unreserved functions fill the pool; a's reservation is still its own
    const others = Array.from({ length: 7 }, (_, i) => account.acquire(i % 2 ? "b" : "c"));
    const full = caught(() => account.acquire("b")) as LambdaServiceError;
    expect(full.reason).toBe("ConcurrentInvocationLimitExceeded");
    a[0]!();
    expect(() => account.acquire("a")).not.toThrow();
    expect(() => account.acquire("b")).toThrow(LambdaServiceError);
    others[0]!();
    expect(() => account.acquire("b")).not.toThrow();
    expect(account.throttles).toEqual(
      new Map([
        ["a", 1],
        ["b", 2],
      ]),
    );
  });

  it("refuses reservations that leave less than the unreserved floor (100 on AWS), as the deploy would", () => {
    expect(() => new AccountConcurrency({ reserved: { a: 450, b: 450 } })).not.toThrow();
    const e = caught(() => new AccountConcurrency({ reserved: { a: 450, b: 451 } })) as LambdaServiceError;
    expect(e.name).toBe("InvalidParameterValueException");
    expect(e.message).toContain("below its minimum value of [100]");
    expect(() => new AccountConcurrency({ accountLimit: 10 })).toThrow(/minimum value of \[100\]/);
  });

  it("an invocation holds its slot until it ends; a throttled invoke never runs the handler", async () => {
    const account = new AccountConcurrency({ accountLimit: 1, unreservedMinimum: 0 });
    let ran = 0;
    let finish: () => void = () => {};
    const fn = localFunction({
      name: "f",
      arn: "arn:aws:lambda:us-east-1:000000000000:function:f",
      timeoutSeconds: 3,
      concurrency: account,
      handler: async () => {
        ran++;
        await new Promise<void>((r) => {
          finish = r;
        });
        return "ok";
      },
    });
    const first = fn.invoke({});
    await expect(fn.invoke({})).rejects.toMatchObject({ name: "TooManyRequestsException", statusCode: 429 });
    expect(ran).toBe(1);
    finish();
    await expect(first).resolves.toBe("ok");
    expect(account.inFlightOf("f")).toBe(0);
    const again = fn.invoke({});
    finish();
    await expect(again).resolves.toBe("ok");
  });
});

describe("an SQS event source", () => {
  async function queueWith(messages: number, visibilityTimeout: number) {
    const sqs = new SQSClient({});
    const q = await sqs.send(
      new CreateQueueCommand({
        QueueName: `concurrency-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
        Attributes: { VisibilityTimeout: String(visibilityTimeout) },
      }),
    );
    for (let i = 0; i < messages; i++)
      await sqs.send(new SendMessageCommand({ QueueUrl: q.QueueUrl!, MessageBody: `m${i}` }));
    return { sqs, url: q.QueueUrl! };
  }

  it("never has more invocations in flight than its MaximumConcurrency", async () => {
    const { url } = await queueWith(12, 30);
    let inFlight = 0;
    let peak = 0;
    const seen = new Set<string>();
    const source = startEventSource({
      queueUrl: url,
      queueArn: "arn:aws:sqs:us-east-1:000000000000:q",
      batchSize: 1,
      pollers: 8,
      maximumConcurrency: 2,
      handler: async (e: SQSEvent) => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setTimeout(r, 30));
        for (const r of e.Records) seen.add(r.body);
        inFlight--;
        return { batchItemFailures: [] };
      },
    });
    try {
      while (seen.size < 12) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await source.stop();
    }
    expect(peak).toBe(2);
    expect(() =>
      startEventSource({
        queueUrl: url,
        queueArn: "",
        maximumConcurrency: 1,
        handler: async () => ({ batchItemFailures: [] }),
      }),
    ).toThrow(/from 2 to 1000/);
  });

  it("a throttled batch is retried while hidden, then comes back after the visibility timeout, not lost", async () => {
    const { sqs, url } = await queueWith(1, 1);
    let calls = 0;
    const delivered: string[] = [];
    const throttledUntil = Date.now() + 1_500;
    const source = startEventSource({
      queueUrl: url,
      queueArn: "arn:aws:sqs:us-east-1:000000000000:q",
      maximumConcurrency: 2,
      visibilityTimeoutSeconds: 1,
      handler: async (e: SQSEvent) => {
        calls++;
        if (Date.now() < throttledUntil)
          throw new LambdaServiceError("TooManyRequestsException", 429, "Rate Exceeded.");
        delivered.push(...e.Records.map((r) => `${r.body}#${r.attributes.ApproximateReceiveCount}`));
        return { batchItemFailures: [] };
      },
    });
    try {
      while (delivered.length === 0) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await source.stop();
    }
    // retried within its first receive, then received again once visible: delivered once, deleted
    expect(calls).toBeGreaterThan(2);
    expect(delivered).toHaveLength(1);
    expect(Number(delivered[0]!.split("#")[1])).toBeGreaterThan(1);
    const left = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    expect(
      Number(left.Attributes?.ApproximateNumberOfMessages) +
        Number(left.Attributes?.ApproximateNumberOfMessagesNotVisible),
    ).toBe(0);
  });
});
