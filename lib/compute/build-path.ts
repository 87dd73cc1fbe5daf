// What a compute host does with one message from its queue, whatever brought the message in: the
// long-polling agent (agent.ts, `novaless-compute`) and the local fleet simulator share it, so a
// simulated host parses, fences, releases, reschedules and dead-letters exactly as a real one.
// Every instance write is fenced on (host, attempt), so a zombie host or a duplicated message
// changes nothing.
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, type Message } from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { ensureQueueWithDlq } from "../aws/queues.js";
import { sendBuildRequest, sendToDeadLetter } from "../conductor/queues.js";
import { resources } from "../config.js";
import { rescheduledText, withoutHosts } from "../instances/faults.js";
import { EVENT_BUILD, event, markActive, recordBuildFailure, startSpawn } from "../instances/repo.js";
import type { InstanceRecord } from "../instances/types.js";
import type { Logger } from "../log.js";
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
import type { Driver, GuestSpec } from "./drivers/driver.js";
import { computeQueueName } from "./queue-name.js";

/** What a compute host is: its name, place, size and hypervisor. */
export interface HostIdentity {
  host: string;
  availability_zone: string;
  inventories: Partial<Record<ResourceClass, Inventory>>;
  host_ip: string;
  driver: Driver;
}

/** A host's own queue and its dead-letter queue. */
export interface HostQueue {
  queueUrl: string;
  dlqUrl: string;
}

/**
 * Nova's compute service start: create the host's queue (idempotent), register the host with its
 * inventory and report it alive. What every transport does before it takes messages.
 */
export async function registerComputeHost(h: HostIdentity, log: Logger): Promise<HostQueue> {
  const q = await ensureQueueWithDlq(
    computeQueueName(resources().computeQueuePrefix, h.host, DLQ_SUFFIX),
    COMPUTE_QUEUE,
  );
  const d = h.driver;
  try {
    await registerHost({
      host: h.host,
      availability_zone: h.availability_zone,
      inventories: h.inventories,
      hypervisor_type: d.hypervisorType,
      hypervisor_version: d.hypervisorVersion,
      host_ip: h.host_ip,
      supported_instances: [["x86_64", d.hypervisorType, "hvm"]],
      queue_url: q.queueUrl,
    });
  } catch (e) {
    // Less than is allocated (Placement's InventoryInUse): as Nova's resource tracker, say so
    // and keep serving on the inventory Placement has, rather than refuse to start.
    if (!(e instanceof PlacementConflict)) throw e;
    log.error("compute.inventory_conflict", { error: e, inventories: h.inventories });
  }
  // Up from now on, and a host the liveness sweep had marked down comes back at once.
  await heartbeat(h.host);
  return { queueUrl: q.queueUrl, dlqUrl: q.dlqUrl };
}

/**
 * One host's build path: a message in, the build (or teardown) done and the message deleted, or
 * left undeleted when the host dies on it. One per agent incarnation: a restarted host gets a new
 * one, as a restarted nova-compute process starts with nothing in flight.
 */
export class BuildPath {
  /** instances this incarnation is spawning right now */
  private readonly building = new Set<string>();
  /** aborts in-flight spawns (hand-back, kill) */
  private readonly spawnAbort = new AbortController();
  private dead = false;

  constructor(
    private readonly host: string,
    private readonly driver: Driver,
    private readonly log: Logger,
  ) {}

  /** the host died: abandon in-flight builds mid-way, write nothing more */
  kill(): void {
    this.dead = true;
    this.spawnAbort.abort();
  }

  get killed(): boolean {
    return this.dead;
  }

  /** interrupt in-flight spawns: each is handed back through the failure path */
  handBack(): void {
    this.spawnAbort.abort();
  }

  /** Handle one received message of `queue`; it is deleted once handled. */
  async handle(m: Message, queue: HostQueue): Promise<void> {
    const parsed = parseJsonMessage(receivedComputeMessage, m.Body ?? "");
    if (!parsed.ok) {
      await sendToDeadLetter(queue.dlqUrl, m.Body ?? "", parsed.reason, queue.queueUrl);
      this.log.warn("compute.message_dead_lettered", { reason: parsed.reason, message_id: m.MessageId });
      await this.ack(m, queue);
      return;
    }
    const msg: ReceivedComputeMessage = parsed.value;
    if (msg.host !== this.host) {
      await sendToDeadLetter(
        queue.dlqUrl,
        m.Body ?? "",
        `message for host ${msg.host} on ${this.host}`,
        queue.queueUrl,
      );
      await this.ack(m, queue);
      return;
    }
    if (msg.kind === "terminate_instance") {
      // Destroy first, then give the claim back (Nova's order): the space is free only now.
      await this.driver.destroy(msg.instance_uuid);
      if (msg.attempt !== undefined) await release(this.host, msg.instance_uuid, msg.attempt);
      this.log.info("compute.terminated", { request_id: msg.request_id, instance_uuid: msg.instance_uuid });
    } else {
      // The queue's visibility timeout is short, so a message a crashed host held comes back
      // soon; a build that runs longer keeps its message hidden by extending it while it runs.
      const extend = () =>
        sqsClient()
          .send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: queue.queueUrl,
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
    await this.ack(m, queue);
  }

  /** Make messages a stopping host received visible again right away, for its successor. */
  async giveBack(messages: Message[], queue: HostQueue): Promise<void> {
    for (const m of messages) {
      await sqsClient()
        .send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: queue.queueUrl,
            ReceiptHandle: m.ReceiptHandle,
            VisibilityTimeout: 0,
          }),
        )
        .catch((e) => this.log.warn("compute.give_back_failed", { error: e, message_id: m.MessageId }));
    }
  }

  private async ack(m: Message, queue: HostQueue): Promise<void> {
    await sqsClient().send(
      new DeleteMessageCommand({ QueueUrl: queue.queueUrl, ReceiptHandle: m.ReceiptHandle }),
    );
  }

  /** Nova's build_and_run_instance, with the reschedule on failure. */
  async buildAndRun(msg: ReceivedBuild): Promise<void> {
    const { instance_uuid: id, attempt: n } = msg;
    const host = this.host;
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
        if (this.driver.has(id)) {
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
      await this.driver.spawn(
        guestSpecOf(taken.record),
        this.spawnAbort.signal,
      );
    } catch (e) {
      this.building.delete(id);
      if (this.dead) throw new Error(`host ${host} died while spawning ${id}`);
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
      await recordBuildResult(host, false, this.building.size);
      await this.reschedule(msg, failed, reason);
      return;
    }
    // Still "building" until recorded: a duplicate arriving meanwhile must not finish it again
    // (its markActive would fail and it would tear down the guest this one just recorded).
    try {
      if (this.dead) throw new Error(`host ${host} died before recording ${id}`);
      await this.finish(msg, started);
    } finally {
      this.building.delete(id);
    }
  }

  private async finish(msg: ReceivedBuild, started: Date): Promise<void> {
    const { instance_uuid: id, attempt: n } = msg;
    const active = await markActive(
      { id, request_id: msg.request_id },
      this.host,
      n,
      event(EVENT_BUILD, n, "Success", this.host, null, started),
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
    // This build still counts as in flight here (finish runs before its `building` entry goes).
    const others = [...this.building].filter((b) => b !== id).length;
    await recordBuildResult(this.host, true, others);
    metrics.buildActive();
    this.log.info("compute.build_succeeded", { request_id: msg.request_id, instance_uuid: id, attempt: n });
  }

  private async cleanUp(id: string, attempt: number): Promise<void> {
    await this.driver.destroy(id);
    await release(this.host, id, attempt);
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
    const host = this.host;
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

/** What the driver builds, from the instance's record. */
export function guestSpecOf(r: InstanceRecord): GuestSpec {
  return {
    instance_uuid: r.id,
    name: r.name,
    hostname: r.hostname ?? r.name,
    project_id: r.project_id,
    user_id: r.user_id,
    flavor: r.flavor,
    image: r.image,
    metadata: r.metadata,
    key_name: r.key_name ?? null,
    user_data: r.user_data ?? null,
    config_drive: r.config_drive ?? false,
  };
}
