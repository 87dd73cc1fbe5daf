// The whole deployment in one stack: tables and queues from lib/resources.ts, the four
// Lambdas bundled by local esbuild, the conductor state machine from the SAME ASL the local
// runtime executes, the HTTP API, the compute hosts' managed policy, the alarms and the dashboard.
import { fileURLToPath } from "node:url";
import {
  ArnFormat,
  CfnOutput,
  Duration,
  RemovalPolicy,
  SecretValue,
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
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import * as sqs from "aws-cdk-lib/aws-sqs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { NagSuppressions } from "cdk-nag";
import type { Construct } from "constructs";
import { SCHEDULER_DEFAULTS, type SchedulerConfig, schedulerEnvironment } from "../../lib/config.js";
import { METRIC, METRICS_NAMESPACE } from "../../lib/metrics.js";
import {
  BUILD_REQUESTS_QUEUE,
  COMPUTE_EVENTS_QUEUE,
  DLQ_RETENTION_SECONDS,
  DLQ_SUFFIX,
  HOST_TAG,
  type Projection,
  TABLES,
  type TableSpec,
} from "../../lib/resources.js";
import { conductorDefinition } from "../conductor/definition.js";

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
  /**
   * The CN of the CA certificate of the IAM Roles Anywhere trust anchor for on-premises hosts
   * (their certificates' CN is the host name). Default `novaless-hosts-ca`.
   */
  rolesAnywhereIssuerCn?: string;
  /** Scheduler options (Nova's names); unset ones keep Nova's defaults, see SCHEDULER_DEFAULTS in lib/config.ts. */
  scheduler?: Partial<SchedulerConfig>;
  /** The HTTP API's $default stage throttling: steady requests per second. Default 50. */
  apiThrottleRateLimit?: number;
  /** The HTTP API's $default stage throttling: burst. Default 100. */
  apiThrottleBurstLimit?: number;
  /** Builds sent to ERROR (any reason) in five minutes that raise the alarm. Default 1. */
  buildErrorAlarmThreshold?: number;
  /** NoValidHost builds in five minutes that raise the alarm (the fleet is full). Default 5. */
  noValidHostAlarmThreshold?: number;
  /** [DEFAULT] instance_build_timeout: seconds an attempt may take before the watchdog moves it. Default 600. */
  instanceBuildTimeout?: number;
  /** NOVALESS_LOG_LEVEL of every function. Default "info". */
  logLevel?: "debug" | "info" | "warn" | "error";
  /** Retention of the functions' and the conductor's logs. Default one month. */
  logRetention?: logs.RetentionDays;
  /** Where the alarms go (an SNS topic action, say). Default: nowhere, the alarms only show. */
  alarmActions?: cloudwatch.IAlarmAction[];
  /**
   * An existing Keystone (`-c keystoneUrl=https://keystone.example.org:5000`): the API validates
   * X-Auth-Token there (keystonemiddleware's way, cached 300 s) and serves no /identity of its own;
   * no token key nor admin password is created.
   */
  keystoneUrl?: string;
}

/** Lambda's Node.js runtimes have no `require` in ESM; bundled CommonJS dependencies need one. */
const ESM_REQUIRE_SHIM =
  "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** SQS queue names: letters, digits, `-` and `_`, at most 80 characters (the DLQ suffix included). */
const QUEUE_NAME_PREFIX = /^[A-Za-z0-9_-]{1,60}$/;

/** A spec's projection as the CDK takes it (a list of attributes is INCLUDE). */
function cdkProjection(
  p: Projection,
): Pick<dynamodb.GlobalSecondaryIndexProps, "projectionType" | "nonKeyAttributes"> {
  if (p === "ALL") return { projectionType: dynamodb.ProjectionType.ALL };
  if (p === "KEYS_ONLY") return { projectionType: dynamodb.ProjectionType.KEYS_ONLY };
  return { projectionType: dynamodb.ProjectionType.INCLUDE, nonKeyAttributes: p };
}

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
  readonly computeHostRole: iam.Role;
  readonly computeHostAssumePolicy: iam.ManagedPolicy;
  readonly computeEventsQueue: sqs.Queue;
  readonly computeEventsDlq: sqs.Queue;
  readonly computeEventsFunction: NodejsFunction;
  readonly computeQueuePrefix: string;
  readonly authTokensSecret: secretsmanager.Secret;
  /** /identity's token signing key (generated); absent with keystoneUrl */
  readonly tokenKeySecret?: secretsmanager.Secret;
  /** the /identity admin's password (generated), for `npm run seed -- --admin-password-from-secret` */
  readonly adminPasswordSecret?: secretsmanager.Secret;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[];

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
        sortKey: spec.sortKey ? { name: spec.sortKey, type: dynamodb.AttributeType.STRING } : undefined,
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
          ...cdkProjection(gsi.projection),
        });
      }
      tables[spec.id] = table;
    }
    this.tables = tables;
    const {
      Hosts: hosts,
      Allocations: allocations,
      Instances: instances,
      Catalog: catalog,
      Services: services,
      Scheduling: scheduling,
      Identity: identity,
    } = tables;

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

    // What every compute host reports (registration, heartbeats, builds, power states); the
    // compute-events function applies them. The only queue a host may send to.
    this.computeEventsDlq = new sqs.Queue(this, "ComputeEventsDlq", {
      retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.computeEventsQueue = new sqs.Queue(this, "ComputeEventsQueue", {
      visibilityTimeout: Duration.seconds(COMPUTE_EVENTS_QUEUE.visibilityTimeout),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: {
        queue: this.computeEventsDlq,
        maxReceiveCount: COMPUTE_EVENTS_QUEUE.maxReceiveCount,
      },
    });

    // --- Functions --------------------------------------------------------------------------
    const environment: Record<string, string> = {
      ...Object.fromEntries(TABLES.map((spec) => [spec.env, tables[spec.id].tableName])),
      NOVALESS_BUILD_REQUESTS_QUEUE_URL: this.buildRequestsQueue.queueUrl,
      NOVALESS_BUILD_REQUESTS_DLQ_URL: this.buildRequestsDlq.queueUrl,
      NOVALESS_COMPUTE_QUEUE_PREFIX: this.computeQueuePrefix,
      NOVALESS_COMPUTE_EVENTS_QUEUE_URL: this.computeEventsQueue.queueUrl,
      NOVALESS_COMPUTE_EVENTS_DLQ_URL: this.computeEventsDlq.queueUrl,
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
        // POWERTOOLS_SERVICE_NAME: the `service` of each function's logs and metrics.
        environment: { ...environment, POWERTOOLS_SERVICE_NAME: folder, ...options.environment },
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

    // The API's token table (token → {user_id, project_id, roles}) lives in Secrets Manager, read
    // at run time: never in the template or the function's environment. It starts empty (every
    // call 401, never the local demo tokens); the operator puts the table with put-secret-value.
    this.authTokensSecret = new secretsmanager.Secret(this, "AuthTokens", {
      description: "novaless API token table: JSON token -> {user_id, project_id, roles}",
      secretStringValue: SecretValue.unsafePlainText("{}"),
      removalPolicy,
    });
    // Identity: tokens are signed with a key generated into a secret (never in the template), and
    // the admin's password is generated into another, which the operator's seed reads; or, with
    // keystoneUrl, both are Keystone's business.
    const identityEnvironment: Record<string, string> = {};
    if (props.keystoneUrl) identityEnvironment.NOVALESS_KEYSTONE_URL = props.keystoneUrl;
    else {
      this.tokenKeySecret = new secretsmanager.Secret(this, "TokenKey", {
        description: "novaless /identity token signing key (HMAC-SHA256)",
        generateSecretString: { passwordLength: 64, excludePunctuation: true },
        removalPolicy,
      });
      this.adminPasswordSecret = new secretsmanager.Secret(this, "AdminPassword", {
        description: "novaless /identity admin password: npm run seed -- --admin-password-from-secret <arn>",
        generateSecretString: { passwordLength: 32, excludePunctuation: true },
        removalPolicy,
      });
      identityEnvironment.NOVALESS_TOKEN_KEY_SECRET = this.tokenKeySecret.secretArn;
    }
    this.apiFunction = handler("Api", "api", {
      memorySize: 512,
      timeout: Duration.seconds(29),
      environment: { NOVALESS_AUTH_TOKENS_SECRET: this.authTokensSecret.secretArn, ...identityEnvironment },
    });
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
      // Express keeps no execution history: its transitions are only visible through these logs.
      // Execution data stays out of them (requests carry user data).
      logs: {
        destination: new logs.LogGroup(this, "ConductorStateMachineLogGroup", {
          logGroupName: `/aws/vendedlogs/states/${this.stackName}-conductor`,
          retention: logRetention,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
        level: sfn.LogLevel.ALL,
        includeExecutionData: false,
      },
      tracingEnabled: true,
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

    // nova-compute's database proxy (Nova's conductor): applies the hosts' reports.
    this.computeEventsFunction = handler("ComputeEvents", "compute-events", {
      memorySize: 512,
      timeout: Duration.seconds(COMPUTE_EVENTS_QUEUE.visibilityTimeout / 2),
    });
    this.computeEventsFunction.addEventSource(
      new SqsEventSource(this.computeEventsQueue, { batchSize: 10, reportBatchItemFailures: true }),
    );

    // --- Least-privilege grants -------------------------------------------------------------
    instances.grantReadWriteData(this.apiFunction);
    // The admin API creates flavors and images and sets extra specs.
    catalog.grantReadWriteData(this.apiFunction);
    // Deleting an instance during its build releases its claim, an UpdateItem on its host.
    hosts.grantReadData(this.apiFunction);
    hosts.grant(this.apiFunction, "dynamodb:UpdateItem");
    // ...and deletes its allocation item (the audit's repair too); os-hypervisors reads them.
    allocations.grantReadData(this.apiFunction);
    allocations.grant(this.apiFunction, "dynamodb:DeleteItem");
    // os-services reads the heartbeats and mirrors forced_down onto them; os-scheduling reads.
    services.grantReadData(this.apiFunction);
    services.grant(this.apiFunction, "dynamodb:UpdateItem");
    scheduling.grantReadData(this.apiFunction);
    this.buildRequestsQueue.grantSendMessages(this.apiFunction);
    this.apiFunction.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueuesArn] }),
    );
    // os-dead-letters (admins): find the DLQs, read them (each message made visible again) and
    // redrive one to its source (sent there, then deleted here; compute-events' DLQ is never
    // redriven: its reports are trusted for their SenderId). Host DLQs only, not host queues.
    this.apiFunction.addToRolePolicy(
      new iam.PolicyStatement({
        sid: "DeadLetters",
        actions: [
          "sqs:GetQueueAttributes",
          "sqs:ReceiveMessage",
          "sqs:ChangeMessageVisibility",
          "sqs:DeleteMessage",
        ],
        resources: [
          this.buildRequestsDlq.queueArn,
          this.computeEventsDlq.queueArn,
          this.formatArn({
            service: "sqs",
            resource: `${this.computeQueuePrefix}*${DLQ_SUFFIX}`,
            arnFormat: ArnFormat.NO_RESOURCE_NAME,
          }),
        ],
      }),
    );
    this.apiFunction.addToRolePolicy(
      // ListQueues names no queue: SQS authorizes it on no resource
      new iam.PolicyStatement({ sid: "FindDeadLetterQueues", actions: ["sqs:ListQueues"], resources: ["*"] }),
    );

    this.conductor.grantStartExecution(this.buildIntakeFunction);
    this.buildRequestsDlq.grantSendMessages(this.buildIntakeFunction);

    hosts.grantReadWriteData(this.schedulerFunction);
    // Exactly what the claim loop does: find a consumer's claims (Query), read one to release it,
    // put and delete allocation items. (Its own statement: never merged with the Catalog's read.)
    allocations.grant(
      this.schedulerFunction,
      "dynamodb:GetItem",
      "dynamodb:Query",
      "dynamodb:PutItem",
      "dynamodb:DeleteItem",
    );
    instances.grantReadWriteData(this.schedulerFunction);
    // The explanation of each decision, kept apart from the instance.
    scheduling.grantWriteData(this.schedulerFunction);
    // Flavors, images, aggregates and server groups: the filters read them on every decision.
    catalog.grantReadData(this.schedulerFunction);

    hosts.grantReadWriteData(this.conductorFunction);
    // Alternates are claimed here; an aborted attempt's claims are released.
    allocations.grantReadData(this.conductorFunction);
    allocations.grant(this.conductorFunction, "dynamodb:PutItem", "dynamodb:DeleteItem");
    instances.grantReadWriteData(this.conductorFunction);
    this.buildRequestsQueue.grantSendMessages(this.conductorFunction);

    hosts.grantReadWriteData(this.buildWatchdogFunction);
    // A fenced attempt's claim is released; the watchdog never claims.
    allocations.grantReadData(this.buildWatchdogFunction);
    allocations.grant(this.buildWatchdogFunction, "dynamodb:DeleteItem");
    instances.grantReadWriteData(this.buildWatchdogFunction);
    // The liveness sweep: heartbeats read, transitions marked.
    services.grantReadWriteData(this.buildWatchdogFunction);
    this.buildRequestsQueue.grantSendMessages(this.buildWatchdogFunction);

    // What the hosts used to write themselves: registration, liveness, build and power results,
    // claims released, failures rescheduled; and each host's queues, created and tagged here.
    hosts.grantReadWriteData(this.computeEventsFunction);
    instances.grantReadWriteData(this.computeEventsFunction);
    services.grantReadWriteData(this.computeEventsFunction);
    allocations.grant(
      this.computeEventsFunction,
      "dynamodb:GetItem",
      "dynamodb:Query",
      "dynamodb:DeleteItem",
    );
    // a start or reboot carries the owner's public key (Nova passes it to the driver)
    catalog.grantReadData(this.computeEventsFunction);
    this.buildRequestsQueue.grantSendMessages(this.computeEventsFunction);
    this.computeEventsDlq.grantSendMessages(this.computeEventsFunction);
    this.computeEventsFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ["sqs:CreateQueue", "sqs:TagQueue", "sqs:GetQueueAttributes", "sqs:SendMessage"],
        resources: [computeQueuesArn],
      }),
    );

    // --- Grants for what this block of the stack added (observability, secrets) ---------------
    this.authTokensSecret.grantRead(this.apiFunction);
    // /identity reads users, projects and assignments; only the operator's seed writes them.
    identity.grantReadData(this.apiFunction);
    this.tokenKeySecret?.grantRead(this.apiFunction);

    // --- HTTP API ---------------------------------------------------------------------------
    this.httpApi = new apigwv2.HttpApi(this, "HttpApi", {
      description: "novaless: the OpenStack Compute API subset",
      defaultIntegration: new HttpLambdaIntegration("ApiIntegration", this.apiFunction, {
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      }),
    });
    // Access logs and throttling on the $default stage the API already has (a new stage resource
    // would collide with it on update: two stages named $default).
    const apiAccessLogs = new logs.LogGroup(this, "HttpApiAccessLogs", {
      retention: logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const defaultStage = this.httpApi.defaultStage!.node.defaultChild as apigwv2.CfnStage;
    defaultStage.accessLogSettings = {
      destinationArn: apiAccessLogs.logGroupArn,
      // Never a header: X-Auth-Token is a credential.
      format: JSON.stringify({
        requestId: "$context.requestId",
        sourceIp: "$context.identity.sourceIp",
        requestTime: "$context.requestTime",
        httpMethod: "$context.httpMethod",
        path: "$context.path",
        status: "$context.status",
        responseLength: "$context.responseLength",
        latencyMs: "$context.responseLatency",
        integrationLatencyMs: "$context.integrationLatency",
        integrationError: "$context.integrationErrorMessage",
      }),
    };
    defaultStage.defaultRouteSettings = {
      throttlingRateLimit: props.apiThrottleRateLimit ?? 50,
      throttlingBurstLimit: props.apiThrottleBurstLimit ?? 100,
    };

    // --- Compute hosts: no database, their own queue, and compute-events ----------------------
    // Nova's nova-compute never touches the database. A host's credentials are a session of
    // ComputeHostRole tagged `novaless-host=<host>` and named <host>: its own queue and DLQ carry
    // the same tag (the consumer creates them), and it may send only to compute-events, only as
    // a session named after its tag, so SenderId names the host (the consumer checks reports
    // against it). A session without the tag matches nothing.
    const hostTag = `\${aws:PrincipalTag/${HOST_TAG}}`;
    this.computeAgentPolicy = new iam.ManagedPolicy(this, "ComputeAgentPolicy", {
      description: "novaless compute host: its own queue (by principal tag) and compute-events, nothing else",
      statements: [
        new iam.PolicyStatement({
          sid: "OwnComputeQueue",
          actions: [
            "sqs:GetQueueUrl",
            "sqs:GetQueueAttributes",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:ChangeMessageVisibility",
            // its own DLQ: a message it cannot read goes there with the reason
            "sqs:SendMessage",
          ],
          resources: [computeQueuesArn],
          conditions: {
            StringEquals: { [`aws:ResourceTag/${HOST_TAG}`]: hostTag },
            StringLike: { "aws:userid": `*:${hostTag}` },
          },
        }),
        new iam.PolicyStatement({
          sid: "Report",
          actions: ["sqs:SendMessage"],
          resources: [this.computeEventsQueue.queueArn],
          conditions: {
            StringLike: { "aws:userid": `*:${hostTag}`, [`aws:PrincipalTag/${HOST_TAG}`]: "?*" },
          },
        }),
      ],
    });
    // The role hosts' sessions are of. Who may take a session, and with which tag, is the trust
    // policy's: a principal that carries `novaless-host` itself (an EC2 instance-profile role
    // tagged per host, or an IAM Roles Anywhere session whose certificate CN is the host) may
    // tag the session only with its own value and must name it so.
    const rolesAnywhere = {
      StringEquals: { "aws:PrincipalTag/x509Issuer/CN": props.rolesAnywhereIssuerCn ?? "novaless-hosts-ca" },
    };
    this.computeHostRole = new iam.Role(this, "ComputeHostRole", {
      description: "novaless compute host sessions (tagged novaless-host=<host>, named <host>)",
      // IAM Roles Anywhere, for hypervisors outside AWS: a certificate from the operator's CA
      // gets a session whose tags are the certificate's (x509Subject/CN = the host), which then
      // takes its tagged session below.
      assumedBy: new iam.ServicePrincipal("rolesanywhere.amazonaws.com").withConditions(rolesAnywhere),
      managedPolicies: [this.computeAgentPolicy],
      maxSessionDuration: Duration.hours(12),
    });
    const trust = this.computeHostRole.assumeRolePolicy!;
    trust.addStatements(
      new iam.PolicyStatement({
        actions: ["sts:TagSession", "sts:SetSourceIdentity"],
        principals: [new iam.ServicePrincipal("rolesanywhere.amazonaws.com")],
        conditions: rolesAnywhere,
      }),
    );
    // A principal may tag its session only with the host it is, and name it so: an EC2
    // instance-profile role tagged `novaless-host`, or the Roles Anywhere session's CN.
    for (const [sid, identity] of [
      ["TaggedPrincipal", `\${aws:PrincipalTag/${HOST_TAG}}`],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an IAM policy variable, not a template
      ["RolesAnywhereCertificate", "${aws:PrincipalTag/x509Subject/CN}"],
    ] as const) {
      trust.addStatements(
        new iam.PolicyStatement({
          sid,
          actions: ["sts:AssumeRole", "sts:TagSession"],
          principals: [new iam.AccountPrincipal(this.account)],
          conditions: {
            StringEquals: { [`aws:RequestTag/${HOST_TAG}`]: identity, "sts:RoleSessionName": identity },
            "ForAllValues:StringEquals": { "aws:TagKeys": [HOST_TAG] },
          },
        }),
      );
    }

    // Taking the tagged session also needs an identity policy allowing it (a trust policy naming
    // the account delegates to the account's own policies): attached here to the role itself for
    // the Roles Anywhere session, and by the operator to each EC2 host's instance-profile role.
    // Attached from the policy's side (its Roles), so the role does not depend on it (no cycle).
    this.computeHostAssumePolicy = new iam.ManagedPolicy(this, "ComputeHostAssumePolicy", {
      description: "take a host's tagged session of ComputeHostRole (the trust policy checks the tag)",
      statements: [
        new iam.PolicyStatement({
          sid: "TakeHostSession",
          actions: ["sts:AssumeRole", "sts:TagSession"],
          resources: [this.computeHostRole.roleArn],
        }),
      ],
    });
    this.computeHostAssumePolicy.attachToRole(this.computeHostRole);

    // --- Alarms -----------------------------------------------------------------------------
    // Builds in ERROR come from the conductor's BuildsError metric (EMF), not from the execution's
    // status: an execution that SUCCEEDED may well have put its build in ERROR (NoValidHost, max
    // retries, an aborted build). Per-host DLQs are created at run time, so one Metrics Insights
    // query covers them all by name (alarms accept a query that returns one series, not SEARCH).
    const fiveMinutes = Duration.minutes(5);
    const oneMinute = Duration.minutes(1);
    const query = (label: string, expression: string, period = fiveMinutes) =>
      new cloudwatch.MathExpression({ label, expression, period });
    const buildsError = `SELECT SUM(${METRIC.buildsError}) FROM SCHEMA("${METRICS_NAMESPACE}", reason, service)`;
    const computeDlqDepth = query(
      "Compute DLQs: most messages visible",
      `SELECT MAX(ApproximateNumberOfMessagesVisible) FROM SCHEMA("AWS/SQS", QueueName) WHERE QueueName LIKE '${this.computeQueuePrefix}%-dlq'`,
      oneMinute,
    );
    const functions: [string, NodejsFunction][] = [
      ["Api", this.apiFunction],
      ["BuildIntake", this.buildIntakeFunction],
      ["Scheduler", this.schedulerFunction],
      ["Conductor", this.conductorFunction],
      ["BuildWatchdog", this.buildWatchdogFunction],
      ["ComputeEvents", this.computeEventsFunction],
    ];
    const sum = { period: fiveMinutes, statistic: cloudwatch.Stats.SUM };
    const tableThrottles = (table: dynamodb.Table) =>
      new cloudwatch.MathExpression({
        label: "Read + write throttle events",
        // A period with only one kind of throttle still counts.
        expression: "FILL(r, 0) + FILL(w, 0)",
        usingMetrics: {
          r: table.metric("ReadThrottleEvents", sum),
          w: table.metric("WriteThrottleEvents", sum),
        },
        period: fiveMinutes,
      });
    const alarm = (id: string, description: string, metric: cloudwatch.IMetric, threshold = 0) =>
      new cloudwatch.Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        comparisonOperator:
          threshold === 0
            ? cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
            : cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    this.alarms = [
      alarm(
        "BuildRequestsDlqNotEmpty",
        `Build requests dead-lettered after ${BUILD_REQUESTS_QUEUE.maxReceiveCount} receives`,
        this.buildRequestsDlq.metricApproximateNumberOfMessagesVisible({
          period: oneMinute,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
      ),
      alarm(
        "ComputeEventsDlqNotEmpty",
        "Compute hosts' reports the compute-events consumer could not apply (malformed, or a host speaking for another)",
        this.computeEventsDlq.metricApproximateNumberOfMessagesVisible({
          period: oneMinute,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
      ),
      alarm(
        "ComputeDlqsNotEmpty",
        `A compute host's DLQ (${this.computeQueuePrefix}<host>-dlq) holds build messages its agent could not process`,
        computeDlqDepth,
      ),
      alarm(
        "ConductorExecutionsFailed",
        "Conductor executions failed (builds may be stuck in BUILD)",
        this.conductor.metricFailed({ period: oneMinute, statistic: cloudwatch.Stats.SUM }),
      ),
      alarm(
        "BuildsToError",
        "Builds went to ERROR (any reason: NoValidHost, MaxRetriesExceeded, BuildAborted), whatever their execution's status",
        query("Builds to ERROR", buildsError),
        props.buildErrorAlarmThreshold ?? 1,
      ),
      alarm(
        "NoValidHostRate",
        "Builds went to ERROR with NoValidHost: the fleet has no room for what is asked",
        query("NoValidHost", `${buildsError} WHERE reason = 'NoValidHost'`),
        props.noValidHostAlarmThreshold ?? 5,
      ),
      ...functions.flatMap(([name, fn]) => [
        alarm(`${name}FunctionErrors`, `The ${name} function failed invocations`, fn.metricErrors(sum)),
        alarm(`${name}FunctionThrottles`, `The ${name} function was throttled`, fn.metricThrottles(sum)),
      ]),
      ...TABLES.map((spec) =>
        alarm(
          `${spec.id}TableThrottled`,
          `DynamoDB throttled reads or writes on the ${spec.id} table`,
          tableThrottles(tables[spec.id]),
        ),
      ),
    ];
    for (const a of this.alarms) a.addAlarmAction(...(props.alarmActions ?? []));

    // --- Dashboard: the same signals, for an operator ---------------------------------------
    const novaless = (stat: "SUM" | "AVG" | "MAX", metric: string, rest = "") =>
      `SELECT ${stat}(${metric}) FROM "${METRICS_NAMESPACE}"${rest}`;
    const graph = (title: string, left: cloudwatch.IMetric[], right: cloudwatch.IMetric[] = []) =>
      new cloudwatch.GraphWidget({ title, left, right, width: 12, height: 6 });
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      dashboardName: `${this.stackName}-builds`,
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24, height: 4 })],
        [
          graph("Builds", [
            query("Started", novaless("SUM", METRIC.buildsStarted)),
            query("ACTIVE", novaless("SUM", METRIC.buildsActive)),
            query("ERROR", novaless("SUM", METRIC.buildsError)),
          ]),
          graph("Builds to ERROR by reason", [
            query("ERROR", novaless("SUM", METRIC.buildsError, " GROUP BY reason")),
          ]),
        ],
        [
          graph(
            "Scheduler (ms)",
            [
              query("Decision, average", novaless("AVG", METRIC.schedulerDecisionTime)),
              query("Decision, max", novaless("MAX", METRIC.schedulerDecisionTime)),
            ],
            [
              query("Fleet read, average", novaless("AVG", METRIC.schedulerFleetReadTime)),
              query("Fleet read, max", novaless("MAX", METRIC.schedulerFleetReadTime)),
            ],
          ),
          graph("Reschedules and claim conflicts", [
            query("Reschedules", novaless("SUM", METRIC.reschedules)),
            query("Claim conflicts", novaless("SUM", METRIC.claimConflicts)),
          ]),
        ],
        [
          graph("Dead letters (messages visible)", [
            this.buildRequestsDlq.metricApproximateNumberOfMessagesVisible({
              label: "build-requests DLQ",
              period: oneMinute,
              statistic: cloudwatch.Stats.MAXIMUM,
            }),
            computeDlqDepth,
          ]),
          graph("Conductor executions", [
            this.conductor.metricStarted(sum),
            this.conductor.metricSucceeded(sum),
            this.conductor.metricFailed(sum),
            this.conductor.metricTimedOut(sum),
          ]),
        ],
        [
          graph(
            "Lambda errors",
            functions.map(([name, fn]) => fn.metricErrors({ ...sum, label: name })),
          ),
          graph(
            "Lambda throttles",
            functions.map(([name, fn]) => fn.metricThrottles({ ...sum, label: name })),
          ),
        ],
        [
          graph(
            "DynamoDB throttle events",
            TABLES.map((spec) =>
              tables[spec.id].metric("ReadThrottleEvents", { ...sum, label: `${spec.id} reads` }),
            ),
            TABLES.map((spec) =>
              tables[spec.id].metric("WriteThrottleEvents", { ...sum, label: `${spec.id} writes` }),
            ),
          ),
          graph("API", [
            new cloudwatch.Metric({
              namespace: "AWS/ApiGateway",
              metricName: "Count",
              dimensionsMap: { ApiId: this.httpApi.apiId, Stage: "$default" },
              ...sum,
            }),
            new cloudwatch.Metric({
              namespace: "AWS/ApiGateway",
              metricName: "5xx",
              dimensionsMap: { ApiId: this.httpApi.apiId, Stage: "$default" },
              ...sum,
            }),
          ]),
        ],
      ],
    });

    // --- cdk-nag (AwsSolutions): what is not fixed, and why ------------------------------------
    const instancesIndexes = `Resource::<${this.getLogicalId(instances.node.defaultChild as dynamodb.CfnTable)}.Arn>/index/*`;
    const hostsIndexes = `Resource::<${this.getLogicalId(hosts.node.defaultChild as dynamodb.CfnTable)}.Arn>/index/*`;
    // Partition, region and account are tokens or literals depending on the stack's env; the
    // prefix is letters, digits, "-" and "_" only (checked above), nothing a regex would read.
    const part = "(<AWS::[A-Za-z]+>|[^:<>]+)";
    const computeQueues = {
      regex: `/^Resource::arn:${part}:sqs:${part}:${part}:${this.computeQueuePrefix}\\*$/`,
    };
    const indexesReason =
      "The Instances table's indexes (by-project for the API's listings, building-by-deadline for the watchdog) and the Hosts table's host-changes (the scheduler's refresh): a table grant covers its indexes as <table>/index/*";
    const computeQueuesReason =
      "One SQS queue (and DLQ) per compute host, created at run time when the host registers: only the stack's compute queue prefix can name them";
    for (const [, fn] of functions) {
      NagSuppressions.addResourceSuppressions(
        fn,
        [
          {
            id: "AwsSolutions-IAM4",
            reason:
              "AWSLambdaBasicExecutionRole only lets the function write its own CloudWatch Logs; it grants no data access",
            appliesTo: [
              "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
            ],
          },
          { id: "AwsSolutions-IAM5", reason: indexesReason, appliesTo: [instancesIndexes, hostsIndexes] },
          {
            id: "AwsSolutions-L1",
            reason:
              "nodejs22.x is a supported Lambda runtime and the one this project builds and tests for (esbuild target node22); moving to the next major is a deliberate upgrade, not a lint fix",
          },
        ],
        true,
      );
    }
    NagSuppressions.addResourceSuppressions(
      this.apiFunction,
      [
        { id: "AwsSolutions-IAM5", reason: computeQueuesReason, appliesTo: [computeQueues] },
        {
          id: "AwsSolutions-IAM5",
          reason: `${computeQueuesReason}; the API reads only their dead-letter queues (os-dead-letters)`,
          appliesTo: [
            {
              regex: `/^Resource::arn:${part}:sqs:${part}:${part}:${this.computeQueuePrefix}\\*${DLQ_SUFFIX}$/`,
            },
          ],
        },
        {
          id: "AwsSolutions-IAM5",
          reason:
            "sqs:ListQueues supports no resource-level permission: os-dead-letters finds the hosts' DLQs by prefix",
          appliesTo: ["Resource::*"],
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(this.computeAgentPolicy, [
      {
        id: "AwsSolutions-IAM5",
        reason: `${computeQueuesReason}; the statement matches only the queues tagged with the session's own novaless-host`,
        appliesTo: [computeQueues],
      },
    ]);
    NagSuppressions.addResourceSuppressions(
      this.computeEventsFunction,
      [{ id: "AwsSolutions-IAM5", reason: computeQueuesReason, appliesTo: [computeQueues] }],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      this.conductor,
      [
        { id: "AwsSolutions-IAM5", reason: computeQueuesReason, appliesTo: [computeQueues] },
        {
          id: "AwsSolutions-IAM5",
          reason:
            "Log delivery to CloudWatch Logs (logs:CreateLogDelivery and the like) and X-Ray's PutTraceSegments/PutTelemetryRecords support no resource-level permissions",
          appliesTo: ["Resource::*"],
        },
        {
          id: "AwsSolutions-IAM5",
          reason: "Invoking a function includes its qualified ARNs (<function>:<version or alias>)",
          appliesTo: [this.schedulerFunction, this.conductorFunction].map(
            (fn) => `Resource::<${this.getLogicalId(fn.node.defaultChild as lambda.CfnFunction)}.Arn>:*`,
          ),
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(this.authTokensSecret, [
      {
        id: "AwsSolutions-SMG4",
        reason:
          "The secret holds the API's token table (Keystone's role, reduced), data the operator edits with put-secret-value; there is no credential behind it for a rotation Lambda to rotate",
      },
    ]);
    for (const secret of [this.tokenKeySecret, this.adminPasswordSecret])
      if (secret)
        NagSuppressions.addResourceSuppressions(secret, [
          {
            id: "AwsSolutions-SMG4",
            reason:
              "Generated once: rotating the token key ends every token in flight, and the admin's password is re-seeded by the operator (npm run seed -- --admin-password-from-secret); neither has a rotation Lambda",
          },
        ]);
    NagSuppressions.addResourceSuppressions(
      this.httpApi,
      [
        {
          id: "AwsSolutions-APIG4",
          reason:
            "Authentication is the API function's, as in Nova: every /v2.1 call carries an OpenStack X-Auth-Token checked against the token table (401 otherwise); the version documents are public, as in Nova",
        },
      ],
      true,
    );

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
    // what `novaless-compute --stack-outputs` reads
    new CfnOutput(this, "ComputeEventsQueueUrl", { value: this.computeEventsQueue.queueUrl });
    new CfnOutput(this, "ComputeEventsDlqUrl", { value: this.computeEventsDlq.queueUrl });
    new CfnOutput(this, "ComputeHostRoleArn", { value: this.computeHostRole.roleArn });
    new CfnOutput(this, "ComputeHostAssumePolicyArn", {
      value: this.computeHostAssumePolicy.managedPolicyArn,
    });
    new CfnOutput(this, "Region", { value: this.region });
    new CfnOutput(this, "AuthTokensSecretArn", {
      value: this.authTokensSecret.secretArn,
      description:
        "Put the API's token table here: aws secretsmanager put-secret-value --secret-id <arn> --secret-string file://tokens.json",
    });
    if (this.adminPasswordSecret)
      new CfnOutput(this, "AdminPasswordSecretArn", {
        value: this.adminPasswordSecret.secretArn,
        description:
          "The /identity admin's password: NOVALESS_IDENTITY_TABLE=<IdentityTableName> npm run seed -- --admin-password-from-secret <arn>",
      });
    new CfnOutput(this, "DashboardName", { value: this.dashboard.dashboardName });
  }
}
