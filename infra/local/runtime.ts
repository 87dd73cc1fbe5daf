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
}

export interface Runtime {
  url: string;
  emulators: Emulators;
  agents: ComputeAgent[];
  stop(): Promise<void>;
}

/** Serve each Task state by its Resource, exactly as the deployed stack wires it. */
function taskHandlersFor(definition: ReturnType<typeof conductorDefinition>): TaskHandlers {
  const byResource: Record<string, TaskHandler> = {
    [LOCAL_ARNS.conductorFunctionArn]: (input) => conductorHandler(input),
    [LOCAL_ARNS.schedulerFunctionArn]: (input) => schedulerHandler(input),
    "arn:aws:states:::sqs:sendMessage": (input: { QueueUrl: string; MessageBody: string }) =>
      sqsClient().send(new SendMessageCommand({ QueueUrl: input.QueueUrl, MessageBody: input.MessageBody })),
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
    sfn: { taskHandlers: { [CONDUCTOR_NAME]: taskHandlersFor(definition) } },
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

    const agents = await startHosts(opts);
    stops.push(async () => Promise.all(agents.map((a) => a.stop())));

    const arn = await sqsClient().send(
      new GetQueueAttributesCommand({ QueueUrl: build.queueUrl, AttributeNames: ["QueueArn"] }),
    );
    const intake: EventSource = startEventSource({
      queueUrl: build.queueUrl,
      queueArn: arn.Attributes?.QueueArn ?? "",
      handler: intakeHandler,
    });
    stops.push(() => intake.stop());

    const front: HttpFront = await startHttpFront(opts.port ?? 8774);
    stops.push(() => front.stop());
    log.info("runtime.ready", { url: front.url, hosts: agents.length, endpoints: emulators.endpoints });
    return { url: front.url, emulators, agents, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

async function startHosts(opts: RuntimeOptions): Promise<ComputeAgent[]> {
  const count = opts.hosts ?? 8;
  const azs = opts.availabilityZones ?? ["az1", "az2"];
  const failing = new Set(opts.failHosts ?? []);
  const agents = Array.from({ length: count }, (_, i) => {
    const host = `host-${i + 1}`;
    return new ComputeAgent({
      host,
      availability_zone: azs[i % azs.length]!,
      inventories: inventoriesFor({ vcpus: 16, memory_mb: 65536, local_gb: 1000 }),
      host_ip: `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      driver: new FakeDriver({ host, buildMs: opts.buildMs ?? 1000, failAll: failing.has(host) }),
      waitTimeSeconds: 1,
      heartbeatSeconds: 10,
    });
  });
  await Promise.all(agents.map((a) => a.start()));
  return agents;
}
