// The whole deployment in one stack, composed of its parts in infra/constructs: the tables
// and queues of lib/resources.ts, the API's secrets, the six Lambdas, the conductor state
// machine, the HTTP API, the compute hosts' access, the alarms and the dashboard. Each part is a
// plain class that creates its resources in this stack, not a construct of its own: a construct
// in between would change every logical ID, and CloudFormation would replace the tables.
import { CfnOutput, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import type * as cloudfront from "aws-cdk-lib/aws-cloudfront";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import type { Construct } from "constructs";
import { SCHEDULER_DEFAULTS, type SchedulerConfig } from "../../lib/config.js";
import type { TableSpec } from "../../lib/resources.js";
import { Api } from "../constructs/api.js";
import { Conductor, type ConductorType } from "../constructs/conductor.js";
import { Data } from "../constructs/data.js";
import { Edge } from "../constructs/edge.js";
import { Functions } from "../constructs/functions.js";
import { HostAccess, type RolesAnywhereTrust } from "../constructs/host-access.js";
import { Observability } from "../constructs/observability.js";
import { Queues } from "../constructs/queues.js";
import { Secrets } from "../constructs/secrets.js";

export type { ConductorType };

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
   * IAM Roles Anywhere for on-premises hosts (their certificates' CN is the host name): the CA's
   * CN and either its certificate (the stack creates the trust anchor and profile) or an existing
   * trust anchor's ARN. Off by default: hosts are then EC2 instances with their own roles.
   */
  rolesAnywhere?: RolesAnywhereTrust;
  /** The IAM path of the hosts' roles, the only roles that may take a host session. Default `/novaless-hosts/`. */
  hostRolePath?: string;
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

export class NovalessStack extends Stack {
  // The parts' resources, by the names the tests and local/ (the IAM gateway's policies) read.
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
  /** where hosts post their reports (AWS_IAM) */
  readonly computeEventsUrl: lambda.FunctionUrl;
  readonly computeEventsDlq: sqs.Queue;
  readonly computeEventsFunction: NodejsFunction;
  readonly computeQueuePrefix: string;
  readonly authTokensSecret: secretsmanager.Secret;
  /** /identity's token signing key (generated); absent with keystoneUrl */
  readonly tokenKeySecret?: secretsmanager.Secret;
  /** the /identity admin's password (generated), for `npm run seed -- --admin-password-from-secret` */
  readonly adminPasswordSecret?: secretsmanager.Secret;
  readonly dashboard: cloudwatch.Dashboard;
  /** the CloudFront distribution in front of the API (absent when synthesized without a region) */
  readonly endpoint: cloudfront.Distribution | undefined;
  readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: NovalessStackProps = {}) {
    super(scope, id, props);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    const data = new Data(this, { removalPolicy });
    const queues = new Queues(this, { computeQueuePrefix: props.computeQueuePrefix });
    const secrets = new Secrets(this, { removalPolicy, keystoneUrl: props.keystoneUrl });
    const functions = new Functions(this, {
      data,
      queues,
      secrets,
      scheduler: { ...SCHEDULER_DEFAULTS, ...props.scheduler },
      logLevel: props.logLevel ?? "info",
      instanceBuildTimeout: props.instanceBuildTimeout ?? 600,
      logRetention,
    });
    const conductor = new Conductor(this, {
      type: props.conductorType ?? "EXPRESS",
      functions,
      queues,
      logRetention,
    });
    functions.startsBuildsOn(conductor.stateMachine);
    const api = new Api(this, {
      handler: functions.api,
      throttleRateLimit: props.apiThrottleRateLimit ?? 50,
      throttleBurstLimit: props.apiThrottleBurstLimit ?? 100,
      logRetention,
    });
    const edge = new Edge(this, { httpApi: api.httpApi });
    const hostAccess = new HostAccess(this, {
      queues,
      reportFunctionArn: functions.computeEvents.functionArn,
      imagesBucket: data.imagesBucket,
      rolesAnywhere: props.rolesAnywhere,
      hostRolePath: iamPath(props.hostRolePath ?? "/novaless-hosts/"),
    });
    const observability = new Observability(this, {
      data,
      queues,
      functions,
      conductor: conductor.stateMachine,
      httpApi: api.httpApi,
      buildErrorAlarmThreshold: props.buildErrorAlarmThreshold ?? 1,
      noValidHostAlarmThreshold: props.noValidHostAlarmThreshold ?? 5,
      alarmActions: props.alarmActions ?? [],
    });

    this.tables = data.tables;
    this.buildRequestsQueue = queues.buildRequests;
    this.buildRequestsDlq = queues.buildRequestsDlq;
    this.computeEventsUrl = functions.computeEventsUrl;
    this.computeEventsDlq = queues.computeEventsDlq;
    this.computeQueuePrefix = queues.computeQueuePrefix;
    this.authTokensSecret = secrets.authTokens;
    this.tokenKeySecret = secrets.tokenKey;
    this.adminPasswordSecret = secrets.adminPassword;
    this.apiFunction = functions.api;
    this.buildIntakeFunction = functions.buildIntake;
    this.schedulerFunction = functions.scheduler;
    this.conductorFunction = functions.conductor;
    this.buildWatchdogFunction = functions.buildWatchdog;
    this.computeEventsFunction = functions.computeEvents;
    this.conductor = conductor.stateMachine;
    this.httpApi = api.httpApi;
    this.endpoint = edge.distribution;
    this.computeAgentPolicy = hostAccess.computeAgentPolicy;
    this.computeHostRole = hostAccess.computeHostRole;
    this.computeHostAssumePolicy = hostAccess.computeHostAssumePolicy;
    this.alarms = observability.alarms;
    this.dashboard = observability.dashboard;

    // Each part outputs what an operator and `novaless-compute --stack-outputs` read of it.
    new CfnOutput(this, "Region", { value: this.region });
  }
}

/** IAM's path rule: `/`, or `/`-delimited names of IAM's characters, at most 512 characters. */
function iamPath(path: string): string {
  if (path.length > 512 || !/^\/(?:[\w+=,.@-]+\/)*$/.test(path))
    throw new Error(
      `hostRolePath ${JSON.stringify(path)}: an IAM path starts and ends with / (e.g. /novaless-hosts/)`,
    );
  return path;
}
