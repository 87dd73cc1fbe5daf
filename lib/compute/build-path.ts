// What a compute host does with one message from its queue, whatever brought the message in: the
// long-polling agent (agent.ts, `novaless-compute`) and the local fleet simulator share it, so a
// simulated host parses, spawns, stops and dead-letters exactly as a real one. Hosts never touch
// the database (Nova's nova-compute and its conductor): every outcome is a report to
// compute-events, whose consumer fences it on (host, attempt) and answers on this queue.
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  type Message,
} from "@aws-sdk/client-sqs";
import { sqsClient } from "../aws/clients.js";
import { FunctionUrlError, postToFunctionUrl, retryableStatus } from "../aws/function-url.js";
import { sendToDeadLetter } from "../aws/send.js";
import { type Logger, logger } from "../log.js";
import { parseJsonMessage } from "../messages/build-request.js";
import {
  type GetConsoleOutput,
  type GetDiagnostics,
  type MoveStepMessage,
  type PowerAction,
  type ReceivedComputeMessage,
  receivedComputeMessage,
  type ShelveInstance,
  type SnapshotInstance,
  type SpawnInstance,
  type TriggerCrashDump,
  type UnshelveInstance,
} from "../messages/compute.js";
import { tailLog } from "../messages/console-log.js";
import { type ComputeReport, computeReport, type ReportBody } from "../messages/reports.js";
import type { Inventory, ResourceClass } from "../placement-rules.js";
import { COMPUTE_QUEUE, DLQ_SUFFIX } from "../resources.js";
import { type Driver, type GuestSpec, POWER_STATE, type PowerState } from "./drivers/driver.js";
import type { HeartbeatClock } from "./heartbeat.js";
import type { SnapshotData } from "./image-store.js";
import { LivePath } from "./live-path.js";
import { computeQueueName } from "./queue-name.js";
import { MemorySpoolStore, ReportSpool, type SpoolStore } from "./spool.js";

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

/** The console output a report carries at most (the API answers it whole; Lambda takes 6 MB a request). */
const CONSOLE_MAX_CHARS = 200_000;

/**
 * Registration and heartbeats are sent as they are, not spooled: the agent waits for its
 * registration to start, and only the latest heartbeat matters. So are the answers to the API's
 * questions (console output, diagnostics): the API waits for them a few seconds, and a late one
 * is read by nobody. Each is tried for about a minute at most (20 tries, each wait at most 10 s,
 * about 66 s on average), then given up; a heartbeat's successor is due a report_interval later.
 */
const DIRECT_RETRIES = { maxAttempts: 20, baseDelayMs: 100, maxDelayMs: 10_000 } as const;
const NOT_SPOOLED: ReadonlySet<ComputeReport["kind"]> = new Set([
  "register",
  "heartbeat",
  "console_output",
  "diagnostics",
]);

/**
 * One try of a spooled report: compute-events runs for 30 s at most, so a try that hangs past
 * that and a margin is given up and tried again (the spool decides when).
 */
const SPOOLED_TRY_MS = 35_000;

/** What sending a report gives: for a spooled one, kept; `delivered` says when compute-events applied it. */
export interface Sent {
  delivered: Promise<boolean>;
}

/**
 * Sends this host's reports to compute-events, through its function URL (AWS_IAM). Every report
 * that answers a cast, or says something of an instance, goes through the host's spool
 * (spool.ts): kept before `send` resolves, then delivered in order per instance, across restarts
 * and outages. The spool's store outlives this incarnation; start and stop its sender with the agent.
 */
export class Reporter {
  readonly spool: ReportSpool;

  constructor(
    readonly host: string,
    private readonly eventsUrl: string,
    /**
     * Runs a send as the host's own session whatever the caller's context (a process hosting
     * many hosts, as the local runtime does, stops one from another's context): compute-events
     * trusts a report only from the session of the host it speaks for.
     */
    private readonly asHost: <T>(fn: () => T) => T = (fn) => fn(),
    store: SpoolStore = new MemorySpoolStore(),
    private readonly log: Logger = logger({ host }),
  ) {
    this.spool = new ReportSpool(
      store,
      (body, signal) =>
        this.asHost(() =>
          postToFunctionUrl(this.eventsUrl, body, {
            maxAttempts: 1,
            attemptTimeoutMs: SPOOLED_TRY_MS,
            signal,
          }),
        ).then(() => undefined),
      log,
    );
  }

  async send<K extends ComputeReport["kind"]>(
    kind: K,
    body: Omit<ReportBody<K>, "kind">,
    /** gives up a report sent directly (a stopping agent's registration) */
    signal?: AbortSignal,
  ): Promise<Sent> {
    const report = computeReport.parse({
      version: 1,
      kind,
      host: this.host,
      sent_at: new Date().toISOString(),
      ...body,
    });
    const json = JSON.stringify(report);
    if (!NOT_SPOOLED.has(kind) && "instance_uuid" in report)
      return this.spool.add(report.instance_uuid, json);
    // Signed as the host's session: compute-events reads who sent it from the signature.
    const post = () =>
      this.asHost(() => postToFunctionUrl(this.eventsUrl, json, { ...DIRECT_RETRIES, signal }));
    if (kind !== "register") {
      await post();
      return { delivered: Promise.resolve(true) };
    }
    // Registration is tried until compute-events answers, or the agent stops: an agent started
    // during an outage of compute-events comes up as it ends, its spool with it. A refusal (a
    // 4xx other than 429: the host's credentials, its report) ends the start: an operator must look.
    for (;;) {
      try {
        await post();
        return { delivered: Promise.resolve(true) };
      } catch (e) {
        if (signal?.aborted || (e instanceof FunctionUrlError && !retryableStatus(e.status))) throw e;
        // a line a minute or so for the operator (a wrong events_url looks the same)
        this.log.warn("compute.register_waiting", { error: e, events_url: this.eventsUrl });
      }
    }
  }
}

/** How a step of a move (cold, live, an evacuation or a rebuild) ended on this host, reported and logged. */
export async function reportMoveStep(
  reporter: Pick<Reporter, "send">,
  msg: Pick<ReportBody<"move_step">, "request_id" | "instance_uuid" | "migration_uuid" | "attempt"> & {
    kind: ReportBody<"move_step">["step"];
  },
  outcome: { started: string; ok: boolean; details: string | null; power: PowerState },
  log: Logger,
): Promise<Sent> {
  const { started, ok, details, power } = outcome;
  const sent = await reporter.send("move_step", {
    step: msg.kind,
    request_id: msg.request_id,
    instance_uuid: msg.instance_uuid,
    migration_uuid: msg.migration_uuid,
    attempt: msg.attempt,
    started_at: started,
    ok,
    details,
    power_state: power as 0,
  });
  log.info("compute.move_step_done", { step: msg.kind, ok, power_state: power });
  return sent;
}

export interface RegisterOptions {
  computeQueuePrefix: string;
  /** how long to wait for compute-events to create this host's queues (ms) */
  queueWaitMs?: number;
  signal?: AbortSignal;
  /**
   * Resolves once SQS created the queue of this name (the local simulator's doorbell), so a fleet
   * registering at once waits for its queues without polling; asked before the report is sent.
   */
  queueCreated?: (queueName: string) => Promise<void>;
}

/**
 * Nova's compute service start: report the host (inventory, hypervisor, the guests it runs) and
 * wait for its queues, which compute-events creates and tags with the host's name (the host may
 * not create queues). What every transport does before it takes messages.
 */
export async function registerComputeHost(
  h: HostIdentity,
  reporter: Reporter,
  opts: RegisterOptions,
): Promise<HostQueue> {
  const d = h.driver;
  const name = computeQueueName(opts.computeQueuePrefix, h.host, DLQ_SUFFIX);
  let created = opts.queueCreated?.(name);
  await reporter.send(
    "register",
    {
      availability_zone: h.availability_zone,
      host_ip: h.host_ip,
      inventories: h.inventories as Record<string, Inventory>,
      hypervisor_type: d.hypervisorType,
      hypervisor_version: d.hypervisorVersion,
      facts: d.facts(),
      guests: d.list(),
    },
    opts.signal,
  );
  const waitMs = opts.queueWaitMs ?? 60_000;
  const deadline = Date.now() + waitMs;
  for (let pause = 50; ; pause = Math.min(2000, pause * 2)) {
    try {
      const queue = await sqsClient().send(new GetQueueUrlCommand({ QueueName: name }), {
        abortSignal: opts.signal,
      });
      // compute-events creates the DLQ first, beside the queue: its URL is the queue's and the suffix
      return { queueUrl: queue.QueueUrl!, dlqUrl: `${queue.QueueUrl!}${DLQ_SUFFIX}` };
    } catch (e) {
      // Not there yet, or not tagged for this host yet: SQS says one or the other.
      const code = (e as { name?: string }).name ?? "";
      const waiting = /QueueDoesNotExist|NonExistentQueue|AccessDenied/.test(code);
      if (waiting && created) {
        // the doorbell rings when compute-events has created the queue (or at the deadline)
        const left = deadline - Date.now();
        await Promise.race([created, new Promise((r) => setTimeout(r, Math.max(0, left)).unref())]);
        created = undefined;
        continue;
      }
      if (!waiting || Date.now() + pause > deadline || opts.signal?.aborted) {
        throw new Error(
          `compute host ${h.host}: queue ${name} was not ready within ${waitMs / 1000} s of registering ` +
            `(${code}: ${(e as Error).message}); compute-events creates it: is the stack's ComputeEvents function running?`,
        );
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/**
 * One host's build path (Nova's ComputeManager, reduced): a message in, the work done and
 * reported, the message deleted; or left undeleted when the host dies on it. One per agent
 * incarnation: a restarted host gets a new one, as a restarted nova-compute process starts with
 * nothing in flight.
 */
/** Destroyed guests a host remembers (a late message is at most minutes behind). */
const GONE_KEPT = 10_000;

export class BuildPath {
  /** instances this incarnation is spawning right now */
  private readonly building = new Set<string>();
  /** instances a power action is working on: their state changes are not lifecycle events */
  private readonly acting = new Set<string>();
  /** aborts in-flight spawns (hand-back, kill) */
  private readonly spawnAbort = new AbortController();
  private dead = false;
  /** the power state last delivered per guest (the sync reports changes) */
  private readonly reported = new Map<string, number>();
  /**
   * The power state of each guest's latest report still waiting in the spool: it counts as
   * reported once delivered, and the sync does not spool the same again meanwhile.
   */
  private readonly spooledPower = new Map<string, { power: number }>();
  /** the rebuild (its token and attempt) each guest was last rebuilt for by this incarnation */
  private readonly rebuiltFor = new Map<string, string>();
  /**
   * Guests this incarnation destroyed, oldest first, with the attempt they went at (Infinity: a
   * terminate that names none, a delete's). The host reads no database, so it cannot see that a
   * server was deleted or rebuilt elsewhere, and SQS may hand it a message twice or late:
   * - a start that finds such a guest gone does not create it again (a failed move's start of
   *   its source guest and the delete's terminate reach the host in either order; Nova
   *   serializes them per instance, and its start then finds the instance deleted);
   * - a spawn of an attempt that already failed or was terminated here is not built again (a
   *   redelivered spawn after the build was rescheduled elsewhere).
   * A spawn of a later attempt, or a move step here, makes the instance welcome again.
   */
  private readonly gone = new Map<string, number>();

  /** the live migrations' steps (lib/compute/live-path.ts) */
  private readonly live: LivePath;

  constructor(
    private readonly host: string,
    private readonly driver: Driver,
    private readonly reporter: Reporter,
    private readonly log: Logger,
  ) {
    this.live = new LivePath(
      host,
      driver,
      reporter,
      this.acting,
      (id) => this.forgetPower(id),
      () => this.dead,
    );
    driver.onLifecycle((id, power) => {
      if (this.dead || this.acting.has(id) || this.building.has(id)) return;
      this.reportPower(id, power, "lifecycle");
    });
  }

  /** the host died: abandon in-flight work mid-way, report nothing more */
  /** messages this host parked in its dead-letter queue (the agent reports its DLQ while not empty) */
  deadLettered = 0;

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

  /** builds in flight here (Nova's num_io_ops) */
  get inFlight(): number {
    return this.building.size;
  }

  /**
   * A failed build was reported since the last success: the next success's report resets
   * failed_builds (registration resets them: a restarted service starts from 0, as Nova's).
   */
  private failedSinceSuccess = false;
  /** builds that ended since a heartbeat last carried in_flight, and the count one took */
  private ended = 0;
  private endedTaken = 0;

  /** a report settled num_io_ops since the last heartbeat check (at most one does a check) */
  private settledThisCheck = false;

  /** The in_flight a heartbeat carries: while a build ended since one last did. A new check. */
  heartbeatIo(): { in_flight?: number } {
    this.settledThisCheck = false;
    if (this.ended === 0) return {};
    this.endedTaken = this.ended;
    return { in_flight: this.inFlight };
  }

  /** That heartbeat was sent: what it carried is written (a build ended since is still owed). */
  heartbeatSent(): void {
    this.ended -= this.endedTaken;
    this.endedTaken = 0;
  }

  /**
   * A build ended: the next heartbeat carries in_flight (a report that set it already makes
   * that one write more, on a rare path). A success says whether failures came before it, so
   * that only then does its report reset failed_builds. A success that leaves nothing in flight
   * settles num_io_ops itself, once a heartbeat check (compute-events writes it, fenced or not):
   * every build ended so far is settled and the heartbeat owes none of them. So a host that
   * builds a server now and then pays one write a build and no heartbeat for it, and a busy one
   * at most that write and one heartbeat's a report_interval.
   */
  private buildEnded(
    ok: boolean,
    inFlight: number,
  ): { in_flight: number; after_failures?: boolean; settles_io_ops?: boolean } {
    this.ended++;
    if (!ok) {
      this.failedSinceSuccess = true;
      return { in_flight: inFlight };
    }
    const after_failures = this.failedSinceSuccess;
    this.failedSinceSuccess = false;
    if (inFlight > 0 || this.settledThisCheck) return { in_flight: inFlight, after_failures };
    this.settledThisCheck = true;
    this.ended = 0;
    this.endedTaken = 0;
    return { in_flight: inFlight, after_failures, settles_io_ops: true };
  }

  /**
   * Nova's _sync_power_states from the host's side: the guests whose power state changed since
   * last reported (all of them with `all`); compute-events compares with the database.
   */
  async syncPowerStates(all = false): Promise<number> {
    let sent = 0;
    for (const g of this.driver.list()) {
      if (this.acting.has(g.instance_uuid) || this.building.has(g.instance_uuid)) continue;
      const waiting = this.spooledPower.get(g.instance_uuid)?.power;
      // the same is on its way already (an outage would otherwise pile up one a sync)
      if (waiting === g.power_state) continue;
      if (!all && waiting === undefined && this.reported.get(g.instance_uuid) === g.power_state) continue;
      await this.reportPower(g.instance_uuid, g.power_state, "sync");
      sent++;
    }
    return sent;
  }

  private async reportPower(id: string, power: number, cause: "lifecycle" | "sync"): Promise<void> {
    await this.sendPower(id, power, () =>
      this.reporter.send("power_state", { instance_uuid: id, power_state: power as 0, cause }),
    ).catch((e) => this.log.warn("compute.power_state_report_failed", { error: e, instance_uuid: id }));
  }

  /**
   * Sends a report that carries guest `id`'s power state; the state counts as reported only once
   * compute-events applied it (a report still in the spool, or refused, has told it nothing).
   */
  private async sendPower(id: string, power: number, send: () => Promise<Sent>): Promise<void> {
    const mark = { power };
    this.spooledPower.set(id, mark);
    let sent: Sent;
    try {
      sent = await send();
    } catch (e) {
      if (this.spooledPower.get(id) === mark) this.spooledPower.delete(id);
      throw e;
    }
    void sent.delivered.then((applied) => {
      // a later report of this guest is on its way: it decides
      if (this.spooledPower.get(id) !== mark) return;
      this.spooledPower.delete(id);
      if (applied && this.driver.has(id)) this.reported.set(id, power);
    });
  }

  /** The guest left this host: what was reported of it is forgotten. */
  private forgetPower(id: string): void {
    this.reported.delete(id);
    this.spooledPower.delete(id);
  }

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
    const log = this.log.child({ request_id: msg.request_id, instance_uuid: msg.instance_uuid });
    // Hidden while its work runs and until its report is spooled; deleted only then: a host that
    // dies before leaves the cast to SQS, one that dies after leaves the report in its spool.
    await this.keepHidden(m, queue, () => this.perform(msg, log));
    await this.ack(m, queue);
  }

  /** What a cast asks of this host, done and reported (each report spooled before this resolves). */
  private async perform(msg: ReceivedComputeMessage, log: Logger): Promise<void> {
    switch (msg.kind) {
      case "build_and_run_instance":
        // Taken: compute-events fences it (host, attempt) and answers with what to spawn.
        await this.reporter.send("build_started", {
          request_id: msg.request_id,
          instance_uuid: msg.instance_uuid,
          attempt: msg.attempt,
          started_at: new Date().toISOString(),
        });
        break;
      case "spawn_instance":
        await this.spawn(msg, log);
        break;
      case "terminate_instance":
        this.tombstone(msg.instance_uuid, msg.attempt ?? Number.POSITIVE_INFINITY);
        // Destroy first; compute-events gives the claim back once it is gone (Nova's order).
        await this.driver.destroy(msg.instance_uuid);
        this.forgetPower(msg.instance_uuid);
        this.rebuiltFor.delete(msg.instance_uuid);
        await this.reporter.send("guest_destroyed", {
          request_id: msg.request_id,
          instance_uuid: msg.instance_uuid,
          ...(msg.attempt !== undefined ? { attempt: msg.attempt } : {}),
          ...(msg.migration_uuid ? { migration_uuid: msg.migration_uuid } : {}),
        });
        log.info("compute.terminated", {});
        break;
      case "power_action":
        await this.powerAction(msg, log);
        break;
      case "get_console_output":
        await this.consoleOutput(msg);
        break;
      case "get_diagnostics":
        await this.diagnostics(msg);
        break;
      case "snapshot_instance":
        await this.snapshot(msg, log);
        break;
      case "shelve_instance":
        await this.shelveStep(msg, log);
        break;
      case "unshelve_instance":
        await this.unshelveStep(msg, log);
        break;
      case "trigger_crash_dump":
        await this.crashDump(msg, log);
        break;
      case "rebuild_instance":
      case "resize_instance":
      case "finish_resize":
      case "confirm_resize":
      case "revert_resize":
      case "finish_revert_resize":
        await this.moveStep(msg, log);
        break;
      case "pre_live_migration":
      case "live_migration":
      case "post_live_migration_at_destination":
        // a live migration to this host makes the instance welcome again
        if (msg.kind === "pre_live_migration") this.gone.delete(msg.instance_uuid);
        await this.live.step(msg, log);
        break;
      case "live_migration_control":
        this.live.control(msg, log);
        break;
    }
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

  /** Nova's _build_and_run_instance: spawn, then report the outcome (the failure path is compute-events'). */
  private async spawn(msg: SpawnInstance, log: Logger): Promise<void> {
    const { instance_uuid: id, attempt } = msg;
    const build = { request_id: msg.request_id, instance_uuid: id, attempt };
    const goneAt = this.gone.get(id);
    if (goneAt !== undefined && goneAt >= attempt) {
      // its outcome again (at-least-once): the attempt ended here, a copy must not come back
      log.info("compute.spawn_of_ended_attempt_ignored", { attempt, ended_at_attempt: goneAt });
      await this.reporter.send("build_failed", {
        ...build,
        started_at: new Date().toISOString(),
        reason: `attempt ${attempt} of instance ${id} already ended on host ${this.host}`,
        in_flight: this.inFlight,
      });
      return;
    }
    this.gone.delete(id);
    if (this.building.has(id)) {
      log.info("compute.duplicate_spawn_ignored", {});
      return;
    }
    const started = new Date().toISOString();
    if (this.driver.has(id)) {
      // Built already (a duplicate, or a restart after the spawn): say so again.
      await this.reporter.send("build_succeeded", {
        ...build,
        started_at: started,
        ...this.buildEnded(true, this.inFlight),
      });
      return;
    }
    this.building.add(id);
    try {
      await this.driver.spawn(msg.guest, this.spawnAbort.signal);
    } catch (e) {
      this.building.delete(id);
      // A dead host reports nothing: its message stays, the watchdog owns the build.
      if (this.dead) throw new Error(`host ${this.host} died while spawning ${id}`);
      const reason = e instanceof Error ? e.message : String(e);
      log.warn("compute.build_failed", { reason, attempt });
      // Nothing half-built stays behind for the next attempt elsewhere.
      this.tombstone(id, attempt);
      await this.driver.destroy(id).catch((d) => log.warn("compute.cleanup_failed", { error: d }));
      await this.reporter.send("build_failed", {
        ...build,
        started_at: started,
        reason,
        ...this.buildEnded(false, this.inFlight),
      });
      return;
    }
    try {
      if (this.dead) throw new Error(`host ${this.host} died before reporting ${id}`);
      await this.sendPower(id, this.driver.powerState(id), () =>
        this.reporter.send("build_succeeded", {
          ...build,
          started_at: started,
          // this one is still in `building` until the report is spooled
          ...this.buildEnded(true, this.inFlight - 1),
        }),
      );
      log.info("compute.build_succeeded", { attempt });
    } finally {
      this.building.delete(id);
    }
  }

  /**
   * One step on guest `id`, the guest marked as acted on while it runs (its power changes are not
   * lifecycle events): when it began, whether it went through, and what went wrong (`failed` logs
   * it and cleans up). A step that went through may `note` something of it (an offload that failed).
   */
  private async act(
    id: string,
    step: (note: (details: string) => void) => Promise<unknown>,
    failed: (details: string) => Promise<void> | void,
  ): Promise<{ started: string; ok: boolean; details: string | null }> {
    const started = new Date().toISOString();
    let noted: string | null = null;
    this.acting.add(id);
    try {
      await step((details) => {
        noted = details;
      });
      return { started, ok: true, details: noted };
    } catch (e) {
      const details = e instanceof Error ? e.message : String(e);
      await failed(details);
      return { started, ok: false, details };
    } finally {
      this.acting.delete(id);
    }
  }

  /** The guest's power state after a step (what was reported of a guest now gone is forgotten). */
  private settledPower(id: string): PowerState {
    if (!this.driver.has(id)) this.forgetPower(id);
    return this.driver.powerState(id);
  }

  /** Remembers a destroyed guest and its attempt (bounded: the oldest are forgotten first). */
  private tombstone(id: string, attempt: number): void {
    const at = Math.max(attempt, this.gone.get(id) ?? 0);
    this.gone.delete(id);
    this.gone.set(id, at);
    if (this.gone.size > GONE_KEPT) this.gone.delete(this.gone.keys().next().value!);
  }

  /**
   * Nova's stop_instance, start_instance, reboot_instance, pause_instance, unpause_instance,
   * suspend_instance and resume_instance.
   */
  private async powerAction(msg: PowerAction, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const what = { request_id: msg.request_id, instance_uuid: id, action: msg.action };
    const type = msg.action === "reboot" ? { reboot_type: msg.reboot_type ?? "SOFT" } : {};
    const { started, ok, details } = await this.act(
      id,
      async () => {
        await this.reporter.send("action_started", { ...what, ...type });
        if (msg.action === "stop") {
          if (this.driver.has(id)) await this.driver.powerOff(id);
        } else if (!this.driver.has(id)) {
          // The guest is gone from this host (a host reboot took it): create it again from the
          // instance, as Nova's hard reboot and start recreate the domain from the database.
          if (!msg.guest) throw new Error(`instance ${id} is not defined on host ${this.host}`);
          if (this.gone.has(id))
            throw new Error(
              `instance ${id} was terminated on host ${this.host}: a ${msg.action} does not bring it back`,
            );
          await this.driver.spawn(msg.guest);
        } else if (msg.action === "start") await this.driver.powerOn(id);
        else if (msg.action === "reboot") await this.driver.reboot(id, msg.reboot_type ?? "SOFT");
        else await this.driver[msg.action](id);
      },
      (details) => log.warn("compute.power_action_failed", { action: msg.action, details }),
    );
    const power = this.driver.powerState(id);
    await this.sendPower(id, power, () =>
      this.reporter.send("action_done", {
        ...what,
        ...type,
        started_at: started,
        ok,
        details,
        power_state: power as 0,
      }),
    );
    log.info("compute.power_action_done", { action: msg.action, ok, power_state: power });
  }

  /**
   * A step of a resize, cold migration, evacuation or rebuild, then its report. Each is safe to
   * repeat: the source powers its guest off (and keeps it until confirm or revert), the
   * destination creates the guest with the new flavor unless it has it, confirm and revert destroy
   * the copy that is no longer wanted, finish_revert_resize brings the old guest back, and a
   * rebuild re-spawns the guest from its image once per rebuild. A same-host move has one guest:
   * it is replaced in place, and confirm leaves it alone.
   */
  private async moveStep(msg: MoveStepMessage, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    this.gone.delete(id);
    const { started, ok, details } = await this.act(
      id,
      async () => {
        switch (msg.kind) {
          case "rebuild_instance": {
            // a rebuild on its own host, or an evacuation's destination: the guest anew from its
            // image (what was there goes first); a redelivered cast of one done here is only
            // reported again, so nothing is rebuilt twice
            const token = `${msg.migration_uuid}#${msg.attempt}`;
            if (this.rebuiltFor.get(id) === token && this.driver.has(id)) break;
            if (this.driver.has(id)) await this.driver.destroy(id);
            await this.guestAs(msg.guest, msg.power_on);
            this.rebuiltFor.set(id, token);
            break;
          }
          case "resize_instance":
            if (this.driver.has(id)) await this.driver.powerOff(id);
            break;
          case "finish_resize":
            if (msg.same_host || !this.driver.has(id)) {
              if (msg.same_host) await this.driver.destroy(id);
              await this.guestAs(msg.guest, msg.power_on);
            }
            break;
          case "confirm_resize":
            if (!msg.same_host) await this.driver.destroy(id);
            break;
          case "revert_resize":
            await this.driver.destroy(id);
            break;
          case "finish_revert_resize":
            if (!this.driver.has(id)) await this.guestAs(msg.guest, msg.power_on);
            else if (msg.power_on && this.driver.powerState(id) !== POWER_STATE.RUNNING)
              await this.driver.powerOn(id);
            break;
        }
      },
      async (details) => {
        log.warn("compute.move_step_failed", { step: msg.kind, details });
        // a destination that failed keeps nothing half-built for the next one
        if ((msg.kind === "finish_resize" && !msg.same_host) || msg.kind === "rebuild_instance") {
          await this.driver.destroy(id).catch((d) => log.warn("compute.cleanup_failed", { error: d }));
        }
      },
    );
    if (this.dead) throw new Error(`host ${this.host} died during ${msg.kind} of ${id}`);
    const power = this.settledPower(id);
    await this.sendPower(id, power, () =>
      reportMoveStep(this.reporter, msg, { started, ok, details, power }, log),
    );
  }

  /**
   * Nova's shelve_instance (power off, snapshot, and offload at once when shelved_offload_time is
   * 0), shelve_offload_instance (destroy: compute-events gives the claim back once it is gone)
   * and, for an unshelve of a SHELVED server, start_instance. Each is safe to repeat: a guest
   * already off or gone is left so, and the report says where it is.
   */
  private async shelveStep(msg: ShelveInstance, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    let image: SnapshotData | undefined;
    const { started, ok, details } = await this.act(
      id,
      async (note) => {
        if (msg.op === "start") {
          if (!this.driver.has(id)) {
            // the host lost it (a host reboot): created again, as Nova's start recreates the domain
            if (!msg.guest) throw new Error(`instance ${id} is not defined on host ${this.host}`);
            this.gone.delete(id);
            await this.driver.spawn(msg.guest);
          } else if (this.driver.powerState(id) !== POWER_STATE.RUNNING) await this.driver.powerOn(id);
        } else {
          if (
            msg.op === "shelve" &&
            this.driver.has(id) &&
            this.driver.powerState(id) !== POWER_STATE.SHUTDOWN
          )
            await this.driver.powerOff(id);
          // Nova's shelve snapshots the stopped guest into the image the API created (once: a
          // redelivered cast finds it taken), each stage of its upload reported
          if (
            msg.op === "shelve" &&
            msg.image_id &&
            this.driver.has(id) &&
            !this.snapshotted.has(msg.image_id)
          ) {
            const imageId = msg.image_id;
            image = await this.driver.snapshot(id, imageId, async (stage) => {
              await this.reporter.send("shelve_progress", {
                request_id: msg.request_id,
                instance_uuid: id,
                attempt: msg.attempt,
                image_id: imageId,
                stage,
              });
            });
            this.snapshotted.add(msg.image_id);
          }
          if (msg.offload) {
            try {
              this.tombstone(id, msg.attempt);
              await this.driver.destroy(id);
            } catch (e) {
              // shelved all the same (Nova saves SHELVED before it offloads): the guest stays here
              if (msg.op !== "shelve") throw e;
              note(`offload failed: ${e instanceof Error ? e.message : String(e)}`);
            }
          }
        }
      },
      (details) => log.warn("compute.shelve_failed", { op: msg.op, details }),
    );
    if (this.dead) throw new Error(`host ${this.host} died during the ${msg.op} of ${id}`);
    const power = this.settledPower(id);
    await this.sendPower(id, power, () =>
      this.reporter.send("shelve_done", {
        op: msg.op,
        request_id: msg.request_id,
        instance_uuid: id,
        attempt: msg.attempt,
        started_at: started,
        ok,
        offloaded: !this.driver.has(id) && msg.op !== "start",
        image_id: msg.image_id,
        ...(image ? { image } : {}),
        details,
        power_state: power as 0,
      }),
    );
    log.info("compute.shelve_done", { op: msg.op, ok, power_state: power });
  }

  /** Nova's trigger_crash_dump: the driver's NMI, or Nova's TriggerCrashDumpNotSupported. */
  private async crashDump(msg: TriggerCrashDump, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const started = new Date().toISOString();
    let details: string | null = null;
    try {
      if (!this.driver.triggerCrashDump)
        throw new Error(
          `Triggering crash dump is not supported: the ${this.driver.hypervisorType} driver on host ${this.host} cannot send instance ${id} an NMI`,
        );
      if (!this.driver.has(id)) throw new Error(`instance ${id} is not defined on host ${this.host}`);
      await this.driver.triggerCrashDump(id);
    } catch (e) {
      details = e instanceof Error ? e.message : String(e);
      log.warn("compute.crash_dump_failed", { details });
    }
    await this.reporter.send("crash_dump_done", {
      request_id: msg.request_id,
      instance_uuid: id,
      started_at: started,
      ok: details === null,
      details,
    });
  }

  /**
   * Nova's unshelve_instance on the host the conductor chose: the guest from its shelved image. A
   * redelivered cast of one done here is only reported again, so nothing is spawned twice; a
   * spawn that failed leaves nothing behind for the next host.
   */
  private async unshelveStep(msg: UnshelveInstance, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const token = `${msg.unshelve_uuid}#${msg.attempt}`;
    const { started, ok, details } = await this.act(
      id,
      async () => {
        // this attempt was terminated here already (its report was fenced): a redelivered cast of
        // it builds nothing again; an earlier offload's tombstone is for an older attempt
        if ((this.gone.get(id) ?? -1) >= msg.attempt)
          throw new Error(`instance ${id} (attempt ${msg.attempt}) was terminated on host ${this.host}`);
        if (this.rebuiltFor.get(id) !== token || !this.driver.has(id)) {
          if (this.driver.has(id)) await this.driver.destroy(id);
          await this.driver.spawn(msg.guest, this.spawnAbort.signal);
          this.rebuiltFor.set(id, token);
        }
      },
      async (details) => {
        log.warn("compute.unshelve_failed", { details });
        await this.driver.destroy(id).catch((d) => log.warn("compute.cleanup_failed", { error: d }));
      },
    );
    if (this.dead) throw new Error(`host ${this.host} died during the unshelve of ${id}`);
    const power = this.settledPower(id);
    await this.sendPower(id, power, () =>
      this.reporter.send("unshelve_done", {
        request_id: msg.request_id,
        instance_uuid: id,
        unshelve_uuid: msg.unshelve_uuid,
        attempt: msg.attempt,
        started_at: started,
        ok,
        details,
        power_state: power as 0,
      }),
    );
    log.info("compute.unshelve_done", { ok, power_state: power });
  }

  /** Create the guest, and leave it shut down when the server was stopped. */
  private async guestAs(guest: GuestSpec, powerOn: boolean): Promise<void> {
    await this.driver.spawn(guest, this.spawnAbort.signal);
    if (!powerOn) await this.driver.powerOff(guest.instance_uuid);
  }

  /** images this incarnation snapshotted: a redelivered cast does not take one twice */
  private readonly snapshotted = new Set<string>();

  /**
   * Nova's snapshot_instance and backup_instance: the driver captures and uploads the image, each
   * stage reported (compute-events moves the task state and the image on), then the outcome.
   */
  private async snapshot(msg: SnapshotInstance, log: Logger): Promise<void> {
    if (this.snapshotted.has(msg.image_id)) return;
    this.snapshotted.add(msg.image_id);
    if (this.snapshotted.size > GONE_KEPT) this.snapshotted.delete(this.snapshotted.values().next().value!);
    const id = msg.instance_uuid;
    const what = { request_id: msg.request_id, instance_uuid: id, image_id: msg.image_id };
    let data: SnapshotData | undefined;
    const { started, details } = await this.act(
      id,
      async () => {
        await this.reporter.send("snapshot_progress", { ...what, task_state: "image_snapshot" });
        data = await this.driver.snapshot(id, msg.image_id, async (task_state) => {
          await this.reporter.send("snapshot_progress", { ...what, task_state });
        });
      },
      (details) => log.warn("compute.snapshot_failed", { image_id: msg.image_id, details }),
    );
    if (this.dead) throw new Error(`host ${this.host} died during the snapshot of ${id}`);
    const power = this.driver.powerState(id);
    await this.reporter.send("snapshot_done", {
      ...what,
      image_type: msg.image_type,
      started_at: started,
      ok: data !== undefined,
      details,
      ...(data ?? {}),
      power_state: power as 0,
    });
    log.info("compute.snapshot_done", { image_id: msg.image_id, ok: data !== undefined, size: data?.size });
  }

  /** os-getConsoleOutput: the log's end, the last `length` lines when asked. */
  private async consoleOutput(msg: GetConsoleOutput): Promise<void> {
    let output = "";
    let error: string | null = null;
    try {
      output = tailLog(await this.driver.consoleOutput(msg.instance_uuid, CONSOLE_MAX_CHARS), msg.length);
      output = output.slice(-CONSOLE_MAX_CHARS);
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
    }
    await this.reporter.send("console_output", {
      request_id: msg.request_id,
      instance_uuid: msg.instance_uuid,
      output,
      error,
    });
  }

  /**
   * Nova's get_instance_diagnostics: the driver's figures for a running guest; for one that is
   * not running, its power state (Nova's InstanceInvalidState); the driver's error otherwise.
   */
  private async diagnostics(msg: GetDiagnostics): Promise<void> {
    const id = msg.instance_uuid;
    const power = this.driver.powerState(id);
    const answer = { request_id: msg.request_id, instance_uuid: id, diagnostics: null, error: null };
    if (!this.driver.has(id)) {
      await this.reporter.send("diagnostics", {
        ...answer,
        error: `instance ${id} is not defined on host ${this.host}`,
      });
    } else if (power !== POWER_STATE.RUNNING) {
      await this.reporter.send("diagnostics", { ...answer, power_state: power as 0 });
    } else {
      try {
        await this.reporter.send("diagnostics", {
          ...answer,
          diagnostics: await this.driver.diagnostics(id),
        });
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        await this.reporter.send("diagnostics", {
          ...answer,
          error: `host ${this.host} cannot read the diagnostics of instance ${id}: ${why}`,
        });
      }
    }
  }
}

/**
 * One report_interval check of a host's heartbeat: what it carries (builds ended since the last,
 * dead letters, reports waiting in the spool), sent when news or when due (lib/compute/heartbeat.ts).
 */
export async function heartbeatCheck(
  clock: HeartbeatClock,
  reporter: Reporter,
  path: BuildPath,
  deadLetters: DeadLetterCount,
): Promise<void> {
  const spool = reporter.spool.state;
  const news = {
    ...deadLetters.heartbeat(),
    ...path.heartbeatIo(),
    // reports waiting are news: every check says so until they are delivered
    ...(spool.depth > 0
      ? { spooled_reports: spool.depth, spooled_oldest_seconds: spool.oldestAgeSeconds }
      : {}),
  };
  if (!clock.due(Object.keys(news).length > 0)) return;
  await reporter.send("heartbeat", news);
  clock.sent();
  path.heartbeatSent();
}

/**
 * The host's dead-letter queue as its heartbeats report it: SQS's count when last taken, plus
 * what this host parked since (SQS's approximate count may not show those yet). Per-host DLQs are
 * made at run time, so the stack's alarm learns of them only through these reports.
 */
export class DeadLetterCount {
  private counted = 0;
  private parkedBefore = 0;
  private countedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly path: BuildPath,
    private readonly dlqUrl: () => string,
  ) {}

  get value(): number {
    return this.counted + this.path.deadLettered - this.parkedBefore;
  }

  /** What a heartbeat carries: the count while not 0. */
  heartbeat(): { dead_letters?: number } {
    const n = this.value;
    return n > 0 ? { dead_letters: n } : {};
  }

  /** Count again when `everyMs` has passed since the last count (one GetQueueAttributes). */
  async recount(everyMs = 0): Promise<void> {
    if (Date.now() - this.countedAt < everyMs) return;
    const parkedBefore = this.path.deadLettered;
    const r = await sqsClient().send(
      new GetQueueAttributesCommand({
        QueueUrl: this.dlqUrl(),
        AttributeNames: ["ApproximateNumberOfMessages"],
      }),
    );
    this.counted = Number(r.Attributes?.ApproximateNumberOfMessages ?? 0);
    this.parkedBefore = parkedBefore;
    this.countedAt = Date.now();
  }
}
