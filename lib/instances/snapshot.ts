// createImage and createBackup on the instance and its image (Nova's compute/api.py snapshot and
// backup, compute/utils.py create_image, compute/manager.py snapshot_instance, backup_instance and
// _rotate_backups). The API records the image (`queued`) and the task state with the instance
// action, then casts to the host; compute-events applies what the host reports: the task state
// through Nova's image_* states, the image `saving` then `active` with its data's figures (or
// deleted when the snapshot failed: Nova's delete_image_on_error), and a backup's rotation. Every
// write is conditioned on the state it expects, so a duplicated or late report changes nothing.
import { randomUUID } from "node:crypto";
import { deleteImageRecord, updateImage } from "../catalog/image-create.js";
import { getImage, listImages } from "../catalog/repo.js";
import type { Image } from "../catalog/types.js";
import { type ImageStore, type SnapshotData, s3ImageStore } from "../compute/image-store.js";
import type { SnapshotDoneReport, SnapshotProgressReport } from "../messages/reports.js";
import { eventKey, storedEvent } from "./codec.js";
import { getInstance } from "./queries.js";
import { endAction, eventFinished, eventStarted, transition } from "./transition.js";
import type { InstanceRecord, TaskState } from "./types.js";

export type ServerImageType = "snapshot" | "backup";

/** Nova's event names (compute/manager.py's wrap_instance_event on the two methods). */
export const SNAPSHOT_EVENTS: Record<ServerImageType, string> = {
  snapshot: "compute_snapshot_instance",
  backup: "compute_backup_instance",
};

/** The task state each begins with (Nova's IMAGE_SNAPSHOT_PENDING, IMAGE_BACKUP). */
export const SNAPSHOT_BEGIN_TASK: Record<ServerImageType, Exclude<TaskState, null>> = {
  snapshot: "image_snapshot_pending",
  backup: "image_backup",
};

const SNAPSHOT_TASKS: TaskState[] = [
  "image_snapshot_pending",
  "image_snapshot",
  "image_backup",
  "image_pending_upload",
  "image_uploading",
];
/** The task states of a snapshot or backup in progress. */
export const SNAPSHOT_TASK_STATES: ReadonlySet<TaskState> = new Set(SNAPSHOT_TASKS);

/** What each reported stage may follow (a backup stays image_backup until it is captured). */
const STAGE_FROM: Record<SnapshotProgressReport["task_state"], TaskState[]> = {
  image_snapshot: ["image_snapshot_pending", "image_backup"],
  image_pending_upload: ["image_snapshot", "image_backup"],
  image_uploading: ["image_pending_upload"],
};

/**
 * Properties an image made from a server does not inherit (Nova's [DEFAULT]
 * non_inheritable_image_properties and NON_INHERITABLE_IMAGE_PROPERTIES; the os_glance namespace).
 */
const NOT_INHERITED = new Set([
  "cache_in_nova",
  "bittorrent",
  "cinder_encryption_key_id",
  "cinder_encryption_key_deletion_policy",
  "img_signature",
  "img_signature_hash_method",
  "img_signature_key_type",
  "img_signature_certificate_uuid",
]);

let store: ImageStore | undefined;
const images = (): ImageStore => {
  store ??= s3ImageStore();
  return store;
};

/**
 * Nova's compute_utils.create_image: the new image's record, `queued`. It inherits the server's
 * image (its properties but the non-inheritable ones, min_ram, and min_disk at least the flavor's
 * root disk); Nova's own properties and the request's metadata take precedence. The requester's
 * project owns it: private when that is the server's project, else shared with the server's
 * project (`instance_owner`), as when an admin snapshots another's server.
 */
export async function serverImageRecord(
  rec: InstanceRecord,
  req: {
    name: string;
    type: ServerImageType;
    metadata: Record<string, string>;
    backupType?: string;
    rotation?: number;
    projectId: string;
    userId: string;
    now: Date;
  },
): Promise<Image> {
  const source = await getImage(rec.image.id);
  const inherited = Object.fromEntries(
    Object.entries(rec.image.properties).filter(([k]) => !NOT_INHERITED.has(k) && !k.startsWith("os_glance")),
  );
  // Nova's image_base_image_ref: the first image of the line, kept through snapshots of snapshots
  const base = inherited.base_image_ref ?? rec.image.id;
  // a snapshot's formats are the driver's, known once uploaded; a backup keeps its image's (Nova)
  if (req.type === "snapshot") {
    delete inherited.disk_format;
    delete inherited.container_format;
  }
  const shared = req.projectId !== rec.project_id;
  const at = req.now.toISOString();
  return {
    id: randomUUID(),
    name: req.name,
    status: "queued",
    min_ram: source?.min_ram ?? 0,
    min_disk: Math.max(source?.min_disk ?? 0, rec.flavor.root_gb),
    properties: {
      ...inherited,
      base_image_ref: base,
      instance_uuid: rec.id,
      user_id: req.userId,
      image_type: req.type,
      ...(req.backupType !== undefined ? { backup_type: req.backupType } : {}),
      ...req.metadata,
      ...(shared ? { instance_owner: rec.project_id } : {}),
    },
    created_at: at,
    updated_at: at,
    owner: req.projectId,
    visibility: shared ? "shared" : "private",
    ...(shared ? { members: [rec.project_id] } : {}),
    ...(req.rotation !== undefined ? { rotation: req.rotation } : {}),
  };
}

const typeOf = (rec: InstanceRecord, requestId: string): ServerImageType =>
  rec.actions[requestId]?.action === "createBackup" ? "backup" : "snapshot";

/**
 * compute-events: a stage of the snapshot on its host. The task state moves on (Nova's
 * update_task_state, each from the state it expects); the host taking it starts the action's
 * event; uploading makes the image `saving`. False when fenced (deleted, moved, the snapshot
 * over, or a stage that arrived after a later one: SQS does not keep their order).
 */
export async function snapshotProgress(r: SnapshotProgressReport): Promise<boolean> {
  const rec = await getInstance(r.instance_uuid);
  if (!rec || rec.deleted || rec.host !== r.host || !rec.actions[r.request_id]) return false;
  if (!STAGE_FROM[r.task_state].includes(rec.task_state)) return false;
  const next =
    r.task_state === "image_snapshot" && rec.task_state === "image_backup" ? "image_backup" : r.task_state;
  const set = ["task_state = :next", "updated_at = :now"];
  const names: Record<string, string> = { "#rid": r.request_id };
  const values: Record<string, unknown> = {
    ":next": next,
    ":now": r.sent_at,
    ":false": false,
    ":h": r.host,
    ":seen": rec.task_state,
  };
  if (r.task_state === "image_snapshot") {
    const ev = eventStarted(SNAPSHOT_EVENTS[typeOf(rec, r.request_id)], rec.attempt, r);
    set.push("actions.#rid.events.#ev = :ev");
    names["#ev"] = eventKey(ev.event, ev.attempt);
    values[":ev"] = storedEvent(ev);
  }
  const updated = await transition(r.instance_uuid, {
    set,
    condition: "deleted = :false AND host = :h AND attribute_exists(actions.#rid) AND task_state = :seen",
    names,
    values,
  });
  if (updated && r.task_state === "image_uploading") await imageSaving(r.image_id, r.sent_at);
  return updated !== undefined;
}

/** Glance's `saving`: a host is uploading the image's data (a snapshot's, a backup's, a shelve's). */
export async function imageSaving(imageId: string, at: string): Promise<void> {
  await updateImage(imageId, ["queued"], { status: "saving", updated_at: at });
}

/**
 * Glance's delete of an image a server made, its data too. Nova's delete_image_on_error keeps an
 * image that went active (`unlessActive`).
 */
export async function deleteServerImage(id: string, opts: { unlessActive?: boolean } = {}): Promise<boolean> {
  const image = await getImage(id);
  if (!image || image.id !== id || (opts.unlessActive && image.status === "active")) return false;
  await deleteImageRecord(id);
  if (image.size) await images().remove(id);
  return true;
}

/**
 * Nova's _rotate_backups: of the server's backups of this type, newest first, those beyond
 * `rotation` are deleted (with rotation 0, the new one too).
 */
async function rotateBackups(image: Image): Promise<string[]> {
  const p = image.properties;
  if (image.rotation === undefined) return [];
  const backups = (await listImages({ fresh: true }))
    .filter(
      (i) =>
        i.properties.image_type === "backup" &&
        i.properties.backup_type === p.backup_type &&
        i.properties.instance_uuid === p.instance_uuid,
    )
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
  const excess = backups.slice(image.rotation).map((i) => i.id);
  for (const id of excess) await deleteServerImage(id);
  return excess;
}

/** The image a host's snapshot filled (a createImage's, a createBackup's or a shelve's): active with its data's figures. */
export function imageUploaded(
  imageId: string,
  data: Partial<SnapshotData> | undefined,
  at: string,
): Promise<Image | undefined> {
  return updateImage(imageId, ["queued", "saving"], {
    status: "active",
    updated_at: at,
    ...(data?.size ? { size: data.size } : {}),
    ...(data?.checksum ? { checksum: data.checksum } : {}),
    ...(data?.os_hash_value ? { os_hash_algo: "sha512", os_hash_value: data.os_hash_value } : {}),
    properties: {
      ...(data?.disk_format ? { disk_format: data.disk_format } : {}),
      ...(data?.container_format ? { container_format: data.container_format } : {}),
    },
  });
}

/**
 * compute-events: the snapshot's end. The image first, as it is the user's whatever became of the
 * server: active with its data's figures (a backup then rotates), or, when the snapshot failed,
 * deleted. Then the server: no task, its power state, the event finished with the result.
 */
export async function finishSnapshot(
  r: SnapshotDoneReport,
): Promise<{ outcome: "applied" | "fenced"; rotated: string[] }> {
  let rotated: string[] = [];
  if (r.ok) {
    const active = await imageUploaded(r.image_id, r, r.sent_at);
    if (active) {
      if (r.image_type === "backup") rotated = await rotateBackups(active);
    } else if (r.size && (await getImage(r.image_id))?.id !== r.image_id) {
      // deleted while it was uploading: its data has no record any more
      await images().remove(r.image_id);
    }
  } else await deleteServerImage(r.image_id, { unlessActive: true });

  const rec = await getInstance(r.instance_uuid);
  if (!rec || rec.deleted || rec.host !== r.host) return { outcome: "fenced", rotated };
  const updated = await endAction(
    r,
    eventFinished(SNAPSHOT_EVENTS[r.image_type], rec.attempt, r),
    SNAPSHOT_TASKS,
  );
  return { outcome: updated ? "applied" : "fenced", rotated };
}
