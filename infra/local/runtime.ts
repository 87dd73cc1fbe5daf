// The whole system on one machine: the embedded emulators, the same tables and queues the stack
// creates, the conductor state machine from the same ASL, the same handlers, simulated compute
// hosts with the fake driver, and the HTTP API.
import "./polyfills.js";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateStateMachineCommand } from "@aws-sdk/client-sfn";
import { GetQueueAttributesCommand, SendMessageCommand } from "@aws-sdk/client-sqs";
import { handler as intakeHandler } from "../../functions/build-intake/handler.js";
import { handler as conductorHandler } from "../../functions/conductor/handler.js";
import { handler as schedulerHandler } from "../../functions/scheduler/handler.js";
import { resetClients, sfnClient, sqsClient } from "../../lib/aws/clients.js";
import { ensureQueueWithDlq } from "../../lib/aws/queues.js";
import { seedCatalog } from "../../lib/catalog/repo.js";
import { ComputeAgent } from "../../lib/compute/agent.js";
import { FakeDriver } from "../../lib/compute/drivers/fake.js";
import { inventoriesFor } from "../../lib/compute/inventory.js";
import { Transient } from "../../lib/conductor/types.js";
import { runWatchdog, type WatchdogAction } from "../../lib/conductor/watchdog.js";
import { log } from "../../lib/log.js";
import { conductorDefinition } from "../conductor/definition.js";
import { BUILD_REQUESTS_QUEUE } from "../resources.js";
import { applyEnv, type Emulators, startEmulators } from "./emulators.js";
import { type EventSource, startEventSource } from "./event-source.js";
import { type HttpFront, startHttpFront } from "./http.js";
import type { TaskHandler, TaskHandlers } from "./sfn-server.js";
import { createTables, localTables, runSuffix } from "./tables.js";

export const CONDUCTOR_NAME = "novaless-conductor";
const LOCAL_ARNS = {
  conductorFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:novaless-conductor",
  schedulerFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:novaless-scheduler",
};

/** Faults the soak (and tests) inject into the local runtime; every choice from `random`. */
export interface FaultOptions {
  random: () => number;
  /** probability that a SelectDestinations invocation fails (as a throttled Lambda would) */
  schedulerFailureRate?: number;
  /** probability that a cast to a host queue is delivered twice */
  duplicateHostMessageRate?: number;
  /** casts to host queues are delayed by up to this long (SQS DelaySeconds) */
  maxHostMessageDelaySeconds?: number;
  /** the scheduler answers this much later, after it has claimed (a slow Lambda response) */
  schedulerDelayMs?: number;
}

export interface RuntimeOptions {
  /** HTTP API port on 127.0.0.1; 0 picks a free one */
  port?: number;
  hosts?: number;
  /** hosts whose fake driver fails every build */
  failHosts?: string[];
  buildMs?: number;
  availabilityZones?: string[];
  /** extra environment (Nova options such as NOVALESS_MAX_ATTEMPTS) */
  env?: Record<string, string>;
  heartbeatSeconds?: number;
  /** how often the build watchdog runs (a scheduled Lambda in AWS); 0 disables it */
  watchdogIntervalMs?: number;
  faults?: FaultOptions;
}

/** A simulated compute host: its driver outlives agent restarts, as a hypervisor would. */
export interface HostHandle {
  name: string;
  driver: FakeDriver;
  agent: ComputeAgent;
}

export interface Runtime {
  url: string;
  emulators: Emulators;
  /** the current agent of every host */
  readonly agents: ComputeAgent[];
  hosts: Map<string, HostHandle>;
  /** the host dies: no heartbeat, builds abandoned (the watchdog must recover them) */
  killHost(name: string): Promise<void>;
  /** start a fresh agent for the host (after a kill or a stop), same driver and inventory */
  restartHost(name: string): Promise<void>;
  /** run the watchdog now (besides its timer) */
  runWatchdog(): Promise<WatchdogAction[]>;
  stop(): Promise<void>;
}

/** Serve each Task state by its Resource, exactly as the deployed stack wires it. */
function taskHandlersFor(
  definition: ReturnType<typeof conductorDefinition>,
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
    const out = await send();
    if (chance(faults?.duplicateHostMessageRate)) await send();
    return out;
  };
  const byResource: Record<string, TaskHandler> = {
    [LOCAL_ARNS.conductorFunctionArn]: (input) => conductorHandler(input),
    [LOCAL_ARNS.schedulerFunctionArn]: async (input) => {
      if (chance(faults?.schedulerFailureRate)) throw new Transient("injected: scheduler invocation failed");
      const out = await schedulerHandler(input);
      if (faults?.schedulerDelayMs) await new Promise((r) => setTimeout(r, faults.schedulerDelayMs));
      return out;
    },
    "arn:aws:states:::sqs:sendMessage": sendToHost,
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
  const emulators = await startEmulators({
    sfn: { taskHandlers: { [CONDUCTOR_NAME]: taskHandlersFor(definition, opts.faults) } },
  });
  const stops: (() => Promise<unknown>)[] = [() => emulators.stop()];
  const stopAll = async () => {
    for (let s = stops.pop(); s; s = stops.pop())
      await s().catch((e) => log.warn("runtime.stop_failed", { error: e }));
  };
  try {
    const suffix = runSuffix();
    const tables = localTables(suffix);
    const restoreEnv = applyEnv({
      ...emulators.env,
      ...Object.fromEntries(tables.map((t) => [t.env, t.localName])),
      NOVALESS_COMPUTE_QUEUE_PREFIX: `novaless${suffix}-compute-`,
      ...opts.env,
    });
    stops.unshift(async () => restoreEnv());
    resetClients();
    stops.push(async () => resetClients());

    await createTables(new DynamoDBClient({}), tables);
    const build = await ensureQueueWithDlq(
      `${BUILD_REQUESTS_QUEUE.localName}${suffix}`,
      BUILD_REQUESTS_QUEUE,
    );
    const sm = await sfnClient().send(
      new CreateStateMachineCommand({
        name: CONDUCTOR_NAME,
        definition: JSON.stringify(definition),
        roleArn: "arn:aws:iam::000000000000:role/novaless-conductor",
        type: "EXPRESS",
      }),
    );
    applyEnv({
      NOVALESS_BUILD_REQUESTS_QUEUE_URL: build.queueUrl,
      NOVALESS_BUILD_REQUESTS_DLQ_URL: build.dlqUrl,
      NOVALESS_CONDUCTOR_ARN: sm.stateMachineArn!,
    });
    await seedCatalog();

    const hosts = await startHosts(opts);
    stops.push(async () => Promise.all([...hosts.values()].map((h) => h.agent.stop())));

    const arn = await sqsClient().send(
      new GetQueueAttributesCommand({ QueueUrl: build.queueUrl, AttributeNames: ["QueueArn"] }),
    );
    const intake: EventSource = startEventSource({
      queueUrl: build.queueUrl,
      queueArn: arn.Attributes?.QueueArn ?? "",
      handler: intakeHandler,
    });
    stops.push(() => intake.stop());

    const watchdogEvery = opts.watchdogIntervalMs ?? 10_000;
    if (watchdogEvery > 0) {
      let busy = false;
      const timer = setInterval(() => {
        if (busy) return;
        busy = true;
        runWatchdog()
          .catch((e) => log.error("watchdog.failed", { error: e }))
          .finally(() => {
            busy = false;
          });
      }, watchdogEvery);
      stops.push(async () => clearInterval(timer));
    }

    const front: HttpFront = await startHttpFront(opts.port ?? 8774);
    stops.push(() => front.stop());
    log.info("runtime.ready", { url: front.url, hosts: hosts.size, endpoints: emulators.endpoints });
    return {
      url: front.url,
      emulators,
      get agents() {
        return [...hosts.values()].map((h) => h.agent);
      },
      hosts,
      async killHost(name) {
        await handle(hosts, name).agent.kill();
      },
      async restartHost(name) {
        const h = handle(hosts, name);
        await h.agent.stop();
        h.agent = newAgent(opts, h.name, h.driver, [...hosts.keys()].indexOf(name));
        await h.agent.start();
      },
      runWatchdog: () => runWatchdog(),
      stop: stopAll,
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

function handle(hosts: Map<string, HostHandle>, name: string): HostHandle {
  const h = hosts.get(name);
  if (!h) throw new Error(`no host ${name} in this runtime`);
  return h;
}

function newAgent(opts: RuntimeOptions, host: string, driver: FakeDriver, i: number): ComputeAgent {
  const azs = opts.availabilityZones ?? ["az1", "az2"];
  return new ComputeAgent({
    host,
    availability_zone: azs[i % azs.length]!,
    inventories: inventoriesFor({ vcpus: 16, memory_mb: 65536, local_gb: 1000 }),
    host_ip: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    driver,
    waitTimeSeconds: 1,
    heartbeatSeconds: opts.heartbeatSeconds ?? 10,
  });
}

async function startHosts(opts: RuntimeOptions): Promise<Map<string, HostHandle>> {
  const failing = new Set(opts.failHosts ?? []);
  const hosts = new Map<string, HostHandle>();
  for (let i = 0; i < (opts.hosts ?? 8); i++) {
    const name = `host-${i + 1}`;
    const driver = new FakeDriver({ host: name, buildMs: opts.buildMs ?? 1000, failAll: failing.has(name) });
    hosts.set(name, { name, driver, agent: newAgent(opts, name, driver, i) });
  }
  await Promise.all([...hosts.values()].map((h) => h.agent.start()));
  return hosts;
}
