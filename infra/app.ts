#!/usr/bin/env node
// The CDK app: `npx cdk synth` / `npx cdk deploy` (aws-cdk@2, from node_modules).
// Options on the command line: -c conductorType=STANDARD, -c removalPolicy=destroy,
// -c computeQueuePrefix=<prefix>, -c keystoneUrl=<an existing Keystone, which then validates tokens>,
// -c hostRolePath=</path/ of the EC2 hosts' roles, default /novaless-hosts/>, and for IAM Roles
// Anywhere (on-premises hosts) -c rolesAnywhereIssuerCn=<the CN of the CA that signs the hosts'
// certificates> with -c rolesAnywhereCaFile=<that CA's certificate, PEM: the stack creates the
// trust anchor> or -c rolesAnywhereTrustAnchorArn=<an existing trust anchor>. -c fleet_size=<hosts
// the build path's Lambda concurrency is reserved for, default 1000> and -c
// lambda_concurrency_limit=<the account's limit, default 1000> (docs/deploy.md, "Lambda
// concurrency"). The API's token table is not part of the app: after the first
// deploy, put it into the secret the stack outputs (AuthTokensSecretArn) with
// `aws secretsmanager put-secret-value`. Every synth runs cdk-nag's AwsSolutions checks: a finding
// that is neither fixed nor suppressed with its reason (in the stack) fails the synth.
import { readFileSync } from "node:fs";
import { App, Aspects, RemovalPolicy } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import type { RolesAnywhereTrust } from "./constructs/host-access.js";
import { type ConductorType, NovalessStack } from "./stacks/novaless-stack.js";

const app = new App();
Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));

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

function rolesAnywhere(): RolesAnywhereTrust | undefined {
  const issuerCn = context("rolesAnywhereIssuerCn");
  const caFile = context("rolesAnywhereCaFile");
  const trustAnchorArn = context("rolesAnywhereTrustAnchorArn");
  if (!issuerCn && !caFile && !trustAnchorArn) return undefined;
  if (!issuerCn || Boolean(caFile) === Boolean(trustAnchorArn))
    throw new Error(
      "IAM Roles Anywhere: -c rolesAnywhereIssuerCn=<CN> with one of -c rolesAnywhereCaFile=<ca.pem> or -c rolesAnywhereTrustAnchorArn=<arn>",
    );
  return {
    issuerCn,
    ...(caFile ? { caCertificatePem: readFileSync(caFile, "utf8") } : {}),
    ...(trustAnchorArn ? { trustAnchorArn } : {}),
  };
}

new NovalessStack(app, "NovalessStack", {
  description: "novaless: OpenStack Nova's instance-build workflow, serverless",
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  conductorType: conductorType(),
  removalPolicy: removalPolicy(),
  computeQueuePrefix: context("computeQueuePrefix"),
  keystoneUrl: context("keystoneUrl"),
  rolesAnywhere: rolesAnywhere(),
  hostRolePath: context("hostRolePath"),
});
