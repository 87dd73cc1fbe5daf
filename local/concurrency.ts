// Lambda's concurrency in one account and region, as AWS documents it
// (docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html, configuration-concurrency.html):
// - the account has a concurrency limit (1,000 by default, as low as 10 on new accounts), the
//   in-flight invocations of all its functions together;
// - a function's reserved concurrency (ReservedConcurrentExecutions) both guarantees it that many
//   and caps it there; the others share what is left (the unreserved pool), and Lambda refuses a
//   reservation that leaves the pool below 100 (InvalidParameterValueException "...decreases
//   account's UnreservedConcurrentExecution below its minimum value of [100]");
// - an invoke past the limit is refused before the function runs: TooManyRequestsException
//   (HTTP 429), Reason ReservedFunctionConcurrentInvocationLimitExceeded for a function at its
//   reservation, ConcurrentInvocationLimitExceeded for the unreserved pool, message
//   "Rate Exceeded." (Step Functions reports Lambda.TooManyRequestsException).
import { LambdaServiceError } from "./lambda.js";

/** Lambda's default concurrency limit of an account, per region. */
export const DEFAULT_ACCOUNT_LIMIT = 1000;
/** What Lambda keeps unreserved on AWS, whatever the reservations. */
export const UNRESERVED_MINIMUM = 100;

export interface AccountConcurrencyOptions {
  /** the account's concurrency limit (default 1,000) */
  accountLimit?: number;
  /**
   * the unreserved pool Lambda keeps (100 on AWS); a test with a small account limit lowers it to
   * model a larger account at scale
   */
  unreservedMinimum?: number;
  /** function name → its ReservedConcurrentExecutions; absent: it draws on the unreserved pool */
  reserved?: Record<string, number | undefined>;
}

/** The account's in-flight invocations and the throttles it answered, per function. */
export class AccountConcurrency {
  readonly accountLimit: number;
  readonly unreservedPool: number;
  private readonly reserved = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private unreservedInFlight = 0;
  /** function name → throttled invokes */
  readonly throttles = new Map<string, number>();
  /** function name → most invocations in flight at once */
  readonly peaks = new Map<string, number>();

  constructor(opts: AccountConcurrencyOptions = {}) {
    this.accountLimit = opts.accountLimit ?? DEFAULT_ACCOUNT_LIMIT;
    const minimum = opts.unreservedMinimum ?? UNRESERVED_MINIMUM;
    let total = 0;
    for (const [fn, n] of Object.entries(opts.reserved ?? {})) {
      if (n === undefined) continue;
      if (!Number.isInteger(n) || n < 0)
        throw new Error(`ReservedConcurrentExecutions of ${fn} must be an integer >= 0, got ${n}`);
      this.reserved.set(fn, n);
      total += n;
    }
    this.unreservedPool = this.accountLimit - total;
    if (this.unreservedPool < minimum)
      throw new LambdaServiceError(
        "InvalidParameterValueException",
        400,
        `Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [${minimum}]. ` +
          `(reserved ${total} of the account's ${this.accountLimit})`,
      );
  }

  /** The function's reservation, or undefined when it draws on the unreserved pool. */
  reservedOf(fn: string): number | undefined {
    return this.reserved.get(fn);
  }

  /**
   * Takes one slot for an invocation of `fn` and returns its release; throws Lambda's
   * TooManyRequestsException when there is none.
   */
  acquire(fn: string, requestId?: string): () => void {
    const reserved = this.reserved.get(fn);
    const current = this.inFlight.get(fn) ?? 0;
    if (reserved !== undefined ? current >= reserved : this.unreservedInFlight >= this.unreservedPool) {
      this.throttles.set(fn, (this.throttles.get(fn) ?? 0) + 1);
      throw new LambdaServiceError(
        "TooManyRequestsException",
        429,
        "Rate Exceeded.",
        requestId,
        reserved !== undefined
          ? "ReservedFunctionConcurrentInvocationLimitExceeded"
          : "ConcurrentInvocationLimitExceeded",
      );
    }
    this.inFlight.set(fn, current + 1);
    this.peaks.set(fn, Math.max(this.peaks.get(fn) ?? 0, current + 1));
    if (reserved === undefined) this.unreservedInFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight.set(fn, (this.inFlight.get(fn) ?? 1) - 1);
      if (reserved === undefined) this.unreservedInFlight--;
    };
  }

  /** Invocations of `fn` in flight now. */
  inFlightOf(fn: string): number {
    return this.inFlight.get(fn) ?? 0;
  }
}
