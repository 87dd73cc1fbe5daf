// What a compute host does with one message from its queue, whatever brought the message in: the
// long-polling agent (agent.ts, `novaless-compute`) and the local fleet simulator share it, so a
// simulated host parses, spawns, stops and dead-letters exactly as a real one. Hosts never touch
// the database (Nova's nova-compute and its conductor): every outcome is a report to
// compute-events, whose consumer fences it on (host, attempt) and answers on this queue.
// The host's steps are in guest-steps.ts and move-steps.ts (on host-state.ts), its reports in
// reporter.ts, its start in register.ts; this file is the message loop and its dispatch table.
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  type Message,
} from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { DeleteBatch, SQS_BATCH_MAX } from "../aws/delete-batch.js";
import { sendToDeadLetter } from "../aws/send.js";
import type { Logger } from "../log.js";
import { parseJsonMessage } from "../messages/build-request.js";
import {
  type LiveMigrationStepMessage,
  type MoveStepMessage,
  type ReceivedComputeMessage,
  receivedComputeMessage,
} from "../messages/compute.js";
import { COMPUTE_QUEUE } from "../resources.js";
import { MoveSteps } from "./move-steps.js";
import type { HostQueue } from "./register.js";

// What the agent and the local simulator take from here, in one import.
export { DeadLetterCount, heartbeatCheck } from "./heartbeat-check.js";
export { type HostIdentity, type HostQueue, registerComputeHost } from "./register.js";
export { Reporter } from "./reporter.js";

/**
 * How long a handled message's delete waits for others of the host's queue to share its
 * DeleteMessageBatch. A build's two messages (its cast, then compute-events' spawn answer) and a
 * member sync's cast that come within it cost one delete request, not one each. Far under the
 * queue's visibility timeout (30 s, extended while work runs): a host that dies meanwhile leaves
 * the message to be handed out again, handled idempotently, as one that died just before its delete.
 */
export const DELETE_BATCH_WAIT_MS = 1000;

/**
 * A filters' refresh's delete waits longer, for the host's next other delete: a member sync casts
 * one to every host with members each window, and seen again (a host that died before its delete)
 * it changes nothing, as a refresh older than the filter a port has is ignored and the deletes go
 * in the order they waited. Still far under the visibility timeout.
 */
export const REFRESH_DELETE_WAIT_MS = 10_000;

type Kind = ReceivedComputeMessage["kind"];
type Step<K extends Kind> = (
  path: BuildPath,
  msg: Extract<ReceivedComputeMessage, { kind: K }>,
  log: Logger,
) => Promise<void> | void;

/**
 * One host's build path (Nova's ComputeManager, reduced): a message in, the work done and
 * reported, the message deleted; or left undeleted when the host dies on it. One per agent
 * incarnation: a restarted host gets a new one, as a restarted nova-compute process starts with
 * nothing in flight.
 */
export class BuildPath extends MoveSteps {
  /** What each cast asks of this host, by its kind (each report spooled before its step resolves). */
  private static readonly STEPS: { [K in Kind]: Step<K> } = (() => {
    const move = (p: BuildPath, m: MoveStepMessage, log: Logger) => p.moveStep(m, log);
    const live = (p: BuildPath, m: LiveMigrationStepMessage, log: Logger) => p.liveStep(m, log);
    return {
      build_and_run_instance: (p, m) => p.buildStarted(m),
      spawn_instance: (p, m, log) => p.spawn(m, log),
      terminate_instance: (p, m, log) => p.terminate(m, log),
      power_action: (p, m, log) => p.powerAction(m, log),
      get_console_output: (p, m) => p.consoleOutput(m),
      get_diagnostics: (p, m) => p.diagnostics(m),
      snapshot_instance: (p, m, log) => p.snapshot(m, log),
      shelve_instance: (p, m, log) => p.shelveStep(m, log),
      unshelve_instance: (p, m, log) => p.unshelveStep(m, log),
      trigger_crash_dump: (p, m, log) => p.crashDump(m, log),
      attach_interface: (p, m, log) => p.interfaceStep(m, log),
      detach_interface: (p, m, log) => p.interfaceStep(m, log),
      refresh_instance_security_rules: (p, m, log) => p.refreshSecurityRules(m, log),
      refresh_port_filters: (p, m, log) => p.refreshPortFilters(m, log),
      rebuild_instance: move,
      resize_instance: move,
      finish_resize: move,
      confirm_resize: move,
      revert_resize: move,
      finish_revert_resize: move,
      pre_live_migration: live,
      live_migration: live,
      post_live_migration_at_destination: live,
      live_migration_control: (p, m, log) => p.live.control(m, log),
    };
  })();

  /** messages this host parked in its dead-letter queue (the agent reports its DLQ while not empty) */
  deadLettered = 0;

  /** handled messages' deletes waiting for their batch, by queue */
  private readonly deletes = new Map<string, DeleteBatch>();
  /**
   * Deletes sent at once when this many wait: the host's concurrency (each handle waits on its
   * delete, so a full host would otherwise wait out DELETE_BATCH_WAIT_MS for room).
   */
  deleteBatchMax = SQS_BATCH_MAX;

  /** Handle one received message of `queue`; it is deleted once handled. */
  async handle(m: Message, queue: HostQueue): Promise<void> {
    const parsed = parseJsonMessage(receivedComputeMessage, m.Body ?? "");
    if (!parsed.ok) {
      await sendToDeadLetter(queue.dlqUrl, m.Body ?? "", parsed.reason, queue.queueUrl);
      this.deadLettered++;
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
      this.deadLettered++;
      await this.ack(m, queue);
      return;
    }
    const log = this.log.child({
      request_id: msg.request_id,
      // a host's filters' refresh names its servers inside
      ...("instance_uuid" in msg ? { instance_uuid: msg.instance_uuid } : {}),
    });
    // Hidden while its work runs and until its report is spooled; deleted only then: a host that
    // dies before leaves the cast to SQS, one that dies after leaves the report in its spool.
    await this.keepHidden(m, queue, () => this.perform(msg, log));
    await this.ack(m, queue, msg.kind === "refresh_port_filters" ? REFRESH_DELETE_WAIT_MS : undefined);
  }

  /** What a cast asks of this host, done and reported (each report spooled before this resolves). */
  private async perform(msg: ReceivedComputeMessage, log: Logger): Promise<void> {
    await (BuildPath.STEPS[msg.kind] as Step<Kind>)(this, msg, log);
  }

  /**
   * The queue's visibility timeout is short, so a message a crashed host held comes back soon;
   * work that runs longer keeps its message hidden by extending it while it runs.
   */
  private async keepHidden(m: Message, queue: HostQueue, work: () => Promise<void>): Promise<void> {
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
    const timer = setInterval(extend, (COMPUTE_QUEUE.visibilityTimeout * 1000) / 3);
    try {
      await work();
    } finally {
      clearInterval(timer);
    }
  }

  /** Make messages a stopping host received visible again right away, for its successor. */
  async giveBack(messages: Message[], queue: HostQueue): Promise<void> {
    // one receive's messages, so at most 10: one request
    for (let i = 0; i < messages.length; i += SQS_BATCH_MAX) {
      const part = messages.slice(i, i + SQS_BATCH_MAX);
      try {
        const out = await sqsClient().send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queue.queueUrl,
            Entries: part.map((m, k) => ({
              Id: String(k),
              ReceiptHandle: m.ReceiptHandle,
              VisibilityTimeout: 0,
            })),
          }),
        );
        for (const f of out.Failed ?? [])
          this.log.warn("compute.give_back_failed", {
            error: `${f.Code}${f.Message ? `: ${f.Message}` : ""}`,
            message_id: part[Number(f.Id)]?.MessageId,
          });
      } catch (e) {
        for (const m of part)
          this.log.warn("compute.give_back_failed", { error: e, message_id: m.MessageId });
      }
    }
  }

  /** Deleted with whatever else of the queue is handled within DELETE_BATCH_WAIT_MS. */
  private async ack(m: Message, queue: HostQueue, waitMs = DELETE_BATCH_WAIT_MS): Promise<void> {
    let batch = this.deletes.get(queue.queueUrl);
    if (!batch) {
      batch = new DeleteBatch(queue.queueUrl, {
        maxWaitMs: DELETE_BATCH_WAIT_MS,
        maxEntries: this.deleteBatchMax,
        owner: this.host,
      });
      this.deletes.set(queue.queueUrl, batch);
    }
    const deleted = batch.delete(m.ReceiptHandle ?? "", m.MessageId, waitMs);
    if (this.stopping) void batch.flush();
    await deleted;
  }

  /** a stop: deletes go at once, none waits for a batch */
  private stopping = false;

  /** A stop: the waiting deletes sent now, and every later one at once. (A dying host's are dropped.) */
  async flushDeletes(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.deletes.values()].map((b) => b.flush()));
  }

  /** The host died: its handled messages' deletes are never sent (SQS hands them out again). */
  override kill(): void {
    super.kill();
    for (const b of this.deletes.values()) b.drop(`host ${this.host} died`);
  }
}
