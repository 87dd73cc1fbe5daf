// The CDK stack, synthesized offline. The default (Express) variant bundles the four Lambdas
// with the local esbuild; the Standard variant skips bundling, so the suite stays quick.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { App, type CfnElement, RemovalPolicy } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CONDUCTOR_FUNCTION_TIMEOUT_SECONDS,
  CONDUCTOR_TASKS,
  conductorDefinition,
} from "../../infra/conductor/definition.js";
import { MIGRATION_DISK_DAYS } from "../../infra/constructs/data.js";
import { buildIntakeConcurrency } from "../../infra/constructs/functions.js";
import { NovalessStack, type NovalessStackProps } from "../../infra/stacks/novaless-stack.js";
import { DEFAULT_AUTH_TOKENS } from "../../lib/api/settings.js";
import { SCHEDULER_DEFAULTS, schedulerConfig, schedulerEnvironment } from "../../lib/config.js";
import { FLEET_SNAPSHOT_KEY } from "../../lib/placement/fleet-snapshot-store.js";
import { BUILD_REQUESTS_QUEUE, DLQ_RETENTION_SECONDS, TABLES } from "../../lib/resources.js";

type Resource = { Type: string; Properties: Record<string, unknown> } & Record<string, unknown>;

const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
  app: string;
  context: Record<string, unknown>;
};

interface Synth {
  stack: NovalessStack;
  template: Template;
  assemblyDir: string;
}

function synth(props: NovalessStackProps, bundle: boolean, extra: Record<string, unknown> = {}): Synth {
  const context = { ...cdkJson.context, ...(bundle ? {} : { "aws:cdk:bundling-stacks": [] }), ...extra };
  const app = new App({ context });
  const stack = new NovalessStack(app, "NovalessStack", props);
  const template = Template.fromStack(stack);
  return { stack, template, assemblyDir: app.synth().directory };
}

function logicalId(stack: NovalessStack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnElement);
}

function only(template: Template, type: string): Resource {
  const found = Object.values(template.findResources(type)) as Resource[];
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** The Fn::Join CloudFormation makes of the ASL, with each function's ARN replaced by a name. */
function definitionOf(synth: Synth): unknown {
  const machine = only(synth.template, "AWS::StepFunctions::StateMachine");
  const names = new Map([
    [logicalId(synth.stack, synth.stack.conductorFunction), "CONDUCTOR_ARN"],
    [logicalId(synth.stack, synth.stack.schedulerFunction), "SCHEDULER_ARN"],
  ]);
  const join = (machine.Properties.DefinitionString as { "Fn::Join": [string, unknown[]] })["Fn::Join"];
  const text = join[1]
    .map((part) => {
      if (typeof part === "string") return part;
      const [id, attribute] = (part as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"];
      expect(attribute).toBe("Arn");
      const name = names.get(id);
      if (!name) throw new Error(`unexpected reference in the definition: ${id}`);
      return name;
    })
    .join(join[0]);
  return JSON.parse(text);
}

function environmentOf(synth: Synth, fn: NovalessStack["apiFunction"]): Record<string, unknown> {
  const resource = synth.template.toJSON().Resources[logicalId(synth.stack, fn)] as Resource;
  return (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

function statementsOf(synth: Synth, fn: NovalessStack["apiFunction"]): Record<string, unknown>[] {
  const roleId = logicalId(synth.stack, fn.role as unknown as { node: { defaultChild?: unknown } });
  const policies = Object.values(synth.template.findResources("AWS::IAM::Policy")) as Resource[];
  return policies
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
}

const actions = (statements: Record<string, unknown>[]): string[] =>
  statements.flatMap((s) => [s.Action].flat() as string[]);

describe("NovalessStack (defaults: Express conductor, bundled functions)", () => {
  let s: Synth;
  beforeAll(() => {
    s = synth({}, true);
  });

  it("creates the tables from lib/resources.ts, with their sort keys and index projections", () => {
    s.template.resourceCountIs("AWS::DynamoDB::Table", TABLES.length);
    for (const spec of TABLES) {
      const table = s.template.toJSON().Resources[logicalId(s.stack, s.stack.tables[spec.id])] as Resource;
      expect(table.DeletionPolicy).toBe("Retain");
      expect(table.Properties).toMatchObject({
        BillingMode: "PAY_PER_REQUEST",
        KeySchema: [
          { AttributeName: spec.partitionKey, KeyType: "HASH" },
          ...(spec.sortKey ? [{ AttributeName: spec.sortKey, KeyType: "RANGE" }] : []),
        ],
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      });
      const gsis = (table.Properties.GlobalSecondaryIndexes ?? []) as Record<string, unknown>[];
      expect(gsis.map((g) => g.IndexName)).toEqual(spec.gsis.map((g) => g.indexName));
      for (const [i, gsi] of gsis.entries()) {
        const p = spec.gsis[i]!.projection;
        expect(gsi.Projection).toEqual(
          p === "ALL" || p === "KEYS_ONLY"
            ? { ProjectionType: p }
            : { ProjectionType: "INCLUDE", NonKeyAttributes: p },
        );
      }
    }
    s.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [
        { AttributeName: "consumer", KeyType: "HASH" },
        { AttributeName: "host", KeyType: "RANGE" },
      ],
    });
    // the Hosts table has no index (an entry keyed by a write's time moves on every write); its
    // change feed is a table of its own, expired by TTL
    s.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [{ AttributeName: "host", KeyType: "HASH" }],
      GlobalSecondaryIndexes: Match.absent(),
    });
    s.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [
        { AttributeName: "feed", KeyType: "HASH" },
        { AttributeName: "at", KeyType: "RANGE" },
      ],
      TimeToLiveSpecification: { AttributeName: "expires_at", Enabled: true },
    });
    s.template.hasResourceProperties("AWS::DynamoDB::Table", {
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      TimeToLiveSpecification: { AttributeName: "expires_at", Enabled: true },
      GlobalSecondaryIndexes: Match.arrayWith([
        {
          IndexName: "by-project",
          KeySchema: [
            { AttributeName: "project_id", KeyType: "HASH" },
            { AttributeName: "created_at", KeyType: "RANGE" },
          ],
          Projection: { ProjectionType: "INCLUDE", NonKeyAttributes: ["deleted"] },
        },
      ]),
    });
  });

  it("creates build-requests with its DLQ and compute-events' DLQ, encrypted; compute-events has no queue", () => {
    s.template.resourceCountIs("AWS::SQS::Queue", 3);
    // the hosts' reports come through compute-events' function URL: no queue, no event source
    s.template.resourceCountIs("AWS::Lambda::Url", 1);
    s.template.hasResourceProperties("AWS::Lambda::Url", {
      AuthType: "AWS_IAM",
      TargetFunctionArn: { "Fn::GetAtt": [logicalId(s.stack, s.stack.computeEventsFunction), "Arn"] },
    });
    const sources = Object.values(s.template.findResources("AWS::Lambda::EventSourceMapping"));
    expect(
      sources.filter(
        (m) =>
          JSON.stringify(m.Properties.FunctionName) ===
          JSON.stringify({ Ref: logicalId(s.stack, s.stack.computeEventsFunction) }),
      ),
    ).toHaveLength(0);
    expect(environmentOf(s, s.stack.computeEventsFunction).NOVALESS_COMPUTE_EVENTS_DLQ_URL).toBeDefined();
    s.template.hasResourceProperties("AWS::SQS::Queue", {
      VisibilityTimeout: BUILD_REQUESTS_QUEUE.visibilityTimeout,
      SqsManagedSseEnabled: true,
      RedrivePolicy: {
        maxReceiveCount: BUILD_REQUESTS_QUEUE.maxReceiveCount,
        deadLetterTargetArn: { "Fn::GetAtt": [logicalId(s.stack, s.stack.buildRequestsDlq), "Arn"] },
      },
    });
    s.template.hasResourceProperties("AWS::SQS::Queue", {
      MessageRetentionPeriod: DLQ_RETENTION_SECONDS,
      SqsManagedSseEnabled: true,
    });
  });

  it("bundles six ESM functions for nodejs22.x on arm64", () => {
    s.template.resourceCountIs("AWS::Lambda::Function", 6);
    s.template.allResourcesProperties("AWS::Lambda::Function", {
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
    });
    const functions = Object.values(s.template.findResources("AWS::Lambda::Function")) as Resource[];
    for (const fn of functions) {
      const key = (fn.Properties.Code as { S3Key: string }).S3Key;
      const bundle = join(s.assemblyDir, `asset.${key.replace(/\.zip$/, "")}`, "index.mjs");
      expect(readFileSync(bundle, "utf8").startsWith("import { createRequire }")).toBe(true);
      expect(existsSync(`${bundle}.map`)).toBe(true);
    }
  });

  it("gives every function the resource names and the scheduler options", () => {
    for (const fn of [
      s.stack.apiFunction,
      s.stack.buildIntakeFunction,
      s.stack.schedulerFunction,
      s.stack.conductorFunction,
    ]) {
      const env = environmentOf(s, fn);
      for (const spec of TABLES) {
        expect(env[spec.env]).toEqual({ Ref: logicalId(s.stack, s.stack.tables[spec.id]) });
      }
      expect(env).toMatchObject({
        NOVALESS_BUILD_REQUESTS_QUEUE_URL: { Ref: logicalId(s.stack, s.stack.buildRequestsQueue) },
        NOVALESS_BUILD_REQUESTS_DLQ_URL: { Ref: logicalId(s.stack, s.stack.buildRequestsDlq) },
        NOVALESS_COMPUTE_QUEUE_PREFIX: "novalessstack-compute-",
        NOVALESS_MAX_ATTEMPTS: "3",
        NODE_OPTIONS: "--enable-source-maps",
      });
    }
    // build-intake alone starts executions; every other function sends to build-requests
    expect(environmentOf(s, s.stack.buildIntakeFunction).NOVALESS_CONDUCTOR_ARN).toEqual({
      Ref: logicalId(s.stack, s.stack.conductor),
    });
    for (const fn of [
      s.stack.apiFunction,
      s.stack.buildWatchdogFunction,
      s.stack.computeEventsFunction,
      s.stack.schedulerFunction,
      s.stack.conductorFunction,
    ])
      expect(environmentOf(s, fn).NOVALESS_CONDUCTOR_ARN).toBeUndefined();
  });

  it("keeps the token table in Secrets Manager: the API gets the secret's ARN and the right to read it", () => {
    const secretId = logicalId(s.stack, s.stack.authTokensSecret);
    const api = environmentOf(s, s.stack.apiFunction);
    expect(api.NOVALESS_AUTH_TOKENS_SECRET).toEqual({ Ref: secretId });
    expect(api.NOVALESS_AUTH_TOKENS).toBeUndefined();
    // An empty table until the operator puts one (every call 401), never the local demo tokens.
    expect(s.template.toJSON().Resources[secretId].Properties.SecretString).toBe("{}");
    const reads = (fn: NovalessStack["apiFunction"]) =>
      statementsOf(s, fn).filter((st) =>
        [st.Resource].flat().some((r) => JSON.stringify(r) === JSON.stringify({ Ref: secretId })),
      );
    expect(actions(reads(s.stack.apiFunction))).toEqual(
      expect.arrayContaining(["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]),
    );
    for (const fn of [s.stack.schedulerFunction, s.stack.conductorFunction, s.stack.buildIntakeFunction]) {
      expect(reads(fn)).toEqual([]);
      expect(environmentOf(s, fn).NOVALESS_AUTH_TOKENS_SECRET).toBeUndefined();
    }
  });

  it("signs /identity's tokens with a generated key the API alone reads; the admin's password is generated too", () => {
    const keyId = logicalId(s.stack, s.stack.tokenKeySecret!);
    const resources = s.template.toJSON().Resources;
    expect(resources[keyId].Properties.GenerateSecretString).toBeDefined();
    expect(resources[keyId].Properties.SecretString).toBeUndefined();
    expect(environmentOf(s, s.stack.apiFunction).NOVALESS_TOKEN_KEY_SECRET).toEqual({ Ref: keyId });
    const reads = (fn: NovalessStack["apiFunction"]) =>
      statementsOf(s, fn).filter((st) =>
        [st.Resource].flat().some((r) => JSON.stringify(r) === JSON.stringify({ Ref: keyId })),
      );
    expect(actions(reads(s.stack.apiFunction))).toContain("secretsmanager:GetSecretValue");
    for (const fn of [s.stack.schedulerFunction, s.stack.conductorFunction, s.stack.buildIntakeFunction])
      expect(reads(fn)).toEqual([]);
    const adminId = logicalId(s.stack, s.stack.adminPasswordSecret!);
    expect(resources[adminId].Properties.GenerateSecretString).toBeDefined();
    // the operator's seed reads it, no function does
    expect(JSON.stringify(statementsOf(s, s.stack.apiFunction))).not.toContain(adminId);
  });

  it("puts no token, password or key in the template", () => {
    const text = JSON.stringify(s.template.toJSON());
    for (const demo of Object.keys(DEFAULT_AUTH_TOKENS)) expect(text).not.toContain(demo);
    // A token table has principals: `"user_id":` (escaped once inside an environment string).
    // (secrets the stack generates are named for what they hold: AdminPassword; no password value)
    expect(text).not.toMatch(/user_id\\*":|\\*"password\\*":|AKIA[0-9A-Z]{12}|BEGIN [A-Z ]*PRIVATE KEY/i);
    for (const fn of Object.values(s.template.findResources("AWS::Lambda::Function")) as Resource[]) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      for (const [name, value] of Object.entries(env)) {
        expect(name).not.toMatch(/TOKEN(S)?$|PASSWORD|SECRET_KEY/);
        if (typeof value === "string") expect(value.trim().startsWith("{")).toBe(false);
      }
    }
  });

  it("names each function's service for its logs and metrics", () => {
    expect(environmentOf(s, s.stack.apiFunction).POWERTOOLS_SERVICE_NAME).toBe("api");
    expect(environmentOf(s, s.stack.schedulerFunction).POWERTOOLS_SERVICE_NAME).toBe("scheduler");
    expect(environmentOf(s, s.stack.conductorFunction).POWERTOOLS_SERVICE_NAME).toBe("conductor");
    expect(environmentOf(s, s.stack.buildIntakeFunction).POWERTOOLS_SERVICE_NAME).toBe("build-intake");
    expect(environmentOf(s, s.stack.buildWatchdogFunction).POWERTOOLS_SERVICE_NAME).toBe("build-watchdog");
  });

  it("runs the build watchdog every minute, with what it needs to fence and reschedule", () => {
    s.template.hasResourceProperties("AWS::Events::Rule", {
      ScheduleExpression: "rate(1 minute)",
      Targets: [
        Match.objectLike({
          Arn: {
            "Fn::GetAtt": [
              s.stack.getLogicalId(s.stack.buildWatchdogFunction.node.defaultChild as CfnElement),
              "Arn",
            ],
          },
        }),
      ],
    });
    const env = environmentOf(s, s.stack.buildWatchdogFunction);
    expect(env.NOVALESS_INSTANCE_BUILD_TIMEOUT).toBe("600");
    expect(env.NOVALESS_BUILD_REQUESTS_QUEUE_URL).toBeDefined();
    // Its builds in flight are by-vm-state's `building` partition: no index of their own.
    const indexes = Object.values(s.template.findResources("AWS::DynamoDB::Table")).flatMap(
      (t) => (t.Properties.GlobalSecondaryIndexes ?? []) as { IndexName: string }[],
    );
    expect(indexes.map((i) => i.IndexName)).toContain("by-vm-state");
    expect(indexes.map((i) => i.IndexName)).not.toContain("building-by-deadline");
  });

  it("consumes build-requests with build-intake through an SQS event source: batches, partial failures, bounded", () => {
    const intakeId = logicalId(s.stack, s.stack.buildIntakeFunction);
    const buildRequestsArn = { "Fn::GetAtt": [logicalId(s.stack, s.stack.buildRequestsQueue), "Arn"] };
    const mappings = Object.values(s.template.findResources("AWS::Lambda::EventSourceMapping")) as Resource[];
    expect(mappings).toHaveLength(1);
    const mapping = mappings[0]!.Properties;
    expect(mapping).toMatchObject({
      EventSourceArn: buildRequestsArn,
      FunctionName: { Ref: intakeId },
      BatchSize: 10,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      // sized from fleet_size (its default, 1,000)
      ScalingConfig: { MaximumConcurrency: buildIntakeConcurrency(1000) },
    });
    // BatchSize 10 needs no batching window; a window would delay every build
    expect(mapping.MaximumBatchingWindowInSeconds).toBeUndefined();
    // no schedule drains it: the watchdog's is the stack's only rule
    const rules = Object.values(s.template.findResources("AWS::Events::Rule")) as Resource[];
    expect(rules).toHaveLength(1);
    expect(JSON.stringify(rules[0]!.Properties.Targets)).not.toContain(intakeId);
    // AWS's advice: the queue's visibility timeout at least six times the function's timeout
    const intake = s.template.toJSON().Resources[intakeId] as Resource;
    const queue = s.template.toJSON().Resources[logicalId(s.stack, s.stack.buildRequestsQueue)] as Resource;
    expect(Number(queue.Properties.VisibilityTimeout)).toBeGreaterThanOrEqual(
      6 * Number(intake.Properties.Timeout),
    );
  });

  it("gives the conductor's two functions the timeouts its retry budget is computed from", () => {
    for (const [fn, seconds] of [
      [s.stack.schedulerFunction, CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.scheduler],
      [s.stack.conductorFunction, CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.conductor],
    ] as const) {
      const resource = s.template.toJSON().Resources[logicalId(s.stack, fn)] as Resource;
      expect(resource.Properties.Timeout).toBe(seconds);
    }
  });

  it("deploys the conductor definition the local runtime runs, as an Express workflow", () => {
    const definition = definitionOf(s);
    expect(definition).toEqual(
      conductorDefinition({ conductorFunctionArn: "CONDUCTOR_ARN", schedulerFunctionArn: "SCHEDULER_ARN" }),
    );
    const states = (definition as { States: Record<string, Record<string, unknown>> }).States;
    expect(states[CONDUCTOR_TASKS.selectDestinations]!.Resource).toBe("SCHEDULER_ARN");
    expect(states[CONDUCTOR_TASKS.castToCompute]!.Type).toBe("Map");
    expect(JSON.stringify(states[CONDUCTOR_TASKS.castToCompute])).toContain(
      "arn:aws:states:::sqs:sendMessage",
    );

    const machine = only(s.template, "AWS::StepFunctions::StateMachine");
    expect(machine.Properties.StateMachineType).toBe("EXPRESS");
    // conductor_log_level ERROR and conductor_tracing off, by default
    expect(machine.Properties.LoggingConfiguration).toMatchObject({
      Level: "ERROR",
      IncludeExecutionData: false,
    });
    expect(
      (machine.Properties.TracingConfiguration as { Enabled?: boolean } | undefined)?.Enabled ?? false,
    ).toBe(false);
  });

  it("lets the conductor invoke its two functions and cast to compute queues only", () => {
    const roleRef = (machine: Resource) =>
      (machine.Properties.RoleArn as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
    const roleId = roleRef(only(s.template, "AWS::StepFunctions::StateMachine"));
    const policies = Object.values(s.template.findResources("AWS::IAM::Policy")) as Resource[];
    const statements = policies
      .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
      .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
    const invoke = statements.filter((st) => [st.Action].flat().includes("lambda:InvokeFunction"));
    const invoked = JSON.stringify(invoke.map((st) => st.Resource));
    expect(invoked).toContain(logicalId(s.stack, s.stack.schedulerFunction));
    expect(invoked).toContain(logicalId(s.stack, s.stack.conductorFunction));
    expect(invoked).not.toContain(logicalId(s.stack, s.stack.apiFunction));
    const send = statements.find((st) => st.Action === "sqs:SendMessage");
    expect(JSON.stringify(send?.Resource)).toContain(":novalessstack-compute-*");
  });

  it("grants each function only what it needs", () => {
    const apiStatements = statementsOf(s, s.stack.apiFunction);
    const api = actions(apiStatements);
    expect(api).toEqual(expect.arrayContaining(["dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage"]));
    // no role but build-intake's may start the conductor (or any state machine)
    const conductorRef = JSON.stringify({ Ref: logicalId(s.stack, s.stack.conductor) });
    const roles = Object.entries(s.template.findResources("AWS::IAM::Role"));
    const starters = roles.filter(([id]) =>
      (Object.values(s.template.findResources("AWS::IAM::Policy")) as Resource[]).some(
        (p) =>
          (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === id) &&
          JSON.stringify(p.Properties.PolicyDocument).includes("states:StartExecution"),
      ),
    );
    const intakeRole = (
      s.template.toJSON().Resources[logicalId(s.stack, s.stack.buildIntakeFunction)] as Resource
    ).Properties.Role as { "Fn::GetAtt": [string, string] };
    expect(starters.map(([id]) => id)).toEqual([intakeRole["Fn::GetAtt"][0]]);
    const starts = statementsOf(s, s.stack.buildIntakeFunction).filter((st) =>
      [st.Action].flat().includes("states:StartExecution"),
    );
    expect(starts).toHaveLength(1);
    expect(JSON.stringify(starts[0]!.Resource)).toBe(conductorRef);
    const hostsArn = { "Fn::GetAtt": [logicalId(s.stack, s.stack.tables.Hosts), "Arn"] };
    const onHosts = actions(
      apiStatements.filter((st) => JSON.stringify(st.Resource).includes(JSON.stringify(hostsArn))),
    );
    expect(onHosts).toContain("dynamodb:UpdateItem");
    expect(onHosts).not.toContain("dynamodb:PutItem");
    expect(onHosts).not.toContain("dynamodb:DeleteItem");

    const intakeStatements = statementsOf(s, s.stack.buildIntakeFunction);
    const intake = actions(intakeStatements);
    expect(intake).toEqual(
      expect.arrayContaining([
        "states:StartExecution",
        "sqs:SendMessage",
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
      ]),
    );
    // its DynamoDB is a member sync's (lib/instances/security-group-refresh.ts): reads, and the
    // group's mark deleted; it writes no other item
    expect([...new Set(intake.filter((a) => a.startsWith("dynamodb:")))].sort()).toEqual([
      "dynamodb:BatchGetItem",
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:Query",
    ]);
    const networkingArn = { "Fn::GetAtt": [logicalId(s.stack, s.stack.tables.Networking), "Arn"] };
    const intakeDeletes = intakeStatements.filter((st) => [st.Action].flat().includes("dynamodb:DeleteItem"));
    expect(intakeDeletes.map((st) => JSON.stringify(st.Resource))).toEqual([
      expect.stringContaining(JSON.stringify(networkingArn)),
    ]);
    // it reads build-requests and sends only to its DLQ (a malformed request, with its reason)
    const onIntakeQueue = (queue: { node: { defaultChild?: unknown } }, action: string) =>
      intakeStatements.some(
        (st) =>
          [st.Action].flat().includes(action) &&
          JSON.stringify(st.Resource).includes(
            JSON.stringify({ "Fn::GetAtt": [logicalId(s.stack, queue), "Arn"] }),
          ),
      );
    expect(onIntakeQueue(s.stack.buildRequestsQueue, "sqs:ReceiveMessage")).toBe(true);
    expect(onIntakeQueue(s.stack.buildRequestsQueue, "sqs:SendMessage")).toBe(false);
    expect(onIntakeQueue(s.stack.buildRequestsDlq, "sqs:SendMessage")).toBe(true);

    const scheduler = actions(statementsOf(s, s.stack.schedulerFunction));
    expect(scheduler).toEqual(expect.arrayContaining(["dynamodb:UpdateItem", "dynamodb:GetItem"]));
    expect(scheduler.some((a) => a.startsWith("sqs:") || a.startsWith("states:"))).toBe(false);

    const conductorStatements = statementsOf(s, s.stack.conductorFunction);
    const conductor = actions(conductorStatements);
    expect(conductor).toEqual(expect.arrayContaining(["dynamodb:UpdateItem", "sqs:SendMessage"]));
    expect(conductor.some((a) => a.startsWith("states:"))).toBe(false);
    // it casts to hosts; on build-requests it may only send (a security group's member sync,
    // which build-intake applies itself: lib/conductor/intake.ts), never receive or delete
    const onRequests = conductorStatements.filter((st) =>
      JSON.stringify(st.Resource).includes(logicalId(s.stack, s.stack.buildRequestsQueue)),
    );
    expect(onRequests.flatMap((st) => [st.Action].flat()).sort()).toEqual([
      "sqs:GetQueueAttributes",
      "sqs:GetQueueUrl",
      "sqs:SendMessage",
    ]);
  });

  it("serves the API through an HTTP API $default route with payload 2.0", () => {
    s.template.resourceCountIs("AWS::ApiGatewayV2::Api", 1);
    s.template.hasResourceProperties("AWS::ApiGatewayV2::Api", { ProtocolType: "HTTP" });
    s.template.hasResourceProperties("AWS::ApiGatewayV2::Route", { RouteKey: "$default" });
    s.template.hasResourceProperties("AWS::ApiGatewayV2::Integration", {
      IntegrationType: "AWS_PROXY",
      PayloadFormatVersion: "2.0",
    });
    s.template.hasResourceProperties("AWS::ApiGatewayV2::Stage", { StageName: "$default", AutoDeploy: true });
  });

  it("logs every API request to its own log group, without headers, and throttles the $default stage", () => {
    const stage = only(s.template, "AWS::ApiGatewayV2::Stage");
    const access = stage.Properties.AccessLogSettings as { DestinationArn: unknown; Format: string };
    const group = access.DestinationArn as { "Fn::GetAtt": [string, string] };
    expect(s.template.toJSON().Resources[group["Fn::GetAtt"][0]].Type).toBe("AWS::Logs::LogGroup");
    const format = JSON.parse(access.Format) as Record<string, string>;
    expect(format).toMatchObject({ requestId: "$context.requestId", status: "$context.status" });
    expect(access.Format).not.toMatch(/header|token/i);
    expect(stage.Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: 50,
      ThrottlingBurstLimit: 100,
    });
  });

  // IAM policy variables: "${aws:PrincipalTag/…}" is the template's text, not a JS template.
  const tag = (key: string) => ["$", "{", key, "}"].join("");
  it("gives compute hosts no database: their own tagged queue and compute-events, by principal tag", () => {
    const policy = s.template.toJSON().Resources[logicalId(s.stack, s.stack.computeAgentPolicy)] as Resource;
    const text = JSON.stringify(policy.Properties.PolicyDocument);
    expect(text).not.toContain("dynamodb:");
    expect(text).not.toContain("sqs:CreateQueue");
    s.template.hasResourceProperties("AWS::IAM::ManagedPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Sid: "OwnComputeQueue",
            Action: Match.arrayWith(["sqs:DeleteMessage", "sqs:ReceiveMessage"]),
            Condition: {
              StringEquals: { "aws:ResourceTag/novaless-host": tag("aws:PrincipalTag/novaless-host") },
              StringLike: { "aws:userid": `*:${tag("aws:PrincipalTag/novaless-host")}` },
            },
          }),
          Match.objectLike({
            Sid: "Report",
            Action: "lambda:InvokeFunctionUrl",
            Resource: { "Fn::GetAtt": [logicalId(s.stack, s.stack.computeEventsFunction), "Arn"] },
            Condition: Match.objectLike({ StringEquals: { "lambda:FunctionUrlAuthType": "AWS_IAM" } }),
          }),
          Match.objectLike({
            Sid: "ReportViaUrl",
            Action: "lambda:InvokeFunction",
            Resource: { "Fn::GetAtt": [logicalId(s.stack, s.stack.computeEventsFunction), "Arn"] },
            Condition: Match.objectLike({ Bool: { "lambda:InvokedViaFunctionUrl": "true" } }),
          }),
        ]),
      },
    });
    // The role's trust: only a role under the hosts' path, and it may tag and name its session
    // only as the host it is. Roles Anywhere is off unless its trust anchor is named.
    const hostRole = s.template.toJSON().Resources[logicalId(s.stack, s.stack.computeHostRole)] as Resource;
    expect(hostRole.Properties.Path).toBe("/novaless-hosts/");
    const trust = hostRole.Properties.AssumeRolePolicyDocument as { Statement: Record<string, unknown>[] };
    expect(trust.Statement).toHaveLength(1);
    expect(trust.Statement[0]).toMatchObject({
      Action: ["sts:AssumeRole", "sts:TagSession"],
      Condition: {
        StringEquals: {
          "aws:RequestTag/novaless-host": tag("aws:PrincipalTag/novaless-host"),
          "sts:RoleSessionName": tag("aws:PrincipalTag/novaless-host"),
        },
        "ForAllValues:StringEquals": { "aws:TagKeys": ["novaless-host"] },
      },
    });
    expect(JSON.stringify(trust.Statement[0]!.Condition)).toMatch(
      /aws:PrincipalArn.*:role\/novaless-hosts\/\*/,
    );
    expect(JSON.stringify(trust)).not.toContain("rolesanywhere");
    expect(s.template.findResources("AWS::RolesAnywhere::TrustAnchor")).toEqual({});
    // Taking the tagged session: a policy allowing only that, attached to the role (the Roles
    // Anywhere session takes it) and output for EC2 hosts' instance-profile roles.
    const roleId = logicalId(s.stack, s.stack.computeHostRole);
    const assume = s.template.toJSON().Resources[
      logicalId(s.stack, s.stack.computeHostAssumePolicy)
    ] as Resource;
    expect(assume.Properties.Roles).toEqual([{ Ref: roleId }]);
    expect(assume.Properties.PolicyDocument).toMatchObject({
      Statement: [
        {
          Sid: "TakeHostSession",
          Effect: "Allow",
          Action: ["sts:AssumeRole", "sts:TagSession"],
          Resource: { "Fn::GetAtt": [roleId, "Arn"] },
        },
      ],
    });
  });

  it("keeps snapshots' data in a private, encrypted bucket: hosts put and get images/, and put, get and delete migrations/; the API gets, puts (uploads) and deletes, compute-events deletes", () => {
    const buckets = s.template.findResources("AWS::S3::Bucket");
    expect(Object.keys(buckets)).toHaveLength(1);
    const [bucketId] = Object.keys(buckets) as [string];
    s.template.hasResourceProperties("AWS::S3::Bucket", {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: Match.anyValue(),
    });
    // TLS only (enforceSSL): the bucket policy denies aws:SecureTransport false
    expect(JSON.stringify(s.template.findResources("AWS::S3::BucketPolicy"))).toContain(
      "aws:SecureTransport",
    );
    const images = { "Fn::Join": ["", [{ "Fn::GetAtt": [bucketId, "Arn"] }, "/images/*"]] };
    s.template.hasResourceProperties("AWS::IAM::ManagedPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Sid: "Images",
            Action: ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
            Resource: images,
            Condition: { StringLike: { "aws:userid": `*:${tag("aws:PrincipalTag/novaless-host")}` } },
          }),
          // a move's disk, from its source to its destination
          Match.objectLike({
            Sid: "MigrationDisks",
            Action: ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            Resource: { "Fn::Join": ["", [{ "Fn::GetAtt": [bucketId, "Arn"] }, "/migrations/*"]] },
            Condition: { StringLike: { "aws:userid": `*:${tag("aws:PrincipalTag/novaless-host")}` } },
          }),
        ]),
      },
    });
    // what a failed move left under migrations/ expires
    s.template.hasResourceProperties("AWS::S3::Bucket", {
      LifecycleConfiguration: {
        Rules: [
          {
            Id: "MigrationDisks",
            Prefix: "migrations/",
            Status: "Enabled",
            ExpirationInDays: MIGRATION_DISK_DAYS,
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          },
        ],
      },
    });
    const s3Statements = Object.values(s.template.findResources("AWS::IAM::Policy")).flatMap((p) =>
      ((p as Resource).Properties.PolicyDocument as { Statement: { Action: unknown }[] }).Statement.filter(
        (st) => JSON.stringify(st.Action).includes("s3:"),
      ),
    );
    expect(s3Statements.map((st) => [st.Action, (st as { Resource?: unknown }).Resource])).toEqual(
      expect.arrayContaining([
        ["s3:DeleteObject", images],
        [["s3:DeleteObject", "s3:GetObject", "s3:PutObject"], images],
      ]),
    );
    // + the fleet snapshot's two, below
    expect(s3Statements).toHaveLength(4);
  });

  it("lets the scheduler read and write the fleet snapshot, one object, and the API only read it; no host role reaches it", () => {
    const [bucketId] = Object.keys(s.template.findResources("AWS::S3::Bucket")) as [string];
    const snapshot = {
      "Fn::Join": ["", [{ "Fn::GetAtt": [bucketId, "Arn"] }, `/${FLEET_SNAPSHOT_KEY}`]],
    };
    const granted = (fn: string) =>
      Object.values(s.template.findResources("AWS::IAM::Policy"))
        .filter((p) => JSON.stringify((p as Resource).Properties.Roles).includes(`${fn}ServiceRole`))
        .flatMap(
          (p) =>
            (
              (p as Resource).Properties.PolicyDocument as {
                Statement: { Action: unknown; Resource?: unknown }[];
              }
            ).Statement,
        )
        .filter((st) => JSON.stringify(st.Resource ?? "").includes(FLEET_SNAPSHOT_KEY))
        .map((st) => [st.Action, st.Resource]);
    expect(granted("Scheduler")).toEqual([[["s3:GetObject", "s3:PutObject"], snapshot]]);
    expect(granted("Api")).toEqual([["s3:GetObject", snapshot]]);
    for (const fn of ["Conductor", "BuildWatchdog", "ComputeEvents", "BuildIntake"])
      expect(granted(fn)).toEqual([]);
    // the hosts' role names images/ only
    expect(JSON.stringify(s.template.findResources("AWS::IAM::ManagedPolicy"))).not.toContain("fleet/");
  });

  it("alarms on every DLQ, failed and timed-out executions, builds in ERROR and NoValidHost, functions and tables", () => {
    const alarms = Object.values(s.template.findResources("AWS::CloudWatch::Alarm")) as Resource[];
    // 3 DLQ alarms, executions failed and timed out (an Express execution cannot be aborted),
    // builds to ERROR, NoValidHost, automatic evacuations, reports waiting in hosts' spools,
    // 6 × (errors, throttles), the tables
    expect(alarms).toHaveLength(3 + 2 + 2 + 1 + 1 + 12 + TABLES.length);

    const expressions = alarms.flatMap((a) =>
      ((a.Properties.Metrics ?? []) as { Expression?: string }[]).map((m) => m.Expression ?? ""),
    );
    // the hosts' DLQs, as their agents count them (their names are made at run time)
    expect(expressions).toContain(`SELECT MAX(ComputeDeadLetters) FROM SCHEMA("novaless", service)`);
    // Metrics Insights' WHERE takes only =, != and AND (its query-language reference): a query
    // with anything else fails the deploy
    const comparison = String.raw`"?[\w.]+"?\s*!?=\s*''`;
    const onlyDocumented = new RegExp(String.raw`^\s*${comparison}(\s+AND\s+${comparison})*\s*$`);
    for (const e of expressions.filter((x) => x.startsWith("SELECT "))) {
      const where = /\bWHERE\b(.*?)(\bGROUP BY\b|\bORDER BY\b|\bLIMIT\b|$)/.exec(e)?.[1];
      if (where !== undefined) expect(where.replace(/'[^']*'/g, "''"), e).toMatch(onlyDocumented);
    }
    const buildsError = `SELECT SUM(BuildsError) FROM SCHEMA("novaless", reason, service)`;
    expect(expressions).toContain(buildsError);
    expect(expressions).toContain(`${buildsError} WHERE reason = 'NoValidHost'`);
    expect(expressions).toContain(`SELECT SUM(AutoEvacuations) FROM SCHEMA("novaless", service)`);
    // reports waiting in a host's spool for minutes (its heartbeats say how long the oldest has)
    const spoolAge = `SELECT MAX(SpooledReportAge) FROM SCHEMA("novaless", service)`;
    expect(expressions).toContain(spoolAge);

    for (const a of alarms) {
      expect(a.Properties.AlarmDescription).toEqual(expect.any(String));
      expect(a.Properties.TreatMissingData).toBe("notBreaching");
    }
    const byExpression = (e: string) =>
      alarms.find((a) => JSON.stringify(a.Properties.Metrics ?? []).includes(JSON.stringify(e).slice(1, -1)));
    expect(byExpression(buildsError)?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
    });
    expect(byExpression(spoolAge)?.Properties).toMatchObject({
      Threshold: 180,
      ComparisonOperator: "GreaterThanThreshold",
      EvaluationPeriods: 1,
    });
    expect(JSON.stringify(byExpression(spoolAge)?.Properties.Metrics)).toContain('"Period":60');
    // compute-events' throttling is its storm control: only throttling in each of 10 minutes running alarms
    const eventsThrottles = alarms.filter(
      (a) =>
        a.Properties.MetricName === "Throttles" &&
        JSON.stringify(a.Properties.Dimensions) ===
          JSON.stringify([
            { Name: "FunctionName", Value: { Ref: logicalId(s.stack, s.stack.computeEventsFunction) } },
          ]),
    );
    expect(eventsThrottles).toHaveLength(1);
    expect(eventsThrottles[0]!.Properties).toMatchObject({
      Period: 60,
      Statistic: "Sum",
      Threshold: 0,
      ComparisonOperator: "GreaterThanThreshold",
      EvaluationPeriods: 10,
      DatapointsToAlarm: 10,
    });
    s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "ApproximateNumberOfMessagesVisible",
      Namespace: "AWS/SQS",
      Dimensions: [
        {
          Name: "QueueName",
          Value: { "Fn::GetAtt": [logicalId(s.stack, s.stack.buildRequestsDlq), "QueueName"] },
        },
      ],
      Threshold: 0,
      ComparisonOperator: "GreaterThanThreshold",
    });
    for (const metric of ["ExecutionsFailed", "ExecutionsTimedOut"]) {
      s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        MetricName: metric,
        Namespace: "AWS/States",
        Dimensions: [{ Name: "StateMachineArn", Value: { Ref: logicalId(s.stack, s.stack.conductor) } }],
        Threshold: 0,
        ComparisonOperator: "GreaterThanThreshold",
      });
    }
    expect(alarms.filter((a) => a.Properties.MetricName === "ExecutionsAborted")).toEqual([]);
    for (const fn of [
      s.stack.apiFunction,
      s.stack.buildIntakeFunction,
      s.stack.schedulerFunction,
      s.stack.conductorFunction,
      s.stack.buildWatchdogFunction,
    ]) {
      for (const metric of ["Errors", "Throttles"]) {
        s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
          Namespace: "AWS/Lambda",
          MetricName: metric,
          Dimensions: [{ Name: "FunctionName", Value: { Ref: logicalId(s.stack, fn) } }],
          Threshold: 0,
        });
      }
    }
    for (const spec of TABLES) {
      const throttled = alarms.find((a) => {
        const text = JSON.stringify(a.Properties.Metrics ?? []);
        return (
          text.includes(logicalId(s.stack, s.stack.tables[spec.id])) && text.includes("ReadThrottleEvents")
        );
      });
      expect(JSON.stringify(throttled?.Properties.Metrics)).toContain("WriteThrottleEvents");
    }
  });

  it("draws the same signals on a dashboard", () => {
    const dashboard = only(s.template, "AWS::CloudWatch::Dashboard");
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const text of [
      "SELECT SUM(BuildsStarted) FROM",
      "SELECT SUM(BuildsActive) FROM",
      "SELECT SUM(BuildsError) FROM",
      "GROUP BY reason",
      "SchedulerDecisionTime",
      "SchedulerFleetReadTime",
      "Reschedules",
      "ClaimConflicts",
      "ComputeDeadLetters",
      "SpooledReports",
      "SpooledReportAge",
      "ThrottleEvents",
      "AWS/Lambda",
      "alarm",
    ]) {
      expect(body).toContain(text);
    }
  });

  it("outputs what an operator and a compute host need", () => {
    const outputs = Object.keys(s.template.toJSON().Outputs);
    expect(outputs).toEqual(
      expect.arrayContaining([
        "ApiUrl",
        "HostsTableName",
        "AllocationsTableName",
        "InstancesTableName",
        "CatalogTableName",
        "BuildRequestsQueueUrl",
        "BuildRequestsDlqUrl",
        "ConductorStateMachineArn",
        "ComputeAgentPolicyArn",
        "ComputeQueuePrefix",
        "ComputeEventsUrl",
        "ComputeHostRoleArn",
        "ComputeHostAssumePolicyArn",
        "ImagesBucket",
        "Region",
        "AuthTokensSecretArn",
        "DashboardName",
      ]),
    );
  });
});

describe("NovalessStack (Standard conductor, options set)", () => {
  let s: Synth;
  beforeAll(() => {
    s = synth(
      {
        conductorType: "STANDARD",
        removalPolicy: RemovalPolicy.DESTROY,
        computeQueuePrefix: "novaless-test-compute-",
        scheduler: { max_attempts: 5, enabled_filters: ["ComputeFilter"] },
        apiThrottleRateLimit: 7,
        apiThrottleBurstLimit: 9,
        buildErrorAlarmThreshold: 3,
        keystoneUrl: "https://keystone.example.org:5000",
        rolesAnywhere: {
          issuerCn: "fleet-ca",
          caCertificatePem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        },
        hostRolePath: "/fleet/hosts/",
      },
      false,
      { conductor_log_level: "ALL", conductor_tracing: "true" },
    );
  });

  it("alarms on aborted executions too: only a Standard execution can be stopped", () => {
    for (const metric of ["ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"]) {
      s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        MetricName: metric,
        Namespace: "AWS/States",
        Threshold: 0,
      });
    }
  });

  it("deploys the same definition as a Standard workflow", () => {
    expect(definitionOf(s)).toEqual(
      conductorDefinition({ conductorFunctionArn: "CONDUCTOR_ARN", schedulerFunctionArn: "SCHEDULER_ARN" }),
    );
    const machine = only(s.template, "AWS::StepFunctions::StateMachine");
    expect(machine.Properties.StateMachineType).toBe("STANDARD");
    // -c conductor_log_level=ALL -c conductor_tracing=true
    expect(machine.Properties.LoggingConfiguration).toMatchObject({
      Level: "ALL",
      IncludeExecutionData: false,
    });
    expect(machine.Properties.TracingConfiguration).toEqual({ Enabled: true });
  });

  it("with keystoneUrl, validates tokens there: no key or admin secret of its own", () => {
    expect(environmentOf(s, s.stack.apiFunction).NOVALESS_KEYSTONE_URL).toBe(
      "https://keystone.example.org:5000",
    );
    expect(environmentOf(s, s.stack.apiFunction).NOVALESS_TOKEN_KEY_SECRET).toBeUndefined();
    expect(s.stack.tokenKeySecret).toBeUndefined();
    expect(Object.keys(s.template.findResources("AWS::SecretsManager::Secret"))).toHaveLength(1);
  });

  it("with Roles Anywhere, trusts only its own trust anchor from this account, and the hosts' path", () => {
    const roleOf = (t: Synth) =>
      t.template.toJSON().Resources[logicalId(t.stack, t.stack.computeHostRole)] as Resource;
    const statements = (t: Synth) =>
      (roleOf(t).Properties.AssumeRolePolicyDocument as { Statement: Record<string, unknown>[] }).Statement;
    const sid = (t: Synth, id: string) => statements(t).find((st) => st.Sid === id);
    // s: the stack creates the trust anchor from the CA certificate, and the profile
    const anchorId = Object.keys(s.template.findResources("AWS::RolesAnywhere::TrustAnchor"))[0]!;
    expect(anchorId).toBeDefined();
    s.template.hasResourceProperties("AWS::RolesAnywhere::Profile", {
      RoleArns: [{ "Fn::GetAtt": [logicalId(s.stack, s.stack.computeHostRole), "Arn"] }],
    });
    expect(roleOf(s).Properties.Path).toBe("/fleet/hosts/");
    expect(sid(s, "RolesAnywhere")).toMatchObject({
      Principal: { Service: "rolesanywhere.amazonaws.com" },
      Action: ["sts:AssumeRole", "sts:SetSourceIdentity", "sts:TagSession"],
      Condition: {
        ArnEquals: { "aws:SourceArn": { "Fn::GetAtt": [anchorId, "TrustAnchorArn"] } },
        StringEquals: {
          "aws:SourceAccount": { Ref: "AWS::AccountId" },
          "aws:PrincipalTag/x509Issuer/CN": "fleet-ca",
        },
      },
    });
    expect(JSON.stringify(sid(s, "RolesAnywhereCertificate"))).toMatch(
      /x509Subject\/CN.*aws:PrincipalArn.*:role\/fleet\/hosts\/\*/,
    );
    expect(Object.keys(s.template.toJSON().Outputs)).toEqual(
      expect.arrayContaining(["HostsTrustAnchorArn", "HostsProfileArn", "HostRolePath"]),
    );

    // an anchor made outside the stack: named as it is, nothing created
    const arn =
      "arn:aws:rolesanywhere:us-east-1:123456789012:trust-anchor/4579702c-9abb-47c2-88b2-c734e0b29539";
    const outside = synth({ rolesAnywhere: { issuerCn: "fleet-ca", trustAnchorArn: arn } }, false);
    expect(outside.template.findResources("AWS::RolesAnywhere::TrustAnchor")).toEqual({});
    expect(sid(outside, "RolesAnywhere")).toMatchObject({
      Condition: { ArnEquals: { "aws:SourceArn": arn } },
    });

    expect(() => synth({ rolesAnywhere: { issuerCn: "fleet-ca" } }, false)).toThrow(/exactly one/);
    expect(() => synth({ hostRolePath: "novaless-hosts" }, false)).toThrow(/IAM path/);
  });

  it("applies the removal policy, queue prefix and scheduler options", () => {
    for (const table of Object.values(s.template.findResources("AWS::DynamoDB::Table"))) {
      expect(table.DeletionPolicy).toBe("Delete");
    }
    expect(environmentOf(s, s.stack.schedulerFunction)).toMatchObject({
      NOVALESS_COMPUTE_QUEUE_PREFIX: "novaless-test-compute-",
      NOVALESS_MAX_ATTEMPTS: "5",
      NOVALESS_ENABLED_FILTERS: "ComputeFilter",
      NOVALESS_HOST_SUBSET_SIZE: "1",
    });
    for (const secret of Object.values(s.template.findResources("AWS::SecretsManager::Secret")))
      expect(secret.DeletionPolicy).toBe("Delete");
    expect(only(s.template, "AWS::ApiGatewayV2::Stage").Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: 7,
      ThrottlingBurstLimit: 9,
    });
    s.template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Threshold: 3,
      Metrics: [Match.objectLike({ Expression: Match.stringLikeRegexp("SUM\\(BuildsError\\)") })],
    });
    expect(JSON.stringify(s.template.findResources("AWS::IAM::ManagedPolicy"))).toContain(
      ":novaless-test-compute-*",
    );
  });
});

describe("scheduler options", () => {
  it("default to Nova's defaults and round-trip through the environment", () => {
    const names = Object.keys(schedulerEnvironment(SCHEDULER_DEFAULTS));
    const saved = Object.fromEntries(names.map((n) => [n, process.env[n]]));
    try {
      for (const n of names) delete process.env[n];
      expect(schedulerConfig()).toEqual(SCHEDULER_DEFAULTS);
      const custom = {
        ...SCHEDULER_DEFAULTS,
        max_attempts: 7,
        host_subset_size: 2,
        enabled_filters: ["ComputeFilter", "ImagePropertiesFilter"],
        weight_classes: ["RAMWeigher", "CPUWeigher"],
        ram_weight_multiplier: -1.5,
        service_down_time: 120,
        default_availability_zone: "az-1",
      };
      Object.assign(process.env, schedulerEnvironment(custom));
      expect(schedulerConfig()).toEqual(custom);
    } finally {
      for (const n of names) {
        if (saved[n] === undefined) delete process.env[n];
        else process.env[n] = saved[n];
      }
    }
  });

  it("rejects a compute queue prefix SQS would not accept", () => {
    expect(() => new NovalessStack(new App(), "Bad", { computeQueuePrefix: "compute.queues." })).toThrow(
      /computeQueuePrefix/,
    );
  });
});

describe("the image edge (a stack bound to a region, as `cdk deploy` makes it)", () => {
  it("puts a CloudFront distribution before the API: everything passes uncached; /image/v2/images/*/file runs the upload's Lambda@Edge, bundled small, from a us-east-1 stack", () => {
    // only the edge's bundle is built: the test reads its files
    const app = new App({
      context: { ...cdkJson.context, "aws:cdk:bundling-stacks": ["edge-lambda-stack-*"] },
    });
    const stack = new NovalessStack(app, "NovalessStack", {
      env: { account: "123456789012", region: "eu-west-1" },
    });
    const template = Template.fromStack(stack);
    const [dist] = Object.values(template.findResources("AWS::CloudFront::Distribution")) as Resource[];
    const config = dist!.Properties.DistributionConfig as {
      DefaultCacheBehavior: Record<string, unknown>;
      CacheBehaviors: Record<string, unknown>[];
    };
    expect(config.DefaultCacheBehavior).toMatchObject({
      ViewerProtocolPolicy: "https-only",
      AllowedMethods: ["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"],
      // Managed-CachingDisabled and Managed-AllViewerExceptHostHeader
      CachePolicyId: "4135ea2d-6df8-44a3-9df3-4b5a84be39ad",
      OriginRequestPolicyId: "b689b0a8-53d0-40ab-baf2-68738e2966ac",
    });
    expect(config.CacheBehaviors).toHaveLength(1);
    const upload = config.CacheBehaviors[0]!;
    expect(upload.PathPattern).toBe("/image/v2/images/*/file");
    expect((upload.LambdaFunctionAssociations as { EventType: string }[]).map((a) => a.EventType)).toEqual([
      "origin-request",
      "origin-response",
    ]);
    template.hasOutput("EndpointUrl", {});
    const assembly = app.synth();
    const edgeStack = assembly.stacks.find((s) => s.stackName.startsWith("edge-lambda-stack-"))!;
    expect(edgeStack.environment.region).toBe("us-east-1");
    const fn = Object.values(edgeStack.template.Resources as Record<string, Resource>).find(
      (r) => r.Type === "AWS::Lambda::Function",
    )!;
    expect(fn.Properties).toMatchObject({ Runtime: "nodejs22.x", Timeout: 30, MemorySize: 128 });
    expect(fn.Properties.Environment).toBeUndefined();
    // the edge holds no credentials: its role has Lambda's logging policy and nothing else
    const policies = Object.values(edgeStack.template.Resources as Record<string, Resource>).filter(
      (r) => r.Type === "AWS::IAM::Policy",
    );
    expect(policies).toEqual([]);
    // its code: the asset the S3 key names, one small file that imports nothing
    const key = (fn.Properties.Code as { S3Key: string }).S3Key;
    const dir = join(assembly.directory, `asset.${key.replace(/\.zip$/, "")}`);
    expect(readdirSync(dir)).toEqual(["index.mjs"]);
    expect(statSync(join(dir, "index.mjs")).size).toBeLessThan(16 * 1024);
  });

  it("is left out of a stack with no region", () => {
    const { template } = synth({}, false);
    expect(template.findResources("AWS::CloudFront::Distribution")).toEqual({});
  });
});
