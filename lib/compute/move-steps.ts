// The steps that move a guest or make an image of it: a resize, cold migration, evacuation or
// rebuild, a live migration (live-path.ts), a shelve and unshelve, a snapshot or backup.
import type { Logger } from "../log.js";
import type {
  LiveMigrationStepMessage,
  MoveStepMessage,
  ShelveInstance,
  SnapshotInstance,
  UnshelveInstance,
} from "../messages/compute.js";
import { POWER_STATE } from "./drivers/driver.js";
import { GuestSteps } from "./guest-steps.js";
import { GONE_KEPT } from "./host-state.js";
import type { SnapshotData } from "./image-store.js";
import { reportMoveStep } from "./reporter.js";

export class MoveSteps extends GuestSteps {
  /**
   * A step of a resize, cold migration, evacuation or rebuild, then its report. Each is safe to
   * repeat. A driver that carries the guest's disk (its `cold`: libvirt) does Nova's
   * migrate_disk_and_power_off on the source, finish_migration on the destination, and
   * confirm_migration or finish_revert_migration on the source. Another (fake, exec) has the source
   * power its guest off and keep it until confirm or revert, the destination create the guest
   * anew from its image with the new flavor unless it has it, and confirm and revert destroy the
   * copy that is no longer wanted; a same-host move there has one guest, replaced in place, which
   * confirm leaves alone. finish_revert_resize brings the old guest back, and a rebuild re-spawns
   * the guest from its image once per rebuild.
   */
  protected async moveStep(msg: MoveStepMessage, log: Logger): Promise<void> {
    const id = msg.instance_uuid;
    const cold = this.driver.cold;
    const move = { uuid: msg.migration_uuid, sameHost: msg.same_host };
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
            if (!this.driver.has(id)) break;
            if (cold) await cold.migrateDiskAndPowerOff(id, move, msg.new_flavor);
            else await this.driver.powerOff(id);
            break;
          case "finish_resize":
            if (cold) await cold.finishMigration(msg.guest, move, msg.power_on);
            else if (msg.same_host || !this.driver.has(id)) {
              if (msg.same_host) await this.driver.destroy(id);
              await this.guestAs(msg.guest, msg.power_on);
            }
            break;
          case "confirm_resize":
            if (cold) await cold.confirmMigration(id, move);
            else if (!msg.same_host) await this.driver.destroy(id);
            break;
          case "revert_resize":
            // on its own host a carried disk's guest gives way in finish_revert_resize, to the one
            // kept (Nova's destroy without its disks there)
            if (!(cold && msg.same_host)) await this.driver.destroy(id);
            break;
          case "finish_revert_resize":
            if (cold && this.driver.has(id)) await cold.finishRevertMigration(msg.guest, move, msg.power_on);
            else if (!this.driver.has(id)) await this.guestAs(msg.guest, msg.power_on);
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

  /** A live migration's step; one to this host makes the instance welcome again. */
  protected async liveStep(msg: LiveMigrationStepMessage, log: Logger): Promise<void> {
    if (msg.kind === "pre_live_migration") this.gone.delete(msg.instance_uuid);
    await this.live.step(msg, log);
  }

  /**
   * Nova's shelve_instance (power off, snapshot, and offload at once when shelved_offload_time is
   * 0), shelve_offload_instance (destroy: compute-events gives the claim back once it is gone)
   * and, for an unshelve of a SHELVED server, start_instance. Each is safe to repeat: a guest
   * already off or gone is left so, and the report says where it is.
   */
  protected async shelveStep(msg: ShelveInstance, log: Logger): Promise<void> {
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

  /**
   * Nova's unshelve_instance on the host the conductor chose: the guest from its shelved image. A
   * redelivered cast of one done here is only reported again, so nothing is spawned twice; a
   * spawn that failed leaves nothing behind for the next host.
   */
  protected async unshelveStep(msg: UnshelveInstance, log: Logger): Promise<void> {
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

  /**
   * Nova's snapshot_instance and backup_instance: the driver captures and uploads the image, each
   * stage reported (compute-events moves the task state and the image on), then the outcome.
   */
  protected async snapshot(msg: SnapshotInstance, log: Logger): Promise<void> {
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
}
