// What the local runtime is asked for (RuntimeOptions, FaultOptions) and what it hands back
// (Runtime, HostHandle).
import type { HostAgent } from "../../lib/compute/agent.js";
import type { Driver } from "../../lib/compute/drivers/driver.js";
import type { HostSize } from "../../lib/compute/inventory.js";
import type { SpoolStore } from "../../lib/compute/spool.js";
import type { WatchdogAction } from "../../lib/conductor/watchdog.js";
import type { AccountConcurrency, AccountConcurrencyOptions } from "../concurrency.js";
import type { Emulators } from "../emulators.js";
import type { FunctionComponent, hostIdentityOf } from "../iam/identities.js";
import type { IamOptions } from "../iam/policy.js";
import type { StackPolicies } from "../iam/stack-policies.js";
import type { LibvirtHost } from "../libvirt-hosts.js";
import type { Thread } from "../threads.js";

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
   * The hosts' virt driver: "fake" (default; simulation); "exec": each server a real process
   * (lib/compute/drivers/exec.ts) under `instancesPath/<host>/`; "libvirt": each host a network
   * namespace with a libvirtd of its own (local/libvirt-hosts.ts, as root), each server a real
   * QEMU virtual machine on it.
   */
  driver?: "fake" | "exec" | "libvirt";
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
  /** a libvirt host's namespace, daemon and bridges (driver "libvirt") */
  libvirt?: LibvirtHost;
  /** the size its hypervisor reports (libvirt: `virsh nodeinfo`); absent: a simulated host's */
  size?: HostSize;
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
