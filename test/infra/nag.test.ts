// cdk-nag's AwsSolutions pack over the whole stack, both conductor types: no finding may be left
// unfixed and unsuppressed, and every suppression must name its reason.
import { readFileSync } from "node:fs";
import { App, Aspects, Stack } from "aws-cdk-lib";
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
  // every stack of the app: the image edge's Lambda@Edge is in a us-east-1 stack of its own
  const stacks = app.node.children.filter((c): c is Stack => Stack.isStack(c));
  const text = (found: { id: string; entry: { data?: unknown } }[]) =>
    found.map((f) => `${f.id}: ${String(f.entry.data).split("\n")[0]}`);
  const all = (find: (a: Annotations) => { id: string; entry: { data?: unknown } }[]) =>
    stacks.flatMap((st) => text(find(Annotations.fromStack(st))));
  const warnings = all((a) => a.findWarning("*", Match.anyValue()));
  return {
    errors: all((a) => a.findError("*", Match.anyValue())),
    // a stack without a region has no image edge (infra/constructs/edge.ts), and says so
    warnings: warnings.filter((w) => !w.includes("[ack: novaless:imageEdge]")),
    edgeless: warnings.some((w) => w.includes("[ack: novaless:imageEdge]")),
  };
}

describe("cdk-nag AwsSolutions", () => {
  it("finds nothing unsuppressed in the default stack (Express conductor)", () => {
    expect(findings({})).toEqual({ errors: [], warnings: [], edgeless: true });
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
    // with its CloudFront distribution, and the Lambda@Edge stack in us-east-1
    expect(findings({ env: { account: "123456789012", region: "eu-west-1" } })).toEqual({
      errors: [],
      warnings: [],
      edgeless: false,
    });
  });

  it("finds nothing unsuppressed in the Standard variant", () => {
    expect(findings({ conductorType: "STANDARD", computeQueuePrefix: "novaless-test-compute-" })).toEqual({
      errors: [],
      warnings: [],
      edgeless: true,
    });
  });
});
