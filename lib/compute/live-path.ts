// A host's side of a live migration (Nova's compute manager pre_live_migration, live_migration,
// post_live_migration_at_destination, live_migration_force_complete and live_migration_abort),
// for BuildPath. Each step is done by the driver's live migration calls, then reported; the
// source's copy reports its progress while it runs. Every step is safe to repeat under
// at-least-once delivery: a copy under way is not started twice, a copy done already (the guest
// gone from here to the destination) is only reported again.
import type { Logger } from "../log.js";
import type { LiveMigrationControl, LiveMigrationStepMessage } from "../messages/compute.js";
import { type Driver, LiveMigrationAborted, type LiveMigrationDriver } from "./drivers/driver.js";
import { type Reporter, reportMoveStep } from "./reporter.js";

/** One copy under way on this source: its controls, and how it ended for repeated casts. */
interface Copy {
  token: string;
  abort: AbortController;
  forceComplete: AbortController;
  done: Promise<{ ok: boolean; details: string | null }>;
}

export class LivePath {
  /** copies under way or done from here, by instance (a redelivered cast finds its own) */
  private readonly copies = new Map<string, Copy>();
  /** controls that came before their copy began (an abort cast overtaking live_migration) */
  private readonly early = new Map<string, LiveMigrationControl["action"]>();

  constructor(
    private readonly host: string,
    private readonly driver: Driver,
    private readonly reporter: Reporter,
    /** guests the agent is acting on: their power-state changes are not lifecycle events */
    private readonly acting: Set<string>,
    /** the guest left this host: forget what was reported of it */
    private readonly forget: (instanceUuid: string) => void,
    private readonly isDead: () => boolean,
  ) {}

  /** A live migration's step on this host, then its report. */
  async step(msg: LiveMigrationStepMessage, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const started = new Date().toISOString();
    let ok = true;
    let details: string | null = null;
    const live = this.driver.live;
    try {
      if (!live) throw new Error(`the ${this.driver.hypervisorType} driver cannot live-migrate`);
      switch (msg.kind) {
        case "pre_live_migration":
          await live.preLiveMigration(msg.guest);
          break;
        case "live_migration":
          ({ ok, details } = await this.copy(msg, live, log));
          break;
        case "post_live_migration_at_destination":
          await live.postLiveMigrationAtDestination(msg.guest, { paused: msg.paused === true });
          // a paused server's guest stays paused (a driver that adopts it running pauses it now)
          if (msg.paused) await this.driver.pause(id);
          break;
      }
    } catch (e) {
      ok = false;
      details = e instanceof Error ? e.message : String(e);
      log.warn("compute.live_migration_step_failed", { step: msg.kind, details });
    }
    if (this.isDead()) throw new Error(`host ${this.host} died during ${msg.kind} of ${id}`);
    const power = this.driver.powerState(id);
    await reportMoveStep(this.reporter, msg, { started, ok, details, power }, log);
  }

  /** The source's copy: once per migration and attempt; a repeated cast waits for the same one. */
  private copy(
    msg: Extract<LiveMigrationStepMessage, { kind: "live_migration" }>,
    live: LiveMigrationDriver,
    log: Logger,
  ): Promise<{ ok: boolean; details: string | null }> {
    const id = msg.instance_uuid;
    const token = `${msg.migration_uuid}#${msg.attempt}`;
    const existing = this.copies.get(id);
    if (existing?.token === token) return existing.done;
    const abort = new AbortController();
    const forceComplete = new AbortController();
    const early = this.early.get(token);
    this.early.delete(token);
    if (early === "abort") abort.abort();
    if (early === "force_complete") forceComplete.abort();
    const run = async (): Promise<{ ok: boolean; details: string | null }> => {
      this.acting.add(id);
      try {
        await live.liveMigrate(
          id,
          { host: msg.dest, ip: msg.dest_ip, blockMigration: msg.block_migration },
          {
            abort: abort.signal,
            forceComplete: forceComplete.signal,
            onProgress: (p) => {
              // a dead host reports nothing more, and its copy stops where it is
              if (this.isDead()) return abort.abort();
              void this.reporter
                .send("live_migration_progress", {
                  request_id: msg.request_id,
                  instance_uuid: id,
                  migration_uuid: msg.migration_uuid,
                  attempt: msg.attempt,
                  ...p,
                })
                .catch((e) => log.warn("compute.live_migration_progress_failed", { error: e }));
            },
          },
        );
        this.forget(id);
        return { ok: true, details: null };
      } catch (e) {
        const details = e instanceof Error ? e.message : String(e);
        if (!(e instanceof LiveMigrationAborted)) log.warn("compute.live_migration_failed", { details });
        return { ok: false, details };
      } finally {
        this.acting.delete(id);
      }
    };
    const copy: Copy = { token, abort, forceComplete, done: run() };
    this.copies.set(id, copy);
    return copy.done;
  }

  /** force_complete or abort of the copy under way here; remembered when it has not begun yet. */
  control(msg: LiveMigrationControl, log: Logger): void {
    const token = `${msg.migration_uuid}#${msg.attempt}`;
    const copy = this.copies.get(msg.instance_uuid);
    if (copy?.token !== token) {
      this.early.set(token, msg.action);
      log.info("compute.live_migration_control_early", { action: msg.action });
      return;
    }
    (msg.action === "abort" ? copy.abort : copy.forceComplete).abort();
    log.info("compute.live_migration_control", { action: msg.action });
  }
}
