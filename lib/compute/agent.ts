// The compute agent (Nova's nova-compute): reports its host to compute-events, waits for the
// queue the consumer creates for it, heartbeats, long-polls its own queue and hands each message
// to the host's build path (build-path.ts), the part it shares with the local fleet simulator.
// It touches no database: its credentials allow its own queue and compute-events, nothing else.
import { type Message, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { SQS_BATCH_MAX } from "../aws/delete-batch.js";
import { option, schedulerConfig } from "../config.js";
import { type Logger, logger } from "../log.js";
import {
  BuildPath,
  DeadLetterCount,
  type HostIdentity,
  type HostQueue,
  heartbeatCheck,
  Reporter,
  registerComputeHost,
} from "./build-path.js";
import { HeartbeatClock } from "./heartbeat.js";
import type { SpoolStore } from "./spool.js";

/** How long a stop lets the current long poll finish before aborting it. */
const STOP_POLL_GRACE_MS = 1200;

/**
 * How long a stop lets the spool send what is waiting (the reports of builds it handed back)
 * before leaving it for the next start: with the poll's grace, well within systemd's
 * TimeoutStopSec (10 s), and never a wait on an outage.
 */
export const STOP_FLUSH_MS = 3000;

export interface AgentOptions extends HostIdentity {
  /** runs a report's send as this host's session (a process hosting several hosts: the local runtime) */
  asHost?: <T>(fn: () => T) => T;
  /** compute-events' function URL (stack output ComputeEventsUrl) */
  eventsUrl: string;
  /** the compute queue prefix (stack output ComputeQueuePrefix) */
  computeQueuePrefix: string;
  /** messages handled at once (builds and every other cast) */
  concurrency?: number;
  /** long-poll wait (seconds, default 20); a stop aborts it */
  waitTimeSeconds?: number;
  /** seconds between heartbeats; [DEFAULT] report_interval by default */
  heartbeatSeconds?: number;
  /** the control plane's [DEFAULT] service_down_time (seconds): when an idle heartbeat is due */
  serviceDownTimeSeconds?: number;
  /** seconds between power-state syncs ([DEFAULT] sync_power_state_interval, 600); ≤ 0 disables */
  syncPowerStateSeconds?: number;
  /** seconds between counts of the host's DLQ ([novaless] dead_letter_check_interval, 300); ≤ 0 disables */
  deadLetterCheckSeconds?: number;
  /** how long registration waits for compute-events to create the host's queues (ms) */
  queueWaitMs?: number;
  /**
   * Where reports wait until compute-events applies them; it must outlive the agent (the
   * process's is a directory in its state directory, `[novaless] report_spool_path`). In memory
   * by default: what a test's agent spools is then lost with it.
   */
  spool?: SpoolStore;
  log?: Logger;
}

/** What the local runtime and its tests drive on a host, whichever transport feeds it. */
export interface HostAgent {
  readonly host: string;
  /** the guests this host's driver has */
  guests(): string[];
  start(): Promise<void>;
  /**
   * A graceful stop: take no more messages, then either let in-flight builds finish (default) or
   * interrupt them and hand each back through the failure path, so another host builds it.
   */
  stop(opts?: { handBack?: boolean; signal?: string }): Promise<void>;
  /**
   * Simulates the host dying (tests, soak): no more heartbeats, no more reports, in-flight builds
   * abandoned mid-way and their messages left undeleted. The watchdog has to clean up.
   */
  kill(): Promise<void>;
}

export class ComputeAgent implements HostAgent {
  private queue: HostQueue = { queueUrl: "", dlqUrl: "" };
  private running = false;
  private loop: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private readonly reporter: Reporter;
  private readonly path: BuildPath;
  private readonly deadLetters: DeadLetterCount;

  constructor(private readonly opts: AgentOptions) {
    this.log = opts.log ?? logger({ host: opts.host });
    this.reporter = new Reporter(opts.host, opts.eventsUrl, opts.asHost, opts.spool, this.log);
    this.path = new BuildPath(opts.host, opts.driver, this.reporter, this.log);
    this.path.deleteBatchMax = Math.min(SQS_BATCH_MAX, opts.concurrency ?? 8);
    this.deadLetters = new DeadLetterCount(this.path, () => this.queue.dlqUrl);
  }

  get host(): string {
    return this.opts.host;
  }

  guests(): string[] {
    return this.opts.driver.list().map((g) => g.instance_uuid);
  }

  /**
   * Register (the consumer creates the queues), resume sending what earlier incarnations spooled,
   * start heartbeats, power sync and polling.
   */
  async start(): Promise<void> {
    await this.opts.driver.init();
    this.queue = await registerComputeHost(this.opts, this.reporter, {
      computeQueuePrefix: this.opts.computeQueuePrefix,
      queueWaitMs: this.opts.queueWaitMs,
      signal: this.abort.signal,
    });
    // After registering, not before: registration reconciles with what the host runs now, and a
    // build an earlier incarnation only took (its build_started spooled) must not look to it like
    // one that was spawning here and was lost; what the spool says next is fenced against it.
    await this.reporter.spool.start();
    this.running = true;
    const interval = this.opts.heartbeatSeconds ?? schedulerConfig().report_interval;
    const clock = new HeartbeatClock(
      interval,
      this.opts.serviceDownTimeSeconds ?? schedulerConfig().service_down_time,
    );
    this.every(
      interval * 1000,
      () => heartbeatCheck(clock, this.reporter, this.path, this.deadLetters),
      "compute.heartbeat_failed",
    );
    const check =
      this.opts.deadLetterCheckSeconds ??
      (option("compute_novaless_dead_letter_check_interval").default as number);
    if (check > 0) {
      // counted at start too: an agent that crashed on a message left it to SQS's redrive
      await this.deadLetters
        .recount()
        .catch((e) => this.log.warn("compute.dead_letter_count_failed", { error: e }));
      this.every(check * 1000, () => this.deadLetters.recount(), "compute.dead_letter_count_failed");
    }
    const sync = this.opts.syncPowerStateSeconds ?? 600;
    if (sync > 0) this.every(sync * 1000, () => this.path.syncPowerStates(true), "compute.power_sync_failed");
    this.loop = this.poll();
    this.log.info("compute.started", {
      queue_url: this.queue.queueUrl,
      driver: this.opts.driver.hypervisorType,
    });
  }

  private every(ms: number, fn: () => Promise<unknown>, failure: string): void {
    const t = setInterval(() => {
      if (this.running) fn().catch((e) => this.log.warn(failure, { error: e }));
    }, ms);
    t.unref();
    this.timers.push(t);
  }

  /**
   * Stops within about 5 s: the current long poll is let finish for up to STOP_POLL_GRACE_MS (what
   * it brings back is returned to the queue at once), then aborted (a message SQS was handing the
   * aborted poll comes back after the queue's short visibility timeout); in-flight spawns are
   * interrupted when handing back and go through the failure path (one report each, spooled);
   * the spool sends for up to STOP_FLUSH_MS, and what is unsent waits there for the next start.
   */
  async stop(opts: { handBack?: boolean; signal?: string } = {}): Promise<void> {
    if (!this.running && !this.loop) {
      // never took messages (still registering, or its registration failed): registering stops,
      // and what it spooled stays for the next start
      this.abort.abort();
      await this.reporter.spool.stop();
      return;
    }
    const began = Date.now();
    this.running = false;
    for (const t of this.timers) clearInterval(t);
    if (opts.handBack) this.path.handBack();
    const grace = new Promise<"late">((r) => setTimeout(() => r("late"), STOP_POLL_GRACE_MS).unref());
    if ((await Promise.race([this.loop, grace])) === "late") this.abort.abort();
    await this.loop;
    await this.path.flushDeletes();
    await Promise.allSettled(this.inFlight.values());
    this.loop = undefined;
    await this.reporter.spool.stop(STOP_FLUSH_MS);
    // one line per stop: why, what was handed back, how long it took
    this.log.info("compute.stopped", {
      handed_back: Boolean(opts.handBack),
      ...(opts.signal ? { signal: opts.signal } : {}),
      stop_ms: Date.now() - began,
    });
  }

  async kill(): Promise<void> {
    this.path.kill();
    // a dead host sends nothing more; what it had spooled waits for its next start
    await this.reporter.spool.stop();
    this.running = false;
    for (const t of this.timers) clearInterval(t);
    this.abort.abort();
    await this.loop;
    await Promise.allSettled(this.inFlight.values());
    this.loop = undefined;
    this.log.warn("compute.killed", {});
  }

  private async poll(): Promise<void> {
    const max = this.opts.concurrency ?? 8;
    while (this.running) {
      const room = max - this.inFlight.size;
      if (room <= 0) {
        await Promise.race(this.inFlight.values());
        continue;
      }
      let messages: Message[] = [];
      try {
        const r = await sqsClient().send(
          new ReceiveMessageCommand({
            QueueUrl: this.queue.queueUrl,
            MaxNumberOfMessages: Math.min(10, room),
            WaitTimeSeconds: this.opts.waitTimeSeconds ?? 20,
          }),
          { abortSignal: this.abort.signal },
        );
        messages = r.Messages ?? [];
        if (!this.running && !this.path.killed) {
          await this.path.giveBack(messages, this.queue);
          break;
        }
      } catch (e) {
        if (!this.running) break;
        this.log.warn("compute.receive_failed", { error: e });
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      for (const m of messages) {
        const key = m.MessageId ?? String(Math.random());
        const p = this.path
          .handle(m, this.queue)
          .catch((e) =>
            // A killed host abandons its builds on purpose: the watchdog owns them now.
            this.path.killed
              ? this.log.warn("compute.build_abandoned", { error: e, message_id: m.MessageId })
              : this.log.error("compute.message_failed", { error: e, message_id: m.MessageId }),
          )
          .finally(() => this.inFlight.delete(key));
        this.inFlight.set(key, p);
      }
    }
  }
}
