// Lambda's concurrency as the local runtime models it (local/concurrency.ts): the account's
// limit, reservations that guarantee and cap, the unreserved floor, TooManyRequestsException
// (429) with its Reason. (The stack has no SQS event source mapping, so the runtime models none.)
import { describe, expect, it } from "vitest";
import { AccountConcurrency } from "../../local/concurrency.js";
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
