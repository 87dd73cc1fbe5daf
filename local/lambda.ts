// A local Lambda function: the handler a stack deploys, invoked synchronously under the rules
// the Lambda service applies to it, so what would fail on AWS fails here:
// - the request payload is at most 6 MB (6,291,456 bytes), else the Invoke call itself is refused
//   with RequestTooLargeException (HTTP 413) and the handler never runs;
// - the function runs at most its timeout (from the stack), else the invocation fails with
//   errorType Sandbox.Timedout;
// - with the account's concurrency (concurrency.ts), an invoke past the function's reservation or
//   the unreserved pool is refused with TooManyRequestsException (HTTP 429) before it runs;
// - the response payload is at most the size Lambda's own message states (6,291,556 bytes), else
//   the invocation fails with errorType Function.ResponseSizeTooLarge;
// - a handler error keeps its errorType (the error's name) and message, as the runtime reports it.
import { randomUUID } from "node:crypto";
import type { Context } from "aws-lambda";

/** Lambda's limit on a synchronous invocation's request payload. */
export const MAX_REQUEST_BYTES = 6_291_456;
/** The response limit Lambda enforces and names in its error message. */
export const MAX_RESPONSE_BYTES = 6_291_556;

/** What a Node.js handler receives as its second argument (aws-lambda's Context). */
export type LambdaContext = Context;

// biome-ignore lint/suspicious/noExplicitAny: each handler declares the event it is invoked with
export type LambdaHandler = (event: any, context: LambdaContext) => Promise<unknown> | unknown;

export interface LocalFunctionOptions {
  name: string;
  arn: string;
  /** the function's timeout, as the stack gives it */
  timeoutSeconds: number;
  /** MB, reported to the handler; 128 (Lambda's default) unless given */
  memory?: number;
  handler: LambdaHandler;
  /** runs every invocation inside this wrapper, e.g. under the function role's identity */
  runAs?: <T>(fn: () => Promise<T>) => Promise<T>;
  /** the account's concurrency (concurrency.ts): each invocation holds a slot while it runs */
  concurrency?: { acquire(fn: string, requestId?: string): () => void };
}

export interface LocalFunction {
  readonly name: string;
  readonly arn: string;
  readonly timeoutSeconds: number;
  readonly memory: number;
  /**
   * A synchronous invocation (InvocationType RequestResponse). Resolves with the handler's
   * result, as JSON crosses the boundary; rejects with a LambdaServiceError when the Invoke call
   * is refused, or a LambdaFunctionError when the function failed.
   */
  invoke(payload: unknown, context?: Partial<Pick<LambdaContext, "awsRequestId">>): Promise<unknown>;
}

/**
 * The exceptions Lambda's Invoke API models. Step Functions names a refused Invoke after the
 * Java SDK's exception class: `Lambda.<name>` for these, `Lambda.AWSLambdaException` for any other
 * (AccessDeniedException among them).
 */
const INVOKE_EXCEPTIONS = new Set([
  "EC2AccessDeniedException",
  "EC2ThrottledException",
  "EC2UnexpectedException",
  "EFSIOException",
  "EFSMountConnectivityException",
  "EFSMountFailureException",
  "EFSMountTimeoutException",
  "ENILimitReachedException",
  "InvalidParameterValueException",
  "InvalidRequestContentException",
  "InvalidRuntimeException",
  "InvalidSecurityGroupIDException",
  "InvalidSubnetIDException",
  "InvalidZipFileException",
  "KMSAccessDeniedException",
  "KMSDisabledException",
  "KMSInvalidStateException",
  "KMSNotFoundException",
  "RecursiveInvocationException",
  "RequestTooLargeException",
  "ResourceConflictException",
  "ResourceNotFoundException",
  "ResourceNotReadyException",
  "ServiceException",
  "SnapStartException",
  "SnapStartNotReadyException",
  "SnapStartTimeoutException",
  "SubnetIPAddressLimitReachedException",
  "TooManyRequestsException",
  "UnsupportedMediaTypeException",
]);

/**
 * The Invoke call itself failed: the function did not run (a throttle, a payload too large, a
 * caller not allowed to invoke). `stepFunctionsError` is what a Task state reports for it.
 */
export class LambdaServiceError extends Error {
  constructor(
    /** the Lambda API's exception name, e.g. RequestTooLargeException, TooManyRequestsException */
    override readonly name: string,
    readonly statusCode: number,
    message: string,
    readonly requestId: string = randomUUID(),
    /** a throttle's Reason, e.g. ReservedFunctionConcurrentInvocationLimitExceeded */
    readonly reason?: string,
  ) {
    super(message);
  }

  /** The Task error Step Functions reports: its name, and its Cause in the Java SDK's words. */
  get stepFunctionsError(): { name: string; cause: string } {
    return {
      name: INVOKE_EXCEPTIONS.has(this.name) ? `Lambda.${this.name}` : "Lambda.AWSLambdaException",
      cause: `${this.message} (Service: AWSLambda; Status Code: ${this.statusCode}; Error Code: ${this.name}; Request ID: ${this.requestId}; Proxy: null)`,
    };
  }
}

/** The payload Lambda returns for a failed invocation (X-Amz-Function-Error: Unhandled). */
export interface FunctionErrorPayload {
  errorType: string;
  errorMessage: string;
  trace?: string[];
}

/** The function ran and failed. Its name is the errorType: what Step Functions' Retry/Catch match. */
export class LambdaFunctionError extends Error {
  constructor(readonly payload: FunctionErrorPayload) {
    super(payload.errorMessage);
    this.name = payload.errorType;
  }
}

/** One finished invocation of a local function, for the cost benchmark. */
export interface InvocationRecord {
  name: string;
  /** MB, as configured */
  memory: number;
  /** from the handler's start to its settling (or the timeout) */
  durationMs: number;
  ok: boolean;
  /** the event as the handler saw it (a bench tells a batch's messages apart by it) */
  event: unknown;
}

const invocationObservers = new Set<(r: InvocationRecord) => void>();

/** Calls `observer` after every invocation that ran; returns the function that stops it. */
export function observeInvocations(observer: (r: InvocationRecord) => void): () => void {
  invocationObservers.add(observer);
  return () => invocationObservers.delete(observer);
}

export function localFunction(opts: LocalFunctionOptions): LocalFunction {
  const memory = opts.memory ?? 128;
  const timeoutMs = opts.timeoutSeconds * 1000;
  const runAs = opts.runAs ?? (<T>(fn: () => Promise<T>) => fn());

  async function invoke(payload: unknown, ctx: Partial<Pick<LambdaContext, "awsRequestId">> = {}) {
    const requestId = ctx.awsRequestId ?? randomUUID();
    const request = JSON.stringify(payload ?? null);
    const requestBytes = Buffer.byteLength(request);
    if (requestBytes > MAX_REQUEST_BYTES) {
      throw new LambdaServiceError(
        "RequestTooLargeException",
        413,
        `Request must be smaller than ${MAX_REQUEST_BYTES} bytes for the InvokeFunction operation (function ${opts.name}: ${requestBytes} bytes)`,
        requestId,
      );
    }
    const deadline = Date.now() + timeoutMs;
    const context: LambdaContext = {
      functionName: opts.name,
      functionVersion: "$LATEST",
      invokedFunctionArn: opts.arn,
      memoryLimitInMB: String(memory),
      awsRequestId: requestId,
      logGroupName: `/aws/lambda/${opts.name}`,
      logStreamName: `local/[$LATEST]${requestId.replaceAll("-", "")}`,
      callbackWaitsForEmptyEventLoop: true,
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      // The callback-era completions: async handlers return or throw instead.
      done: unsupported,
      fail: unsupported,
      succeed: unsupported,
    };
    // The handler sees its event as Lambda delivers it: parsed from JSON, never the caller's object.
    const event = JSON.parse(request) as unknown;
    // Throttled before it runs: no invocation, no duration (Lambda's Throttles metric, not Errors).
    const release = opts.concurrency?.acquire(opts.name, requestId);
    const started = performance.now();
    let ok = false;
    const run = runAs(async () => opts.handler(event, context));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new LambdaFunctionError({
              errorType: "Sandbox.Timedout",
              errorMessage: `RequestId: ${requestId} Error: Task timed out after ${opts.timeoutSeconds.toFixed(2)} seconds`,
            }),
          ),
        timeoutMs,
      );
    });
    // Lambda freezes a timed-out sandbox; a local handler cannot be stopped: its late result is
    // dropped (the race has already settled).
    let result: unknown;
    try {
      result = await Promise.race([run, timedOut]);
      ok = true;
    } catch (e) {
      if (e instanceof LambdaFunctionError) throw e;
      throw new LambdaFunctionError(functionErrorOf(e));
    } finally {
      // the slot is free when the invocation ends, or at its timeout (Lambda stops the sandbox)
      release?.();
      clearTimeout(timer);
      const durationMs = performance.now() - started;
      for (const o of invocationObservers) o({ name: opts.name, memory, durationMs, ok, event });
    }
    // undefined serializes to "null", as the Node.js runtime returns it.
    const response = JSON.stringify(result) ?? "null";
    if (Buffer.byteLength(response) > MAX_RESPONSE_BYTES) {
      throw new LambdaFunctionError({
        errorType: "Function.ResponseSizeTooLarge",
        errorMessage: `Response payload size exceeded maximum allowed payload size (${MAX_RESPONSE_BYTES} bytes).`,
      });
    }
    return JSON.parse(response) as unknown;
  }

  return { name: opts.name, arn: opts.arn, timeoutSeconds: opts.timeoutSeconds, memory, invoke };
}

function unsupported(): never {
  throw new Error("context.done/fail/succeed are not supported: return or throw from an async handler");
}

/** What the Node.js runtime reports for an error a handler threw. */
function functionErrorOf(e: unknown): FunctionErrorPayload {
  if (e instanceof Error) {
    return {
      errorType: e.name,
      errorMessage: e.message,
      trace: (e.stack ?? `${e.name}: ${e.message}`).split("\n"),
    };
  }
  return { errorType: "Error", errorMessage: String(e) };
}
