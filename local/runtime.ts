// The whole system on one machine: the embedded emulators, the same tables and queues the stack
// creates, the conductor state machine from the same ASL, the same handlers, simulated compute
// hosts with the fake driver, and the HTTP API. As strict as AWS about IAM: every component runs
// as its own identity (lib/aws/identity.ts) and the gateway in front of the emulators holds it to
// the policy the synthesized stack gives its role (iam/).
import "./polyfills.js";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { CreateStateMachineCommand } from "@aws-sdk/client-sfn";
import { GetQueueAttributesCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import type { LambdaFunctionURLEvent, SQSBatchResponse, SQSEvent } from "aws-lambda";
import { conductorDefinition } from "../infra/conductor/definition.js";
import { resetClients, s3Client, sfnClient, sqsClient, useRequestHandler } from "../lib/aws/clients.js";
import { runAs } from "../lib/aws/identity.js";
import { ensureDeadLetterQueue, ensureQueueWithDlq } from "../lib/aws/queues.js";
import { resetAggregateCache } from "../lib/catalog/aggregates.js";
import { resetCatalogCache, seedCatalog } from "../lib/catalog/repo.js";
import { ComputeAgent, type HostAgent } from "../lib/compute/agent.js";
import type { HostIdentity } from "../lib/compute/build-path.js";
import type { Driver } from "../lib/compute/drivers/driver.js";
import { FakeDriver } from "../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../lib/compute/inventory.js";
import { DiskSpoolStore, MemorySpoolStore, type SpoolStore } from "../lib/compute/spool.js";
import { resetHostManagers } from "../lib/conductor/select-destinations.js";
import type { WatchdogAction } from "../lib/conductor/watchdog.js";
import { option, optionValue, schedulerConfig } from "../lib/config.js";
import { seedIdentity } from "../lib/identity/seed.js";
import { log, logFormat } from "../lib/log.js";
import { seedPublicNetwork } from "../lib/network/seed.js";
import { BUILD_REQUESTS_QUEUE, COMPUTE_EVENTS, DLQ_SUFFIX } from "../lib/resources.js";
import { AccountConcurrency, type AccountConcurrencyOptions } from "./concurrency.js";
import { applyEnv, type Emulators, startEmulators } from "./emulators.js";
import { type EventSource, mappingRefusal, startEventSource } from "./event-source.js";
import { FUNCTION_HANDLERS, type HandlerFunction } from "./function-handlers.js";
import { spawnFunctionThread } from "./function-thread.js";
import { type HttpFront, startHttpFront } from "./http.js";
import { evaluate, type Statement } from "./iam/evaluate.js";
import type { FunctionUrlHandler } from "./iam/function-urls.js";
import {
  ACCOUNT,
  type Component,
  FUNCTION_COMPONENTS,
  type FunctionComponent,
  functionArnOf,
  hostIdentityOf,
  identityOf,
  REGION,
  roleArnOf,
} from "./iam/identities.js";
import {
  effectiveStatements,
  gatewayPolicy,
  hostPrincipal,
  type IamOptions,
  sessionArnOf,
} from "./iam/policy.js";
import { type StackPolicies, stackPolicies } from "./iam/stack-policies.js";
import { inProcessHandler } from "./in-process.js";
import { type LambdaHandler, LambdaServiceError, localFunction } from "./lambda.js";
import type { TaskHandler, TaskHandlers } from "./sfn-server.js";
import { Fleet, startAll } from "./simulator.js";
import { createTables, localTables, runSuffix } from "./tables.js";
import type { Thread } from "./threads.js";

export const CONDUCTOR_NAME = "novaless-conductor";

const CONDUCTOR_ARN = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${CONDUCTOR_NAME}`;
const LOCAL_ARNS = {
  conductorFunctionArn: functionArnOf("conductor"),
  schedulerFunctionArn: functionArnOf("scheduler"),
};

/** Faults the soak (and tests) inject into the local runtime; every choice from `random`. */
export interface FaultOptions {
  random: () => number;
  /** probability that a SelectDestinations invocation is throttled (Lambda.TooManyRequestsException) */
  schedulerFailureRate?: number;
  /** probability that a DynamoDB item operation is throttled (ProvisionedThroughputExceededException) */
  dynamodbThrottleRate?: number;
  /**
   * probability that a StartExecution is throttled (ThrottlingException): build-intake's request
   * then stays on build-requests and is started later (also
   * `emulators.gateway.setStartExecutionThrottleRate`)
   */
  startExecutionThrottleRate?: number;
  /** probability that a cast to a host queue is delivered twice */
  duplicateHostMessageRate?: number;
  /** casts to host queues are delayed by up to this long (SQS DelaySeconds) */
  maxHostMessageDelaySeconds?: number;
  /** the scheduler answers this much later, after it has claimed (a slow Lambda response) */
  schedulerDelayMs?: number;
  /**
   * each compute-events invocation lasts this much longer: on AWS its calls cross the network
   * (here they stay in process), and the time is what holds its concurrency
   */
  computeEventsDelayMs?: number;
}

export interface RuntimeOptions {
  /** HTTP API port on 127.0.0.1; 0 picks a free one */
  port?: number;
  /**
   * Seed the shared flat network `public` (10.20.0.0/16) that `networks: auto` picks
   * (lib/network/seed.ts): `npm start`, tempest and the client tests. Without it, servers get
   * no ports unless a test makes a network.
   */
  seedNetwork?: boolean;
  /** the hosts' queue prefix (default `novaless<run suffix>-compute-`) */
  computeQueuePrefix?: string;
  /** how many hosts (host-1 … host-N), or their names (e.g. compute-1.example.org) */
  hosts?: number | string[];
  /**
   * The hosts' virt driver: "fake" (default; simulation), or "exec": each server a real process
   * (lib/compute/drivers/exec.ts) under `instancesPath/<host>/`.
   */
  driver?: "fake" | "exec";
  /** exec: where the hosts keep their instances (default: a directory under the OS temp dir) */
  instancesPath?: string;
  /** hosts whose fake driver fails every build */
  failHosts?: string[];
  buildMs?: number;
  /** hosts whose builds take this many ms instead of buildMs */
  slowHosts?: Record<string, number>;
  /**
   * How hosts take their messages: "simulated" (the default), the event-driven fleet simulator
   * (simulator.ts), which scales to 10,000 hosts; "long-poll", one ComputeAgent per host with its
   * own long poll and heartbeat timer, as `novaless-compute` runs on a real host.
   */
  transport?: "simulated" | "long-poll";
  /** simulated hosts: a full round of the sweep that catches what no send announced (seconds) */
  sweepSeconds?: number;
  availabilityZones?: string[];
  /** extra environment (Nova options such as NOVALESS_MAX_ATTEMPTS) */
  env?: Record<string, string>;
  heartbeatSeconds?: number;
  /** how often the build watchdog runs (a scheduled Lambda in AWS); 0 disables it */
  watchdogIntervalMs?: number;
  faults?: FaultOptions;
  /** IAM, always enforced; tests may take statements out of the stack's policy set */
  iam?: IamOptions;
  /** wait this long before every ASL Retry instead of its backoff (tests) */
  retryIntervalMs?: number;
  /** seconds; overrides the stack's timeout of these functions (tests of Sandbox.Timedout) */
  lambdaTimeouts?: Partial<Record<FunctionComponent, number>>;
  /**
   * The components' SDK calls over sockets (SDK → HTTP → gateway → HTTP → emulator) instead of in
   * process (in-process.ts); the same IAM and the same emulators either way.
   */
  sockets?: boolean;
  /**
   * The functions (the Lambda handlers and the API) in a worker thread of their own
   * (function-thread.ts), and dynalite in another (dynalite-thread-worker.ts), apart from the
   * gateway, the other emulators and the hosts, so that two cores work. `npm start` and bench:e2e
   * use threads; tests do not, where they reach the handlers' module state (caches, env) directly.
   */
  threads?: boolean;
  /**
   * The account's Lambda concurrency (concurrency.ts): its limit (default lambda_concurrency_limit)
   * and the unreserved floor (100 on AWS); the reservations and the event sources' maximum
   * concurrency come from the stack, or none with `unprotected` (tests of the starvation they prevent).
   */
  concurrency?: Omit<AccountConcurrencyOptions, "reserved"> & { unprotected?: boolean };
}

/**
 * A compute host: its driver and its report spool outlive agent restarts, as a hypervisor and
 * the agent's state directory would (a restarted agent's memory is lost, its spool is not).
 */
export interface HostHandle {
  name: string;
  driver: Driver;
  spool: SpoolStore;
  agent: HostAgent;
}

export interface Runtime {
  url: string;
  emulators: Emulators;
  /** the stack's IAM policies as enforced here (before the test's removals) */
  policies: StackPolicies;
  /** the current agent of every host */
  readonly agents: HostAgent[];
  hosts: Map<string, HostHandle>;
  /** the host dies: no heartbeat, builds abandoned (the watchdog must recover them) */
  killHost(name: string): Promise<void>;
  /** start a fresh agent for the host (after a kill or a stop), same driver and inventory */
  restartHost(name: string): Promise<void>;
  /**
   * Credentials of a host's own session (tagged with its name) for code that acts as a host
   * outside the runtime's agents (tests); the gateway learns the session.
   */
  hostCredentials(name: string): ReturnType<typeof hostIdentityOf>;
  /**
   * compute-events' function URL answers 503 for `seconds` (an outage of the report path, which
   * carries heartbeats too); 0 ends it now. POST /local/faults/compute-events does the same.
   */
  refuseComputeEvents(seconds: number): void;
  /** run the watchdog now (besides its timer) */
  runWatchdog(): Promise<WatchdogAction[]>;
  /** the account's Lambda concurrency: in flight, throttles */
  concurrency: AccountConcurrency;
  /** the worker threads (`threads`): the functions' and dynalite's, each with its utilization */
  threads: Pick<Thread, "name" | "utilization">[];
  stop(): Promise<void>;
}

/**
 * What Step Functions reports when its role may not invoke the function: the Task fails with
 * Lambda.AWSLambdaException and Lambda's AccessDenied text as the cause.
 */
function checkInvoke(stateMachine: Statement[], functionArn: string): void {
  const action = "lambda:InvokeFunction";
  const d = evaluate(stateMachine, [], {
    action,
    resource: functionArn,
    principalArn: roleArnOf("state-machine"),
    context: { "aws:SecureTransport": "true" },
  });
  if (d.allowed) return;
  throw new LambdaServiceError(
    "AccessDeniedException",
    403,
    `User: ${sessionArnOf("state-machine")} is not authorized to perform: ${action} on resource: ${functionArn} ` +
      `because no identity-based policy allows the ${action} action`,
  );
}

/**
 * A failed sqs:sendMessage as the Step Functions integration reports it: SQS.AmazonSQSException
 * for an answer of the service (AccessDenied, throttling…), SQS.SdkClientException when no answer
 * came; the cause keeps SQS's message and its code.
 */
function sqsIntegrationError(e: unknown): Error {
  const err = e as Error & { $metadata?: { httpStatusCode?: number; requestId?: string } };
  const status = err.$metadata?.httpStatusCode;
  const out = new Error(
    status
      ? `${err.message} (Service: AmazonSQS; Status Code: ${status}; Error Code: ${err.name}; ` +
          `Request ID: ${err.$metadata?.requestId ?? randomUUID()}; Proxy: null)`
      : err.message,
  );
  out.name = status ? "SQS.AmazonSQSException" : "SQS.SdkClientException";
  return out;
}

/** Lambda's answer to a throttled invoke (Step Functions reports Lambda.TooManyRequestsException). */
function lambdaThrottled(fn: string): Error {
  return new LambdaServiceError(
    "TooManyRequestsException",
    429,
    `Rate Exceeded. (injected throttle of ${fn})`,
  );
}

/**
 * A component's function as Lambda runs it: its own identity, the stack's timeout
 * (Sandbox.Timedout past it) and Lambda's payload limits.
 */
function functionOf(
  fn: FunctionComponent,
  timeouts: StackPolicies["timeouts"],
  handler: LambdaHandler,
  concurrency: AccountConcurrency,
) {
  return localFunction({
    name: `novaless-${fn}`,
    arn: functionArnOf(fn),
    timeoutSeconds: timeouts[fn],
    handler,
    runAs: (run) => runAs(identityOf(fn), run),
    concurrency,
  });
}

/**
 * Serve each Task state by its Resource, exactly as the deployed stack wires it: a Lambda Task
 * runs its handler as the function's identity once the state machine's role may invoke it; the
 * sqs:sendMessage integration sends with the state machine role's credentials.
 */
function taskHandlersFor(
  definition: ReturnType<typeof conductorDefinition>,
  stateMachine: Statement[],
  timeouts: StackPolicies["timeouts"],
  concurrency: AccountConcurrency,
  handlerOf: (fn: HandlerFunction) => LambdaHandler,
  faults?: FaultOptions,
): TaskHandlers {
  const chance = (p: number | undefined) => Boolean(faults && p && faults.random() < p);
  const sendToHost = async (input: { QueueUrl: string; MessageBody: string }) => {
    const delay = faults?.maxHostMessageDelaySeconds
      ? Math.floor(faults.random() * (faults.maxHostMessageDelaySeconds + 1))
      : 0;
    const send = () =>
      sqsClient().send(
        new SendMessageCommand({
          QueueUrl: input.QueueUrl,
          MessageBody: input.MessageBody,
          DelaySeconds: delay,
        }),
      );
    try {
      const out = await send();
      if (chance(faults?.duplicateHostMessageRate)) await send();
      return out;
    } catch (e) {
      throw sqsIntegrationError(e);
    }
  };
  // Refusals (no permission, a throttle) come from the Lambda service before the function runs.
  const lambda = (fn: FunctionComponent, handler: LambdaHandler, throttleRate?: number): TaskHandler => {
    const f = functionOf(fn, timeouts, handler, concurrency);
    return (input) => {
      checkInvoke(stateMachine, f.arn);
      if (chance(throttleRate)) throw lambdaThrottled(f.arn);
      return f.invoke(input);
    };
  };
  const byResource: Record<string, TaskHandler> = {
    [LOCAL_ARNS.conductorFunctionArn]: lambda("conductor", (input, context) =>
      handlerOf("conductor")(input, context),
    ),
    [LOCAL_ARNS.schedulerFunctionArn]: lambda(
      "scheduler",
      async (input, context) => {
        const out = await handlerOf("scheduler")(input, context);
        if (faults?.schedulerDelayMs) await new Promise((r) => setTimeout(r, faults.schedulerDelayMs));
        return out;
      },
      faults?.schedulerFailureRate,
    ),
    "arn:aws:states:::sqs:sendMessage": (input) =>
      runAs(identityOf("state-machine"), () => sendToHost(input)),
  };
  const handlers: TaskHandlers = {};
  const walk = (
    states: Record<string, { Type: string; Resource?: string; ItemProcessor?: { States: object } }>,
  ) => {
    for (const [name, s] of Object.entries(states)) {
      if (s.Type === "Task") {
        const h = byResource[s.Resource ?? ""];
        if (!h) throw new Error(`local runtime cannot serve Task ${name} (Resource ${s.Resource})`);
        handlers[name] = h;
      }
      if (s.ItemProcessor) walk(s.ItemProcessor.States as typeof states);
    }
  };
  walk(definition.States as Parameters<typeof walk>[0]);
  return handlers;
}

export async function startRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const definition = conductorDefinition(LOCAL_ARNS);
  const suffix = runSuffix();
  const tables = localTables(suffix);
  const computeQueuePrefix = opts.computeQueuePrefix ?? `novaless${suffix}-compute-`;
  const buildRequestsQueue = `${BUILD_REQUESTS_QUEUE.localName}${suffix}`;
  const computeEventsDlq = `${COMPUTE_EVENTS.dlqLocalName}${suffix}`;
  const imagesBucket = `${String(option("imagesBucket").default)}${suffix}`;
  const names = hostNames(opts.hosts ?? 8);
  // The functions' thread loads its modules (most of its start) beside everything below; it is
  // configured once the environment is whole (function-thread.ts).
  const spawned = opts.threads ? spawnFunctionThread() : undefined;
  const early = <T>(step: Promise<T>): Promise<T> =>
    step.catch(async (e: unknown) => {
      await spawned?.stop();
      throw e;
    });
  const policies = await early(
    stackPolicies({
      tables: Object.fromEntries(tables.map((t) => [t.id, t.localName])) as Record<
        (typeof tables)[number]["id"],
        string
      >,
      buildRequestsQueue,
      buildRequestsDlq: `${buildRequestsQueue}${DLQ_SUFFIX}`,
      computeEventsDlq,
      computeQueuePrefix,
      imagesBucket,
      functionArns: Object.fromEntries(FUNCTION_COMPONENTS.map((c) => [c, functionArnOf(c)])) as Record<
        FunctionComponent,
        string
      >,
      stateMachineArn: CONDUCTOR_ARN,
    }),
  );
  const statements = effectiveStatements(policies, opts.iam);
  const gateway = gatewayPolicy(policies, opts.iam);
  // Every host's own session, as it gets one on AWS (tagged novaless-host=<host>).
  for (const name of names) gateway.principals.set(...hostPrincipal(name, statements["compute-host"]));
  const timeouts = { ...policies.timeouts, ...opts.lambdaTimeouts };
  // Only the template's event source mappings run here, and only on queues the runtime makes:
  // one on another queue, or to no function of the stack, is refused rather than left unrun.
  const buildRequestsArn = `arn:aws:sqs:${REGION}:${ACCOUNT}:${buildRequestsQueue}`;
  for (const m of policies.eventSources)
    if (m.function !== "build-intake" || m.queueArn !== buildRequestsArn)
      throw new Error(
        `the stack maps ${m.queueArn} to ${m.functionName}; the local runtime runs build-requests' mapping to build-intake only`,
      );
  if (!policies.eventSources.length)
    throw new Error(
      "the stack has no event source mapping from build-requests to build-intake: no build would start",
    );
  const account = accountConcurrency(policies, opts.concurrency);
  // the functions' handlers: these imports, until a thread of their own takes them (below)
  let handlerOf = (fn: HandlerFunction): LambdaHandler => FUNCTION_HANDLERS[fn];
  const builds = buildLines();
  const emulators = await early(
    startEmulators({
      dynamodbThread: opts.threads,
      sfn: {
        taskHandlers: {
          [CONDUCTOR_NAME]: taskHandlersFor(
            definition,
            statements["state-machine"],
            timeouts,
            account,
            (fn) => handlerOf(fn),
            opts.faults,
          ),
        },
        ...(opts.retryIntervalMs !== undefined ? { retryIntervalMs: opts.retryIntervalMs } : {}),
      },
      iam: {
        policy: gateway,
        dynamodbThrottleRate: opts.faults?.dynamodbThrottleRate,
        startExecutionThrottleRate: opts.faults?.startExecutionThrottleRate,
        random: opts.faults?.random,
      },
    }),
  );
  const as =
    (c: Component) =>
    <T>(fn: () => T): T =>
      runAs(identityOf(c), fn);
  const stops: (() => Promise<unknown>)[] = [() => emulators.stop()];
  if (spawned) stops.push(() => spawned.stop());
  const stopAll = async () => {
    for (let s = stops.pop(); s; s = stops.pop())
      await s().catch((e) => log.warn("runtime.stop_failed", { error: e }));
  };
  try {
    // Setup runs as the operator (the deploying admin): the default credentials in emulators.env.
    const restoreEnv = applyEnv({
      ...emulators.env,
      ...Object.fromEntries(tables.map((t) => [t.env, t.localName])),
      NOVALESS_COMPUTE_QUEUE_PREFIX: computeQueuePrefix,
      NOVALESS_IMAGES_BUCKET: imagesBucket,
      ...localLiveness(names.length, opts),
      ...opts.env,
    });
    stops.unshift(async () => restoreEnv());
    // Every function starts cold: nothing a previous runtime in this process read is cached.
    const coldStart = () => {
      resetClients();
      resetCatalogCache();
      resetAggregateCache();
      resetHostManagers();
    };
    coldStart();
    stops.push(async () => coldStart());
    if (!opts.sockets && emulators.gateway) {
      useRequestHandler(inProcessHandler(emulators.gateway));
      stops.push(async () => useRequestHandler(undefined));
    }

    await createTables(new DynamoDBClient({}), tables);
    // the stack's images bucket (snapshots' data), S3 as fauxqs serves it behind the gateway
    await s3Client()
      .send(new CreateBucketCommand({ Bucket: imagesBucket }))
      .catch((e: Error) => {
        if (e.name !== "BucketAlreadyOwnedByYou") throw e;
      });
    const build = await ensureQueueWithDlq(buildRequestsQueue, BUILD_REQUESTS_QUEUE);
    const sm = await sfnClient().send(
      new CreateStateMachineCommand({
        name: CONDUCTOR_NAME,
        definition: JSON.stringify(definition),
        roleArn: roleArnOf("state-machine"),
        type: "EXPRESS",
      }),
    );
    // compute-events' function URL: hosts post their reports there (its function is set below,
    // once the functions' thread has the whole environment; none reports before)
    const eventsDlqUrl = await ensureDeadLetterQueue(computeEventsDlq);
    let eventsHandler: FunctionUrlHandler | undefined;
    const eventsUrl = emulators.gateway!.functionUrl(
      "compute-events",
      functionArnOf("compute-events"),
      (event) => {
        if (!eventsHandler) throw new Error("compute-events is not started yet");
        return eventsHandler(event);
      },
    );
    applyEnv({
      NOVALESS_COMPUTE_EVENTS_URL: eventsUrl,
      NOVALESS_COMPUTE_EVENTS_DLQ_URL: eventsDlqUrl,
      NOVALESS_BUILD_REQUESTS_QUEUE_URL: build.queueUrl,
      NOVALESS_BUILD_REQUESTS_DLQ_URL: build.dlqUrl,
      NOVALESS_CONDUCTOR_ARN: sm.stateMachineArn!,
    });
    // the environment is whole now: the thread takes its copy
    const thread =
      spawned && emulators.gateway
        ? await spawned.configure({
            gateway: emulators.gateway,
            logFormat: logFormat(),
            sockets: opts.sockets,
          })
        : undefined;
    if (thread) handlerOf = (fn) => thread.handler(fn);
    await seedCatalog();
    // DevStack's users: admin / admin-secret and demo / demo-secret (lib/identity/seed.ts).
    await seedIdentity({ adminPassword: "admin-secret", demo: true });
    if (opts.seedNetwork) await seedPublicNetwork();

    // Hosts report to compute-events from their first step: its function is set before any starts.
    const eventsDelay = opts.faults?.computeEventsDelayMs;
    const eventsFunction = functionOf(
      "compute-events",
      timeouts,
      eventsDelay
        ? async (event, context) => {
            const out = await handlerOf("compute-events")(event, context);
            await new Promise((r) => setTimeout(r, eventsDelay));
            return out;
          }
        : handlerOf("compute-events"),
      account,
    );
    // the local fault switch: until then, the URL answers as Lambda does when it cannot serve
    let refuseEventsUntil = 0;
    const refuseComputeEvents = (seconds: number) => {
      refuseEventsUntil = Date.now() + seconds * 1000;
      log.warn("runtime.compute_events_refused", { seconds });
    };
    eventsHandler = async (event) => {
      if (Date.now() < refuseEventsUntil)
        throw new LambdaServiceError("ServiceException", 503, "Service Unavailable (local fault switch)");
      const out = await eventsFunction.invoke(event);
      builds.reported(event, out);
      return out;
    };

    const fleet =
      (opts.transport ?? "simulated") === "simulated"
        ? new Fleet({
            heartbeatSeconds: opts.heartbeatSeconds ?? schedulerConfig().report_interval,
            sweepSeconds: opts.sweepSeconds,
            eventsUrl,
            computeQueuePrefix,
          })
        : undefined;
    if (fleet) {
      emulators.gateway?.onMessageSent((sent) => fleet.messageSent(sent));
      emulators.gateway?.onQueueCreated((name) => fleet.queueCreated(name));
      stops.push(async () => fleet.stop());
    }
    const newAgent = (h: Omit<HostHandle, "agent">, i: number): HostAgent => {
      const identity = hostIdentity(opts, h.name, h.driver, i);
      return fleet
        ? fleet.agent(identity, h.spool)
        : new ComputeAgent({
            ...identity,
            spool: h.spool,
            asHost: (fn) => runAs(hostIdentityOf(h.name), fn),
            eventsUrl,
            computeQueuePrefix,
            // short locally: a stop aborts the poll, and the emulator, as SQS may, can still hand
            // the aborted poll a message (hidden for the visibility timeout)
            waitTimeSeconds: 1,
            heartbeatSeconds: opts.heartbeatSeconds ?? schedulerConfig().report_interval,
            syncPowerStateSeconds: 5,
          });
    };
    const hostsStarted = Date.now();
    const asHost =
      (name: string) =>
      <T>(fn: () => T): T =>
        runAs(hostIdentityOf(name), fn);
    const spoolsPath = mkdtempSync(join(tmpdir(), "novaless-spools-"));
    stops.push(async () => rmSync(spoolsPath, { recursive: true, force: true }));
    const hosts = await startHosts(opts, names, newAgent, asHost, spoolsPath);
    stops.push(async () => {
      await Promise.all([...hosts.values()].map((h) => asHost(h.name)(() => h.agent.stop())));
      // A real host's guests outlive its agent; the local runtime's leave with it (an exec
      // guest is a process of this machine).
      if (opts.driver === "exec")
        for (const h of hosts.values())
          for (const g of h.driver.list()) await h.driver.destroy(g.instance_uuid);
      await Promise.all([...hosts.values()].map((h) => h.driver.close()));
    });
    log.info("runtime.hosts_ready", {
      hosts: hosts.size,
      transport: fleet ? "simulated" : "long-poll",
      ms: Date.now() - hostsStarted,
    });

    // build-intake's event source on build-requests, as the template declares it (refused here
    // where AWS would refuse it), polling with the function's role; its reservation and timeout hold.
    const intakeFunction = functionOf("build-intake", timeouts, handlerOf("build-intake"), account);
    const intakeQueue = await as("build-intake")(() =>
      sqsClient().send(
        new GetQueueAttributesCommand({ QueueUrl: build.queueUrl, AttributeNames: ["VisibilityTimeout"] }),
      ),
    );
    const visibilityTimeoutSeconds = Number(intakeQueue.Attributes?.VisibilityTimeout);
    const intakeSources: EventSource[] = [];
    stops.push(async () => Promise.all(intakeSources.map((source) => source.stop())));
    for (const mapping of policies.eventSources) {
      const refused = mappingRefusal(
        mapping,
        { visibilityTimeoutSeconds, fifo: buildRequestsQueue.endsWith(".fifo") },
        timeouts["build-intake"],
        // its handler answers an SQSBatchResponse (functions/build-intake/handler.ts)
        true,
      );
      if (refused) throw new Error(`build-intake's event source mapping is refused: ${refused}`);
      intakeSources.push(
        as("build-intake")(() =>
          startEventSource({
            mapping,
            queueUrl: build.queueUrl,
            visibilityTimeoutSeconds,
            unbounded: opts.concurrency?.unprotected,
            handler: (event: SQSEvent) => {
              builds.requested(event);
              return intakeFunction.invoke(event) as Promise<SQSBatchResponse>;
            },
          }),
        ),
      );
    }

    // The deployed handler answers only a count; locally the actions themselves come back.
    const watchdogFunction = functionOf("build-watchdog", timeouts, handlerOf("build-watchdog"), account);
    const watchdog = () => watchdogFunction.invoke({}) as Promise<WatchdogAction[]>;
    stops.push(every(opts.watchdogIntervalMs ?? 10_000, watchdog, "watchdog.failed"));

    const killHost = (name: string) => asHost(name)(() => handle(hosts, name).agent.kill());
    /** A new agent for the host; `started` resolves once it has registered (the old one stopped first). */
    const replaceAgent = (name: string) =>
      asHost(name)(async () => {
        const h = handle(hosts, name);
        await h.agent.stop();
        h.agent = newAgent(h, [...hosts.keys()].indexOf(name));
        return { started: asHost(name)(() => h.agent.start()) };
      });
    const restartHost = async (name: string) => {
      await (await replaceAgent(name)).started;
    };
    // The route answers once the old agent is gone: the new one registers when compute-events
    // answers, which during an outage may be minutes away (a real host's restart does not wait
    // for it either).
    const restartHostRoute = async (name: string) => {
      const { started } = await replaceAgent(name);
      // a stop of the runtime (or of the host) while the new agent waits to register ends it
      started.catch((e) => {
        if ((e as Error).name !== "AbortError")
          log.error("runtime.host_restart_failed", { host: name, error: e });
      });
    };
    const front: HttpFront = await startHttpFront(
      opts.port ?? 8774,
      as("api"),
      {
        stop: killHost,
        start: restartHost,
        restart: restartHostRoute,
        has: (name) => hosts.has(name),
        refuseComputeEvents,
      },
      thread?.http,
    );
    stops.push(() => front.stop());
    log.info("runtime.ready", { url: front.url, hosts: hosts.size, endpoints: emulators.endpoints });
    return {
      url: front.url,
      emulators,
      policies,
      get agents() {
        return [...hosts.values()].map((h) => h.agent);
      },
      hosts,
      killHost,
      restartHost,
      hostCredentials: (name) => {
        emulators.gateway?.addPrincipal(...hostPrincipal(name, statements["compute-host"]));
        return hostIdentityOf(name);
      },
      refuseComputeEvents,
      runWatchdog: watchdog,
      concurrency: account,
      threads: [...emulators.threads, ...(thread ? [thread] : [])],
      stop: stopAll,
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/**
 * Runs `run` every `ms` (0: never), a run still going when the next is due skipped, as a
 * scheduled Lambda with a reservation of 1 would be; returns what stops it (and waits for the run
 * in flight, so that none outlives the emulators).
 */
function every(ms: number, run: () => Promise<unknown>, failed: string): () => Promise<void> {
  if (ms <= 0) return async () => {};
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = run()
      .then(
        () => {},
        (e) => log.error(failed, { error: e }),
      )
      .finally(() => {
        running = undefined;
      });
  }, ms);
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/**
 * The account's Lambda concurrency with the stack's reservations (refused, as the deploy would
 * be, when they leave less than the unreserved floor).
 */
function accountConcurrency(policies: StackPolicies, opts: RuntimeOptions["concurrency"] = {}) {
  const { unprotected, ...limits } = opts;
  const reserved = unprotected
    ? {}
    : Object.fromEntries(
        Object.entries(policies.reservedConcurrency).map(([fn, n]) => [`novaless-${fn}`, n]),
      );
  const account = new AccountConcurrency({
    accountLimit: optionValue<number>("lambda_concurrency_limit"),
    ...limits,
    reserved,
  });
  return account;
}

/**
 * One log line per finished build (build.finished: instance, host, attempts, ms since its create
 * was queued: its build request's SentTimestamp on build-requests, a delayed chunk's delay
 * included), read from what the local runtime sees: the batches build-intake's event source hands
 * it, then the host's build_succeeded report that compute-events took. A failed attempt is a line
 * of its own (build.attempt_failed); the retry or the ERROR follows.
 */
function buildLines() {
  const queued = new Map<string, number>();
  const QUEUED_MAX = 100_000;
  return {
    /** a batch of build requests handed to build-intake */
    requested(event: SQSEvent) {
      for (const record of event.Records) {
        let ids: unknown;
        try {
          ids = (JSON.parse(record.body) as { instance_uuids?: unknown }).instance_uuids;
        } catch {
          continue;
        }
        if (!Array.isArray(ids)) continue;
        const at = Number(record.attributes.SentTimestamp) || Date.now();
        for (const id of ids as string[]) {
          // a reschedule: the build still counts from its first request
          if (queued.has(id)) continue;
          if (queued.size >= QUEUED_MAX) queued.delete(queued.keys().next().value as string);
          queued.set(id, at);
        }
      }
    },
    /** a report compute-events answered through its function URL */
    reported(event: LambdaFunctionURLEvent, result: unknown) {
      if ((result as { statusCode?: number } | undefined)?.statusCode !== 200) return;
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(event.body ?? "") as Record<string, unknown>;
      } catch {
        return;
      }
      const id = String(body.instance_uuid ?? "");
      const since = queued.get(id);
      if (body.kind === "build_succeeded") {
        queued.delete(id);
        log.info("build.finished", {
          instance_uuid: id,
          host: body.host,
          attempts: body.attempt,
          ...(since !== undefined ? { ms: Date.now() - since } : {}),
        });
      } else if (body.kind === "build_failed") {
        log.info("build.attempt_failed", {
          instance_uuid: id,
          host: body.host,
          attempt: body.attempt,
          reason: body.reason,
        });
      }
    },
  };
}

function handle(hosts: Map<string, HostHandle>, name: string): HostHandle {
  const h = hosts.get(name);
  if (!h) throw new Error(`no host ${name} in this runtime`);
  return h;
}

/** The i-th host of the runtime: its place, size and address. */
function hostIdentity(opts: RuntimeOptions, host: string, driver: Driver, i: number): HostIdentity {
  const azs = opts.availabilityZones ?? ["az1", "az2"];
  return {
    host,
    availability_zone: azs[i % azs.length]!,
    inventories: inventoriesFor({ vcpus: 16, memory_mb: 65536, local_gb: 1000 }),
    host_ip: `10.${Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`,
    driver,
  };
}

/** Hosts registering at once: enough to keep the emulators busy, few enough not to time out. */
const REGISTRATION_CONCURRENCY = 32;

async function startHosts(
  opts: RuntimeOptions,
  names: string[],
  newAgent: (h: Omit<HostHandle, "agent">, i: number) => HostAgent,
  asHost: (name: string) => <T>(fn: () => T) => T,
  spoolsPath: string,
): Promise<Map<string, HostHandle>> {
  const failing = new Set(opts.failHosts ?? []);
  const slow = opts.slowHosts ?? {};
  const hosts = new Map<string, HostHandle>();
  const instancesPath = opts.instancesPath ?? join(tmpdir(), `novaless-instances-${process.pid}`);
  // Each host's report spool: a simulated host's in memory (10,000 of them stay cheap); a
  // long-polling agent's on disk, as `novaless-compute` keeps it, so the runtime runs that code.
  const spoolOf = (name: string): SpoolStore =>
    opts.transport === "long-poll" ? new DiskSpoolStore(join(spoolsPath, name)) : new MemorySpoolStore();
  // loaded only when asked for: the fake fleet never needs it
  const { ExecDriver } =
    opts.driver === "exec" ? await import("../lib/compute/drivers/exec.js") : { ExecDriver: undefined };
  for (const unknown of [...failing, ...Object.keys(slow)].filter((h) => !names.includes(h)))
    throw new Error(`host ${unknown} has a failure mode but is not one of the runtime's hosts`);
  for (const [i, name] of names.entries()) {
    const driver: Driver = ExecDriver
      ? new ExecDriver({ host: name, instancesPath: join(instancesPath, name), shutdownTimeoutSeconds: 5 })
      : new FakeDriver({
          host: name,
          buildMs: slow[name] ?? opts.buildMs ?? 1000,
          failAll: failing.has(name),
        });
    const spool = spoolOf(name);
    hosts.set(name, { name, driver, spool, agent: newAgent({ name, driver, spool }, i) });
  }
  await startAll(
    [...hosts.values()].map((h) => ({ start: () => asHost(h.name)(() => h.agent.start()) })),
    REGISTRATION_CONCURRENCY,
  );
  return hosts;
}

/** `count` hosts named host-1 … host-N, or the names given (duplicates refused). */
/**
 * Heartbeats a one-process fleet can carry. Each is a report through SQS, the compute-events
 * consumer and a write, all on this process's one thread (about 10 ms of CPU here); in AWS the
 * consumer scales out. Past this rate the local runtime stretches report_interval, and
 * service_down_time with it (Nova's three missed beats), unless the caller set either.
 */
export const LOCAL_HEARTBEATS_PER_SECOND = 50;

export function localLiveness(hosts: number, opts: RuntimeOptions): Record<string, string> {
  const set = (name: string) => process.env[name] !== undefined || opts.env?.[name] !== undefined;
  const configured = schedulerConfig().report_interval;
  if (
    opts.heartbeatSeconds !== undefined ||
    set("NOVALESS_REPORT_INTERVAL") ||
    set("NOVALESS_SERVICE_DOWN_TIME")
  )
    return {};
  const interval = Math.ceil(hosts / LOCAL_HEARTBEATS_PER_SECOND);
  if (interval <= configured) return {};
  log.info("runtime.heartbeats_stretched", {
    hosts,
    report_interval: interval,
    service_down_time: 3 * interval,
    why: `${hosts} hosts at report_interval ${configured} s would be more heartbeats than one process carries`,
  });
  return { NOVALESS_REPORT_INTERVAL: String(interval), NOVALESS_SERVICE_DOWN_TIME: String(3 * interval) };
}

export function hostNames(hosts: number | string[]): string[] {
  if (typeof hosts === "number") return Array.from({ length: hosts }, (_, i) => `host-${i + 1}`);
  const dup = hosts.find((h, i) => hosts.indexOf(h) !== i);
  if (dup !== undefined) throw new Error(`host ${dup} is listed twice`);
  if (hosts.length === 0) throw new Error("at least one host is needed");
  return hosts;
}
