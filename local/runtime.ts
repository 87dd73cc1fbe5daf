// The whole system on one machine: the embedded emulators, the same tables and queues the stack
// creates, the conductor state machine from the same ASL, the same handlers, simulated compute
// hosts with the fake driver, and the HTTP API. As strict as AWS about IAM: every component runs
// as its own identity (lib/aws/identity.ts) and the gateway in front of the emulators holds it to
// the policy the synthesized stack gives its role (iam/).
//
// startRuntime reads as the deploy and the boot, one step per file of runtime/: the stack's names
// and policies (stack.ts), the emulators, the environment and the resources (resources.ts), the
// state machine's Tasks (task-handlers.ts), the functions beside it (functions.ts), the hosts
// (hosts.ts), then the HTTP API.
import "./polyfills.js";
import { conductorDefinition } from "../infra/conductor/definition.js";
import { runAs } from "../lib/aws/identity.js";
import { log, logFormat } from "../lib/log.js";
import { startEmulators } from "./emulators.js";
import { FUNCTION_HANDLERS, type HandlerFunction } from "./function-handlers.js";
import { spawnFunctionThread } from "./function-thread.js";
import { startHttpFront } from "./http.js";
import { type Component, hostIdentityOf, identityOf } from "./iam/identities.js";
import { hostPrincipal } from "./iam/policy.js";
import type { LambdaHandler } from "./lambda.js";
import { buildLines } from "./runtime/build-lines.js";
import { computeEvents, startIntake, startWatchdog } from "./runtime/functions.js";
import { seedGuestImage } from "./runtime/guest-image.js";
import { hostNames, startHosts } from "./runtime/hosts.js";
import type { Runtime, RuntimeOptions } from "./runtime/options.js";
import { deployResources, seedData, useEnvironment } from "./runtime/resources.js";
import { localStack } from "./runtime/stack.js";
import { CONDUCTOR_NAME, LOCAL_ARNS, taskHandlersFor } from "./runtime/task-handlers.js";

export type { FaultOptions, HostHandle, Runtime, RuntimeOptions } from "./runtime/options.js";

/** What the runtime has started, stopped last first; `last` after all of them. */
class Stops {
  private readonly stack: (() => Promise<unknown> | unknown)[] = [];
  private readonly finally: (() => unknown)[] = [];

  push(stop: () => Promise<unknown> | unknown): void {
    this.stack.push(stop);
  }

  last(stop: () => unknown): void {
    this.finally.push(stop);
  }

  readonly all = async (): Promise<void> => {
    for (let s = this.stack.pop() ?? this.finally.pop(); s; s = this.stack.pop() ?? this.finally.pop())
      await Promise.resolve()
        .then(s)
        .catch((e) => log.warn("runtime.stop_failed", { error: e }));
  };
}

export async function startRuntime(opts: RuntimeOptions = {}): Promise<Runtime> {
  const definition = conductorDefinition(LOCAL_ARNS);
  const names = hostNames(opts.hosts ?? 8);
  // The functions' thread loads its modules (most of its start) beside everything below; it is
  // configured once the environment is whole (function-thread.ts).
  const spawned = opts.threads ? spawnFunctionThread() : undefined;
  const early = <T>(step: Promise<T>): Promise<T> =>
    step.catch(async (e: unknown) => {
      await spawned?.stop();
      throw e;
    });
  const stack = await early(localStack(opts, names));
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
            stack.statements["state-machine"],
            stack.timeouts,
            stack.account,
            (fn) => handlerOf(fn),
            opts.faults,
          ),
        },
        ...(opts.retryIntervalMs !== undefined ? { retryIntervalMs: opts.retryIntervalMs } : {}),
      },
      iam: {
        policy: stack.gateway,
        dynamodbThrottleRate: opts.faults?.dynamodbThrottleRate,
        startExecutionThrottleRate: opts.faults?.startExecutionThrottleRate,
        random: opts.faults?.random,
      },
    }),
  );
  const stops = new Stops();
  stops.push(() => emulators.stop());
  if (spawned) stops.push(() => spawned.stop());
  try {
    const env = useEnvironment(opts, stack, names.length, emulators);
    stops.last(env.last);
    for (const undo of env.inOrder) stops.push(undo);
    const deployed = await deployResources(stack, definition, emulators);
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
    await seedData(opts);

    // Hosts report to compute-events from their first step: its function is set before any starts.
    const events = computeEvents(stack, handlerOf, builds, opts.faults?.computeEventsDelayMs);
    deployed.serveComputeEvents(events.handler);
    const hosts = await startHosts(
      opts,
      names,
      emulators,
      { eventsUrl: deployed.eventsUrl, computeQueuePrefix: stack.computeQueuePrefix },
      { computeEventsConcurrency: stack.account.reservedOf("novaless-compute-events") },
    );
    stops.push(() => hosts.stop());
    stops.push(await startIntake(opts, stack, deployed.buildRequests.queueUrl, handlerOf, builds));
    const watchdog = startWatchdog(stack, handlerOf, opts.watchdogIntervalMs ?? 10_000);
    stops.push(watchdog.stop);

    const as =
      (c: Component) =>
      <T>(fn: () => T): T =>
        runAs(identityOf(c), fn);
    const front = await startHttpFront(
      opts.port ?? 8774,
      as("api"),
      {
        stop: hosts.killHost,
        start: hosts.restartHost,
        restart: hosts.restartHostRoute,
        has: (name) => hosts.hosts.has(name),
        refuseComputeEvents: events.refuse,
      },
      thread?.http,
    );
    stops.push(() => front.stop());
    if (opts.driver === "libvirt") await seedGuestImage(front.url);
    log.info("runtime.ready", { url: front.url, hosts: hosts.hosts.size, endpoints: emulators.endpoints });
    return {
      url: front.url,
      emulators,
      policies: stack.policies,
      get agents() {
        return [...hosts.hosts.values()].map((h) => h.agent);
      },
      hosts: hosts.hosts,
      killHost: hosts.killHost,
      restartHost: hosts.restartHost,
      hostCredentials: (name) => {
        emulators.gateway?.addPrincipal(...hostPrincipal(name, stack.statements["compute-host"]));
        return hostIdentityOf(name);
      },
      refuseComputeEvents: events.refuse,
      runWatchdog: watchdog.run,
      concurrency: stack.account,
      threads: [...emulators.threads, ...(thread ? [thread] : [])],
      stop: stops.all,
    };
  } catch (e) {
    await stops.all();
    throw e;
  }
}
