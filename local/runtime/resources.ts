// The deploy, locally: the environment every component reads, then the stack's resources made on
// the emulators as the operator (the deploying admin), then the data DevStack would seed.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { CreateStateMachineCommand } from "@aws-sdk/client-sfn";
import type { conductorDefinition } from "../../infra/conductor/definition.js";
import { resetClients, s3Client, sfnClient, useRequestHandler } from "../../lib/aws/clients.js";
import { ensureDeadLetterQueue, ensureQueueWithDlq } from "../../lib/aws/queues.js";
import { resetAggregateCache } from "../../lib/catalog/aggregates.js";
import { resetCatalogCache, seedCatalog } from "../../lib/catalog/repo.js";
import { resetHostManagers } from "../../lib/conductor/select-destinations.js";
import { seedIdentity } from "../../lib/identity/seed.js";
import { seedPublicNetwork } from "../../lib/network/seed.js";
import { indexPortDevices } from "../../lib/network/store/ports.js";
import { BUILD_REQUESTS_QUEUE } from "../../lib/resources.js";
import { applyEnv, type Emulators } from "../emulators.js";
import type { FunctionUrlHandler } from "../iam/function-urls.js";
import { functionArnOf, roleArnOf } from "../iam/identities.js";
import { inProcessHandler } from "../in-process.js";
import { createTables } from "../tables.js";
import { localLiveness } from "./hosts.js";
import type { RuntimeOptions } from "./options.js";
import type { LocalStack } from "./stack.js";
import { CONDUCTOR_NAME } from "./task-handlers.js";

/** What undoes a step: the environment restored, the caches dropped, the request handler reset. */
export interface Undo {
  /** undone after everything else (the emulators included) */
  last: () => void;
  /** undone in the reverse order of the steps */
  inOrder: (() => void)[];
}

/**
 * The environment the components read (the emulators' endpoints, the stack's names), every
 * function cold, and the SDK calls in process unless `sockets`.
 */
export function useEnvironment(
  opts: RuntimeOptions,
  stack: LocalStack,
  hostCount: number,
  emulators: Emulators,
): Undo {
  // Setup runs as the operator (the deploying admin): the default credentials in emulators.env.
  const restoreEnv = applyEnv({
    ...emulators.env,
    ...Object.fromEntries(stack.tables.map((t) => [t.env, t.localName])),
    NOVALESS_COMPUTE_QUEUE_PREFIX: stack.computeQueuePrefix,
    NOVALESS_IMAGES_BUCKET: stack.imagesBucket,
    ...localLiveness(hostCount, opts),
    ...opts.env,
  });
  // Every function starts cold: nothing a previous runtime in this process read is cached.
  const coldStart = () => {
    resetClients();
    resetCatalogCache();
    resetAggregateCache();
    resetHostManagers();
  };
  coldStart();
  const inOrder = [coldStart];
  if (!opts.sockets && emulators.gateway) {
    useRequestHandler(inProcessHandler(emulators.gateway));
    inOrder.push(() => useRequestHandler(undefined));
  }
  return { last: restoreEnv, inOrder };
}

export interface Deployed {
  buildRequests: Awaited<ReturnType<typeof ensureQueueWithDlq>>;
  /** compute-events' function URL */
  eventsUrl: string;
  /** sets the function behind compute-events' URL (none reports before) */
  serveComputeEvents(handler: FunctionUrlHandler): void;
}

/**
 * The stack's resources: tables, the images bucket, build-requests and its DLQ, the conductor
 * state machine, compute-events' function URL and DLQ; their addresses join the environment.
 */
export async function deployResources(
  stack: LocalStack,
  definition: ReturnType<typeof conductorDefinition>,
  emulators: Emulators,
): Promise<Deployed> {
  await createTables(new DynamoDBClient({}), stack.tables);
  // the stack's images bucket (snapshots' data), S3 as fauxqs serves it behind the gateway
  await s3Client()
    .send(new CreateBucketCommand({ Bucket: stack.imagesBucket }))
    .catch((e: Error) => {
      if (e.name !== "BucketAlreadyOwnedByYou") throw e;
    });
  const build = await ensureQueueWithDlq(stack.buildRequestsQueue, BUILD_REQUESTS_QUEUE);
  const sm = await sfnClient().send(
    new CreateStateMachineCommand({
      name: CONDUCTOR_NAME,
      definition: JSON.stringify(definition),
      roleArn: roleArnOf("state-machine"),
      type: "EXPRESS",
      // the template's: its executions log (the cost bench bills the lines) and trace as on AWS
      ...stack.policies.stateMachine,
    }),
  );
  // compute-events' function URL: hosts post their reports there (its function is set later,
  // once the functions' thread has the whole environment; none reports before)
  const eventsDlqUrl = await ensureDeadLetterQueue(stack.computeEventsDlq);
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
  return {
    buildRequests: build,
    eventsUrl,
    serveComputeEvents: (handler) => {
      eventsHandler = handler;
    },
  };
}

/** The catalog, DevStack's users (admin / admin-secret, demo / demo-secret) and maybe `public`. */
export async function seedData(opts: RuntimeOptions): Promise<void> {
  await seedCatalog();
  await seedIdentity({ adminPassword: "admin-secret", demo: true });
  // ports an older release wrote get their by-device key (a kept table's)
  await indexPortDevices();
  if (opts.seedNetwork) await seedPublicNetwork();
}
