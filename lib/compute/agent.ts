// The compute agent (Nova's nova-compute, reduced to building): registers its host, heartbeats,
// long-polls its own queue and builds what the conductor casts to it. Every instance write is
// fenced on (host, attempt), so a zombie agent or a duplicated message changes nothing.
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  type Message,
  ReceiveMessageCommand,
} from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { ensureQueueWithDlq } from "../aws/queues.js";
import { sendBuildRequest, sendToDeadLetter } from "../conductor/queues.js";
import { resources, schedulerConfig } from "../config.js";
import { rescheduledText, withoutHosts } from "../instances/faults.js";
import { EVENT_BUILD, event, markActive, recordBuildFailure, startSpawn } from "../instances/repo.js";
import type { InstanceRecord } from "../instances/types.js";
import { type Logger, logger } from "../log.js";
import { parseJsonMessage } from "../messages/build-request.js";
import {
  type ReceivedBuild,
  type ReceivedComputeMessage,
  receivedComputeMessage,
} from "../messages/compute.js";
import { metrics } from "../metrics.js";
import { PlacementConflict } from "../placement/capacity.js";
import { release } from "../placement/claims.js";
import { recordBuildResult, registerHost } from "../placement/hosts.js";
import { heartbeat } from "../placement/liveness.js";
import type { Inventory, ResourceClass } from "../placement/types.js";
import { COMPUTE_QUEUE, DLQ_SUFFIX } from "../resources.js";
import type { Driver } from "./drivers/driver.js";
import { computeQueueName } from "./queue-name.js";

export interface AgentOptions {
  host: string;
  availability_zone: string;
  inventories: Partial<Record<ResourceClass, Inventory>>;
  host_ip: string;
  driver: Driver;
  /** builds at once */
  concurrency?: number;
  /** long-poll wait; short locally so stop() is quick */
  waitTimeSeconds?: number;
  /** seconds between heartbeats; [DEFAULT] report_interval by default */
  heartbeatSeconds?: number;
}

export class ComputeAgent {
  private queueUrl = "";
  private dlqUrl = "";
  private running = false;
  private loop: Promise<void> | undefined;
  private beat: NodeJS.Timeout | undefined;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** instances this process is spawning right now */
  private readonly building = new Set<string>();
  private readonly log: Logger;
  private readonly abort = new AbortController();
  /** aborts in-flight spawns (hand-back, kill) */
  private readonly spawnAbort = new AbortController();
  private killed = false;

  constructor(private readonly opts: AgentOptions) {
    this.log = logger({ host: opts.host });
  }

  get host(): string {
    return this.opts.host;
  }

  /** the guests this host's driver is running */
  guests(): string[] {
    return this.opts.driver.list();
  }

  /** Create the host's queue, register the host with its inventory, start heartbeats and polling. */
  async start(): Promise<void> {
    const q = await ensureQueueWithDlq(
      computeQueueName(resources().computeQueuePrefix, this.opts.host, DLQ_SUFFIX),
      COMPUTE_QUEUE,
    );
    this.queueUrl = q.queueUrl;
    this.dlqUrl = q.dlqUrl;
    const d = this.opts.driver;
    try {
      await registerHost({
        host: this.opts.host,
        availability_zone: this.opts.availability_zone,
        inventories: this.opts.inventories,
        hypervisor_type: d.hypervisorType,
        hypervisor_version: d.hypervisorVersion,
        host_ip: this.opts.host_ip,
        supported_instances: [["x86_64", d.hypervisorType, "hvm"]],
        queue_url: this.queueUrl,
      });
    } catch (e) {
      // Less than is allocated (Placement's InventoryInUse): as Nova's resource tracker, say so
      // and keep serving on the inventory Placement has, rather than refuse to start.
      if (!(e instanceof PlacementConflict)) throw e;
      this.log.error("compute.inventory_conflict", { error: e, inventories: this.opts.inventories });
    }
    // Up from now on, and a host the liveness sweep had marked down comes back at once.
    await heartbeat(this.opts.host);
    this.running = true;
    const every = (this.opts.heartbeatSeconds ?? schedulerConfig().report_interval) * 1000;
    this.beat = setInterval(() => {
      heartbeat(this.opts.host).catch((e) => this.log.warn("compute.heartbeat_failed", { error: e }));
    }, every);
    this.beat.unref();
    this.loop = this.poll();
    this.log.info("compute.started", { queue_url: this.queueUrl });
  }

  /**
   * A graceful stop: take no more messages, then either let in-flight builds finish (default) or
   * interrupt them and hand each back through the failure path, so another host builds it.
   */
  async stop(opts: { handBack?: boolean } = {}): Promise<void> {
    this.running = false;
    if (this.beat) clearInterval(this.beat);
    // The current long poll is let finish, not aborted: SQS may already be handing it messages,
    // which an aborted request would hide for the whole visibility timeout. What it brings back
    // is returned to the queue at once.
    if (opts.handBack) this.spawnAbort.abort();
    await this.loop;
    await Promise.allSettled(this.inFlight.values());
    this.log.info("compute.stopped", { handed_back: Boolean(opts.handBack) });
  }

  /**
   * Simulates the host dying (tests, soak): no more heartbeats, no more writes, in-flight builds
   * abandoned mid-way and their messages left undeleted. The watchdog has to clean up.
   */
  async kill(): Promise<void> {
    this.killed = true;
    this.running = false;
    if (this.beat) clearInterval(this.beat);
    this.abort.abort();
    this.spawnAbort.abort();
    await this.loop;
    await Promise.allSettled(this.inFlight.values());
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
            QueueUrl: this.queueUrl,
            MaxNumberOfMessages: Math.min(10, room),
            WaitTimeSeconds: this.opts.waitTimeSeconds ?? 20,
          }),
          { abortSignal: this.abort.signal },
        );
        messages = r.Messages ?? [];
        if (!this.running && !this.killed) {
          await this.giveBack(messages);
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
        const p = this.handle(m)
          .catch((e) =>
            // A killed host abandons its builds on purpose: the watchdog owns them now.
            this.killed
              ? this.log.warn("compute.build_abandoned", { error: e, message_id: m.MessageId })
              : this.log.error("compute.message_failed", { error: e, message_id: m.MessageId }),
          )
          .finally(() => this.inFlight.delete(key));
        this.inFlight.set(key, p);
      }
    }
  }

  private async handle(m: Message): Promise<void> {
    const parsed = parseJsonMessage(receivedComputeMessage, m.Body ?? "");
    if (!parsed.ok) {
      await sendToDeadLetter(this.dlqUrl, m.Body ?? "", parsed.reason, this.queueUrl);
      this.log.warn("compute.message_dead_lettered", { reason: parsed.reason, message_id: m.MessageId });
      await this.ack(m);
      return;
    }
    const msg: ReceivedComputeMessage = parsed.value;
    if (msg.host !== this.opts.host) {
      await sendToDeadLetter(
        this.dlqUrl,
        m.Body ?? "",
        `message for host ${msg.host} on ${this.opts.host}`,
        this.queueUrl,
      );
      await this.ack(m);
      return;
    }
    if (msg.kind === "terminate_instance") {
      // Destroy first, then give the claim back (Nova's order): the space is free only now.
      await this.opts.driver.destroy(msg.instance_uuid);
      if (msg.attempt !== undefined) await release(this.opts.host, msg.instance_uuid, msg.attempt);
      this.log.info("compute.terminated", { request_id: msg.request_id, instance_uuid: msg.instance_uuid });
    } else {
      // The queue's visibility timeout is short, so a message a crashed host held comes back
      // soon; a build that runs longer keeps its message hidden by extending it while it runs.
      const extend = () =>
        sqsClient()
          .send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: this.queueUrl,
              ReceiptHandle: m.ReceiptHandle,
              VisibilityTimeout: COMPUTE_QUEUE.visibilityTimeout,
            }),
          )
          .catch((e) =>
            this.log.warn("compute.visibility_extend_failed", { error: e, message_id: m.MessageId }),
          );
      const keepHidden = setInterval(extend, (COMPUTE_QUEUE.visibilityTimeout * 1000) / 3);
      try {
        await this.buildAndRun(msg);
      } finally {
        clearInterval(keepHidden);
      }
    }
    await this.ack(m);
  }

  /** Make messages this stopping agent received visible again right away, for its successor. */
  private async giveBack(messages: Message[]): Promise<void> {
    for (const m of messages) {
      await sqsClient()
        .send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: this.queueUrl,
            ReceiptHandle: m.ReceiptHandle,
            VisibilityTimeout: 0,
          }),
        )
        .catch((e) => this.log.warn("compute.give_back_failed", { error: e, message_id: m.MessageId }));
    }
  }

  private async ack(m: Message): Promise<void> {
    await sqsClient().send(
      new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: m.ReceiptHandle }),
    );
  }

  /** Nova's build_and_run_instance, with the reschedule on failure. */
  async buildAndRun(msg: ReceivedBuild): Promise<void> {
    const { instance_uuid: id, attempt: n } = msg;
    const host = this.opts.host;
    const rec = { id, request_id: msg.request_id };
    const log = this.log.child({ request_id: msg.request_id, instance_uuid: id, attempt: n });
    const started = new Date();
    const taken = await startSpawn(rec, host, n, event(EVENT_BUILD, n, null, host, null, started, null));
    switch (taken.outcome) {
      case "finished":
        // The guest and its claim are the instance's now, not waste to clean up.
        log.info("compute.duplicate_of_finished_build_ignored", { vm_state: taken.record.vm_state });
        return;
      case "fenced":
        // Deleted, or moved to a newer attempt: undo anything this host holds for it.
        await this.cleanUp(id, n);
        log.info("compute.build_fenced", {
          current_host: taken.record?.host,
          current_attempt: taken.record?.attempt,
        });
        return;
      case "failure-recorded":
        // This attempt failed before and the reschedule may not have gone out: finish it.
        await this.reschedule(
          msg,
          taken.record,
          taken.record.actions[msg.request_id]?.events[`${EVENT_BUILD}#${n}`]?.details ?? "build failed",
        );
        return;
      case "in-progress":
        if (this.building.has(id)) {
          log.info("compute.duplicate_build_ignored", {});
          return;
        }
        if (this.opts.driver.has(id)) {
          await this.finish(msg, started);
          return;
        }
        log.warn("compute.resuming_interrupted_build", {});
        break;
      case "started":
        break;
    }
    this.building.add(id);
    try {
      // What to build is the instance's record (taken just now), not the cast.
      await this.opts.driver.spawn(
        { instance_uuid: id, flavor: taken.record.flavor, image: taken.record.image },
        this.spawnAbort.signal,
      );
    } catch (e) {
      this.building.delete(id);
      if (this.killed) throw new Error(`host ${host} died while spawning ${id}`);
      const reason = e instanceof Error ? e.message : String(e);
      log.warn("compute.build_failed", { reason });
      const failed = await recordBuildFailure(
        rec,
        host,
        n,
        event(EVENT_BUILD, n, "Error", host, reason, started),
      );
      if (!failed) {
        await this.cleanUp(id, n);
        return;
      }
      await recordBuildResult(host, false);
      await this.reschedule(msg, failed, reason);
      return;
    }
    // Still "building" until recorded: a duplicate arriving meanwhile must not finish it again
    // (its markActive would fail and it would tear down the guest this one just recorded).
    try {
      if (this.killed) throw new Error(`host ${host} died before recording ${id}`);
      await this.finish(msg, started);
    } finally {
      this.building.delete(id);
    }
  }

  private async finish(msg: ReceivedBuild, started: Date): Promise<void> {
    const { instance_uuid: id, attempt: n } = msg;
    const active = await markActive(
      { id, request_id: msg.request_id },
      this.opts.host,
      n,
      event(EVENT_BUILD, n, "Success", this.opts.host, null, started),
    );
    if (!active) {
      // Deleted (or moved) while spawning: destroy what we built and give the claim back.
      await this.cleanUp(id, n);
      this.log.info("compute.built_but_fenced", {
        request_id: msg.request_id,
        instance_uuid: id,
        attempt: n,
      });
      return;
    }
    await recordBuildResult(this.opts.host, true);
    metrics.buildActive();
    this.log.info("compute.build_succeeded", { request_id: msg.request_id, instance_uuid: id, attempt: n });
  }

  private async cleanUp(id: string, attempt: number): Promise<void> {
    await this.opts.driver.destroy(id);
    await release(this.opts.host, id, attempt);
  }

  /**
   * The failure path (Nova's reschedule): give the claim back, then send the same build request
   * to the conductor again with the retry count, the hosts tried (the record's, this host last)
   * and the remaining alternates (the record's, kept with this attempt's placement; a cast from
   * before that carried them). The reason goes to the instance's owner if this was the last
   * attempt, so it leaves out the host names a driver's error may contain; the build event
   * keeps it whole, for admins.
   */
  private async reschedule(msg: ReceivedBuild, rec: InstanceRecord, reason: string): Promise<void> {
    const host = this.opts.host;
    const tried = [...rec.retry_hosts.filter((h) => h !== host), host];
    const alternates = (rec.alternates ?? msg.alternates ?? []).filter((a) => a.host !== host);
    await release(host, msg.instance_uuid, msg.attempt);
    await sendBuildRequest({
      version: 2,
      request_id: msg.request_id,
      reservation_id: rec.reservation_id,
      project_id: rec.project_id,
      user_id: rec.user_id,
      instance_uuids: [msg.instance_uuid],
      retry: {
        num_attempts: msg.attempt + 1,
        hosts: [...new Set(tried)],
        last_fault: rescheduledText(
          msg.instance_uuid,
          withoutHosts(reason, [...tried, ...alternates.map((a) => a.host)]),
        ),
      },
      alternates,
    });
    metrics.reschedule();
    this.log.info("compute.rescheduled", {
      request_id: msg.request_id,
      instance_uuid: msg.instance_uuid,
      attempt: msg.attempt,
      next_attempt: msg.attempt + 1,
      alternates: alternates.map((a) => a.host),
    });
  }
}
