// The steps of a guest's own life on this host: its build (Nova's _build_and_run_instance) and
// terminate, the power actions, a crash dump, interface attach and detach, and the API's questions
// (console output, diagnostics).
import type { Logger } from "../log.js";
import type {
  AttachInterface,
  BuildAndRunInstance,
  DetachInterface,
  GetConsoleOutput,
  GetDiagnostics,
  PowerAction,
  RefreshInstanceSecurityRules,
  RefreshPortFilters,
  SpawnInstance,
  TerminateInstance,
  TriggerCrashDump,
} from "../messages/compute.js";
import { tailLog } from "../messages/console-log.js";
import { type GuestPort, POWER_STATE } from "./drivers/driver.js";
import { GONE_KEPT, HostState } from "./host-state.js";

/** The console output a report carries at most (the API answers it whole; Lambda takes 6 MB a request). */
const CONSOLE_MAX_CHARS = 200_000;

/** How an interface attach or detach ended here, as its report says it. */
interface InterfaceOutcome {
  started_at: string;
  ok: boolean;
  not_supported?: true;
  details: string | null;
}

/** Ports whose last applied filters a host remembers (a late refresh is at most minutes behind). */
const FILTERS_KEPT = 20_000;

export class GuestSteps extends HostState {
  /**
   * The interface attaches and detaches this incarnation did, by request (bounded): a redelivered
   * cast is answered again as it ended, not done again (a detach repeated after the port came back
   * would take it off the guest).
   */
  private readonly interfaceOps = new Map<string, InterfaceOutcome>();
  /** when the filter last applied to each port was computed (a refresh older than that is stale) */
  private readonly filtersAt = new Map<string, number>();

  /** Taken: compute-events fences it (host, attempt) and answers with what to spawn. */
  protected async buildStarted(msg: BuildAndRunInstance): Promise<void> {
    await this.reporter.send("build_started", {
      request_id: msg.request_id,
      instance_uuid: msg.instance_uuid,
      attempt: msg.attempt,
      started_at: new Date().toISOString(),
    });
  }

  /** Nova's _build_and_run_instance: spawn, then report the outcome (the failure path is compute-events'). */
  protected async spawn(msg: SpawnInstance, log: Logger): Promise<void> {
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

  /** Nova's terminate_instance: destroy first; compute-events gives the claim back once it is gone (Nova's order). */
  protected async terminate(msg: TerminateInstance, log: Logger): Promise<void> {
    this.tombstone(msg.instance_uuid, msg.attempt ?? Number.POSITIVE_INFINITY);
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
  }

  /**
   * Nova's stop_instance, start_instance, reboot_instance, pause_instance, unpause_instance,
   * suspend_instance, resume_instance, soft_delete_instance and restore_instance (the last two as
   * Nova's fallback for a driver without soft_delete and restore: power off at once, power on).
   */
  protected async powerAction(msg: PowerAction, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const what = { request_id: msg.request_id, instance_uuid: id, action: msg.action };
    const type = msg.action === "reboot" ? { reboot_type: msg.reboot_type ?? "SOFT" } : {};
    const { started, ok, details } = await this.act(
      id,
      async () => {
        await this.reporter.send("action_started", { ...what, ...type });
        if (msg.action === "stop") {
          if (this.driver.has(id)) await this.driver.powerOff(id);
        } else if (msg.action === "soft_delete") {
          // Nova's _power_off_instance(clean_shutdown=False): no shutdown_timeout to wait out
          if (this.driver.has(id)) await this.driver.powerOff(id, 0);
        } else if (!this.driver.has(id)) {
          // The guest is gone from this host (a host reboot took it): create it again from the
          // instance, as Nova's hard reboot and start recreate the domain from the database.
          if (!msg.guest) throw new Error(`instance ${id} is not defined on host ${this.host}`);
          if (this.gone.has(id))
            throw new Error(
              `instance ${id} was terminated on host ${this.host}: a ${msg.action} does not bring it back`,
            );
          await this.driver.spawn(msg.guest);
        } else if (msg.action === "start" || msg.action === "restore") await this.driver.powerOn(id);
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

  /** Nova's trigger_crash_dump: the driver's NMI, or Nova's TriggerCrashDumpNotSupported. */
  protected async crashDump(msg: TriggerCrashDump, log: Logger): Promise<void> {
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
   * Nova's attach_interface and detach_interface (the compute manager's): the driver's hot-plug or
   * unplug of the port's NIC, or Nova's AttachInterfaceNotSupported where the driver has none.
   * compute-events settles the attachment from the report (the network info, the port freed on a
   * failure or a detach).
   */
  protected async interfaceStep(msg: AttachInterface | DetachInterface, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const attach = msg.kind === "attach_interface";
    let outcome = this.interfaceOps.get(msg.request_id);
    if (outcome) {
      log.info("compute.interface_step_repeated", { kind: msg.kind, ok: outcome.ok });
    } else {
      const hotplug = attach ? this.driver.attachInterface : this.driver.detachInterface;
      if (!hotplug) {
        outcome = {
          started_at: new Date().toISOString(),
          ok: false,
          not_supported: true,
          details: `Attaching interfaces is not supported for instance ${id}: the ${this.driver.hypervisorType} driver on host ${this.host} cannot hot-plug a NIC.`,
        };
      } else if (!this.driver.has(id)) {
        outcome = {
          started_at: new Date().toISOString(),
          ok: false,
          details: `instance ${id} is not defined on host ${this.host}`,
        };
      } else {
        const { started, ok, details } = await this.act(
          id,
          () => hotplug.call(this.driver, id, msg.port),
          (d) =>
            log.warn("compute.interface_step_failed", {
              kind: msg.kind,
              port_id: msg.port.port_id,
              details: d,
            }),
        );
        outcome = { started_at: started, ok, details };
      }
      this.interfaceOps.set(msg.request_id, outcome);
      if (this.interfaceOps.size > GONE_KEPT)
        this.interfaceOps.delete(this.interfaceOps.keys().next().value!);
    }
    await this.reporter.send(attach ? "attach_interface_done" : "detach_interface_done", {
      request_id: msg.request_id,
      instance_uuid: id,
      port_id: msg.port.port_id,
      ...outcome,
    });
    log.info("compute.interface_step_done", { kind: msg.kind, port_id: msg.port.port_id, ok: outcome.ok });
  }

  /**
   * Nova's refresh_instance_security_rules (a cast still queued from before refresh_port_filters):
   * the guest's ports' filters enforced again, as one server of a host's refresh.
   */
  protected async refreshSecurityRules(msg: RefreshInstanceSecurityRules, log: Logger): Promise<void> {
    await this.applyFilters(msg.instance_uuid, msg.ports, msg.computed_at, log);
  }

  /**
   * Neutron's agent applying a member or rule update to its ports: for each of this host's guests
   * named, its ports' filters enforced again through the driver's applyPortFilters (a driver
   * without it cannot isolate a guest: nothing to do). A guest not here (moved, deleted, not yet
   * spawned: its spawn carries its filters) is left alone; a port's filter computed before the one
   * applied to it last (SQS reordered them) is ignored. No report answers it: the next change, or
   * the guest's next cast, carries the filters again.
   */
  protected async refreshPortFilters(msg: RefreshPortFilters, log: Logger): Promise<void> {
    for (const { instance_uuid, ports } of msg.instances)
      await this.applyFilters(instance_uuid, ports, msg.computed_at, log.child({ instance_uuid }));
  }

  private async applyFilters(
    id: string,
    ports: readonly GuestPort[],
    computedAt: number,
    log: Logger,
  ): Promise<void> {
    if (!this.driver.applyPortFilters) {
      log.debug("compute.port_filters_not_enforced", { driver: this.driver.hypervisorType });
      return;
    }
    if (!this.driver.has(id)) {
      log.info("compute.port_filters_guest_not_here", {});
      return;
    }
    const key = (p: GuestPort) => `${id}/${p.port_id}`;
    const fresh = ports.filter((p) => (this.filtersAt.get(key(p)) ?? -1) <= computedAt);
    if (fresh.length < ports.length)
      log.info("compute.port_filters_stale", {
        computed_at: computedAt,
        ports: ports.filter((p) => !fresh.includes(p)).map((p) => p.port_id),
      });
    if (!fresh.length) return;
    try {
      await this.driver.applyPortFilters(id, fresh);
      for (const p of fresh) {
        this.filtersAt.delete(key(p));
        this.filtersAt.set(key(p), computedAt);
      }
      while (this.filtersAt.size > FILTERS_KEPT) this.filtersAt.delete(this.filtersAt.keys().next().value!);
      log.info("compute.port_filters_applied", { ports: fresh.length });
    } catch (e) {
      log.warn("compute.port_filters_failed", { error: e, host: this.host });
    }
  }

  /** os-getConsoleOutput: the log's end, the last `length` lines when asked. */
  protected async consoleOutput(msg: GetConsoleOutput): Promise<void> {
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
  protected async diagnostics(msg: GetDiagnostics): Promise<void> {
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
