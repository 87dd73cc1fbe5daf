// The conductor's retries, bounded by the Express execution's 5 minutes: every path from StartAt
// to an end (Catch edges and Choice branches included), each step retried to its last attempt,
// reaches its end with a fifth of the 5 minutes to spare. Walks the very definition CDK deploys,
// with the function timeouts the stack deploys, so raising a MaxAttempts, a MaxDelaySeconds or a
// timeout past the budget fails here.
import { describe, expect, it } from "vitest";
import {
  CONDUCTOR_FUNCTION_TIMEOUT_SECONDS,
  type ConductorArns,
  conductorDefinition,
} from "../../../infra/conductor/definition.js";
import { MAX_INSTANCES_PER_REQUEST } from "../../../lib/messages/build-request.js";

/** An Express execution runs at most 5 minutes, then it is TIMED_OUT (no Catch sees it). */
const EXPRESS_SECONDS = 300;
/** What every path leaves unspent: a fifth. */
const MARGIN = 0.2;
const BUDGET_SECONDS = EXPRESS_SECONDS * (1 - MARGIN);

/**
 * Assumption: an error the service answers without running our code (the Lambda service's
 * throttle or 5xx for an Invoke, an SQS SendMessage that fails) and a SendMessage that succeeds
 * are answered within 2 s. They take milliseconds; 2 s allows for a slow connection. Any other
 * error of a Lambda Task (a timeout, Lambda.Unknown, an error thrown inside the function) costs
 * the whole function timeout, and so does its last attempt, which may succeed only just in time.
 */
const SERVICE_ANSWER_SECONDS = 2;
const ANSWERED_WITHOUT_RUNNING = new Set([
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
]);
/** The most iterations an inline Map runs at once ("Using Map state in Inline mode"). */
const INLINE_MAP_CONCURRENCY = 40;
/**
 * The casts of one execution: one per instance, and a build request carries at most
 * MAX_INSTANCES_PER_REQUEST (a larger create is sent as several, each its own execution).
 */
const MAX_CASTS = MAX_INSTANCES_PER_REQUEST;

interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: "FULL" | "NONE";
}
interface State {
  Type: string;
  Resource?: string;
  Next?: string;
  End?: boolean;
  Default?: string;
  Choices?: { Next: string }[];
  Catch?: { Next: string }[];
  Retry?: Retrier[];
  MaxConcurrency?: number;
  ItemProcessor?: Machine;
}
interface Machine {
  StartAt: string;
  States: Record<string, State>;
}

const ARNS: ConductorArns = { conductorFunctionArn: "conductor", schedulerFunctionArn: "scheduler" };
const TIMEOUTS: Record<string, number> = {
  [ARNS.conductorFunctionArn]: CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.conductor,
  [ARNS.schedulerFunctionArn]: CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.scheduler,
};
const SQS_SEND = "arn:aws:states:::sqs:sendMessage";

/** The longest an attempt that ends in `error` takes on `resource`. */
function attemptSeconds(resource: string, error: string, timeouts: Record<string, number>): number {
  if (resource === SQS_SEND) return SERVICE_ANSWER_SECONDS;
  const timeout = timeouts[resource];
  if (timeout === undefined) throw new Error(`no timeout known for Task resource ${resource}`);
  return ANSWERED_WITHOUT_RUNNING.has(error) ? SERVICE_ANSWER_SECONDS : timeout;
}

/**
 * The waits of one retrier, all its attempts used: IntervalSeconds × BackoffRate^n, at most
 * MaxDelaySeconds (FULL jitter draws each from [0, that], so no more). ASL's defaults: 1 s, 3
 * attempts, rate 2.
 */
function waitSeconds(r: Retrier): number {
  let total = 0;
  for (let n = 0; n < (r.MaxAttempts ?? 3); n++) {
    const wait = (r.IntervalSeconds ?? 1) * (r.BackoffRate ?? 2) ** n;
    total += Math.min(wait, r.MaxDelaySeconds ?? wait);
  }
  return total;
}

/**
 * A Task's worst case: each retrier counts its own attempts, so every one of them is used up,
 * each retry at the cost of the dearest error the retrier matches, plus the backoff, plus the
 * last attempt (successful or caught) at up to the function's timeout.
 */
function taskSeconds(s: State, timeouts: Record<string, number>): number {
  const resource = s.Resource!;
  const last =
    resource === SQS_SEND ? SERVICE_ANSWER_SECONDS : attemptSeconds(resource, "States.ALL", timeouts);
  let total = last;
  for (const r of s.Retry ?? []) {
    const each = Math.max(...r.ErrorEquals.map((e) => attemptSeconds(resource, e, timeouts)));
    total += (r.MaxAttempts ?? 3) * each + waitSeconds(r);
  }
  return total;
}

interface Path {
  states: string[];
  seconds: number;
}

function stateSeconds(s: State, timeouts: Record<string, number>): number {
  if (s.Type === "Task") return taskSeconds(s, timeouts);
  if (s.Type === "Map") {
    // Slots of MaxConcurrency (0: unbounded, the inline Map's own limit) each take their items
    // one after the other; the slowest takes ceil(items / slots), each at its worst.
    const slots = Math.min(s.MaxConcurrency || INLINE_MAP_CONCURRENCY, INLINE_MAP_CONCURRENCY);
    const iteration = Math.max(...paths(s.ItemProcessor!, timeouts).map((p) => p.seconds));
    return Math.ceil(MAX_CASTS / slots) * iteration;
  }
  if (["Choice", "Pass", "Succeed", "Fail"].includes(s.Type)) return 0;
  throw new Error(`no cost model for a ${s.Type} state`);
}

/** Where a state may go next: its Next, its Catch handlers, a Choice's branches. */
function edges(s: State): string[] {
  return [
    ...(s.Next ? [s.Next] : []),
    ...(s.Catch ?? []).map((c) => c.Next),
    ...(s.Choices ?? []).map((c) => c.Next),
    ...(s.Default ? [s.Default] : []),
  ];
}

/** Every path from StartAt to an end, with its worst-case time. */
function paths(m: Machine, timeouts: Record<string, number>): Path[] {
  const out: Path[] = [];
  const walk = (name: string, before: Path) => {
    if (before.states.includes(name)) throw new Error(`a cycle through ${name}: no bound`);
    const s = m.States[name];
    if (!s) throw new Error(`no state ${name}`);
    const here = { states: [...before.states, name], seconds: before.seconds + stateSeconds(s, timeouts) };
    const next = [...new Set(edges(s))];
    if (s.End || s.Type === "Succeed" || s.Type === "Fail") out.push(here);
    for (const n of next) walk(n, here);
  };
  walk(m.StartAt, { states: [], seconds: 0 });
  return out;
}

const definition = conductorDefinition(ARNS) as unknown as Machine;
const all = paths(definition, TIMEOUTS);
const longest = all.reduce((a, b) => (b.seconds > a.seconds ? b : a));
const worstOf = (m: Machine, timeouts = TIMEOUTS) => Math.max(...paths(m, timeouts).map((p) => p.seconds));

describe("the conductor's retries fit an Express execution", () => {
  it("walks every state of the definition", () => {
    const seen = new Set(all.flatMap((p) => p.states));
    expect([...seen].sort()).toEqual(Object.keys(definition.States).sort());
  });

  it.each(all.map((p) => [p.states.join(" → "), p.seconds, p] as const))(
    "%s: at worst %d s, within 4 of the 5 minutes",
    (_name, _seconds, p) => {
      expect(p.seconds).toBeLessThanOrEqual(BUDGET_SECONDS);
    },
  );

  it(`the longest path is the claimed alternate's reschedule whose cast fails (${longest.seconds} s)`, () => {
    expect(longest.states).toEqual([
      "CheckAttempts",
      "ClaimAlternate",
      "AlternateClaimed",
      "SelectDestinations",
      "HostFound",
      "BuildInstances",
      "CastToCompute",
      "BuildFailed",
    ]);
  });

  it("fails when a retrier is given one more attempt of a function timeout", () => {
    const raised = structuredClone(definition);
    raised.States.SelectDestinations!.Retry![0]!.MaxAttempts! += 1;
    expect(worstOf(raised)).toBeGreaterThan(BUDGET_SECONDS);
  });

  it("fails when the conductor's timeout goes back to 30 s, or the scheduler's to 45 s", () => {
    expect(worstOf(definition, { ...TIMEOUTS, conductor: 30 })).toBeGreaterThan(BUDGET_SECONDS);
    expect(worstOf(definition, { ...TIMEOUTS, scheduler: 45 })).toBeGreaterThan(BUDGET_SECONDS);
  });

  it("fails when the casts run ten at a time again", () => {
    const narrow = structuredClone(definition);
    narrow.States.CastToCompute!.MaxConcurrency = 10;
    expect(worstOf(narrow)).toBeGreaterThan(BUDGET_SECONDS);
  });
});
