#!/usr/bin/env node
// The CDK app: `npx cdk synth` / `npx cdk deploy` (aws-cdk@2, from node_modules).
// Options on the command line: -c conductorType=STANDARD, -c removalPolicy=destroy,
// -c computeQueuePrefix=<prefix>. The API's tokens come from NOVALESS_AUTH_TOKENS at synth time
// (they end up in the template and the function's environment).
import { App, RemovalPolicy } from "aws-cdk-lib";
import { type ConductorType, NovalessStack } from "./stacks/novaless-stack.js";

const app = new App();

function context(name: string): string | undefined {
  const value: unknown = app.node.tryGetContext(name);
  return value === undefined || value === null || value === "" ? undefined : String(value);
}

function conductorType(): ConductorType | undefined {
  const value = context("conductorType")?.toUpperCase();
  if (value === undefined || value === "EXPRESS" || value === "STANDARD") return value;
  throw new Error(`-c conductorType=${value}: expected EXPRESS or STANDARD`);
}

function removalPolicy(): RemovalPolicy | undefined {
  const value = context("removalPolicy")?.toLowerCase();
  if (value === undefined) return undefined;
  if (value === "retain") return RemovalPolicy.RETAIN;
  if (value === "destroy") return RemovalPolicy.DESTROY;
  throw new Error(`-c removalPolicy=${value}: expected retain or destroy`);
}

new NovalessStack(app, "NovalessStack", {
  description: "novaless: OpenStack Nova's instance-build workflow, serverless",
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  conductorType: conductorType(),
  removalPolicy: removalPolicy(),
  computeQueuePrefix: context("computeQueuePrefix"),
  apiAuthTokens: process.env.NOVALESS_AUTH_TOKENS || undefined,
});
