// POST /servers/{id}/action {"createImage"} and {"createBackup"} (Nova's servers.py _create_image,
// create_backup.py, compute/api.py snapshot and backup): the image recorded at once (`queued`,
// owned by the requester's project), the task state and the instance action in one conditional
// write, then the cast to the server's host, which captures and uploads the image
// (lib/instances/snapshot.ts applies its reports). 202: from 2.45 with {"image_id"}; before, the
// image's URL in the Location header (a backup's only while rotation > 0, as in Nova).
import { z } from "zod";
import { castToCompute } from "../../aws/send.js";
import { createImage as recordImage } from "../../catalog/image-create.js";
import {
  deleteServerImage,
  type ServerImageType,
  SNAPSHOT_BEGIN_TASK,
  serverImageRecord,
} from "../../instances/snapshot.js";
import { beginAction } from "../../instances/transition.js";
import type { InstanceRecord } from "../../instances/types.js";
import { forbidden } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { nonNegativeInt, novaName, validate } from "../validation/common.js";
import { metadataSchema } from "../validation/servers.js";
import { actionRecord } from "./instance-action.js";
import { checkInstance, checkInstanceHost, refusedBy } from "./instance-checks.js";

/** createImage: {name, metadata?} (Nova's schemas/servers.py create_image). */
const createImageSchema = z.strictObject({ name: novaName, metadata: metadataSchema.optional() });

/** createBackup: {name, backup_type, rotation, metadata?} (Nova's schemas/create_backup.py). */
const createBackupSchema = z.strictObject({
  name: novaName,
  backup_type: z.string(),
  rotation: nonNegativeInt(),
  metadata: metadataSchema.optional(),
});

/** From 2.39 Nova no longer checks the metadata against the quota (check_img_metadata_properties_quota). */
async function checkImageMetadataQuota(call: RouteCall, metadata: Record<string, string>): Promise<void> {
  if (call.ctx.version.atLeast("2.39")) return;
  const limit = (await call.deps.quotas.getProjectLimits(call.ctx.auth.project_id)).metadata_items;
  if (limit >= 0 && Object.keys(metadata).length > limit) throw forbidden("Image metadata limit exceeded");
}

async function serverImage(
  call: RouteCall,
  rec: InstanceRecord,
  type: ServerImageType,
  apiAction: "createImage" | "createBackup",
  req: { name: string; metadata: Record<string, string>; backupType?: string; rotation?: number },
): Promise<string> {
  const { ctx, deps } = call;
  await checkImageMetadataQuota(call, req.metadata);
  checkInstance(rec, ctx.auth, type, apiAction);
  const host = await checkInstanceHost(deps, rec);
  const image = await serverImageRecord(rec, {
    ...req,
    type,
    projectId: ctx.auth.project_id,
    userId: ctx.auth.user_id,
    now: deps.now(),
  });
  await recordImage(image);
  const begun = await beginAction(rec, SNAPSHOT_BEGIN_TASK[type], actionRecord(apiAction, call));
  if (!begun) {
    // Nova deletes the image it created when the server changed meanwhile
    await deleteServerImage(image.id);
    return refusedBy(call, rec, apiAction);
  }
  await castToCompute(host.queue_url, {
    version: 1,
    kind: "snapshot_instance",
    request_id: ctx.requestId,
    instance_uuid: rec.id,
    host: host.host,
    image_id: image.id,
    image_type: type,
  });
  return image.id;
}

export async function createImage(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const body = validate(createImageSchema, arg);
  const id = await serverImage(call, rec, "snapshot", "createImage", {
    name: body.name,
    metadata: body.metadata ?? {},
  });
  if (call.ctx.version.atLeast("2.45")) return { status: 202, body: { image_id: id } };
  // Nova's glance generate_image_url: the Image service's endpoint
  return { status: 202, headers: { Location: `${call.ctx.baseUrl}/image/images/${id}` } };
}

export async function createBackup(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const body = validate(createBackupSchema, arg);
  const id = await serverImage(call, rec, "backup", "createBackup", {
    name: body.name,
    metadata: body.metadata ?? {},
    backupType: body.backup_type,
    rotation: body.rotation,
  });
  if (call.ctx.version.atLeast("2.45")) return { status: 202, body: { image_id: id } };
  return body.rotation > 0
    ? { status: 202, headers: { Location: `${call.ctx.baseUrl}/v2.1/images/${id}` } }
    : { status: 202 };
}
