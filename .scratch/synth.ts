import { App } from "aws-cdk-lib";
import { readFileSync } from "node:fs";
import { NovalessStack } from "../infra/stacks/novaless-stack.ts";
const t0 = Date.now();
const cdkJson = JSON.parse(readFileSync("/work/wt-iam/cdk.json", "utf8"));
const app = new App({ context: { ...cdkJson.context, "aws:cdk:bundling-stacks": [] } });
const stack = new NovalessStack(app, "NovalessStack", { computeQueuePrefix: "novaless-compute-" });
const tpl = app.synth().getStackByName("NovalessStack").template;
console.error("ms", Date.now() - t0);
const out: Record<string, unknown> = {};
for (const [id, r] of Object.entries(tpl.Resources as Record<string, any>)) {
  if (["AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::Role", "AWS::Lambda::Function", "AWS::SQS::QueuePolicy", "AWS::StepFunctions::StateMachine"].includes(r.Type)) out[id] = r;
  else out[id] = r.Type;
}
console.log(JSON.stringify(out, null, 1));
