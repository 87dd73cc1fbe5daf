// POST /servers/{id}/action {"rebuild": {...}} (Nova's servers.py _rebuild with compute/api.py's
// rebuild checks): the server rebuilt on its own host from an image, with the fields the request
// changes. Accepted here (the new image and fields, rebuilding, the instance action, then the
// request to the conductor) and answered 202 with the server; the conductor checks a new image
// against the host and casts to it (lib/conductor/rebuild.ts).
import { randomUUID } from "node:crypto";
import { imageVisibleTo } from "../../catalog/image-create.js";
import type { RebuildFields } from "../../instances/rebuild.js";
import { conductorRequest } from "../../instances/request-spec.js";
import type { InstanceRecord, RebuildContext } from "../../instances/types.js";
import { checkFlavorFitsImage, imageSpec, newAdminPass } from "../build.js";
import type { RebuildDeps } from "../deps.js";
import { badRequest } from "../errors.js";
import type { ApiResult, RouteCall } from "../request.js";
import { parseRebuildBody } from "../validation/server-rebuild.js";
import { checkMetadataLimit } from "../validation/servers.js";
import { serverUpdateView } from "../views/servers.js";
import { acceptOrFault, actionRecord } from "./instance-action.js";
import { checkInstance, instanceNotReady, refusedBy } from "./instance-checks.js";
import { viewOf } from "./servers.js";

function rebuildDeps(call: RouteCall): RebuildDeps {
  const r = call.deps.rebuild;
  if (!r) throw new Error("the API was built without its rebuild dependencies");
  return r;
}

/** rebuild: Nova's check_instance_lock and check_instance_state (instance-checks.ts). */
export async function rebuild(call: RouteCall, rec: InstanceRecord, arg: unknown): Promise<ApiResult> {
  const { ctx, deps } = call;
  const { auth, version } = ctx;
  const body = parseRebuildBody(arg, version);
  checkInstance(rec, auth, "rebuild", "rebuild");
  // a build that failed never ran anywhere: there is no host (nor claim) to rebuild it on
  if (!rec.host || !rec.launched_at) throw instanceNotReady(rec.id);

  // a key pair is the caller's, not the owner's (Nova looks it up with the request's user)
  if (body.key_name && !(await deps.getKeypair(auth.user_id, body.key_name)))
    throw badRequest("Invalid key_name provided.");
  const image = await deps.getImage(body.imageRef);
  // another project's private image is not found, as Glance hides it
  if (!image || !imageVisibleTo(image, auth)) throw badRequest("Cannot find image for rebuild");
  if (image.status !== "active") throw badRequest(`Image ${image.id} is not active.`);
  // Nova's _validate_flavor_image against the server's flavor
  checkFlavorFitsImage(rec.flavor, image);
  if (body.metadata) {
    const limit = (await deps.quotas.getProjectLimits(rec.project_id)).metadata_items;
    checkMetadataLimit(body.metadata, limit === -1 ? Number.POSITIVE_INFINITY : limit);
  }

  const fields: RebuildFields = {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.key_name !== undefined ? { key_name: body.key_name } : {}),
    ...(body.user_data !== undefined ? { user_data: body.user_data } : {}),
    ...(body.hostname !== undefined ? { hostname: body.hostname } : {}),
    ...(body.accessIPv4 !== undefined ? { access_ip_v4: body.accessIPv4 } : {}),
    ...(body.accessIPv6 !== undefined ? { access_ip_v6: body.accessIPv6 } : {}),
  };
  const action = actionRecord("rebuild", call);
  const rebuildCtx: RebuildContext = {
    uuid: randomUUID(),
    request_id: action.request_id,
    orig_image: rec.image,
    image_changed: image.id !== rec.image.id,
    old_vm_state: rec.vm_state === "stopped" ? "stopped" : rec.vm_state === "error" ? "error" : "active",
  };
  const r = rebuildDeps(call);
  const begun = await acceptOrFault(
    call,
    {
      instance_uuid: rec.id,
      request_id: action.request_id,
      write: () => r.begin(rec, rebuildCtx, imageSpec(image), fields, action),
      abandon: () => r.abandon(rec.id, rebuildCtx),
    },
    () => {
      ctx.logFields.rebuild_uuid = rebuildCtx.uuid;
      return deps.sendBuildRequest({
        ...conductorRequest(rec, action.request_id),
        rebuild: { rebuild_uuid: rebuildCtx.uuid },
      });
    },
    "The server could not be rebuilt: its request could not be queued. Please try again.",
  );
  if (!begun) return refusedBy(call, rec, "rebuild");

  // Nova's rebuild answer: PUT's view of the server, with key_name from 2.54 and user_data from
  // 2.57 (everything from 2.75), and the admin password (enable_instance_password)
  const server = version.atLeast("2.75")
    ? await viewOf(begun, call)
    : serverUpdateView(begun, { baseUrl: ctx.baseUrl, isAdmin: auth.isAdmin, version });
  if (version.atLeast("2.54")) server.key_name = begun.key_name ?? null;
  // (Nova's rebuild view leaves out the admin's OS-EXT-SRV-ATTR:user_data: user_data says it)
  delete server["OS-EXT-SRV-ATTR:user_data"];
  if (version.atLeast("2.57")) server.user_data = begun.user_data ?? null;
  server.adminPass = body.adminPass ?? newAdminPass();
  return {
    status: 202,
    headers: { location: `${ctx.baseUrl}/v2.1/servers/${rec.id}` },
    body: { server },
  };
}
