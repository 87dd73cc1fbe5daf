// The build path's share of the account's Lambda concurrency in the synthesized stack (issue 20,
// issue 35): compute-events reserved (hosts post to its function URL), build-intake reserved and
// its build-requests event source bounded by the same MaximumConcurrency, both sized from
// fleet_size; build-intake's is the stack's only event source; a synth whose reservations leave
// less than Lambda's 100 unreserved fails. Bundling skipped: only the template's properties are read.
import { readFileSync } from "node:fs";
import { App, type CfnElement } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { buildIntakeConcurrency, buildPathConcurrency } from "../../infra/constructs/functions.js";
import { NovalessStack } from "../../infra/stacks/novaless-stack.js";

const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
  context: Record<string, unknown>;
};

interface Sizing {
  /** function → ReservedConcurrentExecutions (absent: none) */
  reserved: Record<string, number | undefined>;
  /** function → its SQS event source's ScalingConfig.MaximumConcurrency */
  maximum: Record<string, number | undefined>;
}

function synth(context: Record<string, unknown> = {}): Sizing {
  const app = new App({ context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [], ...context } });
  const stack = new NovalessStack(app, "NovalessStack");
  const template = Template.fromStack(stack).toJSON() as {
    Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  };
  const fns = {
    api: stack.apiFunction,
    "build-intake": stack.buildIntakeFunction,
    scheduler: stack.schedulerFunction,
    conductor: stack.conductorFunction,
    "build-watchdog": stack.buildWatchdogFunction,
    "compute-events": stack.computeEventsFunction,
  };
  const byId = new Map(
    Object.entries(fns).map(([name, fn]) => [stack.getLogicalId(fn.node.defaultChild as CfnElement), name]),
  );
  const out: Sizing = { reserved: {}, maximum: {} };
  for (const [id, r] of Object.entries(template.Resources)) {
    if (r.Type === "AWS::Lambda::Function" && byId.has(id))
      out.reserved[byId.get(id)!] = r.Properties.ReservedConcurrentExecutions as number | undefined;
    if (r.Type === "AWS::Lambda::EventSourceMapping") {
      const fn = byId.get((r.Properties.FunctionName as { Ref: string }).Ref)!;
      out.maximum[fn] = (
        r.Properties.ScalingConfig as { MaximumConcurrency?: number } | undefined
      )?.MaximumConcurrency;
    }
  }
  return out;
}

describe("the build path's concurrency in the stack", () => {
  it("by default (fleet_size 1,000): compute-events 10 and build-intake 5, reserved; build-intake's event source at most 5", () => {
    const s = synth();
    expect(s.reserved).toEqual({
      api: undefined,
      "build-intake": 5,
      scheduler: undefined,
      conductor: undefined,
      "build-watchdog": undefined,
      "compute-events": 10,
    });
    expect(s.maximum).toEqual({ "build-intake": 5 });
  });

  it("grows with the fleet (-c fleet_size=10000): compute-events 100, build-intake 50 and its MaximumConcurrency 50", () => {
    const s = synth({ fleet_size: "10000" });
    expect([s.reserved["compute-events"], s.reserved["build-intake"]]).toEqual([100, 50]);
    expect(s.maximum).toEqual({ "build-intake": 50 });
  });

  it("a larger fleet reserves past 1,000 where the account's limit allows it; MaximumConcurrency stops at 1,000", () => {
    const s = synth({ fleet_size: "150000", lambda_concurrency_limit: "5000" });
    expect(s.reserved["compute-events"]).toBe(1500);
    expect(s.reserved["build-intake"]).toBe(750);
    expect(s.maximum).toEqual({ "build-intake": 750 });
    expect(buildIntakeConcurrency(400_000)).toBe(1000);
  });

  it("a fleet whose reservations would leave less than 100 unreserved fails the synth, saying why", () => {
    // 600 + 300 leave exactly the 100
    expect(buildPathConcurrency(60_000, 1000)).toEqual({ computeEvents: 600, buildIntake: 300 });
    expect(() => synth({ fleet_size: "60100" })).toThrow(
      /fleet_size 60100 reserves 902 .*limit of 1000 \(lambda_concurrency_limit\) would leave 98 unreserved, below the 100 Lambda keeps/,
    );
    // a new account's 10: even the smallest reservation is refused; fleet_size 0 reserves nothing,
    // and build-intake's event source keeps its bound
    expect(() => synth({ lambda_concurrency_limit: "10", fleet_size: "5" })).toThrow(/below the 100/);
    const none = synth({ lambda_concurrency_limit: "10", fleet_size: "0" });
    expect(Object.values(none.reserved).every((r) => r === undefined)).toBe(true);
    expect(none.maximum).toEqual({ "build-intake": 5 });
    expect(() => synth({ fleet_size: "many" })).toThrow(/NOVALESS_FLEET_SIZE=many is not a number/);
  });

  it("sizes as documented: compute-events a hundredth of the fleet, build-intake a two-hundredth, each at least 5", () => {
    expect(buildPathConcurrency(1, 1000)).toEqual({ computeEvents: 5, buildIntake: 5 });
    expect(buildPathConcurrency(2500, 1000)).toEqual({ computeEvents: 25, buildIntake: 13 });
    expect(buildPathConcurrency(0, 10)).toEqual({});
    expect(buildIntakeConcurrency(0)).toBe(5);
  });
});
