// The local fleet simulator, as KWOK is for Kubernetes: thousands of compute hosts in one process,
// each with its own queue (and DLQ), provider item, inventory, heartbeat and fake hypervisor,
// each calling AWS as its own host session (tagged with its name, as on AWS) and going through the
// same build path and reports as a real agent (lib/compute/build-path.ts). What is simulated is only the transport: instead of one 20 s
// long poll and one heartbeat timer per host, which cost a build 64 s at 1,000 hosts, hosts are
// driven by events.
// - The doorbell: the IAM gateway announces every message SQS accepted, with its queue URL and
//   delay; the host of that queue receives (WaitTimeSeconds 0) as soon as the message is visible,
//   and keeps receiving while messages come back.
// - What no send announces: a message whose handling failed comes back after the visibility
//   timeout (its host rings itself then); a restarted host receives at once; and a slow sweep
//   receives from every running host once per `sweepSeconds`, for anything sent around the
//   gateway.
// - Heartbeats: one timer wheel; each host has a slot, so the writes spread over the interval.
import { type Message, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../lib/aws/clients.js";
import { SQS_BATCH_MAX } from "../lib/aws/delete-batch.js";
import { runAs } from "../lib/aws/identity.js";
import { type HostAgent, STOP_FLUSH_MS } from "../lib/compute/agent.js";
import {
  BuildPath,
  DeadLetterCount,
  type HostIdentity,
  type HostQueue,
  heartbeatCheck,
  Reporter,
  registerComputeHost,
} from "../lib/compute/build-path.js";
import { HeartbeatClock } from "../lib/compute/heartbeat.js";
import type { SpoolStore } from "../lib/compute/spool.js";
import { option, schedulerConfig } from "../lib/config.js";
import { type Logger, logger } from "../lib/log.js";
import { COMPUTE_QUEUE } from "../lib/resources.js";
import type { MessageSent } from "./iam/gateway.js";
import { hostIdentityOf } from "./iam/identities.js";

export interface SimulatorOptions {
  heartbeatSeconds: number;
  /** [DEFAULT] service_down_time (seconds): when an idle host's heartbeat is due; the config's by default */
  serviceDownTimeSeconds?: number;
  /** where hosts report (the runtime's compute-events queue) */
  eventsUrl: string;
  computeQueuePrefix: string;
  /** a full round of the sweep over every running host (default 300 s) */
  sweepSeconds?: number;
  /** builds at once per host, as the agent's `concurrency` (default 8) */
  concurrency?: number;
}

/** How often the heartbeat wheel turns: each turn beats the hosts of one slot. */
const WHEEL_TICK_MS = 250;
const SWEEP_TICK_MS = 1000;
/** A simulated host that parked messages counts its DLQ again this often (the agent's default). */
const DEAD_LETTER_RECOUNT_MS =
  (option("compute_novaless_dead_letter_check_interval").default as number) * 1000;

/** The simulated hosts of one runtime, and the timers and doorbell that drive them. */
export class Fleet {
  private readonly byQueue = new Map<string, SimulatedAgent>();
  /** queues that had a host reading them once, and queues rung while nobody read them */
  private readonly known = new Set<string>();
  private readonly missed = new Set<string>();
  private readonly slots: Set<SimulatedAgent>[];
  private turn = 0;
  /** the sweep's position in the running hosts, in the order they started */
  private sweepAt = 0;
  private readonly wheel: NodeJS.Timeout;
  private readonly sweeper: NodeJS.Timeout;

  /** read once for the fleet, not once for each host that starts */
  readonly serviceDownTimeSeconds: number;

  constructor(readonly opts: SimulatorOptions) {
    this.serviceDownTimeSeconds = opts.serviceDownTimeSeconds ?? schedulerConfig().service_down_time;
    this.slots = Array.from(
      { length: Math.max(1, Math.round((opts.heartbeatSeconds * 1000) / WHEEL_TICK_MS)) },
      () => new Set<SimulatedAgent>(),
    );
    this.wheel = setInterval(() => this.beat(), WHEEL_TICK_MS);
    this.sweeper = setInterval(() => this.sweep(), SWEEP_TICK_MS);
  }

  /** queue name → registrations waiting for compute-events to create it */
  private readonly creating = new Map<string, (() => void)[]>();

  /** Resolves when SQS created the queue (queueCreated), so registrations need not poll. */
  untilCreated(queueName: string): Promise<void> {
    return new Promise((resolve) => {
      const waiting = this.creating.get(queueName) ?? [];
      waiting.push(resolve);
      this.creating.set(queueName, waiting);
    });
  }

  /** The gateway's announcement that SQS created a queue. */
  queueCreated(queueName: string): void {
    const waiting = this.creating.get(queueName);
    if (!waiting) return;
    this.creating.delete(queueName);
    for (const resolve of waiting) resolve();
  }

  /**
   * A new incarnation of a host (not started), spooling into `spool`, which stands for the host's
   * disk: the caller keeps it beside the driver, so it outlives the incarnation.
   */
  agent(identity: HostIdentity, spool: SpoolStore): SimulatedAgent {
    return new SimulatedAgent(this, identity, spool);
  }

  /** The gateway's announcement: ring the host whose queue it is, once the message is visible. */
  messageSent(sent: MessageSent): void {
    if (sent.delaySeconds > 0) this.later(sent.delaySeconds * 1000, sent.queueUrl);
    else this.ringQueue(sent.queueUrl);
  }

  ring(a: SimulatedAgent): void {
    a.as(() => a.ring());
  }

  /** Ring whichever incarnation reads `queueUrl` by then (a restart may have replaced it). */
  later(ms: number, queueUrl: string): void {
    setTimeout(() => this.ringQueue(queueUrl), ms).unref();
  }

  private ringQueue(queueUrl: string): void {
    const a = this.byQueue.get(queueUrl);
    if (a) this.ring(a);
    else this.missed.add(queueUrl);
  }

  /**
   * A started incarnation reads its queue. Whether something may wait there already: a restart
   * (what was sent while no incarnation read it), or a doorbell rung before it attached. A host
   * starting for the first time on a queue nobody rang has nothing to read yet.
   */
  attach(a: SimulatedAgent): boolean {
    const url = a.queue.queueUrl;
    const waiting = this.known.has(url) || this.missed.delete(url);
    this.known.add(url);
    this.byQueue.set(url, a);
    // Registration was its first report: its first heartbeat is due a whole turn later.
    this.slots[(this.turn + this.slots.length - 1) % this.slots.length]!.add(a);
    return waiting;
  }

  detach(a: SimulatedAgent): void {
    if (this.byQueue.get(a.queue.queueUrl) === a) this.byQueue.delete(a.queue.queueUrl);
    for (const s of this.slots) s.delete(a);
  }

  stop(): void {
    clearInterval(this.wheel);
    clearInterval(this.sweeper);
  }

  private beat(): void {
    const slot = this.slots[this.turn++ % this.slots.length]!;
    for (const a of slot) a.as(() => a.heartbeat());
  }

  private sweep(): void {
    const running = [...this.byQueue.values()];
    if (running.length === 0) return;
    const per = Math.ceil(running.length / ((this.opts.sweepSeconds ?? 300) * (1000 / SWEEP_TICK_MS)));
    for (let i = 0; i < per; i++) this.ring(running[this.sweepAt++ % running.length]!);
  }
}

/**
 * One incarnation of a simulated host: what ComputeAgent is, with the fleet's events instead of
 * its own long poll and heartbeat timer.
 */
export class SimulatedAgent implements HostAgent {
  queue: HostQueue = { queueUrl: "", dlqUrl: "" };
  private running = false;
  private readonly path: BuildPath;
  private readonly reporter: Reporter;
  private readonly log: Logger;
  private readonly credentials;
  private readonly inFlight = new Map<string, Promise<void>>();
  private receiving: Promise<void> | undefined;
  /** rung while receiving or full: receive again when able */
  private pending = false;
  private beating = false;
  private readonly clock: HeartbeatClock;
  private readonly deadLetters: DeadLetterCount;
  /** a stop or kill ends a registration still waiting for compute-events */
  private readonly abort = new AbortController();

  constructor(
    private readonly fleet: Fleet,
    private readonly identity: HostIdentity,
    spool: SpoolStore,
  ) {
    this.log = logger({ host: identity.host, simulated: true });
    this.credentials = hostIdentityOf(identity.host);
    this.reporter = new Reporter(identity.host, fleet.opts.eventsUrl, (fn) => this.as(fn), spool, this.log);
    this.path = new BuildPath(identity.host, identity.driver, this.reporter, this.log);
    this.path.deleteBatchMax = Math.min(SQS_BATCH_MAX, fleet.opts.concurrency ?? 8);
    this.deadLetters = new DeadLetterCount(this.path, () => this.queue.dlqUrl);
    this.clock = new HeartbeatClock(fleet.opts.heartbeatSeconds, fleet.serviceDownTimeSeconds);
  }

  /** Runs `fn` as this host's own session, whatever context the event came from. */
  as<T>(fn: () => T): T {
    return runAs(this.credentials, fn);
  }

  get host(): string {
    return this.identity.host;
  }

  guests(): string[] {
    return this.identity.driver.list().map((g) => g.instance_uuid);
  }

  async start(): Promise<void> {
    this.queue = await this.as(async () => {
      await this.identity.driver.init();
      const queue = await registerComputeHost(this.identity, this.reporter, {
        computeQueuePrefix: this.fleet.opts.computeQueuePrefix,
        queueCreated: (name) => this.fleet.untilCreated(name),
        signal: this.abort.signal,
      });
      // what an earlier incarnation spooled goes once registered (as the agent's start)
      await this.reporter.spool.start();
      return queue;
    });
    this.running = true;
    // What was sent while no incarnation was reading (a restart) is there already.
    if (this.fleet.attach(this)) this.fleet.ring(this);
  }

  async stop(opts: { handBack?: boolean } = {}): Promise<void> {
    this.abort.abort();
    this.running = false;
    this.fleet.detach(this);
    if (opts.handBack) this.path.handBack();
    await this.receiving;
    await this.path.flushDeletes();
    await Promise.allSettled(this.inFlight.values());
    await this.reporter.spool.stop(STOP_FLUSH_MS);
  }

  async kill(): Promise<void> {
    this.abort.abort();
    this.path.kill();
    await this.reporter.spool.stop();
    this.running = false;
    this.fleet.detach(this);
    await this.receiving;
    await Promise.allSettled(this.inFlight.values());
    this.log.warn("compute.killed", {});
  }

  heartbeat(): void {
    if (!this.running || this.beating) return;
    this.beating = true;
    // A simulated host counts its DLQ only once it has parked something there (a fleet's worth of
    // counts would cost the local runtime more than its builds).
    const count =
      this.deadLetters.value > 0 ? this.deadLetters.recount(DEAD_LETTER_RECOUNT_MS) : Promise.resolve();
    count
      .then(() => heartbeatCheck(this.clock, this.reporter, this.path, this.deadLetters))
      .catch((e) => this.log.warn("compute.heartbeat_failed", { error: e }))
      .finally(() => {
        this.beating = false;
      });
  }

  /** Something may be in the queue: receive until it is empty or this host is full. */
  ring(): void {
    if (!this.running) return;
    this.pending = true;
    if (this.receiving) return;
    this.receiving = this.receive().finally(() => {
      this.receiving = undefined;
      // Rung after the loop's last look: look again.
      if (this.pending && this.inFlight.size < this.max) this.ring();
    });
  }

  private get max(): number {
    return this.fleet.opts.concurrency ?? 8;
  }

  private async receive(): Promise<void> {
    const max = this.max;
    while (this.running && this.pending && this.inFlight.size < max) {
      this.pending = false;
      const asked = Math.min(10, max - this.inFlight.size);
      let messages: Message[];
      try {
        const r = await sqsClient().send(
          new ReceiveMessageCommand({
            QueueUrl: this.queue.queueUrl,
            MaxNumberOfMessages: asked,
            WaitTimeSeconds: 0,
          }),
        );
        messages = r.Messages ?? [];
      } catch (e) {
        if (!this.running) return;
        this.log.warn("compute.receive_failed", { error: e });
        this.fleet.later(1000, this.queue.queueUrl);
        return;
      }
      if (!this.running) {
        // Stopped meanwhile: give them back at once. A killed host just drops them: they are
        // visible again after the visibility timeout, for whoever reads the queue then.
        if (!this.path.killed) await this.path.giveBack(messages, this.queue);
        else if (messages.length > 0) this.comeBack();
        return;
      }
      // A full batch may have left more behind; a batch short of what was asked emptied the
      // queue as it stood (a send since rings the host again), so no look that finds nothing.
      if (messages.length === asked) this.pending = true;
      for (const m of messages) this.dispatch(m);
    }
  }

  /** An undeleted message is visible again after the visibility timeout: ring its queue then. */
  private comeBack(): void {
    this.fleet.later(COMPUTE_QUEUE.visibilityTimeout * 1000 + 100, this.queue.queueUrl);
  }

  private dispatch(m: Message): void {
    const key = m.MessageId ?? String(Math.random());
    const p = this.path
      .handle(m, this.queue)
      .catch((e) => {
        // A killed host abandons its builds on purpose: the watchdog owns them now.
        if (this.path.killed) this.log.warn("compute.build_abandoned", { error: e, message_id: m.MessageId });
        else this.log.error("compute.message_failed", { error: e, message_id: m.MessageId });
        this.comeBack();
      })
      .finally(() => {
        this.inFlight.delete(key);
        // Room again: what was rung while full is received now.
        if (this.pending) this.fleet.ring(this);
      });
    this.inFlight.set(key, p);
  }
}

/** Start `agents` (register each host) with at most `concurrency` registrations at once. */
export async function startAll(agents: Pick<HostAgent, "start">[], concurrency: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < agents.length; i = next++) await agents[i]!.start();
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, agents.length) }, worker));
}
