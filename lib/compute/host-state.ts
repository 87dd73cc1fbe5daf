// What one incarnation of a compute host knows of its guests (Nova's ComputeManager's memory):
// what is being built or acted on, what was destroyed, what power state was reported; and the
// helpers every step shares. guest-steps.ts and move-steps.ts add the steps, build-path.ts the
// message loop.
import type { Logger } from "../log.js";
import type { Driver, GuestSpec, PowerState } from "./drivers/driver.js";
import { LivePath } from "./live-path.js";
import type { Reporter, Sent } from "./reporter.js";

/** Destroyed guests a host remembers (a late message is at most minutes behind). */
export const GONE_KEPT = 10_000;

export class HostState {
  /** instances this incarnation is spawning right now */
  protected readonly building = new Set<string>();
  /** instances a power action is working on: their state changes are not lifecycle events */
  protected readonly acting = new Set<string>();
  /** aborts in-flight spawns (hand-back, kill) */
  protected readonly spawnAbort = new AbortController();
  protected dead = false;
  /** the power state last delivered per guest (the sync reports changes) */
  private readonly reported = new Map<string, number>();
  /**
   * The power state of each guest's latest report still waiting in the spool: it counts as
   * reported once delivered, and the sync does not spool the same again meanwhile.
   */
  private readonly spooledPower = new Map<string, { power: number }>();
  /** the rebuild (its token and attempt) each guest was last rebuilt for by this incarnation */
  protected readonly rebuiltFor = new Map<string, string>();
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
  protected readonly gone = new Map<string, number>();

  /** the live migrations' steps (lib/compute/live-path.ts) */
  protected readonly live: LivePath;

  constructor(
    protected readonly host: string,
    protected readonly driver: Driver,
    protected readonly reporter: Reporter,
    protected readonly log: Logger,
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
  protected buildEnded(
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
  protected async sendPower(id: string, power: number, send: () => Promise<Sent>): Promise<void> {
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
  protected forgetPower(id: string): void {
    this.reported.delete(id);
    this.spooledPower.delete(id);
  }

  /**
   * One step on guest `id`, the guest marked as acted on while it runs (its power changes are not
   * lifecycle events): when it began, whether it went through, and what went wrong (`failed` logs
   * it and cleans up). A step that went through may `note` something of it (an offload that failed).
   */
  protected async act(
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
  protected settledPower(id: string): PowerState {
    if (!this.driver.has(id)) this.forgetPower(id);
    return this.driver.powerState(id);
  }

  /** Remembers a destroyed guest and its attempt (bounded: the oldest are forgotten first). */
  protected tombstone(id: string, attempt: number): void {
    const at = Math.max(attempt, this.gone.get(id) ?? 0);
    this.gone.delete(id);
    this.gone.set(id, at);
    if (this.gone.size > GONE_KEPT) this.gone.delete(this.gone.keys().next().value!);
  }

  /** Create the guest, and leave it shut down when the server was stopped. */
  protected async guestAs(guest: GuestSpec, powerOn: boolean): Promise<void> {
    await this.driver.spawn(guest, this.spawnAbort.signal);
    if (!powerOn) await this.driver.powerOff(guest.instance_uuid);
  }

  /** images this incarnation snapshotted: a redelivered cast does not take one twice */
  protected readonly snapshotted = new Set<string>();
}
