// The conductor's Retry lists, read from the very definition CDK deploys: every Task retries
// AWS's real transient errors with backoff and jitter, and nothing else.
import "../../local/polyfills.js";
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { describe, expect, it } from "vitest";
import {
  CONDUCTOR_TASKS,
  conductorDefinition,
  DYNAMODB_TRANSIENT_ERRORS,
  LAMBDA_TRANSIENT_ERRORS,
  SQS_TRANSIENT_ERRORS,
} from "../../infra/conductor/definition.js";

const arns = {
  conductorFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:conductor",
  schedulerFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:scheduler",
};
const definition = conductorDefinition(arns);

interface Retrier {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  MaxAttempts?: number;
  BackoffRate?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: string;
}
interface TaskState {
  Type: string;
  Resource?: string;
  Retry?: Retrier[];
  ItemProcessor?: { States: Record<string, TaskState> };
}

/** Every Task state by name, Map ItemProcessors included. */
function tasksOf(states: Record<string, TaskState>): Map<string, TaskState> {
  const out = new Map<string, TaskState>();
  for (const [name, s] of Object.entries(states)) {
    if (s.Type === "Task") out.set(name, s);
    if (s.ItemProcessor) for (const [n, t] of tasksOf(s.ItemProcessor.States)) out.set(n, t);
  }
  return out;
}

const tasks = tasksOf(definition.States as Record<string, TaskState>);
const lambdaTasks = [...tasks].filter(([, t]) => t.Resource?.startsWith("arn:aws:lambda:"));
const retried = (t: TaskState) => new Set(t.Retry?.flatMap((r) => r.ErrorEquals));

/** The longest a state can wait between its attempts, every retrier exhausted. */
function worstCaseWaitSeconds(retry: Retrier[]): number {
  let total = 0;
  for (const r of retry) {
    for (let n = 0; n < (r.MaxAttempts ?? 3); n++) {
      const wait = (r.IntervalSeconds ?? 1) * (r.BackoffRate ?? 2) ** n;
      total += Math.min(wait, r.MaxDelaySeconds ?? wait);
    }
  }
  return total;
}

describe("the conductor definition's Retry lists", () => {
  it("is valid ASL for the interpreter the local runtime uses", () => {
    expect(() => new StateMachine(definition as unknown as StateMachineDefinition)).not.toThrow();
  });

  it("serves every Task it should: the scheduler and conductor Lambdas and the SQS cast", () => {
    const { castToCompute: _map, ...taskNames } = CONDUCTOR_TASKS;
    expect([...tasks.keys()].sort()).toEqual(Object.values(taskNames).sort());
    expect(lambdaTasks).toHaveLength(tasks.size - 1);
    expect(tasks.get(CONDUCTOR_TASKS.sendToHost)!.Resource).toBe("arn:aws:states:::sqs:sendMessage");
  });

  it.each(lambdaTasks)("%s retries every Lambda and DynamoDB transient error", (_name, task) => {
    const names = retried(task);
    for (const e of [...LAMBDA_TRANSIENT_ERRORS, ...DYNAMODB_TRANSIENT_ERRORS]) expect(names).toContain(e);
  });

  it("SendToHost retries SQS's throttling and service faults", () => {
    const names = retried(tasks.get(CONDUCTOR_TASKS.sendToHost)!);
    for (const e of SQS_TRANSIENT_ERRORS) expect(names).toContain(e);
  });

  it.each([...tasks])("%s retries nothing but those names (no wildcard, no invented name)", (_name, task) => {
    const transient = new Set<string>([
      ...LAMBDA_TRANSIENT_ERRORS,
      ...DYNAMODB_TRANSIENT_ERRORS,
      ...SQS_TRANSIENT_ERRORS,
    ]);
    for (const e of retried(task)) expect(transient).toContain(e);
    for (const e of ["States.ALL", "States.TaskFailed", "Transient", "NoValidHost", "AlternatesExhausted"]) {
      expect(retried(task)).not.toContain(e);
    }
  });

  it.each([...tasks])(
    "%s backs off with full jitter, and its retries fit in an Express execution",
    (_n, task) => {
      expect(task.Retry!.length).toBeGreaterThan(0);
      for (const r of task.Retry!) {
        expect(r).toMatchObject({ JitterStrategy: "FULL", BackoffRate: expect.any(Number) });
        expect(r.BackoffRate!).toBeGreaterThan(1);
        expect(r.MaxDelaySeconds).toBeGreaterThanOrEqual(r.IntervalSeconds!);
        expect(r.MaxAttempts).toBeGreaterThanOrEqual(1);
      }
      // Waits only; the attempts themselves take their own time, within the 5-minute limit.
      expect(worstCaseWaitSeconds(task.Retry!)).toBeLessThan(60);
    },
  );

  it("retries whatever may be a function timeout once only: each costs the function's whole timeout", () => {
    // AWS reports a function timeout as Lambda.Unknown, the Invoke client's as
    // Lambda.ClientExecutionTimeoutException (Step Functions' "Handle Lambda service exceptions").
    for (const [, task] of lambdaTasks) {
      for (const e of [
        "Sandbox.Timedout",
        "States.Timeout",
        "Lambda.Unknown",
        "Lambda.ClientExecutionTimeoutException",
      ]) {
        const retriers = task.Retry!.filter((r) => r.ErrorEquals.includes(e));
        expect(retriers, e).toHaveLength(1);
        expect(retriers[0]!.MaxAttempts, e).toBe(1);
      }
    }
  });
});
