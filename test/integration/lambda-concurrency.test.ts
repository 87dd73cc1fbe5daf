// Lambda's concurrency as the local runtime models it (local/concurrency.ts): the account's
// limit, reservations that guarantee and cap, the unreserved floor, TooManyRequestsException
// (429) with its Reason; and an SQS event source mapping (local/event-source.ts): its
// MaximumConcurrency, throttled batches, partial batch failures, SQS's redrive, and the settings AWS
// refuses, against the embedded SQS through the real SDK client.
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import type { SQSEvent } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { AccountConcurrency } from "../../local/concurrency.js";
import { type EventSourceMapping, mappingRefusal, startEventSource } from "../../local/event-source.js";
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

describe("an SQS event source mapping", () => {
  const name = () => `esm-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  async function queueWith(
    messages: string[],
    visibilityTimeout: number,
    maxReceiveCount?: number,
  ): Promise<{ sqs: SQSClient; url: string; dlqUrl?: string }> {
    const sqs = new SQSClient({});
    let dlqUrl: string | undefined;
    const attributes: Record<string, string> = { VisibilityTimeout: String(visibilityTimeout) };
    if (maxReceiveCount !== undefined) {
      dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `${name()}-dlq` }))).QueueUrl!;
      const dlqArn = (
        await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ["QueueArn"] }))
      ).Attributes!.QueueArn!;
      attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount });
    }
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: name(), Attributes: attributes })))
      .QueueUrl!;
    for (const body of messages) await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    return { sqs, url, ...(dlqUrl ? { dlqUrl } : {}) };
  }
  const mapping = (m: Partial<EventSourceMapping> = {}): EventSourceMapping => ({
    functionName: "novaless-test",
    queueArn: "arn:aws:sqs:us-east-1:000000000000:q",
    ...m,
  });
  async function depth(sqs: SQSClient, url: string): Promise<number> {
    const a = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
      }),
    );
    return (
      Number(a.Attributes?.ApproximateNumberOfMessages) +
      Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible)
    );
  }
  const until = async (done: () => boolean | Promise<boolean>, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error("timed out");
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it("refuses what AWS refuses: MaximumConcurrency outside 2-1000, BatchSize above 10 without a window, a visibility timeout below the function's", () => {
    const queue = { visibilityTimeoutSeconds: 180, fifo: false };
    expect(mappingRefusal(mapping({ maximumConcurrency: 1 }), queue, 30)).toMatch(/from 2 to 1000, got 1/);
    expect(mappingRefusal(mapping({ maximumConcurrency: 1001 }), queue, 30)).toMatch(/from 2 to 1000/);
    expect(mappingRefusal(mapping({ batchSize: 11 }), queue, 30)).toMatch(
      /MaximumBatchingWindowInSeconds must be at least 1/,
    );
    expect(
      mappingRefusal(mapping({ batchSize: 100, maximumBatchingWindowSeconds: 1 }), queue, 30),
    ).toBeUndefined();
    expect(mappingRefusal(mapping({ batchSize: 11 }), { ...queue, fifo: true }, 30)).toMatch(/from 1 to 10/);
    expect(mappingRefusal(mapping({ maximumBatchingWindowSeconds: 301 }), queue, 30)).toMatch(/0 to 300/);
    expect(mappingRefusal(mapping({ functionResponseTypes: ["Everything"] }), queue, 30)).toMatch(
      /ReportBatchItemFailures/,
    );
    expect(mappingRefusal(mapping(), queue, 30, true)).toMatch(/lacks ReportBatchItemFailures/);
    expect(mappingRefusal(mapping(), { ...queue, visibilityTimeoutSeconds: 20 }, 30)).toBe(
      "Queue visibility timeout: 20 seconds is less than Function timeout: 30 seconds",
    );
    expect(
      mappingRefusal(
        mapping({ batchSize: 10, maximumConcurrency: 5, functionResponseTypes: ["ReportBatchItemFailures"] }),
        queue,
        30,
      ),
    ).toBeUndefined();
  });

  it("never has more invocations in flight than its MaximumConcurrency", async () => {
    const { url } = await queueWith(
      Array.from({ length: 12 }, (_, i) => `m${i}`),
      30,
    );
    let inFlight = 0;
    let peak = 0;
    const seen = new Set<string>();
    const source = startEventSource({
      mapping: mapping({ batchSize: 1, maximumConcurrency: 2 }),
      queueUrl: url,
      visibilityTimeoutSeconds: 30,
      handler: async (e: SQSEvent) => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setTimeout(r, 30));
        for (const r of e.Records) seen.add(r.body);
        inFlight--;
        return { batchItemFailures: [] };
      },
    });
    try {
      await until(() => seen.size === 12);
    } finally {
      await source.stop();
    }
    expect(peak).toBe(2);
  });

  it("a throttled batch is retried while hidden, then comes back after the visibility timeout, not lost", async () => {
    const { sqs, url } = await queueWith(["m"], 1);
    let calls = 0;
    const delivered: string[] = [];
    const throttledUntil = Date.now() + 1_500;
    const source = startEventSource({
      mapping: mapping({ maximumConcurrency: 2 }),
      queueUrl: url,
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
      await until(() => delivered.length > 0);
    } finally {
      await source.stop();
    }
    // retried within its first receive, then received again once visible: delivered once, deleted
    expect(calls).toBeGreaterThan(2);
    expect(delivered).toHaveLength(1);
    expect(Number(delivered[0]!.split("#")[1])).toBeGreaterThan(1);
    expect(await depth(sqs, url)).toBe(0);
  });

  it("with ReportBatchItemFailures only the reported records come back, and SQS redrives one to its DLQ after maxReceiveCount", async () => {
    const { sqs, url, dlqUrl } = await queueWith(["good-1", "bad", "good-2"], 1, 2);
    const receipts: string[] = [];
    const source = startEventSource({
      mapping: mapping({ functionResponseTypes: ["ReportBatchItemFailures"], maximumConcurrency: 2 }),
      queueUrl: url,
      visibilityTimeoutSeconds: 1,
      handler: async (e: SQSEvent) => {
        receipts.push(...e.Records.map((r) => r.body));
        return {
          batchItemFailures: e.Records.filter((r) => r.body === "bad").map((r) => ({
            itemIdentifier: r.messageId,
          })),
        };
      },
    });
    let parked: string[] = [];
    try {
      await until(async () => {
        const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlqUrl!, WaitTimeSeconds: 0 }));
        parked = (r.Messages ?? []).map((m) => m.Body ?? "");
        return parked.length > 0;
      });
    } finally {
      await source.stop();
    }
    expect(parked).toEqual(["bad"]);
    // the good ones once; the bad one its maxReceiveCount times, then SQS moved it
    expect(receipts.filter((b) => b.startsWith("good")).sort()).toEqual(["good-1", "good-2"]);
    expect(receipts.filter((b) => b === "bad")).toHaveLength(2);
    expect(await depth(sqs, url)).toBe(0);
  });

  it("without ReportBatchItemFailures a reported failure is ignored and the whole batch deleted, as Lambda does", async () => {
    const { sqs, url } = await queueWith(["a", "b"], 1);
    const receipts: string[] = [];
    const source = startEventSource({
      mapping: mapping({ maximumConcurrency: 2 }),
      queueUrl: url,
      visibilityTimeoutSeconds: 1,
      handler: async (e: SQSEvent) => {
        receipts.push(...e.Records.map((r) => r.body));
        return { batchItemFailures: e.Records.map((r) => ({ itemIdentifier: r.messageId })) };
      },
    });
    try {
      await until(async () => receipts.length >= 2 && (await depth(sqs, url)) === 0);
      // past the visibility timeout: nothing comes back
      await new Promise((r) => setTimeout(r, 1_500));
    } finally {
      await source.stop();
    }
    expect(receipts.sort()).toEqual(["a", "b"]);
  });

  it("a function error leaves the whole batch to its visibility timeout", async () => {
    const { sqs, url } = await queueWith(["x"], 1);
    const counts: number[] = [];
    const source = startEventSource({
      mapping: mapping({ functionResponseTypes: ["ReportBatchItemFailures"], maximumConcurrency: 2 }),
      queueUrl: url,
      visibilityTimeoutSeconds: 1,
      handler: async (e: SQSEvent) => {
        counts.push(Number(e.Records[0]!.attributes.ApproximateReceiveCount));
        if (counts.length === 1) throw new Error("boom");
        return { batchItemFailures: [] };
      },
    });
    try {
      await until(async () => counts.length === 2 && (await depth(sqs, url)) === 0);
    } finally {
      await source.stop();
    }
    expect(counts).toEqual([1, 2]);
  });
});
