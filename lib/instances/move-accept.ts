// A move accepted (resize, cold migration, evacuation), by the API or by the watchdog's automatic
// evacuation: quota for a resize up (usage counts the larger flavor until confirm or revert), the
// migration record, the instance's one conditional write (its task state, its MoveContext and the
// instance action), then the request to the conductor. Whatever fails after the reservation is
// undone, so a refused or failed request leaves nothing behind.
import { randomUUID } from "node:crypto";
import type { BuildRequest } from "../messages/build-request.js";
import type { FlavorSpec } from "../messages/common.js";
import { type Usage, upsizeDelta } from "../quotas/quotas.js";
import type { ReserveResult } from "../quotas/store.js";
import { ActionNotSent, acceptAction } from "./accept.js";
import type { createMigration, nextMigrationId, updateMigration } from "./migrations.js";
import type { beginMove } from "./move.js";
import { conductorRequest } from "./request-spec.js";
import type {
  ActionName,
  InstanceAction,
  InstanceRecord,
  MigrationRecord,
  MigrationStatus,
  MoveContext,
  TaskState,
} from "./types.js";
import { type abandonAction, WORKFLOWS } from "./workflows.js";

export type MoveKind = "resize" | "migration" | "evacuation" | "live-migration";

export interface MoveRequestSpec {
  kind: MoveKind;
  newFlavor: FlavorSpec;
  /** the host asked for (a migration's 2.56 host, an evacuation's), checked by the scheduler */
  requestedHost: string | null;
  /** a resize may stay on its host (allow_resize_to_same_host) */
  sameHostAllowed: boolean;
  /** an evacuation: the destination starts the server (false from 2.95) */
  powerOn?: boolean;
  /** a live migration forced to its requested host (2.30 to 2.67) */
  force?: boolean;
  /** a live migration's block_migration (null: "auto") */
  blockMigration?: boolean | null;
  action: InstanceAction;
}

export interface AcceptIo {
  nextMigrationId: typeof nextMigrationId;
  createMigration: typeof createMigration;
  updateMigration: typeof updateMigration;
  begin: typeof beginMove;
  abandon: typeof abandonAction;
  sendBuildRequest: (msg: BuildRequest) => Promise<void>;
  reserveDelta: (project: string, delta: Usage, user?: string) => Promise<ReserveResult>;
  releaseUsage: (project: string, delta: Usage, user?: string) => Promise<void>;
  now: () => Date;
}

export type AcceptResult =
  | { ok: true; migration: MigrationRecord }
  /** over quota (Nova's 403 text) */
  | { ok: false; reason: "quota"; message: string }
  /** the record changed between the caller's checks and the write (a 409 by its state now) */
  | { ok: false; reason: "state" };

/** The request did not reach the conductor; everything was undone. */
export class MoveNotQueued extends Error {
  override name = "MoveNotQueued";
}

/**
 * How each move begins: the instance action it records (Nova's instance_actions), the task state
 * it starts in (Nova: resize_prep, or rebuilding for an evacuation) and its migration's first
 * status (a live migration's `accepted`, as Nova's conductor has it; a cold move's pre-migrating).
 */
export const MOVE_BEGINS: Record<
  MoveKind,
  { action: ActionName; task: Exclude<TaskState, null>; status: MigrationStatus }
> = {
  resize: { action: "resize", task: "resize_prep", status: "pre-migrating" },
  migration: { action: "migrate", task: "resize_prep", status: "pre-migrating" },
  evacuation: { action: "evacuate", task: "rebuilding", status: "pre-migrating" },
  "live-migration": { action: "live-migration", task: "migrating", status: "accepted" },
};

/** The migration record of a move of `rec` as `spec` asks, numbered `id`, created `now`. */
export function migrationOf(
  rec: InstanceRecord,
  spec: MoveRequestSpec,
  id: number,
  now: string,
): MigrationRecord {
  return {
    uuid: randomUUID(),
    id,
    instance_uuid: rec.id,
    project_id: rec.project_id,
    user_id: rec.user_id,
    migration_type: spec.kind,
    status: MOVE_BEGINS[spec.kind].status,
    source_compute: rec.host!,
    source_node: rec.node ?? rec.host!,
    dest_compute: null,
    dest_node: null,
    dest_host: null,
    old_instance_type_id: rec.flavor.id,
    new_instance_type_id: spec.newFlavor.id,
    created_at: now,
    updated_at: now,
  };
}

/** The MoveContext the instance's record carries while `migration` is under way. */
export function moveContextOf(
  rec: InstanceRecord,
  migration: MigrationRecord,
  spec: MoveRequestSpec,
): MoveContext {
  return {
    uuid: migration.uuid,
    request_id: spec.action.request_id,
    id: migration.id,
    type: spec.kind,
    status: migration.status,
    source_host: migration.source_compute,
    source_node: migration.source_node,
    source_az: rec.availability_zone,
    source_attempt: rec.attempt,
    dest_host: null,
    dest_node: null,
    dest_az: null,
    attempt: null,
    old_flavor: rec.flavor,
    new_flavor: spec.newFlavor,
    old_vm_state: rec.vm_state === "stopped" ? "stopped" : "active",
    requested_host: spec.requestedHost,
    same_host_allowed: spec.sameHostAllowed,
    tried: [],
    ...(spec.powerOn === undefined ? {} : { power_on: spec.powerOn }),
    ...(spec.force ? { force: true } : {}),
    ...(spec.blockMigration === undefined ? {} : { block_migration: spec.blockMigration }),
  };
}

export async function acceptMove(
  rec: InstanceRecord,
  spec: MoveRequestSpec,
  io: AcceptIo,
): Promise<AcceptResult> {
  const delta = upsizeDelta(rec.flavor, spec.newFlavor);
  const reserved = await io.reserveDelta(rec.project_id, delta, rec.user_id);
  if (!reserved.ok) return { ok: false, reason: "quota", message: reserved.message };
  const migration = migrationOf(rec, spec, await io.nextMigrationId(), io.now().toISOString());
  const move = moveContextOf(rec, migration, spec);
  const giveBack = () => io.releaseUsage(rec.project_id, delta, rec.user_id);
  const { task } = MOVE_BEGINS[spec.kind];
  try {
    await io.createMigration(migration);
    const begun = await acceptAction(
      {
        instance_uuid: rec.id,
        request_id: spec.action.request_id,
        write: () => io.begin(rec, move, spec.action, task),
        abandon: () => io.abandon(rec.id, task, { workflow: WORKFLOWS.move, uuid: migration.uuid }),
      },
      () =>
        io.sendBuildRequest({
          ...conductorRequest(rec, spec.action.request_id),
          move: { migration_uuid: migration.uuid, base_attempt: rec.attempt },
        }),
    );
    if (begun) return { ok: true, migration };
    await io.updateMigration(migration.uuid, [migration.status], "error");
    await giveBack();
    return { ok: false, reason: "state" };
  } catch (e) {
    if (!(e instanceof ActionNotSent)) {
      await giveBack();
      throw e;
    }
    await io.updateMigration(migration.uuid, [migration.status], "error");
    await giveBack();
    const why = (e.cause as Error).message;
    throw new MoveNotQueued(`the move of instance ${rec.id} could not be queued: ${why}`);
  }
}
