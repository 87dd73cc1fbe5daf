// A local Lambda function under Lambda's rules: payload limits, the timeout from the stack, and
// the error shape Step Functions and callers see.
import { AsyncLocalStorage } from "node:async_hooks";
import { describe, expect, it } from "vitest";
import {
  type LambdaContext,
  LambdaFunctionError,
  LambdaServiceError,
  localFunction,
  MAX_REQUEST_BYTES,
  MAX_RESPONSE_BYTES,
} from "../../local/lambda.js";

const ARN = "arn:aws:lambda:us-east-1:000000000000:function:scheduler";

function named(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

/** A JSON string value whose serialized payload is exactly `bytes` long. */
const payloadOf = (bytes: number) => "a".repeat(bytes - 2);

describe("localFunction", () => {
  it("invokes the handler with the event as JSON delivers it, and Lambda's context", async () => {
    const seen: { event: unknown; context: LambdaContext }[] = [];
    const event = { when: new Date(0), skip: undefined, n: 1 };
    const fn = localFunction({
      name: "scheduler",
      arn: ARN,
      timeoutSeconds: 30,
      memory: 1024,
      handler: (e, context) => {
        seen.push({ event: e, context });
        return { picked: "host-1", at: new Date(0) };
      },
    });
    const out = await fn.invoke(event, { awsRequestId: "req-1" });
    expect(out).toEqual({ picked: "host-1", at: "1970-01-01T00:00:00.000Z" });
    expect(seen[0]!.event).toEqual({ when: "1970-01-01T00:00:00.000Z", n: 1 });
    expect(seen[0]!.event).not.toBe(event);
    expect(seen[0]!.context).toMatchObject({
      functionName: "scheduler",
      invokedFunctionArn: ARN,
      memoryLimitInMB: "1024",
      awsRequestId: "req-1",
    });
    const remaining = seen[0]!.context.getRemainingTimeInMillis();
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(30_000);
    expect(fn).toMatchObject({ name: "scheduler", arn: ARN, timeoutSeconds: 30, memory: 1024 });
    expect(localFunction({ name: "f", arn: ARN, timeoutSeconds: 3, handler: () => null }).memory).toBe(128);
  });

  it("a handler that returns nothing answers null", async () => {
    const fn = localFunction({ name: "f", arn: ARN, timeoutSeconds: 3, handler: () => undefined });
    expect(await fn.invoke({})).toBeNull();
  });

  it("past its timeout the invocation fails as Sandbox.Timedout, Lambda's message", async () => {
    let finished = false;
    const fn = localFunction({
      name: "slow",
      arn: ARN,
      timeoutSeconds: 1,
      handler: async () => {
        await new Promise((r) => setTimeout(r, 1_500));
        finished = true;
        return "late";
      },
    });
    const err = await fn.invoke({}, { awsRequestId: "req-timeout" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LambdaFunctionError);
    expect(err).toMatchObject({
      name: "Sandbox.Timedout",
      message: "RequestId: req-timeout Error: Task timed out after 1.00 seconds",
      payload: {
        errorType: "Sandbox.Timedout",
        errorMessage: "RequestId: req-timeout Error: Task timed out after 1.00 seconds",
      },
    });
    // The caller was answered before the handler finished.
    expect(finished).toBe(false);
  });

  it("refuses a request payload over 6 MB before the handler runs: RequestTooLargeException", async () => {
    let calls = 0;
    const fn = localFunction({
      name: "f",
      arn: ARN,
      timeoutSeconds: 3,
      handler: () => {
        calls++;
        return "ok";
      },
    });
    expect(await fn.invoke(payloadOf(MAX_REQUEST_BYTES))).toBe("ok");
    const err = await fn.invoke(payloadOf(MAX_REQUEST_BYTES + 1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LambdaServiceError);
    expect(err).toMatchObject({ name: "RequestTooLargeException", statusCode: 413 });
    expect((err as Error).message).toMatch(
      /^Request must be smaller than 6291456 bytes for the InvokeFunction operation/,
    );
    expect(calls).toBe(1);
  });

  it("names a refused Invoke as Step Functions does: Lambda.<modelled exception>, else Lambda.AWSLambdaException", () => {
    const throttled = new LambdaServiceError("TooManyRequestsException", 429, "Rate Exceeded.", "r-1");
    expect(throttled.stepFunctionsError).toEqual({
      name: "Lambda.TooManyRequestsException",
      cause:
        "Rate Exceeded. (Service: AWSLambda; Status Code: 429; Error Code: TooManyRequestsException; Request ID: r-1; Proxy: null)",
    });
    const denied = new LambdaServiceError(
      "AccessDeniedException",
      403,
      "User: arn:aws:sts::000000000000:assumed-role/conductor/x is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:us-east-1:000000000000:function:scheduler",
    );
    expect(denied.stepFunctionsError.name).toBe("Lambda.AWSLambdaException");
    expect(denied.stepFunctionsError.cause).toContain("Error Code: AccessDeniedException;");
  });

  it("fails a response over Lambda's limit: Function.ResponseSizeTooLarge", async () => {
    const fn = localFunction({
      name: "f",
      arn: ARN,
      timeoutSeconds: 3,
      handler: (e: { bytes: number }) => payloadOf(e.bytes),
    });
    expect(await fn.invoke({ bytes: MAX_RESPONSE_BYTES })).toHaveLength(MAX_RESPONSE_BYTES - 2);
    await expect(fn.invoke({ bytes: MAX_RESPONSE_BYTES + 1 })).rejects.toMatchObject({
      name: "Function.ResponseSizeTooLarge",
      payload: {
        errorType: "Function.ResponseSizeTooLarge",
        errorMessage: "Response payload size exceeded maximum allowed payload size (6291556 bytes).",
      },
    });
  });

  it("a handler error keeps its errorType and message, with the trace, as the runtime reports it", async () => {
    const fn = localFunction({
      name: "conductor",
      arn: ARN,
      timeoutSeconds: 3,
      handler: async () => {
        throw named(
          "ProvisionedThroughputExceededException",
          "The level of configured provisioned throughput for the table was exceeded.",
        );
      },
    });
    const err = (await fn.invoke({}).catch((e: unknown) => e)) as LambdaFunctionError;
    expect(err).toBeInstanceOf(LambdaFunctionError);
    expect(err.name).toBe("ProvisionedThroughputExceededException");
    expect(err.message).toBe("The level of configured provisioned throughput for the table was exceeded.");
    expect(err.payload).toMatchObject({
      errorType: "ProvisionedThroughputExceededException",
      errorMessage: "The level of configured provisioned throughput for the table was exceeded.",
    });
    expect(err.payload.trace![0]).toBe(
      "ProvisionedThroughputExceededException: The level of configured provisioned throughput for the table was exceeded.",
    );
    const thrower = localFunction({
      name: "t",
      arn: ARN,
      timeoutSeconds: 3,
      handler: () => {
        throw "not an Error";
      },
    });
    await expect(thrower.invoke({})).rejects.toMatchObject({
      name: "Error",
      payload: { errorType: "Error", errorMessage: "not an Error" },
    });
  });

  it("runs every invocation inside the caller's wrapper (the function's identity)", async () => {
    const identity = new AsyncLocalStorage<string>();
    const fn = localFunction({
      name: "scheduler",
      arn: ARN,
      timeoutSeconds: 3,
      handler: async () => {
        await new Promise((r) => setImmediate(r));
        return identity.getStore() ?? "nobody";
      },
      runAs: (f) => identity.run("LOCALSCHEDULER", f),
    });
    expect(await fn.invoke({})).toBe("LOCALSCHEDULER");
    expect(identity.getStore()).toBeUndefined();
  });
});
