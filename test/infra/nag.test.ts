// cdk-nag's AwsSolutions pack over the whole stack, both conductor types: no finding may be left
// unfixed and unsuppressed, and every suppression must name its reason.
import { readFileSync } from "node:fs";
import { App, Aspects } from "aws-cdk-lib";
import { Annotations, Match } from "aws-cdk-lib/assertions";
import { PolicyStatement } from "aws-cdk-lib/aws-iam";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import { NovalessStack, type NovalessStackProps } from "../../infra/stacks/novaless-stack.js";

const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
  context: Record<string, unknown>;
};

function findings(props: NovalessStackProps, change: (stack: NovalessStack) => void = () => {}) {
  // Bundling skipped: the checks read the template, not the code.
  const app = new App({ context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [] } });
  Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  const stack = new NovalessStack(app, "NovalessStack", props);
  change(stack);
  const annotations = Annotations.fromStack(stack);
  const text = (found: { id: string; entry: { data?: unknown } }[]) =>
    found.map((f) => `${f.id}: ${String(f.entry.data).split("\n")[0]}`);
  return {
    errors: text(annotations.findError("*", Match.anyValue())),
    warnings: text(annotations.findWarning("*", Match.anyValue())),
  };
}

describe("cdk-nag AwsSolutions", () => {
  it("finds nothing unsuppressed in the default stack (Express conductor)", () => {
    expect(findings({})).toEqual({ errors: [], warnings: [] });
  });

  it("fails the synth on what no suppression names: a wildcard grant added here", () => {
    // An error finding makes the synth itself fail (CDK's validation report), as `cdk synth` would.
    expect(() =>
      findings({}, (stack) =>
        stack.schedulerFunction.addToRolePolicy(
          new PolicyStatement({ actions: ["dynamodb:*"], resources: [stack.tables.Catalog.tableArn] }),
        ),
      ),
    ).toThrow(
      /AwsSolutions-IAM5\[Action::dynamodb:\*\][^\n]*\n\s*NovalessStack\/Scheduler\/ServiceRole\/DefaultPolicy/,
    );
  });

  it("finds nothing unsuppressed in a stack bound to an account and region (what `cdk synth` makes)", () => {
    expect(findings({ env: { account: "123456789012", region: "eu-west-1" } })).toEqual({
      errors: [],
      warnings: [],
    });
  });

  it("finds nothing unsuppressed in the Standard variant", () => {
    expect(findings({ conductorType: "STANDARD", computeQueuePrefix: "novaless-test-compute-" })).toEqual({
      errors: [],
      warnings: [],
    });
  });
});
