// The six Lambdas, bundled by local esbuild from functions/<folder>/handler.ts, with one shared
// environment, their triggers (build-intake's SQS event source, compute-events' function URL, the
// watchdog's schedule) and least-privilege grants.
import { fileURLToPath } from "node:url";
import { CfnOutput, Duration, RemovalPolicy, type Stack } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { NagSuppressions } from "cdk-nag";
import { IMAGES_PREFIX } from "../../lib/compute/image-store.js";
import { option, parseOption, type SchedulerConfig, schedulerEnvironment } from "../../lib/config.js";
import { FLEET_SNAPSHOT_KEY } from "../../lib/placement/fleet-snapshot-store.js";
import {
  API_FUNCTION_TIMEOUT_SECONDS,
  BUILD_INTAKE_TIMEOUT_SECONDS,
  COMPUTE_EVENTS,
  DLQ_SUFFIX,
  TABLES,
} from "../../lib/resources.js";
import { CONDUCTOR_FUNCTION_TIMEOUT_SECONDS } from "../conductor/definition.js";
import type { Data } from "./data.js";
import { COMPUTE_QUEUES_REASON, computeQueuesFinding, IMAGES_REASON, imagesFinding } from "./nag.js";
import type { Queues } from "./queues.js";
import type { Secrets } from "./secrets.js";

/** Lambda's Node.js runtimes have no `require` in ESM; bundled CommonJS dependencies need one. */
const ESM_REQUIRE_SHIM =
  "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** What Lambda keeps unreserved in every account (configuration-concurrency.html). */
export const LAMBDA_UNRESERVED_MINIMUM = 100;
/** ScalingConfig.MaximumConcurrency's range on an SQS event source mapping. */
export const MAXIMUM_CONCURRENCY = { min: 2, max: 1000 } as const;

/** The reserved concurrency of the build path's own functions; undefined: none. */
export interface BuildPathConcurrency {
  computeEvents?: number;
  buildIntake?: number;
}

/**
 * The build path's share of the account's Lambda concurrency, sized from the fleet.
 *
 * Without it a fleet-wide re-registration or heartbeat storm through compute-events' function URL
 * takes as many concurrent invocations as hosts report at once, up to the account's whole
 * concurrency: the API, the scheduler and the conductor are then throttled
 * (Lambda.TooManyRequestsException, the builds end in ERROR). A reservation both guarantees and
 * caps a function, so:
 * - compute-events (the hosts' reports, build results among them): ceil(fleet / 100), at least 5.
 *   A storm is one report per host, tens of milliseconds each: ceil(fleet / 100) at once take the
 *   whole fleet in about 100 rounds (seconds); steady heartbeats (fleet / 80 a second) need a
 *   few. Beyond the reservation Lambda answers 429 and the host sends its report again, with
 *   backoff (lib/aws/function-url.ts).
 * - build-intake (build-requests' event source: up to 10 starts an invocation, a fraction of a
 *   second): buildIntakeConcurrency(fleet), reserved and its mapping's MaximumConcurrency alike.
 * - The API, scheduler, conductor and watchdog keep the unreserved pool (at least 100, Lambda's
 *   floor), which nothing driven by the hosts can take now; unreserved, a burst of builds is not
 *   capped by a reservation of its own.
 * fleet_size 0 reserves nothing. A fleet whose reservations would leave less than 100 of the
 * account's limit fails here, as the deploy would.
 */
export function buildPathConcurrency(fleetSize: number, accountLimit: number): BuildPathConcurrency {
  if (fleetSize === 0) return {};
  const computeEvents = Math.max(5, Math.ceil(fleetSize / 100));
  const buildIntake = buildIntakeConcurrency(fleetSize);
  const reserved = computeEvents + buildIntake;
  if (accountLimit - reserved < LAMBDA_UNRESERVED_MINIMUM)
    throw new Error(
      `fleet_size ${fleetSize} reserves ${reserved} concurrent executions (compute-events ${computeEvents}, ` +
        `build-intake ${buildIntake}); the account's limit of ${accountLimit} (lambda_concurrency_limit) would ` +
        `leave ${accountLimit - reserved} unreserved, below the ${LAMBDA_UNRESERVED_MINIMUM} Lambda keeps. ` +
        `Raise the account's limit (Service Quotas, Lambda Concurrent executions) and lambda_concurrency_limit with it, or lower fleet_size.`,
    );
  return { computeEvents, buildIntake };
}

/**
 * build-intake's concurrency, its event source's ScalingConfig.MaximumConcurrency (and its
 * reservation when the fleet is sized): ceil(fleet / 200), at least 5, at most 1,000 (the
 * mapping's range). An invocation starts a batch of up to 10 executions in parallel in about a
 * tenth of a second, so each concurrent one carries about 100 starts a second: 5 (a fleet up to
 * 1,000 hosts) start about 500 builds a second, 50 (10,000 hosts) about 5,000, under Express's
 * StartExecution quota (6,000 a second in the largest regions). A burst beyond it waits in
 * build-requests, the buffer in front of Step Functions, instead of throttling the conductor.
 * The reservation equals it: below it Lambda would read batches it cannot invoke.
 */
export function buildIntakeConcurrency(fleetSize: number): number {
  return Math.min(MAXIMUM_CONCURRENCY.max, Math.max(5, Math.ceil(fleetSize / 200)));
}

/** A deployment option (lib/config.ts): `-c <name>=…`, else its variable, else its default. */
export function deploymentOption<T extends number | string | boolean = number>(stack: Stack, key: string): T {
  const o = option(key);
  const raw: unknown = stack.node.tryGetContext(o.name) ?? process.env[o.env];
  return (raw === undefined || raw === "" ? o.default : parseOption(o, String(raw))) as T;
}

export interface FunctionsProps {
  data: Data;
  queues: Queues;
  secrets: Secrets;
  scheduler: SchedulerConfig;
  logLevel: string;
  instanceBuildTimeout: number;
  logRetention: logs.RetentionDays;
}

interface FunctionOptions {
  memorySize: number;
  timeout: Duration;
  environment?: Record<string, string>;
  reservedConcurrentExecutions?: number;
}

export class Functions {
  readonly api: NodejsFunction;
  readonly buildIntake: NodejsFunction;
  readonly scheduler: NodejsFunction;
  readonly conductor: NodejsFunction;
  readonly buildWatchdog: NodejsFunction;
  readonly computeEvents: NodejsFunction;
  /** where hosts post their reports */
  readonly computeEventsUrl: lambda.FunctionUrl;
  /** the reservations the stack gives the functions the queues drive */
  readonly concurrency: BuildPathConcurrency;
  private readonly queues: Queues;

  constructor(stack: Stack, props: FunctionsProps) {
    const { data, queues, secrets } = props;
    this.queues = queues;
    const { tables } = data;
    this.concurrency = buildPathConcurrency(
      deploymentOption(stack, "fleet_size"),
      deploymentOption(stack, "lambda_concurrency_limit"),
    );
    const environment: Record<string, string> = {
      ...Object.fromEntries(TABLES.map((spec) => [spec.env, tables[spec.id].tableName])),
      NOVALESS_BUILD_REQUESTS_QUEUE_URL: queues.buildRequests.queueUrl,
      NOVALESS_BUILD_REQUESTS_DLQ_URL: queues.buildRequestsDlq.queueUrl,
      NOVALESS_COMPUTE_QUEUE_PREFIX: queues.computeQueuePrefix,
      NOVALESS_COMPUTE_EVENTS_DLQ_URL: queues.computeEventsDlq.queueUrl,
      NOVALESS_IMAGES_BUCKET: data.imagesBucket.bucketName,
      NOVALESS_LOG_LEVEL: props.logLevel,
      NOVALESS_INSTANCE_BUILD_TIMEOUT: String(props.instanceBuildTimeout),
      ...schedulerEnvironment(props.scheduler),
      NODE_OPTIONS: "--enable-source-maps",
    };
    const handler = (id: string, folder: string, options: FunctionOptions): NodejsFunction =>
      new NodejsFunction(stack, id, {
        entry: fileURLToPath(new URL(`../../functions/${folder}/handler.ts`, import.meta.url)),
        handler: "handler",
        projectRoot,
        depsLockFilePath: `${projectRoot}package-lock.json`,
        runtime: lambda.Runtime.NODEJS_22_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: options.memorySize,
        timeout: options.timeout,
        reservedConcurrentExecutions: options.reservedConcurrentExecutions,
        // POWERTOOLS_SERVICE_NAME: the `service` of each function's logs and metrics.
        environment: { ...environment, POWERTOOLS_SERVICE_NAME: folder, ...options.environment },
        logGroup: new logs.LogGroup(stack, `${id}LogGroup`, {
          retention: props.logRetention,
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

    this.api = handler("Api", "api", {
      memorySize: 512,
      timeout: Duration.seconds(API_FUNCTION_TIMEOUT_SECONDS),
      environment: secrets.apiEnvironment,
    });
    // The conductor's steps: their timeouts are part of its retry budget (infra/conductor/definition.ts).
    this.scheduler = handler("Scheduler", "scheduler", {
      memorySize: 1024,
      timeout: Duration.seconds(CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.scheduler),
    });
    this.conductor = handler("Conductor", "conductor", {
      memorySize: 512,
      timeout: Duration.seconds(CONDUCTOR_FUNCTION_TIMEOUT_SECONDS.conductor),
    });
    // build-requests → conductor: the only starter of its executions (NOVALESS_CONDUCTOR_ARN comes
    // with startsBuildsOn). Batches of 10 with partial batch responses: a request whose start
    // fails stays on the queue (lib/conductor/intake.ts). MaximumConcurrency bounds the starts
    // whatever the burst, sized from the fleet (buildIntakeConcurrency).
    this.buildIntake = handler("BuildIntake", "build-intake", {
      memorySize: 256,
      timeout: Duration.seconds(BUILD_INTAKE_TIMEOUT_SECONDS),
      reservedConcurrentExecutions: this.concurrency.buildIntake,
    });
    this.buildIntake.addEventSource(
      new SqsEventSource(queues.buildRequests, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: buildIntakeConcurrency(deploymentOption(stack, "fleet_size")),
      }),
    );
    // The build watchdog: every minute, fence and reschedule builds whose host died or hung.
    this.buildWatchdog = handler("BuildWatchdog", "build-watchdog", {
      memorySize: 512,
      timeout: Duration.seconds(55),
    });
    new events.Rule(stack, "BuildWatchdogSchedule", {
      description: "novaless: run the build watchdog",
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(this.buildWatchdog, { retryAttempts: 0 })],
    });
    // nova-compute's database proxy (Nova's conductor): applies the hosts' reports, which each
    // host POSTs to its function URL signed with its session (AWS_IAM: the function reads the
    // signer from requestContext.authorizer.iam, as it read SQS's SenderId). No queue and no
    // event source: a mapping's pollers cost the same whether the fleet reports or not. At its
    // reservation Lambda answers 429 and the host sends again (lib/aws/function-url.ts).
    this.computeEvents = handler("ComputeEvents", "compute-events", {
      memorySize: 512,
      timeout: Duration.seconds(COMPUTE_EVENTS.timeoutSeconds),
      reservedConcurrentExecutions: this.concurrency.computeEvents,
    });
    this.computeEventsUrl = this.computeEvents.addFunctionUrl({
      authType: lambda.FunctionUrlAuthType.AWS_IAM,
    });
    new CfnOutput(stack, "ComputeEventsUrl", { value: this.computeEventsUrl.url });

    this.grant(data, queues, secrets);
    this.suppressFindings(stack, data);
  }

  /** [name, function], the names the alarms and the dashboard give them. */
  get all(): [string, NodejsFunction][] {
    return [
      ["Api", this.api],
      ["BuildIntake", this.buildIntake],
      ["Scheduler", this.scheduler],
      ["Conductor", this.conductor],
      ["BuildWatchdog", this.buildWatchdog],
      ["ComputeEvents", this.computeEvents],
    ];
  }

  /**
   * build-intake alone starts the conductor's executions; every other sender of a build request
   * sends to build-requests (lib/aws/send.ts). The state machine is made after the functions (it
   * invokes two of them), so its ARN comes here. A request it cannot parse is dead-lettered.
   */
  startsBuildsOn(conductor: sfn.StateMachine): void {
    this.buildIntake.addEnvironment("NOVALESS_CONDUCTOR_ARN", conductor.stateMachineArn);
    conductor.grantStartExecution(this.buildIntake);
    this.queues.buildRequestsDlq.grantSendMessages(this.buildIntake);
  }

  private grant(data: Data, queues: Queues, secrets: Secrets): void {
    const { Hosts: hosts, Allocations: allocations, Instances: instances } = data.tables;
    const { Catalog: catalog, Services: services, Scheduling: scheduling, Identity: identity } = data.tables;
    const { Migrations: migrations, Networking: networking, HostChanges: hostChanges } = data.tables;
    const { api, scheduler, conductor, buildWatchdog, computeEvents } = this;
    // Whoever writes a host item appends its entry to the change feed (PutItem only); the
    // scheduler's refresh and os-fleet's changes-since read it (Query only).
    for (const writer of [api, scheduler, conductor, buildWatchdog, computeEvents])
      hostChanges.grant(writer, "dynamodb:PutItem");
    for (const reader of [api, scheduler]) hostChanges.grant(reader, "dynamodb:Query");
    const computeQueues = queues.computeQueuesArn;

    instances.grantReadWriteData(api);
    // The admin API creates flavors and images and sets extra specs.
    catalog.grantReadWriteData(api);
    // Deleting an instance during its build releases its claim, an UpdateItem on its host.
    hosts.grantReadData(api);
    hosts.grant(api, "dynamodb:UpdateItem");
    // ...and deletes its allocation item (the audit's repair too); os-hypervisors reads them.
    allocations.grantReadData(api);
    allocations.grant(api, "dynamodb:DeleteItem");
    // os-services reads the heartbeats and mirrors forced_down onto them; os-scheduling reads.
    services.grantReadData(api);
    services.grant(api, "dynamodb:UpdateItem");
    scheduling.grantReadData(api);
    queues.buildRequests.grantSendMessages(api);
    // Resize and migrate create the migration record; confirm and revert move it on; os-migrations lists.
    migrations.grantReadWriteData(api);
    api.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueues] }),
    );
    // os-dead-letters (admins): find the DLQs, read them (each message made visible again) and
    // redrive one to its source (sent there, then deleted here; compute-events' DLQ is never
    // redriven: its reports are trusted for the session that signed them). Host DLQs only, not host queues.
    api.addToRolePolicy(
      new iam.PolicyStatement({
        sid: "DeadLetters",
        actions: [
          "sqs:GetQueueAttributes",
          "sqs:ReceiveMessage",
          "sqs:ChangeMessageVisibility",
          "sqs:DeleteMessage",
        ],
        resources: [
          queues.buildRequestsDlq.queueArn,
          queues.computeEventsDlq.queueArn,
          queues.computeDlqsArn,
        ],
      }),
    );
    api.addToRolePolicy(
      // ListQueues names no queue: SQS authorizes it on no resource
      new iam.PolicyStatement({ sid: "FindDeadLetterQueues", actions: ["sqs:ListQueues"], resources: ["*"] }),
    );
    // DELETE /os-services/{id}: the host's queue and DLQ, counted, then deleted with the service
    api.addToRolePolicy(
      new iam.PolicyStatement({
        sid: "ServiceQueues",
        actions: ["sqs:GetQueueAttributes", "sqs:DeleteQueue"],
        resources: [computeQueues],
      }),
    );
    secrets.authTokens.grantRead(api);
    // /identity is Keystone: it reads and writes users, projects, assignments, application
    // credentials and revoked tokens (TransactWriteItems for the name items: a write grant).
    identity.grantReadWriteData(api);
    // /networking is Neutron: networks, subnets, ports and the one item per allocated address
    // (conditional puts, the allocation cursor's ADD, TransactWriteItems for a subnet's create).
    networking.grantReadWriteData(api);
    secrets.tokenKey?.grantRead(api);

    hosts.grantReadWriteData(scheduler);
    // Exactly what the claim loop does: find a consumer's claims (Query), read one to release it,
    // put and delete allocation items. (Its own statement: never merged with the Catalog's read.)
    allocations.grant(
      scheduler,
      "dynamodb:GetItem",
      "dynamodb:Query",
      "dynamodb:PutItem",
      "dynamodb:DeleteItem",
    );
    instances.grantReadWriteData(scheduler);
    // The explanation of each decision, kept apart from the instance.
    scheduling.grantWriteData(scheduler);
    // Flavors, images, aggregates and server groups: the filters read them on every decision.
    catalog.grantReadData(scheduler);
    // The fleet snapshot, one object (lib/conductor/fleet-snapshots.ts): a cold scheduler reads it
    // (GetObject; HeadObject is authorized as GetObject), a warm one rewrites it. The API's dry
    // run only reads it. No s3:ListBucket: a missing snapshot then answers 403, read as none.
    const fleetSnapshot = data.imagesBucket.arnForObjects(FLEET_SNAPSHOT_KEY);
    scheduler.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["s3:GetObject", "s3:PutObject"], resources: [fleetSnapshot] }),
    );
    api.addToRolePolicy(new iam.PolicyStatement({ actions: ["s3:GetObject"], resources: [fleetSnapshot] }));
    // A claim of a server group's member writes the group's ledger in its transaction (the late
    // affinity / anti-affinity check, lib/placement/group-claims.ts): UpdateItem only.
    catalog.grant(scheduler, "dynamodb:UpdateItem");

    hosts.grantReadWriteData(conductor);
    // Alternates are claimed here; an aborted attempt's claims are released.
    allocations.grantReadData(conductor);
    allocations.grant(conductor, "dynamodb:PutItem", "dynamodb:DeleteItem");
    instances.grantReadWriteData(conductor);
    migrations.grantReadWriteData(conductor);
    // A move that fails gives back what a resize up reserved (the usage item) and starts the
    // source's guest again if it was shut down for the move.
    catalog.grant(conductor, "dynamodb:UpdateItem");
    // a guest it casts (a rebuild's, an evacuation's, a resize's) carries the owner's public key
    catalog.grantReadData(conductor);
    // Nova's allocate_for_instance once the host is chosen: a server's ports made (TransactWriteItems
    // with the network's port count), addresses won (conditional puts, the cursor's ADD), bound,
    // and freed when the build is aborted; a cast guest carries its ports' subnets
    networking.grantReadWriteData(conductor);
    conductor.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueues] }),
    );
    // a build's ports joining their groups (an aborted one's leaving) mark the groups and send the
    // window's one member sync to build-requests (lib/instances/security-group-refresh.ts)
    queues.buildRequests.grantSendMessages(conductor);

    // build-intake applies the member syncs of build-requests: the group's mark deleted, its
    // referrers (GetItem), their members (the by-kind index: Query), their ports, groups, networks
    // and subnets (BatchGetItem, GetItem); the moves in flight (the open index, then the few open
    // migrations) and a moving server's record; each host's queue (its record), cast to
    const { buildIntake } = this;
    networking.grant(
      buildIntake,
      "dynamodb:GetItem",
      "dynamodb:BatchGetItem",
      "dynamodb:Query",
      "dynamodb:DeleteItem",
    );
    migrations.grant(buildIntake, "dynamodb:Query", "dynamodb:BatchGetItem");
    instances.grant(buildIntake, "dynamodb:GetItem");
    hosts.grant(buildIntake, "dynamodb:GetItem");
    buildIntake.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueues] }),
    );

    hosts.grantReadWriteData(buildWatchdog);
    // A fenced attempt's claim is released; the watchdog never claims.
    allocations.grantReadData(buildWatchdog);
    allocations.grant(buildWatchdog, "dynamodb:DeleteItem");
    instances.grantReadWriteData(buildWatchdog);
    // Moves: resize_confirm_window confirms one left in VERIFY_RESIZE (a cast to the source); one
    // whose host died fails back to its source (the source's allocation handed back to the
    // instance, a resize up's reservation given back, the source told to start its guest again).
    migrations.grantReadWriteData(buildWatchdog);
    allocations.grant(buildWatchdog, "dynamodb:PutItem");
    catalog.grant(buildWatchdog, "dynamodb:UpdateItem");
    // automatic evacuation: which hosts are opted in (aggregates' metadata); a move it sends again
    // carries the guest's ports
    catalog.grantReadData(buildWatchdog);
    // the reclaim of a SOFT_DELETED server deletes it as the API does: the ports Nova made for it
    // deleted, the user's unbound (lib/conductor/reclaim-watch.ts)
    networking.grantReadWriteData(buildWatchdog);
    buildWatchdog.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [computeQueues] }),
    );
    // The liveness sweep: heartbeats read, transitions marked.
    services.grantReadWriteData(buildWatchdog);
    queues.buildRequests.grantSendMessages(buildWatchdog);

    // What the hosts used to write themselves: registration, liveness, build and power results,
    // claims released, failures rescheduled; and each host's queues, created and tagged here.
    hosts.grantReadWriteData(computeEvents);
    instances.grantReadWriteData(computeEvents);
    services.grantReadWriteData(computeEvents);
    // (PutItem: a reverted or failed move gives the source's allocation back to the instance)
    allocations.grant(
      computeEvents,
      "dynamodb:GetItem",
      "dynamodb:Query",
      "dynamodb:PutItem",
      "dynamodb:DeleteItem",
    );
    migrations.grantReadWriteData(computeEvents);
    // (a move that fails at its source gives back what a resize up reserved; a snapshot's image
    // goes active, or is deleted when it failed or a backup rotates out)
    catalog.grant(computeEvents, "dynamodb:UpdateItem", "dynamodb:DeleteItem");
    // a snapshot's data deleted with its image (the hosts put it; the API serves and deletes it)
    const images = data.imagesBucket.arnForObjects(`${IMAGES_PREFIX}*`);
    computeEvents.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["s3:DeleteObject"], resources: [images] }),
    );
    // ... and stores an upload's data, its own or through the presigned URL it gives the edge
    // (lib/api/image/upload.ts), reads it back to check it, and deletes what fails
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
        resources: [images],
      }),
    );
    // a start or reboot carries the owner's public key (Nova passes it to the driver), a spawn its
    // ports with their networks' and subnets' attributes; a server that moved (or was offloaded)
    // has its ports bound to its new host (UpdateItem); an interface detached, or an attach that
    // failed, deletes the port Nova made and frees its addresses (DeleteItem, TransactWriteItems
    // with the network's port count) or unbinds the user's
    catalog.grantReadData(computeEvents);
    networking.grantReadData(computeEvents);
    networking.grant(computeEvents, "dynamodb:UpdateItem", "dynamodb:DeleteItem");
    queues.buildRequests.grantSendMessages(computeEvents);
    queues.computeEventsDlq.grantSendMessages(computeEvents);
    computeEvents.addToRolePolicy(
      new iam.PolicyStatement({
        // (GetQueueUrl, SetQueueAttributes: a queue whose attributes drifted is set back, lib/aws/queues.ts)
        actions: [
          "sqs:CreateQueue",
          "sqs:TagQueue",
          "sqs:GetQueueAttributes",
          "sqs:SendMessage",
          "sqs:GetQueueUrl",
          "sqs:SetQueueAttributes",
        ],
        resources: [computeQueues],
      }),
    );
  }

  /** cdk-nag (AwsSolutions): what is not fixed, and why. After the grants: it marks what exists. */
  private suppressFindings(stack: Stack, data: Data): void {
    const indexes = (table: dynamodb.Table) =>
      `Resource::<${stack.getLogicalId(table.node.defaultChild as dynamodb.CfnTable)}.Arn>/index/*`;
    const prefix = this.queues.computeQueuePrefix;
    for (const [, fn] of this.all) {
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
          {
            id: "AwsSolutions-IAM5",
            reason:
              "The Instances table's indexes (by-project for the API's listings, by-vm-state for the listings and the watchdog's builds in flight), the Migrations table's by-instance (a server's migrations), the Identity table's by-kind (an admin's listings of projects, users and role assignments), the Networking table's by-kind, by-network, by-holder and by-device (listings, a network's subnets and ports, the addresses a port holds, a device's ports): a table grant covers its indexes as <table>/index/*",
            appliesTo: [
              indexes(data.tables.Instances),
              indexes(data.tables.Migrations),
              indexes(data.tables.Identity),
              indexes(data.tables.Networking),
            ],
          },
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
      this.api,
      [
        { id: "AwsSolutions-IAM5", reason: COMPUTE_QUEUES_REASON, appliesTo: [computeQueuesFinding(prefix)] },
        {
          id: "AwsSolutions-IAM5",
          reason: `${COMPUTE_QUEUES_REASON}; the API reads only their dead-letter queues (os-dead-letters)`,
          appliesTo: [computeQueuesFinding(prefix, DLQ_SUFFIX)],
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
    // the API serves and deletes images' data; compute-events deletes it with a failed or rotated image
    for (const fn of [this.api, this.computeEvents])
      NagSuppressions.addResourceSuppressions(
        fn,
        [{ id: "AwsSolutions-IAM5", reason: IMAGES_REASON, appliesTo: [imagesFinding(data.imagesBucket)] }],
        true,
      );
    // build-intake casts a member sync's refresh_port_filters to the hosts' queues
    for (const fn of [this.computeEvents, this.conductor, this.buildWatchdog, this.buildIntake]) {
      NagSuppressions.addResourceSuppressions(
        fn,
        [
          {
            id: "AwsSolutions-IAM5",
            reason: COMPUTE_QUEUES_REASON,
            appliesTo: [computeQueuesFinding(prefix)],
          },
        ],
        true,
      );
    }
  }
}
