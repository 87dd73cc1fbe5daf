// The whole deployment in one stack: tables and queues from infra/resources.ts, the four
// Lambdas bundled by local esbuild, the conductor state machine from the SAME ASL the local
// runtime executes, the HTTP API, the compute hosts' managed policy, and the alarms.
import { fileURLToPath } from "node:url";
import {
  Annotations,
  ArnFormat,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Token,
} from "aws-cdk-lib";
import * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import * as sqs from "aws-cdk-lib/aws-sqs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import type { Construct } from "constructs";
import { SCHEDULER_DEFAULTS, type SchedulerConfig, schedulerEnvironment } from "../../lib/config.js";
import { conductorDefinition } from "../conductor/definition.js";
import { BUILD_REQUESTS_QUEUE, DLQ_RETENTION_SECONDS, TABLES, type TableSpec } from "../resources.js";

export type ConductorType = "EXPRESS" | "STANDARD";

export interface NovalessStackProps extends StackProps {
  /**
   * The conductor's workflow type. EXPRESS (default): every step is idempotent and Standard's
   * state-transition quota would cap builds per second. STANDARD: exactly-once, auditable history.
   */
  conductorType?: ConductorType;
  /** What CloudFormation does with the tables when they leave the stack. Default RETAIN. */
  removalPolicy?: RemovalPolicy;
  /**
   * Prefix of every compute host's queue (`${prefix}<host>`, DLQ `${prefix}<host>-dlq`); IAM is
   * scoped to it. Default `${stackName}-compute-`, lowercased.
   */
  computeQueuePrefix?: string;
  /** Scheduler options (Nova's names); unset ones keep Nova's defaults, see SCHEDULER_DEFAULTS in lib/config.ts. */
  scheduler?: Partial<SchedulerConfig>;
  /**
   * NOVALESS_AUTH_TOKENS of the API function (JSON: token → {user_id, project_id, roles}). Unset,
   * the deployed API accepts no token at all (every call 401), never the local demo tokens, and
   * synth warns.
   */
  apiAuthTokens?: string;
  /** [DEFAULT] instance_build_timeout: seconds an attempt may take before the watchdog moves it. Default 600. */
  instanceBuildTimeout?: number;
  /** NOVALESS_LOG_LEVEL of every function. Default "info". */
  logLevel?: "debug" | "info" | "warn" | "error";
  /** Retention of the functions' and the conductor's logs. Default one month. */
  logRetention?: logs.RetentionDays;
  /** Where the alarms go (an SNS topic action, say). Default: nowhere, the alarms only show. */
  alarmActions?: cloudwatch.IAlarmAction[];
}

/** Lambda's Node.js runtimes have no `require` in ESM; bundled CommonJS dependencies need one. */
const ESM_REQUIRE_SHIM =
  "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** SQS queue names: letters, digits, `-` and `_`, at most 80 characters (the DLQ suffix included). */
const QUEUE_NAME_PREFIX = /^[A-Za-z0-9_-]{1,60}$/;

const DYNAMODB_READ_WRITE = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:Query",
  "dynamodb:Scan",
  "dynamodb:ConditionCheckItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:BatchWriteItem",
  "dynamodb:DescribeTable",
];

interface FunctionOptions {
  memorySize: number;
  timeout: Duration;
  environment?: Record<string, string>;
}

export class NovalessStack extends Stack {
  readonly tables: Record<TableSpec["id"], dynamodb.Table>;
  readonly buildRequestsQueue: sqs.Queue;
  readonly buildRequestsDlq: sqs.Queue;
  readonly apiFunction: NodejsFunction;
  readonly buildIntakeFunction: NodejsFunction;
  readonly schedulerFunction: NodejsFunction;
  readonly conductorFunction: NodejsFunction;
  readonly buildWatchdogFunction: NodejsFunction;
  readonly conductor: sfn.StateMachine;
  readonly httpApi: apigwv2.HttpApi;
  readonly computeAgentPolicy: iam.ManagedPolicy;
  readonly computeQueuePrefix: string;

  constructor(scope: Construct, id: string, props: NovalessStackProps = {}) {
    super(scope, id, props);

    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const scheduler: SchedulerConfig = { ...SCHEDULER_DEFAULTS, ...props.scheduler };
    this.computeQueuePrefix = props.computeQueuePrefix ?? `${this.stackName}-compute-`.toLowerCase();
    if (!Token.isUnresolved(this.computeQueuePrefix) && !QUEUE_NAME_PREFIX.test(this.computeQueuePrefix)) {
      throw new Error(
        `computeQueuePrefix "${this.computeQueuePrefix}" must be 1-60 letters, digits, "-" or "_" (an SQS queue name prefix)`,
      );
    }
    // Every host queue and its DLQ (`…-dlq`) match this one pattern.
    const computeQueuesArn = this.formatArn({
      service: "sqs",
      resource: `${this.computeQueuePrefix}*`,
      arnFormat: ArnFormat.NO_RESOURCE_NAME,
    });

    // --- Data -------------------------------------------------------------------------------
    const tables = {} as Record<TableSpec["id"], dynamodb.Table>;
    for (const spec of TABLES) {
      const table = new dynamodb.Table(this, spec.id, {
        partitionKey: { name: spec.partitionKey, type: dynamodb.AttributeType.STRING },
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        timeToLiveAttribute: spec.id === "Instances" ? "expires_at" : undefined,
        removalPolicy,
      });
      for (const gsi of spec.gsis) {
        table.addGlobalSecondaryIndex({
          indexName: gsi.indexName,
          partitionKey: { name: gsi.partitionKey, type: dynamodb.AttributeType.STRING },
          sortKey: gsi.sortKey ? { name: gsi.sortKey, type: dynamodb.AttributeType.STRING } : undefined,
          projectionType: dynamodb.ProjectionType.ALL,
        });
      }
      tables[spec.id] = table;
    }
    this.tables = tables;
    const { Hosts: hosts, Instances: instances, Catalog: catalog } = tables;

    // --- Queues -----------------------------------------------------------------------------
    this.buildRequestsDlq = new sqs.Queue(this, "BuildRequestsDlq", {
      retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.buildRequestsQueue = new sqs.Queue(this, "BuildRequests", {
      visibilityTimeout: Duration.seconds(BUILD_REQUESTS_QUEUE.visibilityTimeout),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: {
        queue: this.buildRequestsDlq,
        maxReceiveCount: BUILD_REQUESTS_QUEUE.maxReceiveCount,
      },
    });

    // --- Functions --------------------------------------------------------------------------
    const environment: Record<string, string> = {
      ...Object.fromEntries(TABLES.map((spec) => [spec.env, tables[spec.id].tableName])),
      NOVALESS_BUILD_REQUESTS_QUEUE_URL: this.buildRequestsQueue.queueUrl,
      NOVALESS_BUILD_REQUESTS_DLQ_URL: this.buildRequestsDlq.queueUrl,
      NOVALESS_COMPUTE_QUEUE_PREFIX: this.computeQueuePrefix,
      NOVALESS_LOG_LEVEL: props.logLevel ?? "info",
      NOVALESS_INSTANCE_BUILD_TIMEOUT: String(props.instanceBuildTimeout ?? 600),
      ...schedulerEnvironment(scheduler),
      NODE_OPTIONS: "--enable-source-maps",
    };
    const handler = (id: string, folder: string, options: FunctionOptions): NodejsFunction =>
      new NodejsFunction(this, id, {
        entry: fileURLToPath(new URL(`../../functions/${folder}/handler.ts`, import.meta.url)),
        handler: "handler",
        projectRoot,
        depsLockFilePath: `${projectRoot}package-lock.json`,
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: options.memorySize,
        timeout: options.timeout,
        environment: { ...environment, ...options.environment },
        logGroup: new logs.LogGroup(this, `${id}LogGroup`, {
          retention: logRetention,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
        bundling: {
          format: OutputFormat.ESM,
          target: "node22",
          minify: true,
          sourceMap: true,
          mainFields: ["module", "main"],
          banner: ESM_REQUIRE_SHIM,
          // Bundle the AWS SDK too: the version the tests ran against, not the runtime's.
          externalModules: [],
          forceDockerBundling: false,
        },
      });

    this.apiFunction = handler("Api", "api", {
      memorySize: 512,
      timeout: Duration.seconds(29),
      // "{}" rather than unset: an unset table means the local demo tokens, never on a public URL.
      environment: { NOVALESS_AUTH_TOKENS: props.apiAuthTokens ?? "{}" },
    });
    if (!props.apiAuthTokens) {
      Annotations.of(this.apiFunction).addWarningV2(
        "novaless:apiAuthTokens",
        "apiAuthTokens is unset: the deployed API accepts no token; set NOVALESS_AUTH_TOKENS when you deploy",
      );
    }
    this.schedulerFunction = handler("Scheduler", "scheduler", {
      memorySize: 1024,
      timeout: Duration.seconds(30),
    });
    this.conductorFunction = handler("Conductor", "conductor", {
      memorySize: 512,
      timeout: Duration.seconds(30),
    });

    // --- Conductor state machine ------------------------------------------------------------
    const conductorType = props.conductorType ?? "EXPRESS";
    const express = conductorType === "EXPRESS";
    this.conductor = new sfn.StateMachine(this, "ConductorStateMachine", {
      definitionBody: sfn.DefinitionBody.fromString(
        this.toJsonString(
          conductorDefinition({
            conductorFunctionArn: this.conductorFunction.functionArn,
            schedulerFunctionArn: this.schedulerFunction.functionArn,
          }),
        ),
      ),
      stateMachineType: express ? sfn.StateMachineType.EXPRESS : sfn.StateMachineType.STANDARD,
      // Express keeps no execution history: failures are only visible through these logs.
      logs: express
        ? {
            destination: new logs.LogGroup(this, "ConductorStateMachineLogGroup", {
              logGroupName: `/aws/vendedlogs/states/${this.stackName}-conductor`,
              retention: logRetention,
              removalPolicy: RemovalPolicy.DESTROY,
            }),
            level: sfn.LogLevel.ERROR,
            includeExecutionData: false,
          }
        : undefined,
    });
    this.schedulerFunction.grantInvoke(this.conductor);
    this.conductorFunction.grantInvoke(this.conductor);
    this.conductor.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueuesArn] }),
    );

    this.buildIntakeFunction = handler("BuildIntake", "build-intake", {
      memorySize: 256,
      timeout: Duration.seconds(30),
      environment: { NOVALESS_CONDUCTOR_ARN: this.conductor.stateMachineArn },
    });
    this.buildIntakeFunction.addEventSource(
      new SqsEventSource(this.buildRequestsQueue, { batchSize: 10, reportBatchItemFailures: true }),
    );

    // The build watchdog: every minute, fence and reschedule builds whose host died or hung.
    this.buildWatchdogFunction = handler("BuildWatchdog", "build-watchdog", {
      memorySize: 512,
      timeout: Duration.seconds(55),
    });
    new events.Rule(this, "BuildWatchdogSchedule", {
      description: "novaless: run the build watchdog",
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(this.buildWatchdogFunction, { retryAttempts: 0 })],
    });

    // --- Least-privilege grants -------------------------------------------------------------
    instances.grantReadWriteData(this.apiFunction);
    // The admin API creates flavors and images and sets extra specs.
    catalog.grantReadWriteData(this.apiFunction);
    // Deleting an instance during its build releases its claim, an UpdateItem on its host.
    hosts.grantReadData(this.apiFunction);
    hosts.grant(this.apiFunction, "dynamodb:UpdateItem");
    this.buildRequestsQueue.grantSendMessages(this.apiFunction);
    this.apiFunction.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueuesArn] }),
    );

    this.conductor.grantStartExecution(this.buildIntakeFunction);
    this.buildRequestsDlq.grantSendMessages(this.buildIntakeFunction);

    hosts.grantReadWriteData(this.schedulerFunction);
    instances.grantReadWriteData(this.schedulerFunction);
    // Flavors, images, aggregates and server groups: the filters read them on every decision.
    catalog.grantReadData(this.schedulerFunction);

    hosts.grantReadWriteData(this.conductorFunction);
    instances.grantReadWriteData(this.conductorFunction);
    this.buildRequestsQueue.grantSendMessages(this.conductorFunction);

    hosts.grantReadWriteData(this.buildWatchdogFunction);
    instances.grantReadWriteData(this.buildWatchdogFunction);
    this.buildRequestsQueue.grantSendMessages(this.buildWatchdogFunction);

    // --- HTTP API ---------------------------------------------------------------------------
    this.httpApi = new apigwv2.HttpApi(this, "HttpApi", {
      description: "novaless: the OpenStack Compute API subset",
      defaultIntegration: new HttpLambdaIntegration("ApiIntegration", this.apiFunction, {
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      }),
    });

    // --- What a compute host attaches to its instance role ------------------------------------
    this.computeAgentPolicy = new iam.ManagedPolicy(this, "ComputeAgentPolicy", {
      description: "novaless compute agent: its own queue, rescheduling, hosts and instances",
      statements: [
        new iam.PolicyStatement({
          sid: "OwnComputeQueue",
          actions: [
            "sqs:CreateQueue",
            "sqs:GetQueueUrl",
            "sqs:GetQueueAttributes",
            "sqs:SetQueueAttributes",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:ChangeMessageVisibility",
            "sqs:SendMessage",
          ],
          resources: [computeQueuesArn],
        }),
        new iam.PolicyStatement({
          sid: "Reschedule",
          actions: ["sqs:SendMessage"],
          resources: [this.buildRequestsQueue.queueArn],
        }),
        new iam.PolicyStatement({
          sid: "HostsAndInstances",
          actions: DYNAMODB_READ_WRITE,
          resources: [hosts.tableArn, instances.tableArn, `${instances.tableArn}/index/*`],
        }),
      ],
    });

    // --- Alarms -----------------------------------------------------------------------------
    const alarms = [
      new cloudwatch.Alarm(this, "BuildRequestsDlqNotEmpty", {
        alarmDescription: `Build requests dead-lettered after ${BUILD_REQUESTS_QUEUE.maxReceiveCount} receives`,
        metric: this.buildRequestsDlq.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      new cloudwatch.Alarm(this, "ConductorExecutionsFailed", {
        alarmDescription: "Conductor executions failed (builds may be stuck in BUILD)",
        metric: this.conductor.metricFailed({ period: Duration.minutes(1), statistic: cloudwatch.Stats.SUM }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
    ];
    for (const alarm of alarms) alarm.addAlarmAction(...(props.alarmActions ?? []));

    // --- Outputs ----------------------------------------------------------------------------
    new CfnOutput(this, "ApiUrl", { value: this.httpApi.url! });
    for (const spec of TABLES) {
      new CfnOutput(this, `${spec.id}TableName`, {
        value: tables[spec.id].tableName,
        description: `${spec.env} of the handlers`,
      });
    }
    new CfnOutput(this, "BuildRequestsQueueUrl", { value: this.buildRequestsQueue.queueUrl });
    new CfnOutput(this, "BuildRequestsDlqUrl", { value: this.buildRequestsDlq.queueUrl });
    new CfnOutput(this, "ConductorStateMachineArn", { value: this.conductor.stateMachineArn });
    new CfnOutput(this, "ComputeQueuePrefix", { value: this.computeQueuePrefix });
    new CfnOutput(this, "ComputeAgentPolicyArn", { value: this.computeAgentPolicy.managedPolicyArn });
  }
}
