// `npm run deploy:localstack [-- --keep]`: `cdk deploy` of the real stack to the project's
// LocalStack (scripts/localstack/install.sh), in host mode on 127.0.0.1: bootstrap, deploy with
// cdklocal (aws-cdk-local, the CDK CLI pointed at LocalStack), then every resource of the
// synthesized template listed with the status LocalStack gave it and why. Without Docker,
// LocalStack creates no Lambda function and rolls the whole stack back (--no-rollback or not), so
// the script then deploys the template less what is or needs Lambda, and says so; on a machine
// with Docker it keeps cdklocal's own result (docs/localstack.md). LocalStack is stopped at the
// end, unless --keep.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStackResourcesCommand,
  DescribeStacksCommand,
  ListStackResourcesCommand,
  type StackResourceSummary,
} from "@aws-sdk/client-cloudformation";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { stopProcess } from "../local/child-processes.js";
import { localstackInstalled, startLocalStack } from "../local/localstack.js";

const STACK = "NovalessStack";
const REGION = "us-east-1";
const ACCOUNT = "000000000000";
/** every service the stack's resources, the bootstrap's and the deploy's calls name */
const SERVICES = [
  "cloudformation",
  "ssm",
  "s3",
  "iam",
  "sts",
  "ecr",
  "kms",
  "dynamodb",
  "sqs",
  "lambda",
  "logs",
  "events",
  "cloudwatch",
  "apigateway",
  "secretsmanager",
  "stepfunctions",
];

const top = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Without Docker, LocalStack 4.14 creates no Lambda function (its CreateFunction pulls the
 * runtime's image), so the real stack fails at its first function and LocalStack rolls it all
 * back, --no-rollback or not. What does not need Lambda is then deployed on its own: the
 * synthesized template less every Lambda resource and, transitively, whatever refers to one
 * (Ref, Fn::GetAtt, Fn::Sub, DependsOn), under the stack's own name.
 */
function withoutLambda(template: Template): { template: Template; removed: Map<string, string> } {
  const resources = { ...template.Resources };
  const removed = new Map<string, string>();
  for (const [id, r] of Object.entries(resources))
    if (r.Type.startsWith("AWS::Lambda::")) removed.set(id, "a Lambda resource: needs Docker");
  const refersTo = (value: unknown): string | undefined => {
    const text = JSON.stringify(value);
    for (const id of removed.keys())
      if (
        text.includes(`{"Ref":"${id}"}`) ||
        text.includes(`"Fn::GetAtt":["${id}"`) ||
        text.includes(`\${${id}.`) ||
        text.includes(`\${${id}}`)
      )
        return id;
    return undefined;
  };
  let changed = true;
  while (changed) {
    changed = false;
    for (const [id, r] of Object.entries(resources)) {
      if (removed.has(id)) continue;
      const deps = ([] as string[]).concat((r.DependsOn as string | string[] | undefined) ?? []);
      const on = deps.find((d) => removed.has(d)) ?? refersTo(r.Properties);
      if (on) {
        removed.set(id, `refers to ${on}`);
        changed = true;
      }
    }
  }
  for (const id of removed.keys()) delete resources[id];
  const outputs = Object.fromEntries(Object.entries(template.Outputs ?? {}).filter(([, o]) => !refersTo(o)));
  return { template: { ...template, Resources: resources, Outputs: outputs }, removed };
}

interface Template {
  Resources: Record<string, { Type: string; Properties?: unknown; DependsOn?: unknown }>;
  Outputs?: Record<string, unknown>;
  [key: string]: unknown;
}

/** CreateStack's TemplateBody holds 51,200 bytes at most: the template goes through the bootstrap's bucket. */
async function stagedTemplate(endpoint: string, template: Template): Promise<string> {
  const bucket = `cdk-hnb659fds-assets-${ACCOUNT}-${REGION}`;
  const key = `${STACK}-without-lambda.template.json`;
  const s3 = new S3Client({
    endpoint,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: JSON.stringify(template) }));
  return `${endpoint}/${bucket}/${key}`;
}

async function deployWithoutLambda(
  cfn: CloudFormationClient,
  endpoint: string,
  template: Template,
): Promise<string> {
  const statusOf = async () => {
    try {
      return (await cfn.send(new DescribeStacksCommand({ StackName: STACK }))).Stacks?.[0]?.StackStatus;
    } catch {
      return undefined; // no such stack
    }
  };
  // what the failed deploy left (ROLLBACK_COMPLETE) goes first
  if (await statusOf()) await cfn.send(new DeleteStackCommand({ StackName: STACK }));
  for (let i = 0; i < 120; i++) {
    const s = await statusOf();
    if (!s || s === "DELETE_COMPLETE") break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  await cfn.send(
    new CreateStackCommand({
      StackName: STACK,
      TemplateURL: await stagedTemplate(endpoint, template),
      Capabilities: ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
      DisableRollback: true,
    }),
  );
  for (let i = 0; i < 600; i++) {
    const s = await statusOf();
    if (s && !s.endsWith("_IN_PROGRESS")) return s;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return "TIMED_OUT";
}

const { values } = parseArgs({ options: { keep: { type: "boolean", default: false } } });

/** Runs a command to its end with its output shown; its exit code. */
async function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  process.stdout.write(`\n$ ${command} ${args.join(" ")}\n`);
  const child = spawn(command, args, { cwd: top, stdio: "inherit", env });
  const [code] = (await once(child, "exit")) as [number | null];
  return code ?? 1;
}

interface Row {
  logical: string;
  type: string;
  status: string;
  reason: string;
}

async function resourcesOf(cfn: CloudFormationClient): Promise<Map<string, StackResourceSummary>> {
  const out = new Map<string, StackResourceSummary>();
  let token: string | undefined;
  try {
    do {
      const page = await cfn.send(new ListStackResourcesCommand({ StackName: STACK, NextToken: token }));
      for (const r of page.StackResourceSummaries ?? [])
        if (r.LogicalResourceId) out.set(r.LogicalResourceId, r);
      token = page.NextToken;
    } while (token);
  } catch {
    // no stack (the deploy never began): every resource is listed as not created
  }
  return out;
}

/** What ListStackResources leaves out of a failed resource: its reason (DescribeStackResources). */
async function reasonsOf(cfn: CloudFormationClient): Promise<Map<string, string>> {
  try {
    const r = await cfn.send(new DescribeStackResourcesCommand({ StackName: STACK }));
    return new Map(
      (r.StackResources ?? []).map((x) => [x.LogicalResourceId ?? "", x.ResourceStatusReason ?? ""]),
    );
  } catch {
    return new Map();
  }
}

const children: ChildProcess[] = [];
let code = 1;
try {
  let version = localstackInstalled();
  if (!version) {
    await run("sh", [join(top, "scripts", "localstack", "install.sh")], process.env);
    version = localstackInstalled();
  }
  if (!version) throw new Error("LocalStack is not installed: scripts/localstack/install.sh said why");
  const docker = spawnSync("docker", ["info"], { stdio: "ignore" }).status === 0;
  const ls = await startLocalStack(children, SERVICES);
  process.stdout.write(
    `LocalStack ${ls.version}, host mode, at ${ls.endpoint}; Lambda: ${
      docker
        ? "Docker is here"
        : "no Docker, so no function can be created (the rest is deployed without them)"
    }\n`,
  );
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AWS_ENDPOINT_URL: ls.endpoint,
    AWS_ENDPOINT_URL_S3: ls.endpoint,
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    // path-style S3 URLs: the bucket's host name would need LocalStack's DNS
    AWS_S3_FORCE_PATH_STYLE: "1",
    NOVALESS_AUTH_TOKENS: process.env.NOVALESS_AUTH_TOKENS ?? "{}",
  };
  const cdklocal = join(top, "node_modules", ".bin", "cdklocal");
  const bootstrapped = await run(cdklocal, ["bootstrap", `aws://${ACCOUNT}/${REGION}`], env);
  const deployed = await run(
    cdklocal,
    ["deploy", STACK, "--require-approval", "never", "--no-rollback", "-c", "removalPolicy=destroy"],
    env,
  );

  const template = JSON.parse(
    readFileSync(join(top, "cdk.out", `${STACK}.template.json`), "utf8"),
  ) as Template;
  const cfn = new CloudFormationClient({
    endpoint: ls.endpoint,
    region: REGION,
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  let left = new Map<string, string>();
  if (deployed !== 0 && !docker) {
    const part = withoutLambda(template);
    left = part.removed;
    process.stdout.write(
      `\nThe stack without its ${left.size} resources that are or need a Lambda function, by CloudFormation's CreateStack:\n`,
    );
    process.stdout.write(`${STACK}: ${await deployWithoutLambda(cfn, ls.endpoint, part.template)}\n`);
  }
  const [created, reasons] = await Promise.all([resourcesOf(cfn), reasonsOf(cfn)]);
  const rows: Row[] = Object.entries(template.Resources).map(([logical, r]) => {
    const c = created.get(logical);
    return {
      logical,
      type: r.Type,
      status: c?.ResourceStatus ?? (left.has(logical) ? "NOT_DEPLOYED" : "NOT_CREATED"),
      reason: (reasons.get(logical) || c?.ResourceStatusReason || left.get(logical) || "")
        .replace(/\s+/g, " ")
        .slice(0, 160),
    };
  });
  rows.sort((a, b) => a.type.localeCompare(b.type) || a.logical.localeCompare(b.logical));
  process.stdout.write(
    `\nEvery resource of cdk.out/${STACK}.template.json, as LocalStack ${ls.version} has it:\n`,
  );
  console.table(rows);
  const byStatus = new Map<string, number>();
  for (const r of rows) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
  let stackStatus = "(none)";
  try {
    const s = await cfn.send(new DescribeStacksCommand({ StackName: STACK }));
    stackStatus = s.Stacks?.[0]?.StackStatus ?? stackStatus;
  } catch {
    // no stack
  }
  process.stdout.write(
    `deploy:localstack: LocalStack ${ls.version}; bootstrap exited ${bootstrapped}, deploy exited ${deployed}; ` +
      `stack ${stackStatus}; ${rows.length} resources: ${[...byStatus].map(([s, n]) => `${n} ${s}`).join(", ")}\n`,
  );
  code = bootstrapped === 0 && !byStatus.has("CREATE_FAILED") && !byStatus.has("NOT_CREATED") ? 0 : 1;
  if (values.keep) {
    process.stdout.write(`LocalStack stays up at ${ls.endpoint} (Ctrl-C stops it)\n`);
    await new Promise((resolve) => process.once("SIGINT", resolve));
  }
} catch (e) {
  process.stderr.write(`deploy:localstack: ${e instanceof Error ? e.message : String(e)}\n`);
} finally {
  await Promise.all(children.map(stopProcess));
}
process.exit(code);
