// The compute agent (Nova's nova-compute, reduced to building): registers its host, heartbeats,
// long-polls its own queue and hands each message to the host's build path (build-path.ts), the
// part it shares with the local fleet simulator.
import { type Message, ReceiveMessageCommand } from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { schedulerConfig } from "../config.js";
import { type Logger, logger } from "../log.js";
import type { ReceivedBuild } from "../messages/compute.js";
import { heartbeat } from "../placement/liveness.js";
import { BuildPath, type HostIdentity, type HostQueue, registerComputeHost } from "./build-path.js";

export interface AgentOptions extends HostIdentity {
  /** builds at once */
  concurrency?: number;
  /** long-poll wait; short locally so stop() is quick */
  waitTimeSeconds?: number;
  /** seconds between heartbeats; [DEFAULT] report_interval by default */
  heartbeatSeconds?: number;
}

/** What the local runtime and its tests drive on a host, whichever transport feeds it. */
export interface HostAgent {
  readonly host: string;
  /** the guests this host's driver is running */
  guests(): string[];
  start(): Promise<void>;
  /**
   * A graceful stop: take no more messages, then either let in-flight builds finish (default) or
   * interrupt them and hand each back through the failure path, so another host builds it.
   */
  stop(opts?: { handBack?: boolean }): Promise<void>;
  /**
   * Simulates the host dying (tests, soak): no more heartbeats, no more writes, in-flight builds
   * abandoned mid-way and their messages left undeleted. The watchdog has to clean up.
   */
  kill(): Promise<void>;
}

export class ComputeAgent implements HostAgent {
  private queue: HostQueue = { queueUrl: "", dlqUrl: "" };
  private running = false;
  private loop: Promise<void> | undefined;
  private beat: NodeJS.Timeout | undefined;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private readonly path: BuildPath;

  constructor(private readonly opts: AgentOptions) {
    this.log = logger({ host: opts.host });
    this.path = new BuildPath(opts.host, opts.driver, this.log);
  }

  get host(): string {
    return this.opts.host;
  }

  guests(): string[] {
    return this.opts.driver.list().map((g) => g.instance_uuid);
  }

  /** Create the host's queue, register the host with its inventory, start heartbeats and polling. */
  async start(): Promise<void> {
    this.queue = await registerComputeHost(this.opts, this.log);
    this.running = true;
    const every = (this.opts.heartbeatSeconds ?? schedulerConfig().report_interval) * 1000;
    this.beat = setInterval(() => {
      heartbeat(this.opts.host).catch((e) => this.log.warn("compute.heartbeat_failed", { error: e }));
    }, every);
    this.beat.unref();
    this.loop = this.poll();
    this.log.info("compute.started", { queue_url: this.queue.queueUrl });
  }

  async stop(opts: { handBack?: boolean } = {}): Promise<void> {
    this.running = false;
    if (this.beat) clearInterval(this.beat);
    // The current long poll is let finish, not aborted: SQS may already be handing it messages,
    // which an aborted request would hide for the whole visibility timeout. What it brings back
    // is returned to the queue at once.
    if (opts.handBack) this.path.handBack();
    await this.loop;
    await Promise.allSettled(this.inFlight.values());
    this.log.info("compute.stopped", { handed_back: Boolean(opts.handBack) });
  }

  async kill(): Promise<void> {
    this.path.kill();
    this.running = false;
    if (this.beat) clearInterval(this.beat);
    this.abort.abort();
    await this.loop;
    await Promise.allSettled(this.inFlight.values());
    this.log.warn("compute.killed", {});
  }

  /** One build, outside the queue (tests of the failure path). */
  buildAndRun(msg: ReceivedBuild): Promise<void> {
    return this.path.buildAndRun(msg);
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
